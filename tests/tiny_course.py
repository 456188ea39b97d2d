"""A course of one tiny lesson, for the tests of the grading machinery itself (sandbox, isolation, cluster).

Those tests grade a dozen hostile or honest submissions each; what they check (a sandbox escape refused, a staller
that harms no classmate, the same CSV through a cluster) does not depend on what the lesson teaches, and a real
lesson costs each grading two TensorFlow imports and a minute of demonstrations. The tiny lesson has the same shape as
the real ones: a setup cell and support code tagged ``speed-fixture``, an answer cell, correctness cells (one with a
hidden test), a structural cell that shares the speed check's evidence (``review_with``), a speed check the grader times
(a Python loop against NumPy, about 50x, against a threshold of 3x) and a written answer graded by hand. No TensorFlow:
a grading takes a few seconds. The real lessons are graded by test_pipeline.py and the lesson tests.
"""

from __future__ import annotations

import json
import pathlib
import shutil

from tfperf_lab.course import Course, WorkFolder
from tfperf_lab.grading import settings

ROOT = pathlib.Path(__file__).resolve().parents[1]
LESSON_ID = "00_tiny"
ANSWER = "scale_solution"
CORRECT = ("scale_matches", "scale_rejects_matrices")
SPEED_CHECK = "tiny_scale_vs_loop"

SETUP = "import inspect\nimport time\n\nimport numpy as np\n\nimport tfperf\n"
SUPPORT = ('def slow_scale(values):\n    """Support code: 3v - 1, one element at a time in Python."""\n'
           "    return np.array([3.0 * v - 1.0 for v in np.asarray(values, dtype=np.float64)])\n")
SOLUTION = ('def fast_scale(values):\n    """3v - 1 for every element of a vector, without a Python loop."""\n'
            "    ### BEGIN SOLUTION\n    values = np.asarray(values, dtype=np.float64)\n    if values.ndim != 1:\n"
            '        raise ValueError(f"expected a vector, got shape {values.shape}")\n    return 3.0 * values - 1.0\n'
            "    ### END SOLUTION\n")
MATCHES = ('"""fast_scale gives 3v - 1."""\nnp.testing.assert_allclose(fast_scale([1.0, 2.0, 3.0]), [2.0, 5.0, 8.0])\n'
           "### BEGIN HIDDEN TESTS\nhidden_values = np.random.default_rng(3).random(50)\n"
           "np.testing.assert_allclose(fast_scale(hidden_values), slow_scale(hidden_values))\n### END HIDDEN TESTS\n")
REJECTS = ('"""fast_scale refuses a matrix."""\ntry:\n    fast_scale(np.ones((2, 2)))\nexcept ValueError:\n    pass\n'
           'else:\n    raise AssertionError("fast_scale should raise ValueError for a matrix")\n')
NO_LOOP = ('"""fast_scale has no Python loop."""\nimport ast\nimport textwrap\n\n'
           "loops = [node for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(fast_scale))))\n"
           "         if isinstance(node, (ast.For, ast.While, ast.comprehension))]\n"
           'assert not loops, "fast_scale loops in Python"\n')
FASTER = ('"""fast_scale is at least 3x faster than the loop."""\n'
          f"tfperf.assert_speedup(slow_scale, fast_scale, draw=lambda rng: rng.random(2000), threshold=3.0, name={SPEED_CHECK!r},\n"
          '                      labels=("Python loop", "your fast_scale"), min_rounds=6, budget=3.0, hint="no Python loop")\n')


LOOPING = ("def fast_scale(values):  # correct, but a Python loop: no structure or speed points\n"
           "    values = np.asarray(values, dtype=np.float64)\n    if values.ndim != 1:\n"
           '        raise ValueError(f"expected a vector, got shape {values.shape}")\n'
           "    return np.array([3.0 * v - 1.0 for v in values])\n")


def _code(cell_id: str, source: str, *, tags=(), grade: bool = False, solution: bool = False, points: int = 0, extra=None) -> dict:
    metadata: dict = {"tags": list(tags)} if tags else {}
    if grade or solution:
        metadata["nbgrader"] = {"schema_version": 3, "grade": grade, "solution": solution, "locked": not solution, "task": False,
                                "grade_id": cell_id, **({"points": points} if grade else {})}
    if extra:
        metadata["tfperf"] = extra
    return {"cell_type": "code", "id": cell_id, "metadata": metadata, "source": source, "outputs": [], "execution_count": None}


LESSON_SETUP = "import tfperf\n\nENV = tfperf.env.setup()"  # a real lesson's first code cell, which `tfperf-lab release` stamps


def source_notebook(*, released: bool = False) -> dict:
    """The tiny lesson's source: solutions and hidden tests. ``released``: shaped as a real lesson for `tfperf-lab
    release` (its setup cell, which release rewrites, apart from the cell that imports NumPy; TensorFlow is then imported
    too, seconds more per grading)."""
    setup = [_code("setup", LESSON_SETUP, tags=["speed-fixture"]), _code("imports", SETUP, tags=["speed-fixture"])] if released \
        else [_code("setup", SETUP, tags=["speed-fixture"])]
    cells = [
        {"cell_type": "markdown", "id": "title", "metadata": {}, "source": "# A tiny lesson\n\nExpected run time: seconds."},
        *setup,
        _code("support", SUPPORT, tags=["speed-fixture"]),
        _code(ANSWER, SOLUTION, tags=["speed-fixture"], solution=True),
        _code("scale_matches", MATCHES, grade=True, points=2),
        _code("scale_rejects_matrices", REJECTS, grade=True, points=1),
        _code("scale_has_no_loop", NO_LOOP, grade=True, points=1, extra={"review_with": [SPEED_CHECK]}),
        _code("scale_is_faster", FASTER, grade=True, points=2, extra={"paid_with": ["scale_matches"]}),
        {"cell_type": "markdown", "id": "why_vectorize", "source": "A Python loop pays the interpreter's overhead on every element; NumPy pays it once.",
         "metadata": {"nbgrader": {"schema_version": 3, "grade": True, "solution": True, "locked": False, "task": False,
                                   "grade_id": "why_vectorize", "points": 1}}},
    ]
    metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"},
                "language_info": {"name": "python"},
                "tfperf": {"lesson": LESSON_ID, "title": "A tiny lesson", "technique": "NumPy instead of a Python loop", "article": "none",
                           "measures": "3v - 1 on 2000 numbers", "claim": "(none)", "minutes": {"full": 0.1, "grading": 0.5}}}
    return {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}


def build(root: pathlib.Path, *, released: bool = False) -> Course:
    """The tiny course in ``root``: its nbgrader configuration (the course's own), the source and its student version
    (``released``: shaped for `tfperf-lab release`, see `source_notebook`)."""
    (root / "autograder").mkdir(parents=True)
    shutil.copy(ROOT / "autograder" / "nbgrader_config.py", root / "autograder" / "nbgrader_config.py")
    source = root / "solutions" / LESSON_ID / f"{LESSON_ID}.ipynb"
    source.parent.mkdir(parents=True)
    source.write_text(json.dumps(source_notebook(released=released), indent=1), encoding="utf-8")
    course = Course(root)
    done = settings.nbgrader(course, WorkFolder(root / ".release-work"), ["generate_assignment", LESSON_ID, "--force"], release=root / "lessons")
    if done.returncode != 0:
        raise RuntimeError(f"the tiny lesson could not be released:\n{done.output[-3000:]}")
    shutil.rmtree(root / ".release-work", ignore_errors=True)
    return course


def with_code(course: Course, code: str) -> dict:
    """The tiny lesson's source with ``code`` appended to its answer cell (after the correct answer)."""
    return append_to_answer(course.lesson(LESSON_ID).source_notebook(), code)


def append_to_answer(nb: dict, code: str) -> dict:
    """``nb`` (a tiny-lesson notebook) with ``code`` appended to its answer cell."""
    cell = next(c for c in nb["cells"] if c.get("id") == ANSWER)
    cell["source"] = "".join(cell["source"]) + "\n" + code
    return nb
