"""Grading a submission, in stages, data flowing one way, and a class of them.

1. `stage`: refuse links and non-notebooks, identify, repair metadata, restore read-only cells; `review` reads the
   learner's cells (Python's ast) for reaches into the machinery: the review list.
2. execute: `autograde` runs nbgrader's ``Autograde`` in-process with `settings`' configuration, in which `execute`'s
   `SandboxedExecute` runs the notebook as a `job` (sandbox plus judge, a `job.Job`) here or on a Dask cluster (`cluster`).
3. `score`: points from the executed notebook, on the host; speed points only from the grader's verdicts; the review
   cells of the exercises a finding reaches withheld until a person's decision (`decisions`: ``tfperf-lab review``).
4. `batch`: a class folder or one learner's ``check``: workers, resume, CSV, feedback (`feedback`, `results`), and the
   class page for the instructor (`classpage`: ``WORK/class/index.html``).

`untrusted` checks what goes into a sandbox and caps and sanitizes what comes out (nbgrader preprocessors);
`nbgrader_patches` holds the tool's only two changes to nbgrader, each with its reason. Also here,
because they grade: `exchange` (nbgrader's JupyterHub exchange), `flake` (a flake campaign grades answers many times),
`appeal` (``tfperf-lab regrade``: a contested submission's speed checks judged N more times, an appeal bundle) and
`exports` (``tfperf-lab export``: a graded work folder's grades for Canvas, Gradescope and PrairieLearn, one module
per platform, and the glue that grades a submission on Gradescope or PrairieLearn). The class and its semester:
`intake` (``tfperf-lab collect``: a platform's download into ``submissions/``, with each file's time),
`roster` (the class list), `semester` (due dates, extensions, the late policy) and `store` (every row of a class,
written and read in one place). The only folder that imports nbgrader; it uses every folder below it.
"""
