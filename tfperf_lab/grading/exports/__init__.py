"""Exports: an already graded work folder as the files Canvas, Gradescope and PrairieLearn import; nothing is graded again.

``tfperf-lab export WORK --to canvas|gradescope|prairielearn [--out DIR] [--roster CSV]`` reads every saved result of
the results store (`tfperf_lab.grading.store.results`: every row, a review decision already applied) and writes, under
``OUT`` (default ``WORK/exports``):

- ``canvas/grades.csv`` (`canvas`): Canvas's gradebook import, one row per student, one column per lesson.
- ``gradescope/<student>/<lesson>/results.json`` (`gradescope`): a Gradescope autograder's ``results.json``.
- ``prairielearn/<student>/<lesson>/results.json`` (`prairielearn`): a PrairieLearn external grader's ``results.json``.

What every export keeps: the autograded points only (written answers graded by hand in the formgrader are not in the
saved state, and are named as left out); a cell withheld for review scores 0 with its status ``review`` in its
message, as in the course's CSV; a submission that could not be graded says why, without the instructor's log path.
Nothing a learner may not see goes out: no hidden test code and no traceback, only the cells' messages (already
reduced to ``Type: message`` by the score stage, as in the feedback) and the measured speedups. Submissions refused
before grading (rows of ``grades.csv`` with no saved state) have no lesson and are not exported. Library code: it
raises `ExportError`; the command line turns it into exit code 2.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import pathlib
import re

from tfperf import stats

from ..course import Course, Lesson, WorkFolder, notebook
from . import store
from .results import SubmissionResult
from .untrusted import STUDENT_ID

PLATFORMS = ("canvas", "gradescope", "prairielearn")

# Canvas's gradebook importer (instructure/canvas-lms, app/models/gradebook_importer.rb): the header's first column
# holds "Student", the second "ID", then "SIS User ID" and "SIS Login ID", and the last student column "Section";
# a row whose first cell holds "Points Possible" sets each new assignment's points.
CANVAS_STUDENT_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
CANVAS_POINTS_POSSIBLE = "Points Possible"
CANVAS_TITLE_AND_ID = re.compile(r"\A(.*)\s\((\d+)\)\Z")  # Canvas's Assignment.title_and_id: "Lesson 01 (12345)"

# Gradescope's test visibilities (gradescope-autograders.readthedocs.io/en/latest/specs/#controlling-test-case-visibility)
VISIBLE, AFTER_PUBLISHED = "visible", "after_published"

_LOG_PATH = re.compile(r"\s*\(log: [^()]*\)\s*$")  # grade_staged appends the instructor's log path to an error


class ExportError(Exception):
    """Nothing to export (no saved state), an unknown platform, or a roster that is not a Canvas gradebook export."""


@dataclasses.dataclass
class Written:
    """What an export wrote: the platform, its folder, the files, and what the person exporting should know."""

    platform: str
    folder: pathlib.Path
    files: list[pathlib.Path] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)

    def summary(self) -> str:
        """One line: how many files were written where."""
        pattern = {"canvas": "grades.csv", "gradescope": "<student>/<lesson>/results.json",
                   "prairielearn": "<student>/<lesson>/results.json"}[self.platform]
        return f"{self.platform}: {len(self.files)} file(s) written in {self.folder} ({pattern})"


# ---------------------------------------------------------------------------------------------------------------- helpers


def _lesson(course: Course | None, lesson_id: str) -> Lesson | None:
    """The course's lesson of exactly this id, or None (a lesson no longer in the course, or no course)."""
    if course is None:
        return None
    return next((lesson for lesson in course.lessons if lesson.id == lesson_id), None)


def _why_not_graded(result: SubmissionResult) -> str | None:
    """Why a submission has no grade (the grading machine's fault or the notebook's error), or None when it has one;
    the instructor's log path is left out."""
    machine = getattr(result, "machine", None)
    if machine:
        return "not graded because of the grading machine, not the notebook: " + "; ".join(machine)
    if result.error:
        return _LOG_PATH.sub("", result.error)
    return None


def _auto(result: SubmissionResult) -> list:
    return [cell for cell in result.cells if cell.kind == "auto"]


def _number(value: float) -> str:
    """Points as Canvas shows them: at most two decimals, no trailing zeros (7, 0.5, 2.33)."""
    return f"{round(float(value), 2):g}"


def _measurement(item) -> str:
    """One measured speedup, as the course's report says it."""
    kind = "speed check" if item.threshold else "measured"
    line = f"{kind} {item.name}: {item.speedup:.2f}x ({stats.shown(item.ci)}"
    if item.threshold:
        line += f", needs >= {item.threshold:g}x): " + ("passed" if item.passed else "failed")
    else:
        line += ")"
    return line


def _checks(lesson: Lesson | None) -> dict[str, list[str]]:
    return lesson.speed_checks() if lesson is not None else {}


def hidden_cells(course: Course | None, lesson: Lesson | None) -> set[str] | None:
    """The graded cells of ``lesson`` whose source has a hidden-test region (``### BEGIN HIDDEN TESTS``), or None when
    that is not known here: no lesson, or a course folder without the sources (a learner's clone)."""
    if lesson is None or course is None or not course.has_hidden_tests:
        return None
    return {notebook.nbgrader_meta(cell).get("grade_id") or cell.get("id")
            for cell in lesson.source_notebook()["cells"]
            if notebook.nbgrader_meta(cell).get("grade") and notebook.hidden_regions(notebook.source(cell))}


def summary_lines(result: SubmissionResult, lesson: Lesson | None = None) -> list[str]:
    """What a learner reads about the whole submission: points, the review, notes and every measured speedup."""
    title = f"{lesson.title} ({result.lesson})" if lesson is not None else result.lesson
    why = _why_not_graded(result)
    if why:
        return [f"{title}: NOT GRADED: {why}"]
    head = f"{title}: {result.score:g} / {result.max_score:g} points autograded"
    manual = sum(cell.max_score for cell in result.cells if cell.kind == "manual")
    if manual:
        head += f"; {manual:g} more graded by hand (written answers), not in this score"
    lines = [head]
    if result.review:
        if result.decision:
            lines.append(f"review: {result.decision['decision']} by {result.decision['by']} on {result.decision['at'][:10]}")
        else:
            lines.append("review: on the review list; the withheld cells score 0 until your instructor decides")
        lines += [f"  finding: {finding}" for finding in result.review]
    lines += [f"note: {note}" for note in result.notes]
    lines += [_measurement(item) for item in result.measurements]
    return lines


def _cell_message(cell) -> str:
    """A cell's status and message: "passed", "failed: AssertionError: ...", "review: withheld for review ..."."""
    return f"{cell.status}: {cell.message}" if cell.message else cell.status


def _cell_measurements(result: SubmissionResult, checks: dict[str, list[str]], cell_id: str) -> list[str]:
    names = checks.get(cell_id, [])
    return [_measurement(item) for item in result.measurements if item.name in names]


def _ordered(results: list[SubmissionResult], course: Course | None) -> list[str]:
    """The lessons of ``results`` in course order (lessons no longer in the course after them, by id)."""
    order = {lesson.id: index for index, lesson in enumerate(course.lessons)} if course is not None else {}
    return sorted({result.lesson for result in results}, key=lambda lesson: (order.get(lesson, len(order)), lesson))


def _writable(result: SubmissionResult) -> bool:
    """Student and lesson are safe folder names (they come from submission folders; checked again before a path)."""
    return all(STUDENT_ID.match(name) and name not in (".", "..") for name in (result.student, result.lesson))


def _write_json(path: pathlib.Path, data: dict) -> pathlib.Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return path


# ----------------------------------------------------------------------------------------------------------------- canvas


@dataclasses.dataclass
class Roster:
    """A Canvas gradebook export (Grades > Export): its header and one dict per student row."""

    header: list[str]
    rows: list[dict[str, str]]

    def find(self, student: str) -> dict[str, str] | None:
        """The row of a submission folder's name: matched on "SIS Login ID", then "SIS User ID", then "Student"."""
        for column in ("SIS Login ID", "SIS User ID", "Student"):
            for row in self.rows:
                if (row.get(column) or "").strip() == student:
                    return row
        return None

    def assignment_column(self, lesson_id: str, title: str | None) -> str | None:
        """The header of the roster's assignment named as the lesson's id or title (Canvas adds " (ID)"), or None."""
        for header in self.header:
            match = CANVAS_TITLE_AND_ID.match(header)
            name = match.group(1) if match else header
            if name.strip() in {lesson_id, title}:
                return header
        return None


def read_roster(path: pathlib.Path) -> Roster:
    """A Canvas gradebook export as a `Roster`; its "Points Possible" and muted rows are skipped.

    Raises:
        ExportError: no such file, or a header without Canvas's "Student" and "ID" columns.
    """
    try:
        with pathlib.Path(path).open(encoding="utf-8-sig", newline="") as handle:
            table = list(csv.reader(handle))
    except OSError as error:
        raise ExportError(f"the roster {path} cannot be read: {error.strerror or error}") from None
    if not table or len(table[0]) < 2 or "Student" not in table[0][0] or table[0][1].strip() != "ID":
        raise ExportError(f"the roster {path} is not a Canvas gradebook export: its header must start with "
                          f"{', '.join(CANVAS_STUDENT_COLUMNS)} (in Canvas: Grades > Export > Export Entire Gradebook)")
    header = [cell.strip() for cell in table[0]]
    rows = []
    for line in table[1:]:
        first = line[0] if line else ""
        if CANVAS_POINTS_POSSIBLE in first or not any(cell.strip() for cell in line[:2]):
            continue
        if all(re.fullmatch(r"\s*(Muted|Manual Posting.*)?\s*", cell or "", flags=re.I) for cell in line):
            continue
        rows.append(dict(zip(header, line)))
    return Roster(header, rows)


def canvas_table(results: list[SubmissionResult], course: Course | None = None,
                 roster: Roster | None = None) -> tuple[list[list[str]], list[str]]:
    """Canvas's gradebook import: the rows of ``grades.csv`` and what the person exporting should know.

    Follows the gradebook importer of Canvas (instructure/canvas-lms, ``app/models/gradebook_importer.rb``; the guide:
    community.canvaslms.com, "How do I import grades in the Gradebook?"): the header is ``Student, ID, SIS User ID,
    SIS Login ID, Section`` and then one column per assignment; a column titled ``NAME (12345)`` is matched to the
    assignment of Canvas ID 12345, any other by its exact title, and a title Canvas does not have creates an
    assignment; the second row, ``Points Possible``, gives each column's points. A student row is matched on ``ID``
    (Canvas's user id), then ``SIS User ID``, ``SIS Login ID``, then the name.

    Here: one row per student (the submission folder's name), one column per lesson graded, holding the autograded
    points (written answers graded by hand are not in it; a cell withheld for review counts 0, and the row says
    nothing about the review, which Canvas has no place for: settle the list first with ``tfperf-lab review``). A
    submission that could not be graded, or none, is left blank: Canvas keeps what it has. A column is titled by the
    lesson id, or by the roster's column of the same lesson (its title is the lesson's id or title), with its Canvas
    ID. Students: with a ``roster`` (Canvas's own gradebook export), the matching row's ``Student, ID, SIS User ID,
    SIS Login ID, Section`` (matched on SIS Login ID, SIS User ID or name = the folder's name); otherwise, or when the
    roster has no such student, the folder's name as ``Student`` and ``SIS Login ID``, ``ID`` blank.
    """
    notes: list[str] = []
    lessons = _ordered(results, course)
    by_key = {(result.student, result.lesson): result for result in results}
    columns, points = [], []
    for lesson_id in lessons:
        lesson = _lesson(course, lesson_id)
        column = roster.assignment_column(lesson_id, lesson.title if lesson else None) if roster else None
        columns.append(column or lesson_id)
        if lesson is not None:
            most = sum(cell["points"] for cell in lesson.grade_cells() if cell["kind"] == "auto")
        else:
            most = max((r.max_score for r in results if r.lesson == lesson_id and not _why_not_graded(r)), default=0.0)
        points.append(_number(most))
    rows = [[*CANVAS_STUDENT_COLUMNS, *columns], [CANVAS_POINTS_POSSIBLE, "", "", "", "", *points]]
    for student in sorted({result.student for result in results}):
        found = roster.find(student) if roster else None
        if found is not None:
            who = [(found.get(column) or "").strip() for column in CANVAS_STUDENT_COLUMNS]
        else:
            who = [student, "", "", student, ""]
            if roster is not None:
                notes.append(f"{student} is not in the roster (no SIS Login ID, SIS User ID or name {student!r}): its row "
                             f"has no Canvas ID; Canvas matches it by login or name, or lists it as unknown")
        cells = []
        for lesson_id in lessons:
            result = by_key.get((student, lesson_id))
            if result is None:
                cells.append("")
            elif _why_not_graded(result):
                cells.append("")
                notes.append(f"{student}'s {lesson_id} was not graded ({_why_not_graded(result)}): left blank in Canvas")
            else:
                cells.append(_number(result.score))
        rows.append([*who, *cells])
    pending = sorted(f"{r.student} {r.lesson}" for r in results if r.review and not r.decision and not _why_not_graded(r))
    if pending:
        notes.append(f"on the review list, waiting for a decision (withheld cells exported as 0): {', '.join(pending)}")
    return rows, notes


def canvas(results: list[SubmissionResult], course: Course | None, out: pathlib.Path, *,
           roster: pathlib.Path | None = None) -> Written:
    """Write ``OUT/canvas/grades.csv`` (`canvas_table`), for Canvas's Grades > Import."""
    rows, notes = canvas_table(results, course, read_roster(roster) if roster else None)
    target = pathlib.Path(out) / "canvas" / "grades.csv"
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    return Written("canvas", target.parent, [target], notes)


# ------------------------------------------------------------------------------------------------------------- gradescope


def gradescope_result(result: SubmissionResult, lesson: Lesson | None = None, hidden: set[str] | None = None) -> dict:
    """One submission as a Gradescope autograder's ``results.json``.

    The format (gradescope-autograders.readthedocs.io/en/latest/specs/, "Output format"; its source:
    github.com/gradescope/autograder_samples, docs/specs.md and docs/leaderboards.md): a top-level ``score`` (it
    overrides the tests' total), ``output`` (shown to the learner), ``tests`` (each ``name``, ``score``, ``max_score``,
    ``status`` "passed" or "failed", ``output``, ``visibility`` "visible", "hidden", "after_due_date" or
    "after_published") and ``leaderboard`` (each ``name``, ``value``, ``order`` "desc" when higher ranks higher).

    Here: one test per autograded cell (its output: status and message, and the speedups of its speed checks); a cell
    whose source has a hidden-test region (``hidden``) is "after_published", the others "visible"; ``hidden=None``
    (not known: no sources here) makes every test "after_published". One leaderboard entry per speed check, its
    measured speedup (higher is better). A submission that could not be graded scores 0, with why in ``output``.
    """
    data: dict = {"score": 0.0, "output": "\n".join(summary_lines(result, lesson)), "tests": []}
    if not _why_not_graded(result):
        checks = _checks(lesson)
        data["score"] = result.score
        for cell in _auto(result):
            output = "\n".join([_cell_message(cell), *_cell_measurements(result, checks, cell.id)])
            visibility = AFTER_PUBLISHED if hidden is None or cell.id in hidden else VISIBLE
            data["tests"].append({"name": cell.id, "score": cell.score or 0.0, "max_score": cell.max_score,
                                  "status": "passed" if cell.status == "passed" else "failed", "output": output,
                                  "visibility": visibility})
        board = [{"name": item.name, "value": round(item.speedup, 3), "order": "desc"}
                 for item in result.measurements if item.threshold]
        if board:
            data["leaderboard"] = board
    data["extra_data"] = {"student": result.student, "lesson": result.lesson}
    return data


def gradescope(results: list[SubmissionResult], course: Course | None, out: pathlib.Path) -> Written:
    """Write ``OUT/gradescope/<student>/<lesson>/results.json`` (`gradescope_result`) for every submission.

    Gradescope takes a ``results.json`` from an autograder's ``run_autograder`` at ``/autograder/results/``: one that
    copies the file of the submitter (``/autograder/submission_metadata.json`` names them) puts these grades there."""
    folder = pathlib.Path(out) / "gradescope"
    written = Written("gradescope", folder)
    hidden = {}
    for result in results:
        if not _writable(result):
            written.notes.append(f"{result.student!r} {result.lesson!r}: not a usable folder name, not exported")
            continue
        lesson = _lesson(course, result.lesson)
        if result.lesson not in hidden:
            hidden[result.lesson] = hidden_cells(course, lesson)
        data = gradescope_result(result, lesson, hidden[result.lesson])
        written.files.append(_write_json(folder / result.student / result.lesson / "results.json", data))
    return written


# ----------------------------------------------------------------------------------------------------------- prairielearn


def prairielearn_result(result: SubmissionResult, lesson: Lesson | None = None) -> dict:
    """One submission as a PrairieLearn external grader's ``results.json``.

    The format (prairielearn.readthedocs.io, "External grading", "Grading results"; its source:
    github.com/PrairieLearn/PrairieLearn, docs/externalGrading.md): ``gradable`` (false: "invalid, not gradable", no
    points awarded or lost, with ``format_errors``), ``score`` in [0, 1], ``message``, ``output`` and ``tests``, each
    ``name``, ``description``, ``points``, ``max_points``, ``message`` and ``output`` (what
    ``<pl-external-grader-results>`` renders).

    Here: ``score`` is the autograded points over the most there are; one test per autograded cell, its message the
    status and message, its output the speedups of its speed checks. A submission that could not be graded is
    ``"gradable": false`` with why in ``message`` and ``format_errors``.
    """
    why = _why_not_graded(result)
    lines = summary_lines(result, lesson)
    if why:
        return {"gradable": False, "score": 0.0, "message": lines[0], "format_errors": [why], "output": "", "tests": []}
    checks = _checks(lesson)
    tests = []
    for cell in _auto(result):
        names = checks.get(cell.id)
        description = f"speed test ({', '.join(names)})" if names else "autograded test"
        tests.append({"name": cell.id, "description": description, "points": cell.score or 0.0,
                      "max_points": cell.max_score, "message": _cell_message(cell),
                      "output": "\n".join(_cell_measurements(result, checks, cell.id))})
    score = round(result.score / result.max_score, 6) if result.max_score else 0.0
    return {"gradable": True, "score": score, "message": lines[0], "output": "\n".join(lines), "tests": tests}


def prairielearn(results: list[SubmissionResult], course: Course | None, out: pathlib.Path) -> Written:
    """Write ``OUT/prairielearn/<student>/<lesson>/results.json`` (`prairielearn_result`) for every submission; an
    external grader's entrypoint copies the submitter's file to ``/grade/results/results.json``."""
    folder = pathlib.Path(out) / "prairielearn"
    written = Written("prairielearn", folder)
    for result in results:
        if not _writable(result):
            written.notes.append(f"{result.student!r} {result.lesson!r}: not a usable folder name, not exported")
            continue
        data = prairielearn_result(result, _lesson(course, result.lesson))
        written.files.append(_write_json(folder / result.student / result.lesson / "results.json", data))
    return written


# ---------------------------------------------------------------------------------------------------------------- command


def export(course: Course | None, work: WorkFolder, platform: str, *, out: pathlib.Path | None = None,
           roster: pathlib.Path | None = None) -> Written:
    """Export every result saved in ``work`` for ``platform`` under ``out`` (default ``WORK/exports``).

    Raises:
        ExportError: an unknown platform, a roster for another platform than Canvas or one that cannot be read, or a
            work folder with no saved result (nothing was graded there).
    """
    if platform not in PLATFORMS:
        raise ExportError(f"unknown platform {platform!r}: one of {', '.join(PLATFORMS)}")
    if roster is not None and platform != "canvas":
        raise ExportError("--roster is Canvas's gradebook export: it only names the students of a Canvas export")
    results = store.results(work)
    if not results:
        raise ExportError(f"nothing was graded in {work.root} (no saved result in {work.root / 'state'}): grade first "
                          f"(tfperf-lab grade FOLDER --work {work.root}), then export")
    out = pathlib.Path(out) if out else work.root / "exports"
    if platform == "canvas":
        return canvas(results, course, out, roster=roster)
    if platform == "gradescope":
        return gradescope(results, course, out)
    return prairielearn(results, course, out)
