"""Exports: grades back where they live. A registry of platforms, each one module of this package that registers itself.

``tfperf-lab export [WORK] --to PLATFORM [--out DIR] [--roster FILE] [--mapping FILE]`` runs the platform's exporter
(`export`) into ``OUT/<platform>/`` (default ``WORK/exports``); nothing is graded again. The platforms, one module each:

- `canvas`: ``grades.csv`` for Canvas's Grades > Import, a row for every student of the roster;
- `gradescope`: ``<student>/<lesson>/results.json``, a Gradescope autograder's results per graded submission;
- `prairielearn`: ``<student>/<lesson>/results.json``, a PrairieLearn external grader's results, and the external
  grader's entrypoint (``python -m tfperf_lab.grading.exports.prairielearn grade``);
- `gradescope_autograder`: ``autograder.zip``, the autograder Gradescope builds its image from (``setup.sh``,
  ``run_autograder`` and the course), whose ``run_autograder`` grades each submission as it comes.

A new format is one file in this folder (pytest's plugins are the model): a module whose function, decorated with
`register`, takes a `Request` and returns a `Written`; this package imports every module of its folder, and every
``tfperf_lab.exports`` entry point of an installed package, when it is imported. Modules import only the standard
library at their top (the command line builds ``--to``'s choices from the registry, with or without the grader's
packages); what they grade or read with is imported where it is used.

What every export keeps: the class as `tfperf_lab.grading.store.rows` shows it (a review decision and a late penalty
applied; with a roster, a "not submitted" row for every roster student and lesson with nothing handed in), and nothing
a learner may not see: no hidden test code, no traceback, no instructor's log path; only the cells' messages (already
reduced to ``Type: message`` by the score stage, as in the feedback) and the measured speedups. Library code: it raises
`ExportError`; the command line turns it into exit code 2.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import pathlib
import pkgutil
import re
import shutil
import tempfile
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # imported where used: the registry must load without the grader's packages
    from ...course import Course, Lesson, WorkFolder
    from ...course.config import GradingConfig
    from ..results import SubmissionResult
    from ..roster import Roster

ENTRY_POINTS = "tfperf_lab.exports"  # an installed package's exporters: [project.entry-points."tfperf_lab.exports"]

_LOG_PATH = re.compile(r"\s*\(log: [^()]*\)\s*$")  # grade_staged appends the instructor's log path to an error


class ExportError(Exception):
    """Nothing to export (no saved state), an unknown platform, or a roster that cannot be read."""


@dataclasses.dataclass
class Written:
    """What an export wrote: the platform, its folder, the files, and what the person exporting should know."""

    platform: str
    folder: pathlib.Path
    files: list[pathlib.Path] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)

    def summary(self) -> str:
        """One line: how many files were written where."""
        _discover()
        entry = REGISTRY.get(self.platform)
        return f"{self.platform}: {len(self.files)} file(s) written in {self.folder} ({entry.files if entry else 'files'})"


@dataclasses.dataclass
class Request:
    """What an exporter gets: the course, the work folder, its own folder (``OUT/<platform>``), the roster (None: no
    class list) and the class's rows (`tfperf_lab.grading.store.rows`; empty for a platform that reads no grades)."""

    course: "Course | None"
    work: "WorkFolder"
    folder: pathlib.Path
    roster: "Roster | None" = None
    rows: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Platform:
    """One registered export: its name (``--to NAME``), one line of help, what it writes (for the summary), whether it
    reads the graded work folder, and its function."""

    name: str
    help: str
    files: str
    write: Callable[[Request], Written]
    reads_grades: bool = True


REGISTRY: dict[str, Platform] = {}


def register(name: str, *, help: str, files: str, reads_grades: bool = True):
    """Decorator: register ``function(request) -> Written`` as the export ``name`` (``tfperf-lab export --to NAME``)."""
    def add(function: Callable[[Request], Written]) -> Callable[[Request], Written]:
        if function.__module__ == "__main__":  # a platform's module run as a program (its glue): registered on import
            return function
        if name in REGISTRY and REGISTRY[name].write is not function:
            raise ValueError(f"two exporters are named {name!r}: {REGISTRY[name].write.__module__} and {function.__module__}")
        REGISTRY[name] = Platform(name, help, files, function, reads_grades)
        return function
    return add


_DISCOVERED: list[bool] = []


def _discover() -> None:
    """Import every module of this folder (each registers its platform) and every installed exporter's entry point,
    once, the first time the registry is read (so ``python -m`` runs a platform's module without importing it twice)."""
    if _DISCOVERED:
        return
    _DISCOVERED.append(True)
    for module in pkgutil.iter_modules(__path__):
        if not module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{module.name}")
    try:
        from importlib.metadata import entry_points

        found = entry_points(group=ENTRY_POINTS)
    except Exception:  # noqa: BLE001  (a broken installed distribution never hides the course's own exports)
        found = ()
    for item in found:
        try:
            item.load()
        except Exception:  # noqa: BLE001
            continue


# ---------------------------------------------------------------------------------------------------------------- helpers


def lesson_of(course: "Course | None", lesson_id: str) -> "Lesson | None":
    """The course's lesson of exactly this id, or None (a lesson no longer in the course, or no course)."""
    if course is None:
        return None
    return next((lesson for lesson in course.lessons if lesson.id == lesson_id), None)


def why_not_graded(result: "SubmissionResult") -> str | None:
    """Why a submission has no grade (the grading machine's fault, or the notebook's error), or None when it has one;
    the instructor's log path is left out."""
    if result.machine:
        return "not graded because of the grading machine, not the notebook: " + "; ".join(result.machine)
    if result.error:
        return _LOG_PATH.sub("", result.error)
    return None


def refused(result: "SubmissionResult") -> bool:
    """A file that was never run: not a notebook, not one of this course's (an error and no graded cells)."""
    return bool(result.error) and not result.cells and not result.machine


def auto_cells(result: "SubmissionResult") -> list:
    return [cell for cell in result.cells if cell.kind == "auto"]


def number(value: float) -> str:
    """Points as Canvas shows them: at most two decimals, no trailing zeros (7, 0.5, 2.33)."""
    return f"{round(float(value), 2):g}"


def measurement(item) -> str:
    """One measured speedup, as the course's report says it (`tfperf.present.measurement`), a check's outcome after a
    colon: "speed check NAME: 4.74x (95% CI 3.84-5.98x, needs >= 1.75x): passed"."""
    from tfperf import present

    return present.measurement(item, outcome=": ", too_few=True)


def checks(lesson: "Lesson | None") -> dict[str, list[str]]:
    """grade_id -> the speed checks its test cell runs."""
    return lesson.speed_checks() if lesson is not None else {}


def hidden_cells(course: "Course | None", lesson: "Lesson | None") -> set[str] | None:
    """The graded cells of ``lesson`` whose source has a hidden-test region (``### BEGIN HIDDEN TESTS``), or None when
    that is not known here: no lesson, or a course folder without the sources (a learner's clone)."""
    from ...course import notebook

    if lesson is None or course is None or not course.has_hidden_tests:
        return None
    return {notebook.nbgrader_meta(cell).get("grade_id") or cell.get("id")
            for cell in lesson.source_notebook()["cells"]
            if notebook.nbgrader_meta(cell).get("grade") and notebook.hidden_regions(notebook.source(cell))}


def descriptions(lesson: "Lesson | None") -> dict[str, str]:
    """grade_id -> what the test checks, in the learner's words: the first line of its test cell's docstring (from the
    visible part of the cell only); a written answer is "written answer (ID)"; a cell without a docstring, its id."""
    import ast

    from ...course import notebook

    if lesson is None:
        return {}
    found = {}
    for cell in lesson.source_notebook()["cells"]:
        meta = notebook.nbgrader_meta(cell)
        if not meta.get("grade"):
            continue
        grade_id = meta.get("grade_id") or cell.get("id") or "?"
        said = ""
        if cell.get("cell_type") == "code":
            try:
                said = (ast.get_docstring(notebook.parse(notebook.visible(notebook.source(cell)))) or "").strip().split("\n")[0]
            except (SyntaxError, ValueError):
                said = ""
        else:
            said = f"written answer ({grade_id})"
        found[grade_id] = said.strip() or grade_id
    return found


def title(result: "SubmissionResult", lesson: "Lesson | None") -> str:
    return f"{lesson.title} ({result.lesson})" if lesson is not None else result.lesson


def summary_lines(result: "SubmissionResult", lesson: "Lesson | None" = None) -> list[str]:
    """What a learner reads about the whole submission: points, why it stopped, the review, notes and every measured
    speedup. A file never run says only why; a notebook that stopped (out of time, the kernel died) has its points."""
    head = title(result, lesson)
    why = why_not_graded(result)
    if result.machine or refused(result):
        return [f"{head}: NOT GRADED: {why}"]
    if not result.submitted:
        return [f"{head}: {result.status}"]
    line = f"{head}: {result.score:g} / {result.max_score:g} points autograded"
    manual = sum(cell.max_score for cell in result.cells if cell.kind == "manual")
    if manual:
        line += f"; {manual:g} more graded by hand (written answers), not in this score"
    lines = [line]
    if why:
        lines.append(f"stopped before its end: {why}")
    if result.late:
        lines.append(f"late: -{result.penalty:g} points ({result.late.get('policy', 'the late policy')})")
    if result.review:
        if result.decision:
            lines.append(f"review: {result.decision['decision']} by {result.decision['by']} on {result.decision['at'][:10]}")
        else:
            lines.append("review: on the review list; the withheld cells score 0 until your instructor decides")
        lines += [f"  finding: {finding}" for finding in result.review]
    lines += [f"note: {note}" for note in result.notes]
    lines += [measurement(item) for item in result.measurements]
    return lines


def cell_message(cell) -> str:
    """A cell's status and message: "passed", "failed: AssertionError: ...", "review: withheld for review ..."."""
    if not cell.message or cell.message.startswith(f"{cell.status}:"):  # a message that says its status already
        return cell.message or cell.status
    return f"{cell.status}: {cell.message}"


def cell_measurements(result: "SubmissionResult", lesson_checks: dict[str, list[str]], cell_id: str) -> list[str]:
    names = lesson_checks.get(cell_id, [])
    return [measurement(item) for item in result.measurements if item.name in names]


def stopped_test(result: "SubmissionResult") -> str | None:
    """Why a notebook that ran stopped before its end (it ran out of time, its kernel died), as one failed test's
    message; None when it ran to the end. The cells it never reached are failed tests of their own."""
    why = why_not_graded(result)
    if why and not result.machine and not refused(result):
        return why
    limit = [note for note in result.notes if "time limit ran out" in note]
    return limit[0] if limit else None


def ordered(results: list, course: "Course | None") -> list[str]:
    """The lessons of ``results`` in course order (lessons no longer in the course after them, by id)."""
    order = {lesson.id: index for index, lesson in enumerate(course.lessons)} if course is not None else {}
    return sorted({result.lesson for result in results}, key=lambda lesson: (order.get(lesson, len(order)), lesson))


def writable(result: "SubmissionResult") -> bool:
    """Student and lesson are safe folder names (they come from submission folders; checked again before a path)."""
    from ..untrusted import STUDENT_ID

    return all(STUDENT_ID.match(name) and name not in (".", "..") for name in (result.student, result.lesson))


def per_submission(request: "Request", platform: str, result_of, *, why_none: str) -> "Written":
    """``<student>/<lesson>/results.json`` under the request's folder for every row handed in, each ``result_of(result,
    lesson)``; a roster's "not submitted" rows get none (``why_none`` says why, once)."""
    folder = pathlib.Path(request.folder)
    written = Written(platform, folder)
    lessons: dict[str, object] = {}
    missing = 0
    for result in request.rows:
        if not result.submitted:
            missing += 1
            continue
        if not writable(result):
            written.notes.append(f"{result.student!r} {result.lesson!r}: not a usable folder name, not exported")
            continue
        if result.lesson not in lessons:
            lessons[result.lesson] = lesson_of(request.course, result.lesson)
        data = result_of(result, lessons[result.lesson])
        written.files.append(write_json(folder / result.student / result.lesson / "results.json", data))
    if missing:
        written.notes.append(f"{missing} roster row(s) with nothing handed in: no results.json ({why_none})")
    return written


def write_json(path: pathlib.Path, data: dict) -> pathlib.Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return path


# ------------------------------------------------------------------------------- one submission, graded where it lands


NO_SANDBOX = ("graded without the course's sandbox: bubblewrap cannot run inside this platform's container ({why}); the "
              "container the platform starts for this one submission is its only isolation")


@dataclasses.dataclass
class Graded:
    """One submission graded by a platform's glue: the notebook found (None: none), its result (None: nothing to grade,
    ``why`` says it), its lesson, and what the person reading the result should know (how it was isolated)."""

    notebook: pathlib.Path | None
    result: "SubmissionResult | None"
    lesson: "Lesson | None" = None
    why: str = ""
    notes: list[str] = dataclasses.field(default_factory=list)


def nested_sandbox_problem() -> str | None:
    """Why the course's bubblewrap sandbox cannot run here, or None when it can. Inside a platform's container a bare
    ``bwrap true`` often works where the sandbox's own command (a new /proc, /dev and /tmp) does not: that is probed."""
    import subprocess

    from ...isolation import backends

    problem = backends.Bubblewrap().problem()
    if problem:
        return problem
    probe = subprocess.run([shutil.which("bwrap") or "bwrap", "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent",
                            "--new-session", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "true"],
                           capture_output=True, text=True)
    return None if probe.returncode == 0 else (probe.stderr.strip()[:200] or f"bwrap exit code {probe.returncode}")


def find_notebook(folder: pathlib.Path, course: "Course | None" = None) -> tuple[pathlib.Path | None, str]:
    """The one notebook handed in under ``folder`` (checkpoints and linked folders left out), or None and why: none, or
    several of which no single one is named for a lesson of the course."""
    import os

    found = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != ".ipynb_checkpoints" and not d.startswith("__MACOSX"))
        found += [pathlib.Path(root, name) for name in sorted(files) if name.endswith(".ipynb") and not name.startswith("._")]
    if len(found) == 1:
        return found[0], ""
    if not found:
        others = sorted(p.name for p in folder.rglob("*") if p.is_file())[:5] if folder.is_dir() else []
        return None, ("no notebook (.ipynb) was handed in" + (f" (found: {', '.join(others)})" if others else "")
                      + ": hand in the lesson's .ipynb file")
    lessons = [lesson.id for lesson in course.lessons] if course is not None else []
    named = [path for path in found if any(lesson_id in path.name for lesson_id in lessons)]
    if len(named) == 1:
        return named[0], ""
    return None, (f"{len(found)} notebooks were handed in ({', '.join(p.name for p in found[:5])}): hand in only the "
                  "lesson's notebook")


def grade_one(course: "Course", folder: pathlib.Path, *, config: "GradingConfig | None" = None,
              lesson_id: str | None = None) -> Graded:
    """Grade the one notebook handed in under ``folder`` as ``tfperf-lab check`` does (the course's hidden tests when it
    has them; student "self"; a temporary work folder). Without a working bubblewrap here (`nested_sandbox_problem`) it
    grades without the sandbox (backend "none") and says so in ``notes``. Never raises for the submission: the grader's
    own failure is a row of the grading machine's (``result.machine``)."""
    from ...course.config import DEFAULTS
    from ..execute import grader_failed
    from ..results import SubmissionResult

    config = config or DEFAULTS
    path, why = find_notebook(folder, course)
    if path is None:
        return Graded(None, None, why=why)
    notes = []
    if config.backend != "none":
        problem = nested_sandbox_problem()
        if problem:
            config = dataclasses.replace(config, backend="none")
            notes.append(NO_SANDBOX.format(why=problem))
    else:
        notes.append("graded without the course's sandbox (--no-sandbox): the platform's container is its only isolation")
    from .. import batch

    with tempfile.TemporaryDirectory(prefix="tfperf-glue-") as scratch:
        try:
            result = batch.check(course, path, lesson_id=lesson_id, feedback_to=pathlib.Path(scratch) / "feedback.html",
                                 config=config)
        except Exception as error:  # noqa: BLE001  (the grader failed, not the notebook)
            result = SubmissionResult("self", lesson_id or path.stem, machine=[grader_failed(error)])
    result.feedback = None
    return Graded(path, result, lesson_of(course, result.lesson), notes=notes)


# ---------------------------------------------------------------------------------------------------------------- command


def export(course: "Course | None", work: "WorkFolder", platform: str, *, out: pathlib.Path | None = None,
           roster: pathlib.Path | None = None, mapping: pathlib.Path | None = None) -> Written:
    """Export for ``platform`` under ``out`` (default ``WORK/exports``), into ``OUT/<platform>/``.

    ``roster`` is the class list (`tfperf_lab.grading.roster.read`: the course's CSV or Canvas's gradebook export; default
    the course's ``autograder/roster.csv`` when there is one), ``mapping`` its ``folder,student`` file.

    Raises:
        ExportError: an unknown platform, a roster or mapping that cannot be read, or (for a platform that exports
            grades) a work folder with no saved result.
    """
    from .. import roster as roster_
    from .. import store

    _discover()
    if platform not in REGISTRY:
        raise ExportError(f"unknown platform {platform!r}: one of {', '.join(PLATFORMS)}")
    entry = REGISTRY[platform]
    if roster is None and course is not None and roster_.default_path(course).exists():
        roster = roster_.default_path(course)
    if mapping is not None and roster is None:
        raise ExportError("--mapping names the roster's students for submission folders: give a roster (--roster FILE, or "
                          "the course's autograder/roster.csv)")
    try:
        listed = roster_.read(pathlib.Path(roster), pathlib.Path(mapping) if mapping else None) if roster else None
    except roster_.RosterError as error:
        raise ExportError(str(error)) from None
    rows = []
    if entry.reads_grades:
        if not store.results(work):
            raise ExportError(f"nothing was graded in {work.root} (no saved result in {work.root / 'state'}): grade first "
                              f"(tfperf-lab grade FOLDER --work {work.root}), then export")
        try:
            rows = store.rows(work, course, roster=listed)
        except ValueError as error:  # a semester file that cannot be read (semester.SemesterError)
            raise ExportError(str(error)) from None
    folder = (pathlib.Path(out) if out else work.root / "exports") / platform
    return entry.write(Request(course, work, folder, listed, rows))


def __getattr__(name: str):
    """``PLATFORMS``: every registered platform's name, sorted."""
    if name == "PLATFORMS":
        _discover()
        return tuple(sorted(REGISTRY))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
