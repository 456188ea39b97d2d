"""PrairieLearn: a submission as an external grader's ``results.json``; ``OUT/prairielearn/<student>/<lesson>/`` for a
graded class (`write`), and the external grader's entrypoint, which grades one submission where PrairieLearn puts it:

    python -m tfperf_lab.grading.exports.prairielearn grade [--root /grade] [--course DIR] [--notebook-seconds S]

reads the submitted files in ``/grade/student/`` (and ``/grade/data/data.json`` if there: ``params.lesson`` names the
lesson when the file does not) and writes ``/grade/results/results.json``. The course (its solutions/ and the
environment that grades it) lives in the grader's image: ``--course``, ``$TFPERF_COURSE`` or the working directory.

The format (prairielearn.readthedocs.io, "External grading", "Grading results"; its source:
github.com/PrairieLearn/PrairieLearn, docs/externalGrading.md): ``gradable`` (false: "invalid, not gradable", no
points awarded or lost and no attempt used, with ``format_errors``), ``score`` in [0, 1], ``message``, ``output`` and
``tests``, each ``name``, ``description``, ``points``, ``max_points``, ``message`` and ``output`` (what
``<pl-external-grader-results>`` renders); 1 MB at most.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
from typing import TYPE_CHECKING

from . import (Request, Written, auto_cells, cell_measurements, cell_message, checks, descriptions, lesson_of, per_submission, refused,
               register, stopped_test, summary_lines, why_not_graded, write_json, writable)

if TYPE_CHECKING:
    from ...course import Lesson
    from ..results import SubmissionResult

STOPPED = "The notebook ran to its end within its time limit"
LIMIT = 1_000_000  # bytes: the documented size limit of results.json


def prairielearn_result(result: "SubmissionResult", lesson: "Lesson | None" = None, described: dict[str, str] | None = None,
                        *, extra: list[str] = ()) -> dict:
    """One submission as PrairieLearn's ``results.json``.

    ``score`` is the autograded points (after any late penalty) over the most there are; one test per autograded cell,
    named by what it checks (``described``: `descriptions`, else the cell's id), its description the cell's id and kind,
    its message the status and message, its output the speedups of its speed checks. A notebook that stopped before
    its end (out of time, its kernel died) is graded as it stands: its unreached cells fail with why, and one more
    test of 0 points fails with why it stopped. Only a file that is no gradable notebook (not a notebook, not one of
    this course's, nothing handed in) or the grading machine's fault is ``"gradable": false`` (no attempt used), with
    why in ``message`` and ``format_errors``. ``extra``: lines ahead of the output."""
    described = described or {}
    lines = [*extra, *summary_lines(result, lesson)]
    if result.machine or refused(result) or not result.submitted:
        why = why_not_graded(result) or result.status
        return {"gradable": False, "score": 0.0, "message": summary_lines(result, lesson)[0], "format_errors": [why],
                "output": "\n".join(lines), "tests": []}
    lesson_checks = checks(lesson)
    tests = []
    for cell in auto_cells(result):
        names = lesson_checks.get(cell.id)
        kind = f"speed test ({', '.join(names)})" if names else "autograded test"
        tests.append({"name": described.get(cell.id, cell.id), "description": f"{kind}, cell {cell.id}",
                      "points": cell.score or 0.0, "max_points": cell.max_score, "message": cell_message(cell),
                      "output": "\n".join(cell_measurements(result, lesson_checks, cell.id))})
    stopped = stopped_test(result)
    if stopped:
        tests.append({"name": STOPPED, "description": "the whole notebook", "points": 0.0, "max_points": 0.0,
                      "message": f"failed: {stopped}", "output": ""})
    score = round(min(1.0, result.score / result.max_score), 6) if result.max_score else 0.0
    return {"gradable": True, "score": score, "message": summary_lines(result, lesson)[0], "output": "\n".join(lines),
            "tests": tests}


def problems(data: dict) -> list[str]:
    """What PrairieLearn's documented format would not take in ``data`` (empty: nothing)."""
    found = []
    if not isinstance(data.get("gradable", True), bool):
        found.append("gradable must be true or false")
    if data.get("gradable", True):
        if not isinstance(data.get("score"), (int, float)) or not 0.0 <= data["score"] <= 1.0:
            found.append(f"score {data.get('score')!r} is not in [0, 1]")
    elif not data.get("format_errors"):
        found.append("not gradable, and no format_errors say why")
    for test in data.get("tests", []):
        if set(test) - {"name", "description", "points", "max_points", "message", "output", "images"}:
            found.append(f"test {test.get('name')!r}: unknown keys {sorted(set(test) - {'name', 'description', 'points', 'max_points', 'message', 'output'})}")
        if not isinstance(test.get("name"), str):
            found.append(f"test {test!r} has no name")
        if not 0 <= test.get("points", 0) <= test.get("max_points", 0):
            found.append(f"test {test.get('name')!r}: points {test.get('points')} not in [0, {test.get('max_points')}]")
    if len(json.dumps(data)) >= LIMIT:
        found.append("larger than 1 MB")
    return found


@register("prairielearn", help="OUT/prairielearn/<student>/<lesson>/results.json: each graded submission as a PrairieLearn "
                               "external grader's results", files="<student>/<lesson>/results.json")
def write(request: Request) -> Written:
    """Write ``<student>/<lesson>/results.json`` (`prairielearn_result`) for every submission handed in."""
    described: dict[str, dict] = {}

    def result_of(result, lesson):
        if result.lesson not in described:
            described[result.lesson] = descriptions(lesson)
        return prairielearn_result(result, lesson, described[result.lesson])

    return per_submission(request, "prairielearn", result_of, why_none="PrairieLearn has no submission to attach them to")


# ------------------------------------------------------------------------------------------- the external grader's entrypoint


def grade(root: pathlib.Path, course, *, config=None) -> dict:
    """Grade the submission in ``ROOT/student/`` and write ``ROOT/results/results.json``; returns what it wrote."""
    from ...course.config import DEFAULTS

    root = pathlib.Path(root)
    lesson_id = None
    try:
        params = json.loads((root / "data" / "data.json").read_text(encoding="utf-8")).get("params") or {}
        lesson_id = params.get("lesson") if isinstance(params.get("lesson"), str) else None
    except (OSError, ValueError, AttributeError):
        pass
    from . import grade_one

    graded = grade_one(course, root / "student", config=config or DEFAULTS, lesson_id=lesson_id)
    if graded.result is None:
        data = {"gradable": False, "score": 0.0, "message": f"not graded: {graded.why}", "format_errors": [graded.why],
                "output": "", "tests": []}
    else:
        data = prairielearn_result(graded.result, graded.lesson, descriptions(graded.lesson), extra=graded.notes)
        if len(json.dumps(data)) >= LIMIT:  # never lose a grade to the size limit: the long output goes
            data["output"] = data["output"][:20_000] + "\n(output cut: results.json is limited to 1 MB)"
    write_json(root / "results" / "results.json", data)
    if graded.result is not None:
        print("\n".join(graded.result.lines()))
    return data


def main(argv: list[str] | None = None) -> int:
    from ...course import Course, CourseNotFound
    from ...course.config import GradingConfig, add_options

    parser = argparse.ArgumentParser(prog="python -m tfperf_lab.grading.exports.prairielearn",
                                     description="PrairieLearn's external grader: grade /grade/student/ into "
                                                 "/grade/results/results.json")
    steps = parser.add_subparsers(dest="step", required=True)
    step = steps.add_parser("grade", help="grade the submitted notebook")
    step.add_argument("--root", default="/grade", help="the grading job's folder (default: /grade)")
    step.add_argument("--course", help="the course folder (default: $TFPERF_COURSE or the working directory)")
    add_options(step, "notebook_seconds", "cell_seconds", "backend")
    args = parser.parse_args(argv)
    try:
        course = Course.find(args.course)
    except CourseNotFound as error:
        print(f"tfperf-lab: {error}", file=sys.stderr)
        return 2  # no results.json: PrairieLearn reports the grading job as failed, and the student loses nothing
    data = grade(pathlib.Path(args.root), course, config=GradingConfig.from_options(args))
    print(f"wrote {pathlib.Path(args.root) / 'results' / 'results.json'}: score {data['score']}, gradable {data['gradable']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
