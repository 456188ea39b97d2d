"""Due dates, extensions and the late policy: ``autograder/semester.toml``, and the one place a late penalty is applied.

The file (every table optional; times are TOML datetimes, a time without an offset is the grading machine's local time)::

    [due]                                   # lesson id = when it is due
    01_callable_handles = 2027-02-08T23:59:00+01:00

    [late]
    policy = "per-day"                      # "none" (late work counts in full), "per-day", or "zero-after"
    per_day = 0.10                          # per-day: this share of the lesson's points off per day or part of a day late
    most = 0.5                              # per-day: never more than this share off
    after_days = 3                          # zero-after (and per-day): later than this many days after the due date: 0
    grace_minutes = 15                      # this late is on time

    [extensions.ana]                        # one student's own due dates (a date, or a number of days added)
    01_callable_handles = 2027-02-11T23:59:00+01:00
    02_graph_growth = 2

    [excused]                               # students excused from lessons: no penalty, and not counted when missing
    ben = ["03_tf_function"]

`assess` decides a row's lateness from the time it was handed in (`SubmissionResult.submitted_at`, recorded when it was
graded: the intake's time, else the file's) and writes it on the row (``late``, ``excused``); ``SubmissionResult.score``
takes the penalty off, so the CSV, the feedback page, the class page and every export show the same points. nbgrader's
own late-submission plugin (``LateSubmissionPlugin``) knows one due date per assignment and no extensions, so the course
decides here and keeps nbgrader's gradebook for the cells' points.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import pathlib
import tomllib

POLICIES = ("none", "per-day", "zero-after")


class SemesterError(ValueError):
    """A semester file that cannot be used: the message says where and why."""


@dataclasses.dataclass
class Semester:
    due: dict[str, datetime.datetime] = dataclasses.field(default_factory=dict)
    extensions: dict[tuple[str, str], datetime.datetime] = dataclasses.field(default_factory=dict)
    excused: set[tuple[str, str]] = dataclasses.field(default_factory=set)
    policy: str = "none"
    per_day: float = 0.0
    most: float = 1.0
    after_days: float | None = None
    grace_minutes: float = 0.0

    def due_for(self, student: str, lesson: str) -> tuple[datetime.datetime | None, bool]:
        """(the student's due date for the lesson, whether it is an extension)."""
        if (student, lesson) in self.extensions:
            return self.extensions[(student, lesson)], True
        return self.due.get(lesson), False

    def describe(self) -> str:
        """The late policy in one sentence."""
        if self.policy == "none":
            return "late work counts in full"
        grace = f" ({self.grace_minutes:g} minutes of grace)" if self.grace_minutes else ""
        if self.policy == "per-day":
            cap = f", at most {self.most:.0%}" if self.most < 1 else ""
            after = f"; 0 after {self.after_days:g} days" if self.after_days is not None else ""
            return f"{self.per_day:.0%} of the points off per day late{cap}{after}{grace}"
        return f"0 when more than {self.after_days or 0:g} days late{grace}"


def _when(value, where: str) -> datetime.datetime:
    if isinstance(value, datetime.datetime):
        return value if value.tzinfo else value.astimezone()
    if isinstance(value, datetime.date):
        return datetime.datetime.combine(value, datetime.time(23, 59, 59)).astimezone()
    raise SemesterError(f"{where}: {value!r} is not a date or date-time (write 2027-02-08T23:59:00+01:00)")


def default_path(course) -> pathlib.Path:
    return course.autograder / "semester.toml"


def load(path: pathlib.Path | None) -> Semester:
    """The semester in ``path``; an absent file is a semester with no due dates (nothing is late)."""
    if path is None or not pathlib.Path(path).exists():
        return Semester()
    try:
        data = tomllib.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise SemesterError(f"{path} cannot be read: {error}") from None
    semester = Semester()
    for lesson, when in (data.get("due") or {}).items():
        semester.due[lesson] = _when(when, f"{path} [due] {lesson}")
    late = data.get("late") or {}
    semester.policy = late.get("policy", "none")
    if semester.policy not in POLICIES:
        raise SemesterError(f"{path} [late] policy: {semester.policy!r} is not one of {', '.join(POLICIES)}")
    semester.per_day = float(late.get("per_day", 0.0))
    semester.most = float(late.get("most", 1.0))
    semester.after_days = float(late["after_days"]) if "after_days" in late else None
    semester.grace_minutes = float(late.get("grace_minutes", 0.0))
    if semester.policy == "zero-after" and semester.after_days is None:
        semester.after_days = 0.0
    for student, lessons in (data.get("extensions") or {}).items():
        for lesson, value in (lessons or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                if lesson not in semester.due:
                    raise SemesterError(f"{path} [extensions.{student}] {lesson}: {value} days after a due date [due] does not give")
                semester.extensions[(student, lesson)] = semester.due[lesson] + datetime.timedelta(days=float(value))
            else:
                semester.extensions[(student, lesson)] = _when(value, f"{path} [extensions.{student}] {lesson}")
    for student, lessons in (data.get("excused") or {}).items():
        semester.excused |= {(student, lesson) for lesson in lessons}
    return semester


def assess(result, semester: Semester) -> None:
    """Write on ``result`` (a `SubmissionResult`) whether it was late and what that costs: ``result.late`` (None when on
    time or with no due date) and ``result.excused``. The one place a penalty is decided."""
    result.excused = (result.student, result.lesson) in semester.excused
    result.late = None
    due, extended = semester.due_for(result.student, result.lesson)
    if due is None or not result.submitted_at or result.excused:
        return
    try:
        handed = datetime.datetime.fromisoformat(result.submitted_at)
    except ValueError:
        return
    handed = handed if handed.tzinfo else handed.astimezone()
    hours = (handed - due).total_seconds() / 3600
    if hours <= semester.grace_minutes / 60:
        return
    days = math.ceil(hours / 24)
    top = result.raw_score
    if semester.policy == "none":
        penalty = 0.0
    elif semester.after_days is not None and hours > semester.after_days * 24:
        penalty = top
    elif semester.policy == "per-day":
        penalty = min(semester.most, semester.per_day * days) * result.max_score
    else:
        penalty = 0.0
    result.late = {"submitted": handed.isoformat(timespec="minutes"), "due": due.isoformat(timespec="minutes"),
                   "extended": extended, "hours": round(hours, 2), "days": days, "penalty": round(min(penalty, top), 2),
                   "policy": semester.describe(), "how": result.submitted_how or "the file's time"}
