"""What keeps a submission's code away from the grader and from its classmates: the sandbox.

- `sandbox`: a disposable bubblewrap sandbox per submission, its limits (cgroup v1 or v2, awaited freezing, no racy
  fallback) and the run loop (``python -I -m tfperf_lab.isolation.sandbox`` is its launcher);
- `runner`: what runs inside the sandbox: the notebook's kernel, cell by cell (``python -m tfperf_lab.isolation.runner``);
- `outputs`: the one rule that caps a notebook's outputs by size, applied by the runner and again on the host.

Imports only the course's configuration (`tfperf_lab.course.config`, its limits) and never nbgrader (the sandbox runs
without it); what crosses the sandbox's wall is checked on the host, by `tfperf_lab.grading.untrusted`.
"""
