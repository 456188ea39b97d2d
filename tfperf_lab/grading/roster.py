"""The class list: who should hand in every lesson, under which names the platforms know them.

`read` takes the course's own roster CSV (``student,name,email,sis_id,section``; ``student`` is the submission folder's
name, the only column required) or a Canvas gradebook export as it comes (Grades > Export: ``Student, ID, SIS User ID,
SIS Login ID, Section, <assignments...>``, whose "Points Possible" and muted rows are skipped). A Canvas export gives
each student Canvas's user id and keeps its assignment columns, so grades can go back to Canvas's own assignments.

`Roster.find` matches a submission folder's name to a student: the ``student`` column, then the SIS login, the e-mail
address and its part before ``@``, the SIS user id, then the name; an optional mapping file (``folder,student``) says it
where no column does. The course's roster lives at ``autograder/roster.csv`` (`default_path`); ``--roster`` overrides it.
"""

from __future__ import annotations

import csv
import dataclasses
import pathlib
import re

CANVAS_STUDENT_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
CANVAS_POINTS_POSSIBLE = "Points Possible"
CANVAS_TITLE_AND_ID = re.compile(r"^(.*) \((\d+)\)$")
COLUMNS = ("student", "name", "email", "sis_id", "section")


class RosterError(ValueError):
    """A roster that cannot be read: the message says why and what the file should hold."""


@dataclasses.dataclass(frozen=True)
class Student:
    """One student of the class. ``id`` is the name grading knows them by (their submission folder's)."""

    id: str
    name: str = ""
    email: str = ""
    sis_id: str = ""
    section: str = ""
    login: str = ""
    canvas_id: str = ""  # Canvas's user id, from a Canvas gradebook export

    def keys(self) -> list[str]:
        """Every name a submission folder may carry for this student, most specific first."""
        local = self.email.split("@")[0] if "@" in self.email else ""
        return [key for key in (self.id, self.login, self.email, local, self.sis_id, self.canvas_id, self.name) if key]


@dataclasses.dataclass
class Roster:
    """The class list, in its file's order; ``header`` and ``rows`` keep a Canvas export's columns as they came."""

    students: list[Student]
    source: str = "roster"  # "roster" (the course's CSV) or "canvas" (a Canvas gradebook export)
    header: list[str] = dataclasses.field(default_factory=list)
    rows: list[dict[str, str]] = dataclasses.field(default_factory=list)
    mapping: dict[str, str] = dataclasses.field(default_factory=dict)  # folder name -> student id

    @property
    def ids(self) -> list[str]:
        return [student.id for student in self.students]

    def find(self, folder: str) -> Student | None:
        """The student a submission folder's name belongs to (the mapping first, then every key of every student)."""
        wanted = self.mapping.get(folder, folder).strip()
        for rank in range(7):
            for student in self.students:
                keys = student.keys()
                if rank < len(keys) and keys[rank].lower() == wanted.lower():
                    return student
        return None

    def row(self, student: Student) -> dict[str, str] | None:
        """A Canvas export's row of ``student``."""
        return next((row for row in self.rows if (row.get("ID") or "").strip() == student.canvas_id), None) if student.canvas_id else None

    def assignment_column(self, lesson_id: str, title: str | None) -> str | None:
        """The header of a Canvas export's assignment named as the lesson's id or title (Canvas adds " (ID)"), or None."""
        for header in self.header:
            match = CANVAS_TITLE_AND_ID.match(header)
            name = match.group(1) if match else header
            if name.strip() in {lesson_id, title}:
                return header
        return None


def default_path(course) -> pathlib.Path:
    """Where the course keeps its roster: ``autograder/roster.csv``."""
    return course.autograder / "roster.csv"


def _table(path: pathlib.Path) -> list[list[str]]:
    try:
        with pathlib.Path(path).open(encoding="utf-8-sig", newline="") as handle:
            return [row for row in csv.reader(handle)]
    except OSError as error:
        raise RosterError(f"the roster {path} cannot be read: {error.strerror or error}") from None
    except (UnicodeDecodeError, csv.Error) as error:
        raise RosterError(f"the roster {path} is not a CSV file ({error})") from None


def read(path: pathlib.Path, mapping: pathlib.Path | None = None) -> Roster:
    """The roster in ``path`` (the course's CSV or a Canvas gradebook export), with ``mapping`` (``folder,student``) if given.

    Raises:
        RosterError: no such file, no ``student`` column and not a Canvas export, a student listed twice.
    """
    table = _table(path)
    if not table:
        raise RosterError(f"the roster {path} is empty")
    header = [cell.strip() for cell in table[0]]
    if len(header) >= 2 and "Student" in header[0] and header[1] == "ID":
        roster = _canvas(header, table[1:])
    elif "student" in [cell.lower() for cell in header]:
        names = [cell.lower() for cell in header]
        students = []
        for line in table[1:]:
            row = dict(zip(names, (cell.strip() for cell in line)))
            if row.get("student"):
                students.append(Student(row["student"], row.get("name", ""), row.get("email", ""), row.get("sis_id", ""),
                                        row.get("section", ""), row.get("login", "")))
        roster = Roster(students)
    else:
        raise RosterError(f"the roster {path} has no 'student' column and is not a Canvas gradebook export: give it the "
                          f"columns {','.join(COLUMNS)} (only 'student', the submission folder's name, is required), or "
                          f"Canvas's Grades > Export file as it comes")
    seen: set[str] = set()
    for student in roster.students:
        if student.id in seen:
            raise RosterError(f"the roster {path} lists {student.id!r} twice")
        seen.add(student.id)
    if mapping is not None:
        for line in _table(mapping)[1:]:
            if len(line) >= 2 and line[0].strip():
                roster.mapping[line[0].strip()] = line[1].strip()
    return roster


def _canvas(header: list[str], lines: list[list[str]]) -> Roster:
    rows, students = [], []
    for line in lines:
        first = line[0] if line else ""
        if CANVAS_POINTS_POSSIBLE in first or not any(cell.strip() for cell in line[:2]):
            continue
        if all(re.fullmatch(r"\s*(Muted|Manual Posting.*)?\s*", cell or "", flags=re.I) for cell in line):
            continue
        row = dict(zip(header, line))
        rows.append(row)
        login = (row.get("SIS Login ID") or "").strip()
        students.append(Student(id=login or (row.get("SIS User ID") or "").strip() or (row.get("ID") or "").strip(),
                                name=(row.get("Student") or "").strip(), sis_id=(row.get("SIS User ID") or "").strip(),
                                section=(row.get("Section") or "").strip(), login=login,
                                canvas_id=(row.get("ID") or "").strip()))
    return Roster(students, "canvas", header, rows)
