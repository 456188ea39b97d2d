"""What keeps a submission's code away from the grader and from its classmates: the sandbox.

- `sandbox`: a disposable sandbox per submission: its job folder, clean environment and the run loop
  (``python -I -m tfperf_lab.isolation.sandbox`` is its launcher), and the one reader of what comes back;
- `backends`: the ways a job runs isolated (bubblewrap; none for ``--no-sandbox``); docs/layout.md says how to add one;
- `cgroups`: each job's cgroup (v1 or v2): its memory and process limits, and its `Freezer` (awaited freezing, no racy
  fallback), a picklable value the judge and its timer process stop the whole job with;
- `cores`: the cores a job claims on the machine where it runs (per-core lock files: every grading process and cluster
  worker of that machine shares them), where two or more jobs of two cores fit;
- `contract`: what a run takes and gives (`Limits`, `Outcome`), and all the sandbox asks of a judge (`Watcher`);
- `runner`: what runs inside the sandbox: the notebook's kernel, cell by cell (``python -m tfperf_lab.isolation.runner``);
- `outputs`: the one rule that caps a notebook's outputs by size, applied by the runner and again on the host.

Imports only the course's configuration (`tfperf_lab.course.config`, its limits) and never nbgrader (the sandbox runs
without it), nor the judge above it (`tfperf_lab.speed`): a judge is whatever keeps `contract.Watcher`. What crosses the
sandbox's wall is checked on the host, by `tfperf_lab.grading.untrusted`.
"""
