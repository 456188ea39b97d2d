"""The course as files: the course folder and its lessons, the notebooks' text, and the rules every lesson keeps.

- `lessons`: `Course` (the course folder, found from the working directory; lessons parsed once), `Lesson`, and
  `WorkFolder` (every path a grading run writes); re-exported here, so ``from tfperf_lab.course import Course``.
- `notebook`: cell text, hidden-test regions, read-only cells, the names a cell binds.
- `stamp`: the cells every lesson shares (setup, badges), stamped by ``tfperf-lab release``.
- `figures`: the figures in a lesson's prose, rendered from recorded runs, claimed or defined (``tfperf-lab release``).
- `prose`: a lesson's prose as a learner reads it: its word budget, grading talk kept to one note, ranges labelled.
- `skipping`: the demonstrations a graded run leaves out (no answer or test reads them).
- `lint`: the rules a lesson notebook keeps (``tfperf-lab lint``).
- `variants`: the registry of correct-but-unoptimized answers the tests and the flake campaigns grade.
- `scratch`: folders a grading process makes, named for its pid, and the sweep of those a dead process left.
- `config`: the tool's settings in one typed place (`GradingConfig`, `DEFAULTS`) and the environment variables.

The bottom floor of the tool: imports nothing of the other folders and never nbgrader.
"""

from .lessons import COURSE_ID, Course, CourseNotFound, Lesson, UnknownLesson, WorkFolder, run_time_text

__all__ = ["COURSE_ID", "Course", "CourseNotFound", "Lesson", "UnknownLesson", "WorkFolder", "run_time_text"]
