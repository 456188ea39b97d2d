"""tfperf_lab: the instructor's and grader's tool of TF Performance Lab (the ``tfperf-lab`` command).

Learners' notebooks import only `tfperf`; this package needs the ``[grader]`` extra (nbgrader, tqdm). Its folders,
from the bottom floor up (a folder imports only the folders below it; ``tests/unit/test_layout.py`` keeps it so):

- `course`: the course folder, its lessons and notebooks' text, the rules lessons keep, the unoptimized answers.
- `isolation`: the sandbox per submission, what runs inside it, and what may cross its wall.
- `speed`: speed verdicts outside the learner's kernel: the judge, the clean reference process, the grader's clock.
- `publish`: the course report (the main job), the README's and docs/' generated blocks, the campaigns' records.
- `grading`: stage -> execute -> score -> batch, with nbgrader; the exchange and the flake campaigns.
- `cli`: the command line, on top.
"""

import sys as _sys

# jsonschema (imported by nbformat) loads the optional RFC 3987 format checker when it is installed (jupyter_events
# brings it): 0.8 s of grammar building in every process that reads a notebook (the command, the sandbox's runner, the
# reference process), for URI formats no notebook schema uses. Every one of them imports this package first: skip it.
_sys.modules.setdefault("rfc3987_syntax", None)
