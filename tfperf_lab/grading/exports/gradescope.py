"""Gradescope: a submission as a Gradescope autograder's ``results.json``; ``OUT/gradescope/<student>/<lesson>/`` for a
graded class (`write`), and what the autograder's ``run_autograder`` writes for one submission
(`tfperf_lab.grading.exports.gradescope_autograder`).

The format (gradescope-autograders.readthedocs.io/en/latest/specs/, "Output format"; its source:
github.com/gradescope/autograder_samples, docs/specs.md and docs/leaderboards.md): a top-level ``score`` (it overrides
the tests' total), ``output`` (shown to the learner), ``execution_time``, ``tests`` (each ``name``, ``number``,
``score``, ``max_score``, ``status`` "passed" or "failed", ``output``, ``visibility`` "visible", "hidden",
"after_due_date" or "after_published", ``extra_data``) and ``leaderboard`` (each ``name``, ``value``, ``order`` "desc"
when higher ranks higher). Anything printed goes to the instructor only.
"""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING

from . import (Request, Written, auto_cells, cell_measurements, cell_message, checks, descriptions, hidden_cells, lesson_of, per_submission,
               refused, register, stopped_test, summary_lines, write_json, writable)

if TYPE_CHECKING:
    from ...course import Lesson
    from ..results import SubmissionResult

VISIBLE, AFTER_PUBLISHED = "visible", "after_published"  # the specs' "Controlling Test Case Visibility"
TOP = ("score", "execution_time", "output", "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard")
TEST = ("score", "max_score", "status", "name", "name_format", "number", "output", "output_format", "tags", "visibility",
        "extra_data")
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
STOPPED = "The notebook ran to its end within its time limit"


def gradescope_result(result: "SubmissionResult", lesson: "Lesson | None" = None, hidden: set[str] | None = None,
                      described: dict[str, str] | None = None, *, extra: list[str] = ()) -> dict:
    """One submission as Gradescope's ``results.json``.

    One test per autograded cell, named by what it checks (``described``: `descriptions`, else the cell's id), its output
    the status and message and the speedups of its speed checks; a cell whose source has a hidden-test region
    (``hidden``) is "after_published", the others "visible" (``hidden=None``, not known: every test
    "after_published"). A notebook that stopped before its end (out of time, its kernel died) is graded as it stands:
    the cells it never reached fail with why, and one more test of 0 points fails with why it stopped. The leaderboard:
    each speed check passed, its measured speedup (higher is better). A file that was never run (not a notebook) or a
    fault of the grading machine scores 0 with no tests, why in ``output``. ``extra``: lines ahead of the output."""
    described = described or {}
    data: dict = {"score": 0.0, "output": "\n".join([*extra, *summary_lines(result, lesson)]), "tests": []}
    if result.machine or refused(result) or not result.submitted:
        return data
    lesson_checks = checks(lesson)
    data["score"] = result.score
    for number, cell in enumerate(auto_cells(result), start=1):
        output = "\n".join([cell_message(cell), *cell_measurements(result, lesson_checks, cell.id)])
        data["tests"].append({"name": described.get(cell.id, cell.id), "number": str(number), "score": cell.score or 0.0,
                              "max_score": cell.max_score, "status": "passed" if cell.status == "passed" else "failed",
                              "output": output, "visibility": AFTER_PUBLISHED if hidden is None or cell.id in hidden else VISIBLE,
                              "extra_data": {"cell": cell.id}})
    stopped = stopped_test(result)
    if stopped:
        data["tests"].append({"name": STOPPED, "number": str(len(data["tests"]) + 1), "score": 0.0, "max_score": 0.0,
                              "status": "failed", "output": stopped, "visibility": VISIBLE})
    board = [{"name": item.name, "value": round(item.speedup, 3), "order": "desc"}
             for item in result.measurements if item.threshold and item.passed]
    if board:
        data["leaderboard"] = board
    return data


def problems(data: dict) -> list[str]:
    """What Gradescope's documented format would not take in ``data`` (empty: nothing): unknown keys, a score neither on
    top nor on every test, unknown statuses or visibilities, leaderboard entries without a name and a value."""
    found = [f"unknown key {key!r}" for key in data if key not in TOP]
    tests = data.get("tests", [])
    if "score" not in data and not all("score" in test for test in tests):
        found.append("no score on top and not on every test")
    for test in tests:
        found += [f"test {test.get('name')!r}: unknown key {key!r}" for key in test if key not in TEST]
        if test.get("status", "passed") not in ("passed", "failed"):
            found.append(f"test {test.get('name')!r}: status {test.get('status')!r}")
        if test.get("visibility", VISIBLE) not in VISIBILITIES:
            found.append(f"test {test.get('name')!r}: visibility {test.get('visibility')!r}")
        if not isinstance(test.get("name", ""), str) or not isinstance(test.get("output", ""), str):
            found.append(f"test {test.get('name')!r}: name and output must be text")
    for entry in data.get("leaderboard", []):
        if set(entry) - {"name", "value", "order"} or "name" not in entry or "value" not in entry:
            found.append(f"leaderboard entry {entry!r}")
        if entry.get("order", "desc") not in ("asc", "desc"):
            found.append(f"leaderboard order {entry.get('order')!r}")
    if data.get("visibility", VISIBLE) not in VISIBILITIES:
        found.append(f"visibility {data.get('visibility')!r}")
    return found


@register("gradescope", help="OUT/gradescope/<student>/<lesson>/results.json: each graded submission as a Gradescope "
                             "autograder's results", files="<student>/<lesson>/results.json")
def write(request: Request) -> Written:
    """Write ``<student>/<lesson>/results.json`` (`gradescope_result`) for every submission handed in (a roster's "not
    submitted" rows have no submission to post to); a `run_autograder` that copies the submitter's file posts it."""
    hidden: dict[str, object] = {}

    def result_of(result, lesson):
        if result.lesson not in hidden:
            hidden[result.lesson] = (hidden_cells(request.course, lesson), descriptions(lesson))
        data = gradescope_result(result, lesson, *hidden[result.lesson])
        data["extra_data"] = {"student": result.student, "lesson": result.lesson}
        return data

    return per_submission(request, "gradescope", result_of, why_none="Gradescope has no submission to post them to")
