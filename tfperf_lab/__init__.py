"""tfperf_lab: the instructor's and grader's tool of TF Performance Lab (the ``tfperf-lab`` command).

Learners' notebooks import only `tfperf`; this package needs the ``[grader]`` extra (nbgrader, tqdm). One module per job:

- `course`: the course folder and its lessons (`Course`), and every path a grading run writes (`WorkFolder`).
- `notebook`: cell text, hidden-test regions, read-only cells and the names a cell binds.
- `settings`: every nbgrader setting of the course (``autograder/nbgrader_config.py`` calls it) and nbgrader subprocesses.
- Grading in stages, data flowing one way: `stage` (check, identify, repair a submission; `review` reads its cells for
  reaches into the machinery) -> `execute` (nbgrader's autograde with `SandboxedExecute`; its unit of work, a `Job`,
  runs the kernel in a `sandbox` running `runner`, here or on a Dask cluster through `cluster`) -> `score` (points from
  the executed notebook, on the host) -> `batch` (a class folder or one learner's check: workers, resume, CSV, feedback).
- Speed verdicts, outside the learner's kernel: `judge` (per submission: the sockets, the clean `reference` process,
  pausing jobs that share cores while one measures) -> `timer` (the grader's clock, in a process of its own).
- `untrusted`: checks on what goes into a sandbox and sanitizing of what comes out; `feedback`: what a learner may see.
- `results`: what grading returns. `variants`: the registry of correct-but-unoptimized answers. `flake`: campaigns.
- `report`: the main job (the course report). `readme`: every generated block of the README and docs/. `lint`,
  `stamp`: notebook rules and the cells every lesson shares. `exchange`: nbgrader's JupyterHub exchange. `cli`: the command line.
"""
