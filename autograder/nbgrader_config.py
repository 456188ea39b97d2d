"""nbgrader configuration of TF Performance Lab (nbgrader 0.9.x).

Run nbgrader (or the formgrader) from this folder: sources in ``solutions/<lesson>/``, student versions in
``lessons/<lesson>/``, and everything a grading run writes (submissions, autograded copies, feedback, gradebook) in
the ignored ``.work/``. Every setting lives in `tfperf_lab.grading.settings.configure`, which ``tfperf-lab`` uses too; among
them, autograding runs each notebook's kernel in a disposable sandbox (`tfperf_lab.isolation.sandbox`).
"""

import pathlib

from tfperf_lab.course import Course
from tfperf_lab.grading.settings import configure

configure(get_config(), Course(pathlib.Path(__file__).resolve().parent.parent))  # noqa: F821  (get_config: from traitlets)
