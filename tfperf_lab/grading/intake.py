"""Intake: from what students handed in to ``submissions/<student>/<lesson>.ipynb``, with the time each was handed in.

The time a submission was handed in decides lateness (`tfperf_lab.grading.semester`). `submission_time` reads it, most
trusted first: the intake's record (``submissions/<student>/.submitted.json``, ``{"<file name>": "<ISO 8601 time>"}``,
which `tfperf-lab collect` writes from the platform's own records), nbgrader's exchange (``timestamp.txt`` beside the
notebook), else the file's modification time, said so on the row (a copy or an unzip can change it).

`collect` (``tfperf-lab collect SOURCE --into submissions/``) places a platform's bulk download there and writes that
record: Canvas's "Download Submissions" zip (``<lastfirst>[_LATE]_<user id>_<submission id>_<file>``; the student by
the roster's Canvas user id, the time the zip entry's, as Canvas's zip carries no other), Gradescope's "Export
Submissions" (``submission_metadata.yml`` and ``submission_<id>/``; the student by e-mail or SID, the time its
``:created_at``) and nbgrader's exchange (``inbound/<student>+<lesson>+<time>+<random>/``; the time its
``timestamp.txt``). The latest copy of a student's lesson wins; every file it could not place is named with the reason.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime
import json
import os
import pathlib
import re
import stat
import tempfile
import zipfile
from typing import Callable

from . import roster as roster_

RECORD = ".submitted.json"
HOW = {"record": "the intake's record", "exchange": "nbgrader's timestamp.txt", "file": "the file's time"}


def _parse(text: str) -> datetime.datetime | None:
    text = text.strip().replace(" UTC", "+00:00")
    try:
        when = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo else when.astimezone()


def submission_time(path: pathlib.Path, student_folder: pathlib.Path) -> tuple[str | None, str | None]:
    """(ISO 8601 time, where it comes from) of a submitted file: the intake's record, nbgrader's timestamp, the file's time."""
    try:
        record = json.loads((student_folder / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = {}
    key = str(path.relative_to(student_folder)) if path.is_relative_to(student_folder) else path.name
    when = _parse(record.get(key, "")) if isinstance(record, dict) and isinstance(record.get(key, ""), str) else None
    if when is not None:
        return when.isoformat(timespec="seconds"), HOW["record"]
    stamp = path.parent / "timestamp.txt"
    if stamp.is_file() and not stamp.is_symlink():
        try:
            when = _parse(stamp.read_text(encoding="utf-8")[:64])
        except (OSError, UnicodeDecodeError):
            when = None
        if when is not None:
            return when.isoformat(timespec="seconds"), HOW["exchange"]
    try:
        mtime = path.lstat().st_mtime
    except OSError:
        return None, None
    return datetime.datetime.fromtimestamp(mtime).astimezone().isoformat(timespec="seconds"), HOW["file"]


def write_record(student_folder: pathlib.Path, times: dict[str, str]) -> pathlib.Path:
    """Add ``{file name: ISO time}`` to a student folder's intake record."""
    target = student_folder / RECORD
    try:
        record = json.loads(target.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = {}
    record.update(times)
    target.write_text(json.dumps(record, indent=1, sort_keys=True), encoding="utf-8")
    return target


# `tfperf-lab collect`: a platform's bulk download -> submissions/<student>/<lesson>.ipynb, with its time.

# Canvas's "Download Submissions": <lastfirst>[_LATE]_<user id>_<submission id>_<original name>, the original name with
# "-1", "-2" before its extension for a resubmission (and underscores of its own).
CANVAS_NAME = re.compile(r"^(?P<who>.+?)(?P<late>_LATE)?_(?P<user>\d+)_(?P<submission>\d+)_(?P<file>.+)$")
RESUBMISSION = re.compile(r"^(?P<stem>.*?)-(?P<n>\d+)$")
GRADESCOPE_METADATA = "submission_metadata.yml"
GRADESCOPE_FOLDER = re.compile(r"^submission_\d+$")
EXCHANGE_FOLDER = re.compile(r"^(?P<student>.+)\+(?P<lesson>[^+]+)\+(?P<time>[^+]+)\+(?P<random>[^+]*)$")
TIME_HOW = {"zip": "the zip's time", "file": "the file's time", "gradescope": "Gradescope's created_at",
            "exchange": "nbgrader's timestamp", "exchange-name": "the time in nbgrader's folder name"}


class IntakeError(ValueError):
    """A source `collect` cannot read at all (not a download it knows, a zip that does not open): the message says why."""


@dataclasses.dataclass
class Found:
    """One file of the source: where it is (``origin``, as named there), whose and which lesson's it is, when it was
    handed in, or why it cannot be placed (``problem``)."""

    origin: str
    student: str | None = None
    lesson: str | None = None
    when: datetime.datetime | None = None
    how: str = ""
    order: tuple = ()
    read: Callable[[], bytes] | None = None
    problem: str | None = None

    @property
    def time(self) -> str:
        return self.when.isoformat(timespec="seconds") if self.when else "no time"


@dataclasses.dataclass
class Collected:
    """What one `collect` did: ``placed`` (Found, target, what it replaced), ``older`` (lines: a copy not placed because a
    later one of the same student and lesson was kept), ``unplaced`` ((origin, reason): the files it could not place)."""

    form: str
    placed: list[tuple[Found, pathlib.Path, str]] = dataclasses.field(default_factory=list)
    older: list[str] = dataclasses.field(default_factory=list)
    unplaced: list[tuple[str, str]] = dataclasses.field(default_factory=list)

    def lines(self) -> list[str]:
        """One line per placed file, per older copy left, per file not placed (``NOT PLACED: <file>: <why>``), then a count."""
        said = [f"placed {target} <- {found.origin} (submitted {found.time}, {found.how}){note}"
                for found, target, note in self.placed]
        said += self.older
        said += [f"NOT PLACED: {origin}: {reason}" for origin, reason in self.unplaced]
        said.append(f"{self.form}: placed {len(self.placed)}, older copies left {len(self.older)}, "
                    f"NOT PLACED {len(self.unplaced)}")
        return said


def _mapping(path: pathlib.Path | None) -> dict[str, str]:
    """A mapping file's ``folder,student`` lines (its first line is the header, as `roster.read` reads it)."""
    if path is None:
        return {}
    try:
        with pathlib.Path(path).open(encoding="utf-8-sig", newline="") as handle:
            table = list(csv.reader(handle))
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise roster_.RosterError(f"the mapping {path} cannot be read: {error}") from None
    return {line[0].strip(): line[1].strip() for line in table[1:] if len(line) >= 2 and line[0].strip()}


def load_roster(course, path: pathlib.Path | None, mapping: pathlib.Path | None) -> roster_.Roster:
    """The roster ``path`` (else the course's ``autograder/roster.csv`` if there, else none) with ``mapping``."""
    if path is None and course is not None and roster_.default_path(course).exists():
        path = roster_.default_path(course)
    if path is not None:
        return roster_.read(pathlib.Path(path), pathlib.Path(mapping) if mapping else None)
    return roster_.Roster([], source="none", mapping=_mapping(pathlib.Path(mapping) if mapping else None))


class _Students:
    """Who a platform's names belong to: the mapping first, then the roster's columns (``how`` says which)."""

    def __init__(self, roster: roster_.Roster):
        self.roster = roster

    def _checked(self, student: str) -> tuple[str | None, str | None]:
        from . import untrusted

        try:
            return untrusted.check_student_id(student), None
        except untrusted.UntrustedInput as error:
            return None, str(error)

    def mapped(self, keys: list[str]) -> tuple[str | None, str | None] | None:
        for key in (k for k in keys if k):
            if key in self.roster.mapping:
                if not self.roster.students:
                    return self._checked(self.roster.mapping[key])
                student = self.roster.find(key)
                if student is None:
                    return None, f"the mapping gives {key!r} as {self.roster.mapping[key]!r}, who is not on the roster"
                return self._checked(student.id)
        return None

    def canvas(self, user_id: str, who: str) -> tuple[str | None, str | None]:
        found = self.mapped([user_id, who])
        if found is not None:
            return found
        student = next((s for s in self.roster.students if s.canvas_id == user_id), None)
        if student is not None:
            return self._checked(student.id)
        return None, (f"no roster match for Canvas user id {user_id} ({who}): give Canvas's gradebook export as --roster, "
                      f"or a --mapping line '{user_id},<student>'")

    def gradescope(self, submitter: dict) -> tuple[str | None, str | None]:
        email, sid, name = (str(submitter.get(key) or "").strip() for key in (":email", ":sid", ":name"))
        found = self.mapped([email, sid, name])
        if found is not None:
            return found
        for key in (email, sid):
            student = self.roster.find(key) if key else None
            if student is not None:
                return self._checked(student.id)
        return None, (f"no roster match for {name or 'a submitter'} (email {email or '-'}, sid {sid or '-'}): add them to "
                      f"the roster (--roster) or a --mapping line '{email or sid},<student>'")

    def exchange(self, name: str) -> tuple[str | None, str | None]:
        found = self.mapped([name])
        if found is not None:
            return found
        if not self.roster.students:
            return self._checked(name)
        student = self.roster.find(name)
        if student is None:
            return None, f"no roster match for {name!r}: add them to the roster or a --mapping line '{name},<student>'"
        return self._checked(student.id)


def lesson_from_name(course, name: str) -> tuple[str | None, str | None]:
    """(lesson id, None) named by a file name (a lesson's id, its name without the number, or its two-digit number in
    it), else (None, why)."""
    stem = pathlib.PurePosixPath(name).name.lower()
    stem = stem[: -len(".ipynb")] if stem.endswith(".ipynb") else stem
    match = RESUBMISSION.match(stem)
    stem = match.group("stem") if match else stem
    lessons = list(course.lessons)
    for matches in ([lesson for lesson in lessons if lesson.id.lower() in stem],
                    [lesson for lesson in lessons if "_" in lesson.id and lesson.id.split("_", 1)[1].lower() in stem],
                    [lesson for lesson in lessons if lesson.id[:2] in set(re.findall(r"(?<!\d)\d{2}(?!\d)", stem))]):
        if len(matches) == 1:
            return matches[0].id, None
        if len(matches) > 1:
            return None, f"its name fits more than one lesson ({', '.join(m.id for m in matches)}): pass --lesson"
    return None, "its name names no lesson (a lesson id or its two-digit number): pass --lesson"


def _capped(handle) -> bytes:
    from . import untrusted

    data = handle.read(untrusted.MAX_NOTEBOOK_BYTES + 1)
    if len(data) > untrusted.MAX_NOTEBOOK_BYTES:
        raise untrusted.UntrustedInput(f"over the {untrusted.MAX_NOTEBOOK_BYTES // 2**20} MiB a lesson notebook can need")
    return data


def _unsafe_member(name: str) -> str | None:
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name) or ".." in parts or "\x00" in name:
        return "refused: its name in the zip points outside the folder (an absolute path or '..')"
    return None


def _zip_time(info: zipfile.ZipInfo) -> datetime.datetime:
    """An entry's time: the extended timestamp (UTC) if the zip has one, else its DOS time, read as this machine's."""
    extra, at = info.extra, 0
    while at + 4 <= len(extra):
        kind, size = int.from_bytes(extra[at:at + 2], "little"), int.from_bytes(extra[at + 2:at + 4], "little")
        body = extra[at + 4:at + 4 + size]
        if kind == 0x5455 and len(body) >= 5 and body[0] & 1:
            return datetime.datetime.fromtimestamp(int.from_bytes(body[1:5], "little"), datetime.timezone.utc)
        at += 4 + size
    return datetime.datetime(*info.date_time).astimezone()


class _Zip:
    """A zip's files, read by entry, never extracted: no name of it becomes a path here."""

    def __init__(self, path: pathlib.Path):
        try:
            self.archive = zipfile.ZipFile(path)
            self.infos = [info for info in self.archive.infolist() if not info.is_dir()]
        except (OSError, zipfile.BadZipFile) as error:
            raise IntakeError(f"{path} is not a zip that opens: {error}") from None

    def problem(self, info: zipfile.ZipInfo) -> str | None:
        if stat.S_ISLNK(info.external_attr >> 16):
            return "refused: a link inside the zip"
        return _unsafe_member(info.filename)

    def reader(self, info: zipfile.ZipInfo) -> Callable[[], bytes]:
        def read() -> bytes:
            with self.archive.open(info) as handle:
                return _capped(handle)

        return read


def _file_reader(path: pathlib.Path) -> Callable[[], bytes]:
    def read() -> bytes:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(descriptor, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise OSError(f"{path.name} is not a regular file")
            return _capped(handle)

    return read


def _files(folder: pathlib.Path) -> tuple[list[pathlib.Path], list[pathlib.Path]]:
    """(regular files, links) under ``folder``, never following a link; checkpoints skipped."""
    files, links = [], []
    for root, dirs, names in os.walk(folder, followlinks=False):
        here = pathlib.Path(root)
        links += [here / d for d in dirs if (here / d).is_symlink()]
        dirs[:] = sorted(d for d in dirs if not (here / d).is_symlink() and d != ".ipynb_checkpoints")
        for name in sorted(names):
            (links if (here / name).is_symlink() else files).append(here / name)
    return files, links


def _file_time(path: pathlib.Path) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(path.lstat().st_mtime).astimezone()


def _canvas_entry(course, students: _Students, lesson: str | None, name: str, found: Found) -> Found:
    """The student, lesson and order of a Canvas file called ``name`` (its base name)."""
    match = CANVAS_NAME.match(name)
    if not match:
        found.problem = "not named as Canvas names a submission (<name>[_LATE]_<user id>_<submission id>_<file>)"
        return found
    original = match.group("file")
    if not original.lower().endswith(".ipynb"):
        found.problem = f"not a notebook ({original})"
        return found
    found.student, why = students.canvas(match.group("user"), match.group("who"))
    found.lesson, lesson_why = (lesson, None) if lesson else lesson_from_name(course, original)
    resubmission = RESUBMISSION.match(original[: -len(".ipynb")])
    found.order = (int(match.group("submission")), int(resubmission.group("n")) if resubmission else 0)
    found.problem = why or lesson_why
    return found


def _canvas(course, source: pathlib.Path, students: _Students, lesson: str | None, archive: _Zip | None) -> list[Found]:
    found = []
    if archive is not None:
        for info in archive.infos:
            item = Found(info.filename, how=TIME_HOW["zip"])
            item.problem = archive.problem(info)
            if item.problem is None:
                item.when, item.read = _zip_time(info), archive.reader(info)
                _canvas_entry(course, students, lesson, pathlib.PurePosixPath(info.filename).name, item)
            found.append(item)
        return found
    files, links = _files(source)
    found += [Found(str(path.relative_to(source)), problem="refused: a link") for path in links]
    for path in files:
        item = Found(str(path.relative_to(source)), when=_file_time(path), how=TIME_HOW["file"], read=_file_reader(path))
        found.append(_canvas_entry(course, students, lesson, path.name, item))
    return found


def _yaml_value(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text.split(" #", 1)[0].strip()


def parse_gradescope_metadata(text: str) -> dict[str, dict]:
    """Gradescope's ``submission_metadata.yml``: ``{submission_<id>: {":submitters": [{":name", ":sid", ":email"}],
    ":created_at": time}}``, with PyYAML if installed (unknown tags read as plain values), else the few keys read here."""
    try:
        import yaml
    except ImportError:
        yaml = None
    if yaml is not None:
        class Loader(yaml.SafeLoader):
            pass

        def plain(loader, suffix, node):
            if isinstance(node, yaml.MappingNode):
                return loader.construct_mapping(node, deep=True)
            if isinstance(node, yaml.SequenceNode):
                return loader.construct_sequence(node, deep=True)
            return loader.construct_scalar(node)

        Loader.add_multi_constructor("!", plain)
        try:
            data = yaml.load(text, Loader=Loader)  # noqa: S506  (a SafeLoader; unknown tags become plain values)
        except yaml.YAMLError:
            data = None
        if isinstance(data, dict):
            return {str(key): value for key, value in data.items() if isinstance(value, dict)}
    return _tolerant_metadata(text)


def _tolerant_metadata(text: str) -> dict[str, dict]:
    """The keys `collect` needs, line by line: each top-level ``submission_<id>:``, its own ``:created_at:`` and its
    ``:submitters:`` list (``- :name:``, ``:sid:``, ``:email:``)."""
    data: dict[str, dict] = {}
    current, child, in_submitters, submitter_indent = None, None, False, None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        body = line.strip()
        if indent == 0:
            key = body.rstrip(":").strip("'\"")
            current = data.setdefault(key, {}) if body.endswith(":") else None
            child, in_submitters = None, False
            continue
        if current is None:
            continue
        if child is None:
            child = indent
        if indent <= child and not body.startswith("- "):
            in_submitters = indent == child and body.startswith(":submitters:")
            if in_submitters:
                current[":submitters"] = []
            elif indent == child and body.startswith(":created_at:"):
                current[":created_at"] = _yaml_value(body[len(":created_at:"):])
            continue
        if in_submitters:
            if body.startswith("- "):
                current[":submitters"].append({})
                submitter_indent = indent
                body = body[2:].strip()
            elif submitter_indent is not None and indent <= submitter_indent:
                continue
            match = re.match(r"^(:\w+):\s*(.*)$", body)
            if match and current[":submitters"]:
                current[":submitters"][-1][match.group(1)] = _yaml_value(match.group(2))
    return data


def _gradescope_time(value) -> datetime.datetime | None:
    if isinstance(value, datetime.datetime):
        return value if value.tzinfo else value.astimezone()
    if isinstance(value, str):
        text = re.sub(r"(\.\d{6})\d+", r"\1", value.strip())  # Ruby writes nanoseconds
        text = re.sub(r" ([+-]\d{2}:?\d{2})$", r"\1", text)
        return _parse(text)
    return None


def _gradescope(course, source: pathlib.Path, students: _Students, lesson: str | None, archive: _Zip | None) -> list[Found]:
    """One Found per submitter and file of each ``submission_<id>/`` (a group's file goes to every member)."""
    entries: list[tuple[str, str, Callable[[], bytes] | None, str | None, Callable[[], datetime.datetime]]] = []
    if archive is not None:
        metas = sorted((info for info in archive.infos if pathlib.PurePosixPath(info.filename).name == GRADESCOPE_METADATA
                        and not archive.problem(info)), key=lambda info: info.filename.count("/"))
        prefix = metas[0].filename[: -len(GRADESCOPE_METADATA)]
        try:
            text = archive.reader(metas[0])().decode("utf-8", errors="replace")
        except Exception as error:  # noqa: BLE001  (a zip entry that does not read: said, not raised)
            raise IntakeError(f"{source}'s {metas[0].filename} cannot be read: {error}") from None
        for info in archive.infos:
            if info is metas[0]:
                continue
            problem = archive.problem(info)
            inner = info.filename[len(prefix):] if info.filename.startswith(prefix) else info.filename
            entries.append((info.filename, inner, None if problem else archive.reader(info), problem,
                            lambda info=info: _zip_time(info)))
    else:
        candidates = sorted([source / GRADESCOPE_METADATA] + list(source.glob(f"*/{GRADESCOPE_METADATA}")),
                            key=lambda path: len(path.parts))
        meta = next(path for path in candidates if path.is_file() and not path.is_symlink())
        text = meta.read_text(encoding="utf-8", errors="replace")
        files, links = _files(meta.parent)
        for path in links:
            entries.append((str(path.relative_to(source)), "", None, "refused: a link", lambda: None))
        for path in files:
            if path != meta:
                entries.append((str(path.relative_to(source)), str(path.relative_to(meta.parent)), _file_reader(path), None,
                                lambda path=path: _file_time(path)))
    metadata = parse_gradescope_metadata(text)
    found = []
    for origin, inner, read, problem, file_time in entries:
        if problem:
            found.append(Found(origin, problem=problem))
            continue
        folder, _, rest = inner.partition("/")
        if not GRADESCOPE_FOLDER.match(folder) or not rest:
            found.append(Found(origin, problem="not in a submission_<id>/ folder of the export"))
            continue
        if not rest.lower().endswith(".ipynb"):
            found.append(Found(origin, problem=f"not a notebook ({pathlib.PurePosixPath(rest).name})"))
            continue
        record = metadata.get(folder)
        if not isinstance(record, dict):
            found.append(Found(origin, problem=f"{folder} is not in {GRADESCOPE_METADATA}, so nobody's"))
            continue
        when = _gradescope_time(record.get(":created_at"))
        how = TIME_HOW["gradescope"] if when else TIME_HOW["zip" if archive is not None else "file"]
        when = when or file_time()
        the_lesson, lesson_why = (lesson, None) if lesson else lesson_from_name(course, rest)
        submitters = [s for s in (record.get(":submitters") or []) if isinstance(s, dict)]
        if not submitters:
            found.append(Found(origin, problem=f"{folder} names no submitter in {GRADESCOPE_METADATA}"))
        for submitter in submitters:
            student, why = students.gradescope(submitter)
            label = f"{origin} ({submitter.get(':name') or submitter.get(':email') or '?'})" if len(submitters) > 1 else origin
            number = int(folder.split("_", 1)[1])
            found.append(Found(label, student, the_lesson, when, how, (number,), read, why or lesson_why))
    return found


def _inbound(source: pathlib.Path, course_id: str | None) -> pathlib.Path | None:
    """The exchange's inbound folder ``source`` names: itself, ``source/inbound``, ``source/<course>/inbound``."""
    if source.name == "inbound" or any(EXCHANGE_FOLDER.match(p.name) for p in source.iterdir() if p.is_dir()):
        return source
    for candidate in [source / "inbound", *([source / course_id / "inbound"] if course_id else [])]:
        if candidate.is_dir() and not candidate.is_symlink():
            return candidate
    found = [p for p in source.glob("*/inbound") if p.is_dir() and not p.is_symlink()]
    return found[0] if len(found) == 1 else None


def _exchange(course, inbound: pathlib.Path, students: _Students, lesson: str | None,
              older: list[str]) -> list[Found]:
    """The latest inbound folder of each student and lesson (the older ones named in ``older``), file by file."""
    lessons = {item.id for item in course.lessons}
    latest: dict[tuple[str, str], tuple] = {}
    found = []
    for folder in sorted(inbound.iterdir()):
        match = EXCHANGE_FOLDER.match(folder.name)
        if folder.is_symlink():
            found.append(Found(folder.name, problem="refused: a link in the exchange"))
            continue
        if not folder.is_dir() or not match:
            found.append(Found(folder.name, problem="not an nbgrader submission (<student>+<lesson>+<time>+<random>/)"))
            continue
        if lesson and match.group("lesson") != lesson:
            continue  # another lesson's: --lesson collects one
        when, how = None, TIME_HOW["exchange"]
        stamp = folder / "timestamp.txt"
        if stamp.is_file() and not stamp.is_symlink():
            try:
                with os.fdopen(os.open(stamp, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)), "rb") as handle:
                    when = _parse(handle.read(64).decode("utf-8", errors="replace"))
            except OSError:
                when = None
        if when is None:
            when, how = _parse(match.group("time")), TIME_HOW["exchange-name"]
        if when is None:
            when, how = _file_time(folder), TIME_HOW["file"]
        key = (match.group("student"), match.group("lesson"))
        entry = (when, folder.name, folder, how)
        if key in latest:
            old, new = sorted([latest[key], entry], key=lambda item: (item[0], item[1]))
            older.append(f"older: {old[1]} (submitted {old[0].isoformat(timespec='seconds')}): kept {new[1]} "
                         f"(submitted {new[0].isoformat(timespec='seconds')})")
            entry = new
        latest[key] = entry
    for (name, lesson_id), (when, _, folder, how) in sorted(latest.items()):
        student, why = students.exchange(name)
        if lesson_id not in lessons:
            why = why or f"{lesson_id!r} is not a lesson of this course"
        files, links = _files(folder)
        found += [Found(str(path.relative_to(inbound)), problem="refused: a link") for path in links]
        for path in files:
            origin = str(path.relative_to(inbound))
            if path.name == "timestamp.txt" and path.parent == folder:
                continue
            if path.suffix != ".ipynb":
                found.append(Found(origin, problem=f"not a notebook ({path.name})"))
            elif path.parent != folder or path.name != f"{lesson_id}.ipynb":
                found.append(Found(origin, problem=f"not the lesson's notebook ({lesson_id}.ipynb)"))
            else:
                found.append(Found(origin, student, lesson_id, when, how, (folder.name,), _file_reader(path), why))
    return found


def detect(source: pathlib.Path, course_id: str | None = None) -> str:
    """``"canvas"``, ``"gradescope"`` or ``"exchange"``: the download ``source`` (a .zip or a folder) is.

    Raises:
        IntakeError: no such file or folder, or none of those.
    """
    if source.is_file() and zipfile.is_zipfile(source):
        archive = _Zip(source)
        names = archive.infos
        archive.archive.close()
        if any(pathlib.PurePosixPath(info.filename).name == GRADESCOPE_METADATA for info in names):
            return "gradescope"
        if any(CANVAS_NAME.match(pathlib.PurePosixPath(info.filename).name) for info in names):
            return "canvas"
        raise IntakeError(f"{source} is a zip of neither Canvas's Download Submissions (<name>_<user id>_<submission id>_"
                          f"<file>) nor Gradescope's Export Submissions ({GRADESCOPE_METADATA})")
    if not source.is_dir():
        raise IntakeError(f"{source} is neither a .zip nor a folder" if source.exists() else f"no such file or folder: {source}")
    if (source / GRADESCOPE_METADATA).is_file() or any(source.glob(f"*/{GRADESCOPE_METADATA}")):
        return "gradescope"
    if _inbound(source, course_id) is not None:
        return "exchange"
    if any(CANVAS_NAME.match(path.name) for path in source.iterdir()):
        return "canvas"
    raise IntakeError(f"{source} is none of: an unzipped Canvas download, a Gradescope export ({GRADESCOPE_METADATA}), "
                      f"nbgrader's exchange (<exchange>/<course>/inbound/<student>+<lesson>+<time>+<random>/)")


def _recorded(target: pathlib.Path, folder: pathlib.Path) -> datetime.datetime | None:
    when, _ = submission_time(target, folder)
    return datetime.datetime.fromisoformat(when) if when else None


def collect(course, source: pathlib.Path, into: pathlib.Path, *, roster: roster_.Roster | None = None,
            lesson: str | None = None) -> Collected:
    """Place the notebooks of ``source`` (Canvas's or Gradescope's download, a .zip or its folder, or nbgrader's
    exchange) as ``into/<student>/<lesson>.ipynb``, each with its time in the student's intake record.

    The latest copy of a student's lesson wins, also against one already in ``into`` (never replaced by an older one).
    Nothing in ``source`` is written; no name in it becomes a path (a zip's entries are read, never extracted); links are
    refused; a notebook is read up to the size grading accepts. Raises `IntakeError` for a source it cannot read at all.
    """
    source, into = pathlib.Path(source), pathlib.Path(into)
    form = detect(source, getattr(course, "id", None))
    if source.is_dir() and (into.resolve().is_relative_to(source.resolve()) or source.resolve().is_relative_to(into.resolve())):
        raise IntakeError(f"{into} and {source} overlap: collect into a folder outside the download (it is never written)")
    students = _Students(roster or roster_.Roster([], source="none"))
    done = Collected({"canvas": "Canvas", "gradescope": "Gradescope", "exchange": "nbgrader's exchange"}[form])
    archive = _Zip(source) if source.is_file() else None
    try:
        if form == "canvas":
            found = _canvas(course, source, students, lesson, archive)
        elif form == "gradescope":
            found = _gradescope(course, source, students, lesson, archive)
        else:
            found = _exchange(course, _inbound(source, getattr(course, "id", None)), students, lesson, done.older)
        _choose_and_place(found, into, done)
    finally:
        if archive is not None:
            archive.archive.close()
    return done


def _choose_and_place(found: list[Found], into: pathlib.Path, done: Collected) -> None:
    """The latest of each student's lesson (the others named in ``done.older``), placed; the rest named as not placed."""
    chosen: dict[tuple[str, str], Found] = {}
    for item in found:
        if item.problem or not (item.student and item.lesson and item.read):
            done.unplaced.append((item.origin, item.problem or "not placed"))
            continue
        key = (item.student, item.lesson)
        if key in chosen:
            old, new = sorted([chosen[key], item], key=lambda f: (f.when, f.order))
            done.older.append(f"older: {old.origin} (submitted {old.time}) for {key[0]}/{key[1]}: kept {new.origin} "
                              f"(submitted {new.time})")
            item = new
        chosen[key] = item
    for (student, lesson_id), item in sorted(chosen.items()):
        _place(item, into, student, lesson_id, done)


def _place(item: Found, into: pathlib.Path, student: str, lesson_id: str, done: Collected) -> None:
    from . import untrusted

    folder = into / student
    target = folder / f"{lesson_id}.ipynb"
    if folder.is_symlink() or target.is_symlink():
        done.unplaced.append((item.origin, f"refused: {folder if folder.is_symlink() else target} is a link"))
        return
    try:
        data = item.read()
    except untrusted.UntrustedInput as error:
        done.unplaced.append((item.origin, str(error)))
        return
    except (OSError, RuntimeError, zipfile.BadZipFile, EOFError, ValueError) as error:  # a damaged or encrypted entry
        done.unplaced.append((item.origin, f"cannot be read: {error}"))
        return
    note = ""
    if target.is_file():
        before = _recorded(target, folder)
        if before is not None and before > item.when:
            done.older.append(f"older: {item.origin} (submitted {item.time}): kept {target} already there (submitted "
                              f"{before.isoformat(timespec='seconds')})")
            return
        if before == item.when and target.read_bytes() == data:
            done.placed.append((item, target, "; already there, unchanged"))
            return
        note = f"; replaced the copy of {before.isoformat(timespec='seconds') if before else 'no time'}"
    into.mkdir(parents=True, exist_ok=True)
    folder.mkdir(exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".collect-", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        stamp = item.when.timestamp()
        os.utime(temporary, (stamp, stamp))
        os.replace(temporary, target)
    except BaseException:
        pathlib.Path(temporary).unlink(missing_ok=True)
        raise
    write_record(folder, {target.name: item.when.isoformat(timespec="seconds")})
    done.placed.append((item, target, note))
