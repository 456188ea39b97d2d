"""The results store: one result per submission and lesson, written and read in this module only.

``WORK/state/<student>/<lesson>.json`` holds what was graded from which file and what came of it: ``sha256`` and
``source`` of the file, ``release`` (the lesson's tests and fixtures it was graded against, `Lesson.fingerprint`),
``outcome`` and the `SubmissionResult`. The outcomes:

- ``graded``: the notebook ran and was scored (a timed-out or crashed run too: its result says so); kept until its file
  or its lesson's tests change;
- ``refused``: the file could not be graded (not a notebook, not one of this course's); kept until the file changes.

The grading machine's faults are never kept as finished: ``WORK/faults/<student>/<lesson>.json`` keeps each fault with
its file's sha256 (`faulted`), the row shows on every output until the next plain ``grade`` grades it, and a file the
grader fails on twice the same way is named for a person (`grader_failures`).

Everything that shows grades (the CSV, the feedback pages, the class page, every export, the review list, appeals)
reads `results` or `entry`; everything that changes one goes through a named operation: `graded`, `refused`,
`faulted`, `decided`.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import time

from ..course import Course, WorkFolder
from .results import SubmissionResult

TWICE = "the grader failed on this file twice the same way"
OUTCOMES = ("graded", "refused")


@dataclasses.dataclass
class Entry:
    """One stored result with what it was graded from."""

    result: SubmissionResult
    sha256: str | None = None
    source: str | None = None
    release: str | None = None
    outcome: str = "graded"

    def to_dict(self) -> dict:
        return {"sha256": self.sha256, "source": self.source, "release": self.release, "outcome": self.outcome,
                "result": self.result.to_dict()}

    @classmethod
    def from_dict(cls, data: dict) -> "Entry":
        return cls(SubmissionResult.from_dict(data["result"]), data.get("sha256"), data.get("source"), data.get("release"),
                   data.get("outcome") or ("refused" if data["result"].get("error") and not data["result"].get("cells") else "graded"))


def _read(path: pathlib.Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write(path: pathlib.Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(json.dumps(data), encoding="utf-8")
    partial.replace(path)  # a run stopped halfway never leaves half an entry


def entry(work: WorkFolder, student: str, lesson_id: str) -> Entry | None:
    """The stored entry of one submission, or None."""
    data = _read(work.state(student, lesson_id))
    try:
        return Entry.from_dict(data) if data else None
    except (KeyError, TypeError, ValueError):
        return None


def entries(work: WorkFolder) -> list[Entry]:
    """Every stored entry, by student and lesson."""
    found = []
    for path in sorted((work.root / "state").glob("*/*.json")):
        item = entry(work, path.parent.name, path.stem)
        if item is not None:
            found.append(item)
    return found


def results(work: WorkFolder) -> list[SubmissionResult]:
    """Every row of the class: the stored results and the rows the grading machine's faults left, by student and lesson."""
    rows = {(item.result.student, item.result.lesson): item.result for item in entries(work)}
    for path in sorted((work.root / "faults").glob("*/*.json")):
        data = _read(path) or {}
        key = (path.parent.name, path.stem)
        if key not in rows and isinstance(data.get("result"), dict):
            try:
                rows[key] = SubmissionResult.from_dict(data["result"])
            except (KeyError, TypeError, ValueError):
                continue
    return [rows[key] for key in sorted(rows)]


def resume(course: Course, work: WorkFolder, student: str, path: pathlib.Path, sha256: str) -> tuple[SubmissionResult | None, bool]:
    """The result stored for exactly this file (same sha256 and path), if any, and whether it is stale: graded against
    another release of its lesson's tests and fixtures (`Lesson.fingerprint`). A refused file is never stale."""
    for state in sorted((work.root / "state" / student).glob("*.json")):
        item = entry(work, student, state.stem)
        if item is None or item.sha256 != sha256 or item.source != str(path):
            continue
        if item.outcome == "refused":
            return item.result, False
        try:
            current = course.lesson(item.result.lesson).fingerprint()
        except (LookupError, OSError):
            current = None
        return item.result, current is not None and item.release != current
    return None, False


def graded(work: WorkFolder, result: SubmissionResult, *, sha256: str, source: pathlib.Path, release: str | None) -> None:
    """Keep a finished grading (a machine's fault is never kept: `faulted`)."""
    if result.machine:
        raise ValueError("a machine's fault is not a finished grading: use faulted()")
    _write(work.state(result.student, result.lesson), Entry(result, sha256, str(source), release, "graded").to_dict())
    work.faults(result.student, result.lesson).unlink(missing_ok=True)


def refused(work: WorkFolder, result: SubmissionResult, *, sha256: str | None, source: pathlib.Path) -> None:
    """Keep a file that could not be graded, with why (``result.error``), until the file changes."""
    _write(work.state(result.student, result.lesson), Entry(result, sha256, str(source), None, "refused").to_dict())
    work.faults(result.student, result.lesson).unlink(missing_ok=True)


def faulted(work: WorkFolder, result: SubmissionResult, *, sha256: str | None, source: pathlib.Path) -> None:
    """The grading machine's fault on one file: nothing is kept as finished (the next plain ``grade`` grades it again);
    the fault is remembered with the file's sha256, and the same fault on the same file a second time is said to need a
    person (`TWICE`). The row, with its fault, shows on every output until then."""
    work.state(result.student, result.lesson).unlink(missing_ok=True)
    path = work.faults(result.student, result.lesson)
    saved = _read(path) or {}
    what = "; ".join(result.machine)
    earlier = saved.get("faults", []) if saved.get("sha256") == sha256 else []
    if any(item.get("what") == what for item in earlier):
        result.machine = [f"{TWICE} ({what}); a person should look at it: the file is kept as handed in, and the next "
                          f"`tfperf-lab grade` tries it again"]
    earlier.append({"what": what, "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    _write(path, {"sha256": sha256, "source": str(source), "faults": earlier[-10:], "result": result.to_dict()})


def decided(work: WorkFolder, result: SubmissionResult) -> None:
    """A person's review decision applied to a stored result (nothing ran again): the entry keeps its file and release."""
    item = entry(work, result.student, result.lesson)
    if item is None:
        raise LookupError(f"no stored result of {result.student}'s {result.lesson}")
    item.result = result
    _write(work.state(result.student, result.lesson), item.to_dict())


def grader_failures(work: WorkFolder) -> list[tuple[str, str, str]]:
    """(student, lesson, what) of every file the grader failed on twice the same way (`faulted`)."""
    found = []
    for path in sorted((work.root / "faults").glob("*/*.json")):
        whats = [item.get("what") for item in (_read(path) or {}).get("faults", []) if isinstance(item, dict)]
        repeated = next((what for what in whats if whats.count(what) > 1), None)
        if repeated:
            found.append((path.parent.name, path.stem, repeated))
    return found


def graded_students(work: WorkFolder) -> list[str]:
    """Students with a stored entry."""
    folder = work.root / "state"
    return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def lessons_of(work: WorkFolder, student: str) -> list[str]:
    return sorted(p.stem for p in (work.root / "state" / student).glob("*.json"))


def rows(work: WorkFolder, course: Course | None = None, *, given: list[SubmissionResult] | None = None,
         roster=None, semester=None) -> list[SubmissionResult]:
    """The class as every output shows it: the stored rows (or the ``given`` ones), each assessed for lateness under the
    semester (`tfperf_lab.grading.semester.assess`: the course's ``autograder/semester.toml`` unless given), and, with a
    roster (the course's ``autograder/roster.csv`` unless given), a "not submitted" row scoring 0 (or "excused") for every
    roster student and lesson with nothing handed in, and a note on every row of a folder the roster does not know."""
    from . import roster as roster_
    from . import semester as semester_
    from .results import CellResult

    found = list(results(work) if given is None else given)
    if semester is None and course is not None:
        semester = semester_.load(semester_.default_path(course))
    if semester is not None:
        for result in found:
            if result.submitted:
                semester_.assess(result, semester)
    if roster is None and course is not None and roster_.default_path(course).exists():
        roster = roster_.read(roster_.default_path(course))
    if roster is None:
        return sorted(found, key=lambda r: (r.student, r.lesson))
    lessons = [lesson.id for lesson in course.lessons] if course is not None else []
    assigned = [lesson for lesson in lessons if semester is not None and lesson in semester.due] or \
        sorted({r.lesson for r in found if r.lesson in lessons} or {r.lesson for r in found})
    have = set()
    for result in found:
        student = roster.find(result.student)
        if student is None:
            note = f"{result.student} is not on the roster"
            if note not in result.notes:
                result.notes.append(note)
        else:
            have.add((student.id, result.lesson))
    for student in roster.students:
        for lesson_id in assigned:
            if (student.id, lesson_id) in have:
                continue
            try:
                cells = [CellResult(cell["id"], 0.0, cell["points"], cell["kind"], "not submitted", "")
                         for cell in course.lesson(lesson_id).grade_cells()] if course is not None else []
            except LookupError:
                cells = []
            placeholder = SubmissionResult(student.id, lesson_id, cells=cells, submitted=False)
            placeholder.excused = semester is not None and (student.id, lesson_id) in semester.excused
            found.append(placeholder)
    return sorted(found, key=lambda r: (r.student, r.lesson))
