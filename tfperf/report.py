"""Measurement records: what a lesson measured, kept for the course report and the grading report.

A notebook calls `record` on its headline comparisons. When the ``TFPERF_RECORD`` environment
variable names a file (the course report and the autograder set it), each record is appended
there as one JSON line; otherwise `record` only returns the comparison, so a learner's notebook
is unaffected. Introduced in lesson 01.
"""

from __future__ import annotations

import json
import os
import pathlib
import time

from . import timing

RECORD_VARIABLE = "TFPERF_RECORD"

__all__ = ["RECORD_VARIABLE", "load_records", "record"]


def record(name: str, comparison: timing.Comparison, *, claim: str | None = None, technique: str | None = None) -> timing.Comparison:
    """Keep a headline measurement for the course report; returns ``comparison`` unchanged.

    Args:
        name: Short identifier, unique within the lesson (e.g. ``"tiny_graph_private_handle"``).
        comparison: The result of `tfperf.timing.compare`.
        claim: What the source article says about this effect, quoted briefly.
        technique: What the candidate does differently from the baseline.
    """
    if not isinstance(comparison, timing.Comparison):
        raise TypeError(f"record() takes a Comparison from tfperf.timing.compare; got {type(comparison).__name__}")
    path = os.environ.get(RECORD_VARIABLE)
    if path:
        entry = {"name": name, "claim": claim, "technique": technique, "time": time.time(), **comparison.to_dict()}
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")
    return comparison


def load_records(path: str | os.PathLike) -> list[dict]:
    """Read the records a run appended to ``path`` (an empty list if there is no file)."""
    file = pathlib.Path(path)
    if not file.exists():
        return []
    records = []
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise ValueError(f"{file}: line {number} is not a JSON record ({error})") from None
    return records
