"""Measurement records: what a lesson measured, one typed and versioned `Record` per headline comparison.

A notebook calls `record` on its headline comparisons (and `tfperf.assert_speedup` on its graded ones). When the
``TFPERF_RECORD`` environment variable names a file (the course report and the grader's sandbox set it), each record
is appended there as one JSON line (`Record.to_json`); otherwise `record` only returns the comparison, so a learner's
notebook is unaffected. The course report, the grader and the flake campaigns read them back with `load_records`.
Introduced in lesson 01.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import time

from . import present, timing

RECORD_VARIABLE = "TFPERF_RECORD"
FORMAT = 1  # bump when a field changes meaning; readers refuse formats they do not know

__all__ = ["FORMAT", "RECORD_VARIABLE", "Record", "load_records", "record"]


@dataclasses.dataclass(frozen=True)
class Record:
    """One measured comparison as it is kept: speedup with its interval, the verdict against a threshold, both sides."""

    name: str
    speedup: float
    ci: tuple[float, float]
    passed: bool | None = None
    threshold: float | None = None
    rounds: int = 0
    elapsed: float = 0.0
    claim: str | None = None
    technique: str | None = None
    baseline: dict = dataclasses.field(default_factory=dict)
    candidate: dict = dataclasses.field(default_factory=dict)
    environment: dict = dataclasses.field(default_factory=dict)
    time: float = 0.0
    format: int = FORMAT
    # the decision rule that computed ``ci`` and stopped the rounds (`tfperf.stats.RULE`; "" for records written before
    # rules had versions), and the rounds measured but not used, (position, baseline, candidate): with the kept samples
    # in ``baseline`` and ``candidate`` they give every round in order, for a replay under another rule
    rule: str = ""
    dropped: tuple = ()

    @classmethod
    def of(cls, name: str, comparison: timing.Comparison, *, claim: str | None = None, technique: str | None = None) -> "Record":
        data = comparison.to_dict()
        return cls(name, float(data["speedup"]), (float(data["ci"][0]), float(data["ci"][1])), data["passed"], data["threshold"],
                   int(data["rounds"]), float(data["elapsed"]), claim, technique, data["baseline"], data["candidate"],
                   data["environment"], time.time(), rule=data["rule"], dropped=tuple(tuple(d) for d in data["dropped"]))

    def to_dict(self) -> dict:
        return dataclasses.asdict(self) | {"ci": list(self.ci), "dropped": [list(d) for d in self.dropped]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), default=str)

    @classmethod
    def from_dict(cls, data: dict) -> "Record":
        """A record from its JSON data; raises ValueError for another format or a missing field."""
        if not isinstance(data, dict):
            raise ValueError(f"a record is a JSON object, not {type(data).__name__}")
        if data.get("format", FORMAT) != FORMAT:
            raise ValueError(f"record format {data.get('format')!r} is not {FORMAT}: written by another version of tfperf")
        known = {field.name for field in dataclasses.fields(cls)}
        try:
            values = {key: value for key, value in data.items() if key in known}
            values["ci"] = (float(data["ci"][0]), float(data["ci"][1]))
            values["speedup"] = float(data["speedup"])
            values["dropped"] = tuple(tuple(d) for d in data.get("dropped") or ())
            return cls(**values)
        except (KeyError, TypeError, IndexError) as error:
            raise ValueError(f"not a measurement record ({error})") from None

    @classmethod
    def from_json(cls, line: str) -> "Record":
        return cls.from_dict(json.loads(line))


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
    if claim:
        _CLAIMS[name] = claim
    path = os.environ.get(RECORD_VARIABLE)
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(Record.of(name, comparison, claim=claim, technique=technique).to_json() + "\n")
    return comparison


_CLAIMS: dict[str, str] = {}  # record name -> the claim this kernel recorded it with (`seen` hands it to `describe`)


def article_claim(claim: str | None) -> str | None:
    """``claim`` when it is something the article says, None for the course's notes on a claim ("not measured in the
    article", "(not discussed)")."""
    if not claim or claim.startswith(("not ", "(")):
        return None
    return claim


def parse_records(text: str, *, source: str = "records") -> list[Record]:
    """Records from JSON lines; raises ValueError naming the first bad line."""
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                records.append(Record.from_json(line))
            except (ValueError, RecursionError) as error:
                raise ValueError(f"{source}: line {number} is not a JSON record ({error})") from None
    return records


def load_records(path: str | os.PathLike) -> list[Record]:
    """Read the records a run appended to ``path`` (an empty list if there is no file)."""
    file = pathlib.Path(path)
    return parse_records(file.read_text(encoding="utf-8"), source=str(file)) if file.exists() else []


RANGES_FILE = pathlib.Path(__file__).with_name("ranges.json")


def recorded_words(faster: int, slower: int, none: int) -> str:
    """What the course's one rule said of a comparison's recorded runs, counted: "faster in all 5 recorded runs",
    "no measurable difference in any of the 5 recorded runs", "faster in 2, slower in 1 and no measurable difference
    in 2 of the 5 recorded runs". A run is faster or slower only when its whole interval lies above or below 1x
    (`tfperf.present.verdict`)."""
    runs = faster + slower + none
    counts = [(faster, "faster"), (slower, "slower"), (none, present.NO_DIFFERENCE)]
    alone = [word for count, word in counts if count == runs]
    if alone:
        return (f"{present.NO_DIFFERENCE} in any of the {runs} recorded runs" if alone[0] == present.NO_DIFFERENCE
                else f"{alone[0]} in all {runs} recorded runs")
    parts = [f"{word} in {count}" for count, word in counts if count]
    return f"{', '.join(parts[:-1])} and {parts[-1]} of the {runs} recorded runs"


class Seen(tuple):
    """Where one run of a comparison lands on the course's 2-core machine, from its recorded runs: ``(low, high)``, the
    range 9 runs in 10 fall in (`tfperf.stats.one_run_range`), with ``runs`` (how many recorded runs), ``profile``
    (the profile they ran in), when the runs kept their intervals, ``counts`` (how many the one rule called
    faster, slower, and neither), and ``claim``: what the article says of the effect, when it says something."""

    def __new__(cls, low: float, high: float, *, runs: int, profile: str, counts: tuple[int, int, int] | None = None,
                claim: str | None = None):
        self = super().__new__(cls, (float(low), float(high)))
        self.runs, self.profile, self.counts, self.claim = runs, profile, counts, claim
        return self

    @property
    def words(self) -> str | None:
        """`recorded_words` of the runs, or None when they kept no intervals."""
        return recorded_words(*self.counts) if self.counts else None

    @property
    def fragile(self) -> bool:
        """The rule called some recorded runs faster and others slower."""
        return bool(self.counts) and self.counts[0] > 0 and self.counts[1] > 0

    def __repr__(self) -> str:
        return f"Seen({self[0]:.3g}, {self[1]:.3g}, runs={self.runs}, profile={self.profile!r}, counts={self.counts})"


def seen(lesson: str, name: str, *, profile: str | None = None) -> Seen | None:
    """Where one run of the record ``name`` of ``lesson`` lands on the course's machine, from its recorded runs in
    your profile.

    The ranges come from ``tfperf/ranges.json``, generated by ``tfperf-lab ranges`` from the runs committed in
    ``docs/runs/<profile>/`` (each one a ``tfperf-lab run --profile ... --keep-run``), never typed by hand. A
    lesson passes the result to `tfperf.timing.Comparison.describe`, which says how many runs and which profile.

    Args:
        lesson: The lesson id, e.g. ``"10_capstone"``.
        name: The name the lesson records the comparison under (`record`).
        profile: ``"full"`` or ``"reduced"`` (default: `tfperf.env.profile`, the profile this notebook runs in).

    Returns:
        A `Seen` range, or None when fewer than three recorded runs of that profile measured it. Its ``claim`` is the
        article's claim this kernel recorded ``name`` with (`record`), when the article makes one.
    """
    from . import env

    profile = profile or env.profile()
    if not RANGES_FILE.exists():
        return None
    entry = json.loads(RANGES_FILE.read_text(encoding="utf-8")).get("profiles", {}).get(profile, {}).get(lesson, {}).get(name)
    if not entry or not entry.get("one_run"):
        return None
    counts = tuple(entry[word] for word in present.VERDICTS) if "faster" in entry else None
    return Seen(*entry["one_run"], runs=entry["runs"], profile=profile, counts=counts, claim=article_claim(_CLAIMS.get(name)))


__all__ += ["RANGES_FILE", "Seen", "recorded_words", "seen"]
