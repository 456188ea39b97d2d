"""nbgrader configuration of TF Performance Lab (nbgrader 0.9.x).

nbgrader runs with ``autograder/`` as its working directory (``tfperf-lab`` does this for you):
sources in ``solutions/<lesson>/``, student versions in ``lessons/<lesson>/``, and everything a
grading run writes (submissions, autograded copies, feedback, gradebook) in the ignored ``.work/``.
``tfperf-lab`` passes its own work folder on the command line for ``check`` and ``grade``.
"""

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
WORK = ROOT / ".work"
if str(ROOT) not in sys.path:  # for autograder.feedback below
    sys.path.insert(0, str(ROOT))

from autograder.feedback import FEEDBACK_PREPROCESSORS, TF_NOISE_PATTERN  # noqa: E402

c = get_config()  # noqa: F821  (provided by traitlets when nbgrader loads this file)

c.CourseDirectory.course_id = "tf-performance-lab"
c.CourseDirectory.root = str(ROOT)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "lessons"
c.CourseDirectory.submitted_directory = str(WORK / "submitted")
c.CourseDirectory.autograded_directory = str(WORK / "autograded")
c.CourseDirectory.feedback_directory = str(WORK / "feedback")
c.CourseDirectory.db_url = f"sqlite:///{WORK / 'gradebook.db'}"

# The student version: solution regions become a stub that fails every test until answered.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# TensorFlow cells are slow: a speed check compares two variants for up to a few seconds each, and
# the first cell to touch TensorFlow pays ~4 s of import. tfperf-lab also limits the whole notebook.
c.Execute.timeout = 300
c.Execute.startup_timeout = 120

# A deleted test cell is put back from the gradebook and scored, instead of silently skipped.
c.OverwriteCells.add_missing_cells = True

# nbgrader scores a test cell 0 if it wrote anything to stderr. TensorFlow writes log lines there
# (oneDNN, CUDA stubs) that say nothing about the answer: drop those chunks before scoring.
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = TF_NOISE_PATTERN

# Output floods are cut before they reach the gradebook and the feedback.
c.LimitOutput.max_lines = 400
c.LimitOutput.max_traceback = 40

# Feedback shows what failed and the measured numbers, never the hidden tests or their traceback.
c.GenerateFeedback.preprocessors = FEEDBACK_PREPROCESSORS
