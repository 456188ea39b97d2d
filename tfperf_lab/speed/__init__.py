"""Speed verdicts, decided outside the learner's kernel.

- `judge`: per graded submission, the sockets a kernel's speed checks connect to, the clean `reference` process that
  serves the baselines, and pausing the jobs that share cores while one measures;
- `reference`: that clean process (``python -I -m tfperf_lab.speed.reference``): the instructor's source only;
- `zygote`: the warm parent the reference processes are forked from (TensorFlow imported once per grading process);
- `timer`: the grader's clock, in a process of its own: chained batches, rounds a burst disturbed dropped, a hard bound
  per check; its loop and decision rule are `tfperf.timing.paired_rounds`' (the rule: `tfperf.stats`);
- `replay`: recorded campaigns decided again under any rule and threshold, virtual gradings from their rounds, and
  the calibration that moves them onto the threshold to measure the rule's own error;
- `simulated`: gradings simulated through the shipped loop and drop rule under dependent noise (AR(1), bursts,
  per-grading offsets): the rule's false passes at the threshold (`tests/unit/test_dependence.py`);
- `doctor`: this machine's timing noise, and check by check whether it can grade speed reliably (``tfperf-lab doctor``).

Imports the learner library (`tfperf`), the course's notebook helpers and, from the floor below, the sandbox's contract
with a judge (`tfperf_lab.isolation.contract`, `tfperf_lab.isolation.cgroups`' `Freezer`); never nbgrader.
"""

# The technique of every record the grader measured (`tfperf.report.Record.technique`): the score stage pays speed
# points only on records with it, and the flake campaigns count a check as the grader's by it.
TECHNIQUE = "measured by the grader: its clock, a clean reference process, inputs it drew"
