"""Intake: from what students handed in to ``submissions/<student>/<lesson>.ipynb``, with the time each was handed in.

The time a submission was handed in decides lateness (`tfperf_lab.grading.semester`). `submission_time` reads it, most
trusted first: the intake's record (``submissions/<student>/.submitted.json``, ``{"<file name>": "<ISO 8601 time>"}``,
which `tfperf-lab collect` writes from the platform's own records), nbgrader's exchange (``timestamp.txt`` beside the
notebook), else the file's modification time, said so on the row (a copy or an unzip can change it).
"""

from __future__ import annotations

import datetime
import json
import pathlib

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
