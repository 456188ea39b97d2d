"""Replay: decide recorded gradings again under any rule and threshold, and simulate thousands more from their rounds.

A flake campaign (`tfperf_lab.grading.flake`) keeps every grading's rounds as the grader measured them: each side's
seconds per call, kept and dropped rounds in order, calls per batch, the seconds the check took. This module

* re-decides each recorded grading (`decide`): the rule's loop run again on the recorded rounds, stopping where the
  rule would have stopped (a decision, the check's time budget, its round limit; a grading whose recorded rounds end
  before the rule decides counts as undecided, which fails, as the real check does when its budget runs out);
* simulates virtual gradings (`simulate`) by drawing blocks of consecutive recorded rounds (a moving-block bootstrap:
  a burst that spanned several rounds stays a burst) from the recorded gradings of one check, answer and load, and
  running the rule on them;
* counts the wrong outcomes (a reference that fails, an unoptimized answer that passes), with Clopper-Pearson bounds
  for the virtual gradings and, beside them, for the recorded ones (what twenty real gradings can bound: 14% at 0 of 20);
* tests itself (`calibrate`): every check's recorded reference rounds moved onto its threshold, so the true median ratio
  IS the threshold, then virtual gradings built four ways (`MODES`: independent rounds, blocks of 5 and of 20 rounds,
  blocks of 20 with the recorded gradings' offsets beyond their noise kept). A rule that holds its level passes at most the nominal
  share (2.5% at 95%) of them; where the dependent ways pass more than the independent one, the rounds' dependence is
  what the rule's proof does not cover (issue 53).

Time in a virtual grading is each round's batch time (calls x both sides' seconds per call), scaled by how much longer
the recorded grading took in all than its rounds did (warm-up, calibration, messaging), so the budget binds as it did.
Rules are "count" rules over units of kept rounds, single rounds or blocks of them (`Rule`, `tfperf.stats.blocks`):
pass when at least ``needed(n)`` of ``n`` units reach the threshold, fail when as many fall below it (`RULES`). A threshold change or a new rule is evaluated here in minutes;
a real campaign confirms it.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
from typing import Callable, Iterable

import numpy as np

from tfperf import stats, timing
from tfperf.units import upper

from ..course import notebook
from .timer import MIN_SPAN


def _one_look(n: int, alpha: float) -> int | None:
    """The exact one-look interval's count (`tfperf.stats.median_interval`), used after every round: what the
    sequence replaced, kept to show the difference."""
    k = stats.one_look_rank(n, round(alpha / 2, 12))
    return None if k < 0 else n - k


@dataclasses.dataclass(frozen=True)
class Rule:
    """A decision rule as replay runs it: ``needed(n, alpha)``, the fewest of ``n`` units on one side of the threshold
    that decide, and ``block_seconds``, the seconds of kept rounds a unit gathers (`tfperf.stats.blocks`; 0: every round
    is a unit)."""

    needed: Callable[[int, float], int | None]
    block_seconds: float = 0.0


# sign-cs-1: the sequence on single rounds (2026-12-04 to the switch to blocks); sign-cs-2 on blocks of rounds.
RULES: dict[str, Rule] = {"sign-cs-1": Rule(stats.needed), "sign-cs-2": Rule(stats.needed, stats.BLOCK_SECONDS),
                          "one-look": Rule(_one_look)}


def in_order(recorded: dict) -> tuple[np.ndarray, np.ndarray]:
    """A campaign row's ``gradings`` entry as its rounds ran: (baseline, candidate) seconds a call per round, and
    whether the grader kept it. The entry holds the kept rounds in ``baseline``/``candidate`` and the others in
    ``dropped`` as [position among all rounds, baseline, candidate]."""
    kept_pairs = list(zip(recorded["baseline"], recorded["candidate"]))
    dropped = {int(i): (b, c) for i, b, c in recorded.get("dropped", [])}
    rounds, flags, source = [], [], iter(kept_pairs)
    for position in range(len(kept_pairs) + len(dropped)):
        if position in dropped:
            rounds.append(dropped[position]), flags.append(False)
        else:
            rounds.append(next(source)), flags.append(True)
    return np.asarray(rounds, dtype=float).reshape(-1, 2), np.asarray(flags, dtype=bool)


@dataclasses.dataclass(frozen=True)
class Grading:
    """One recorded grading of one check: ``ratios`` and ``seconds`` (the batch's time, overhead folded in) of every
    round in order, ``kept`` whether the grader used it."""

    ratios: np.ndarray
    seconds: np.ndarray
    kept: np.ndarray
    scale: float = 1.0  # how much longer the grading took than its rounds: ``seconds`` is each round's time times this

    @classmethod
    def of(cls, recorded: dict) -> "Grading":
        """From a campaign row's ``gradings`` entry."""
        pairs, flags = in_order(recorded)
        calls = max(1, int(recorded.get("calls", 1)))
        seconds = pairs.sum(axis=1) * calls
        total = float(seconds.sum())
        scale = max(1.0, float(recorded.get("elapsed", 0.0)) / total) if total > 0 else 1.0
        return cls(pairs[:, 0] / pairs[:, 1], seconds * scale, flags, scale)

    def moved(self, factor: float) -> "Grading":
        """The same rounds with every ratio multiplied by ``factor``: the baseline's time kept and the candidate's
        changed to match, so a round of a slower candidate takes longer and the budget binds as it would."""
        ratios, seconds = _stretched(self.ratios, self.seconds, factor)
        return Grading(ratios, seconds, self.kept, self.scale)


def _stretched(ratios: np.ndarray, seconds: np.ndarray, factor) -> tuple[np.ndarray, np.ndarray]:
    """Ratios times ``factor`` (a number or an array that broadcasts), each round's seconds recomputed with its
    baseline's share held: baseline = seconds * r / (1 + r), and the new round takes baseline * (1 + 1 / r')."""
    baseline = seconds * ratios / (1 + ratios)
    moved = ratios * factor
    return moved, baseline * (1 + 1 / moved)


@dataclasses.dataclass(frozen=True)
class Check:
    """What decides a check, read from the instructor's test cell (defaults: `tfperf.timing.CheckOptions`)."""

    threshold: float
    budget: float = timing.CheckOptions.budget
    min_rounds: int = timing.CheckOptions.min_rounds
    max_rounds: int = timing.CheckOptions.max_rounds
    confidence: float = timing.CheckOptions.confidence


def check_settings(nb: dict, cell_id: str) -> dict[str, Check]:
    """name -> `Check` for every ``assert_speedup`` call in the test cell ``cell_id`` whose settings are literals."""
    (cell,) = [c for c in nb["cells"] if c.get("id") == cell_id]
    found = {}
    defaults = timing.CheckOptions(threshold=1.0)
    for node in ast.walk(notebook.parse(notebook.source(cell))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "assert_speedup":
            values = {}
            for keyword in node.keywords:
                try:
                    values[keyword.arg] = ast.literal_eval(keyword.value)
                except ValueError:
                    continue
            if "threshold" in values:
                found[str(values.get("name", cell_id))] = Check(
                    float(values["threshold"]), float(values.get("budget", defaults.budget)),
                    int(values.get("min_rounds", defaults.min_rounds)), int(values.get("max_rounds", defaults.max_rounds)),
                    float(values.get("confidence", defaults.confidence)))
    return found


@functools.lru_cache(maxsize=64)
def _needed_table(rule: str, alpha: float, length: int) -> np.ndarray:
    needed = RULES[rule].needed
    return np.array([needed(n, alpha) or length + 1 for n in range(length + 1)])


def _run(ratios: np.ndarray, seconds: np.ndarray, kept: np.ndarray, check: Check, rule: str,
         min_span: float, scale: np.ndarray | float = 1.0) -> np.ndarray:
    """The rule's loop on many sequences at once (rows): True where it passed, False where it failed or ran out."""
    return _loop(ratios, seconds, kept, check, rule, min_span, scale)[0]


def _units(ratios: np.ndarray, kept: np.ndarray, threshold: float, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row and round, the units the rule has counted by the end of that round: how many, how many lie at or above
    ``threshold`` and how many below. A unit is a closed block of ``size`` consecutive kept rounds, by its median ratio
    (`tfperf.stats.blocks`; ``size`` 1: every kept round)."""
    if size <= 1:
        return (np.cumsum(kept, axis=1), np.cumsum((ratios >= threshold) & kept, axis=1),
                np.cumsum((ratios < threshold) & kept, axis=1))
    rows, length = ratios.shape
    count = np.cumsum(kept, axis=1)
    closes = kept & (count % size == 0)
    segment = (np.arange(rows)[:, None] * (length + 1) + (count - 1) // size)[kept]
    order = np.lexsort((ratios[kept], segment))  # each block's rounds together, in order of size
    segment, values = segment[order], ratios[kept][order]
    starts = np.flatnonzero(np.r_[True, segment[1:] != segment[:-1]])
    sizes = np.diff(np.r_[starts, len(segment)])
    full = sizes == size
    medians = values[starts[full] + size // 2]
    closing = (np.arange(rows)[:, None] * (length + 1) + (count - 1) // size)[closes]  # the block each closing round closes
    above = np.zeros_like(closes)
    above[closes] = medians[np.searchsorted(segment[starts[full]], closing)] >= threshold
    return np.cumsum(closes, axis=1), np.cumsum(above, axis=1), np.cumsum(closes & ~above, axis=1)


def block_size(seconds: np.ndarray, kept: np.ndarray, rule: str) -> int:
    """Rounds per block under ``rule`` for a check whose rounds took ``seconds`` (unscaled): `tfperf.stats.block_size`
    of their median, as the grader's sizing batches would have expected."""
    chosen = seconds[kept] if kept.any() else seconds.ravel()
    return stats.block_size(float(np.median(chosen)) if chosen.size else None, RULES[rule].block_seconds)


def _loop(ratios: np.ndarray, seconds: np.ndarray, kept: np.ndarray, check: Check, rule: str,
          min_span: float, scale: np.ndarray | float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The rule's loop on many sequences at once (rows): where it passed, and where it stopped at all (a decision, the
    budget or the round limit) before the rounds ran out. ``seconds`` include each grading's overhead (the budget's and
    the span's time); divided by ``scale`` they are the rounds' own time, whose median sizes the blocks (`block_size`;
    the real loop sizes each block from the rounds before it, which comes to the same for rounds as steady as a check's
    recorded ones)."""
    if ratios.ndim == 1:
        ratios, seconds, kept = ratios[None], seconds[None], kept[None]
    rows, length = ratios.shape
    table = _needed_table(rule, round(1 - check.confidence, 12), length)
    units, above, below = _units(ratios, kept, check.threshold, block_size(seconds / scale, kept, rule))
    count = np.cumsum(kept, axis=1)
    spent = np.cumsum(np.where(kept, seconds, 0.0), axis=1)  # a dropped round costs no budget (`paired_rounds`)
    span = np.cumsum(seconds, axis=1)
    need = table[units]
    # as `paired_rounds` does: no stop before `stats.fewest` units, nor before min_rounds kept unless out of time
    fewest = stats.fewest(check.confidence)
    least = min(check.max_rounds, max(check.min_rounds, fewest))
    out_of_time = spent > check.budget
    looked = (np.arange(length)[None] + 1 >= least) & (units >= fewest) & ((count >= least) | out_of_time)
    stops = looked & (((span >= min_span) & ((above >= need) | (below >= need))) | out_of_time)
    if length >= check.max_rounds:  # the round limit; a recorded grading that ends before it just ends (undecided)
        stops[:, check.max_rounds - 1:] |= looked[:, check.max_rounds - 1:]
    first = np.where(stops.any(axis=1), stops.argmax(axis=1), -1)
    index = np.arange(rows)
    return (first >= 0) & (above[index, first] >= need[index, first]), first >= 0


def outcome(grading: Grading, check: Check, *, rule: str = stats.RULE, min_span: float = MIN_SPAN) -> bool | None:
    """Whether ``grading``'s recorded rounds pass ``check`` under ``rule``, or None when they end before the rule stops:
    the record cannot say what the real check, which would have timed more rounds, decided. (A record decided under a
    higher threshold and read at a lower one can end so.)"""
    passed, stopped = _loop(grading.ratios, grading.seconds, grading.kept, check, rule, min_span, grading.scale)
    return bool(passed[0]) if stopped[0] else None


def decide(grading: Grading, check: Check, *, rule: str = stats.RULE, min_span: float = MIN_SPAN) -> bool:
    """Whether ``grading``'s recorded rounds pass ``check`` under ``rule`` (undecided when they end: a fail)."""
    return bool(_run(grading.ratios, grading.seconds, grading.kept, check, rule, min_span, grading.scale)[0])


def at_threshold(row: dict, nb: dict, *, rule: str = stats.RULE) -> dict | None:
    """A campaign row measured at another threshold of a check that has not otherwise changed, decided again at the
    threshold the check has in ``nb`` today: the row with today's threshold and fingerprint, its passes counted again
    and ``redecided_from`` (the threshold it was measured at). None where the record cannot say: no rounds kept or
    another rule, more than one check in the cell, fewer gradings than runs, or a grading whose rounds end before the
    rule stops (a threshold lowered past an unoptimized answer's recorded rounds). A real campaign at the new threshold
    confirms what this reads (tests/unit/test_flake_records.py asks for one)."""
    settings = check_settings(nb, row["cell"])
    if len(settings) != 1 or not row.get("gradings") or row.get("rule") != rule:
        return None
    ((name, check),) = settings.items()
    gradings = [Grading.of(g) for g in row["gradings"] if g.get("name", name) == name]
    outcomes = [outcome(g, check, rule=rule) for g in gradings]
    if len(gradings) < row["runs"] or None in outcomes:
        return None
    return row | {"threshold": check.threshold, "passed": sum(outcomes), "redecided_from": row["threshold"],
                  "check_source": notebook.check_fingerprint(nb, row["cell"])}


def simulate(gradings: list[Grading], check: Check, *, rule: str = stats.RULE, virtual: int = 10_000, block: int = 5,
             seed: int = 0, min_span: float = MIN_SPAN, offsets: np.ndarray | None = None) -> int:
    """How many of ``virtual`` gradings pass: each built from blocks of ``block`` consecutive recorded rounds, every
    block from a grading and a start drawn at random, until the check's round limit (`virtual_rounds`)."""
    ratios, seconds, kept, scale = virtual_rounds(gradings, check, virtual=virtual, block=block, seed=seed, offsets=offsets)
    return int(_run(ratios, seconds, kept, check, rule, min_span, scale).sum())


def virtual_rounds(gradings: list[Grading], check: Check, *, virtual: int = 10_000, block: int = 5, seed: int = 0,
                   offsets: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The rounds of ``virtual`` gradings (rows of ratios, seconds, kept flags and each round's grading's `Grading.scale`,
    the check's round limit long), each
    built from blocks of ``block`` consecutive recorded rounds, every block from a grading and a start drawn at random.
    ``offsets``: log ratios, one drawn per virtual grading and added to all its rounds (a grading that sits high or low
    as a whole, `calibrate`)."""
    usable = [g for g in gradings if len(g.ratios) >= 1]
    if not usable:
        raise ValueError("no recorded rounds to resample")
    rng = np.random.default_rng(seed)
    length = check.max_rounds
    blocks = -(-length // block)
    ratios = np.empty((virtual, blocks * block))
    seconds, scale, kept = np.empty_like(ratios), np.empty_like(ratios), np.empty(ratios.shape, dtype=bool)
    which = rng.integers(0, len(usable), size=(virtual, blocks))
    for g_index, grading in enumerate(usable):
        rows, columns = np.nonzero(which == g_index)
        if not len(rows):
            continue
        size = len(grading.ratios)
        starts = rng.integers(0, max(1, size - block + 1), size=len(rows))
        taken = (starts[:, None] + np.arange(block)[None]) % size  # a grading shorter than a block wraps around
        target = columns[:, None] * block + np.arange(block)[None]
        ratios[rows[:, None], target] = grading.ratios[taken]
        seconds[rows[:, None], target] = grading.seconds[taken]
        kept[rows[:, None], target] = grading.kept[taken]
        scale[rows[:, None], target] = grading.scale
    if offsets is not None:
        shift = np.exp(np.asarray(offsets, dtype=float)[rng.integers(0, len(offsets), size=virtual)])[:, None]
        ratios, seconds = _stretched(ratios, seconds, shift)
    return ratios[:, :length], seconds[:, :length], kept[:, :length], scale[:, :length]


@dataclasses.dataclass(frozen=True)
class Replayed:
    """One check, answer and load: the recorded gradings decided again and the virtual ones."""

    lesson: str
    cell: str
    name: str
    answer: str
    load: str
    threshold: float
    recorded: int
    recorded_wrong: int
    virtual: int
    virtual_wrong: int
    measured_at: float | None = None  # the threshold the campaign graded at, when it was another (`at_threshold`)
    recorded_under: str | None = None  # the rule the real gradings ran under, when it was another: their verdicts are its

    @property
    def wrong_upper(self) -> float:
        """Upper bound of the wrong-outcome rate in the virtual gradings, one-sided 95% (Clopper-Pearson): only as good
        as the resampling, which reuses the recorded rounds and cannot invent a load or a dependence they lack."""
        return stats.clopper_pearson(self.virtual_wrong, self.virtual, 0.90)[1]

    @property
    def recorded_upper(self) -> float:
        """Upper bound of the wrong-outcome rate from the real gradings alone, one-sided 95%: 0 of 20 bounds it below
        13.9%, whatever the virtual ones say (1 when none ran under the rule replayed: they bound nothing)."""
        return stats.clopper_pearson(self.recorded_wrong, self.recorded, 0.90)[1] if self.recorded else 1.0

    @property
    def kind(self) -> str:
        return "false fail" if self.answer == "reference" else "false pass"


def load_of(campaign: dict) -> str:
    return f"{campaign['bursts']} bursty" if campaign.get("bursts") else f"{campaign['hogs']} busy"


def stopped_elsewhere(row: dict, recorded: list[dict]) -> bool:
    """An unoptimized answer the timing never stopped, stopped every time by its cell's deterministic checks (lesson 03's
    eager `sgd_step` is faster than the retracing step, and is not a tf.function): its timing is no error of the rule,
    and replay leaves it out (`replay_block` names it)."""
    return row["answer"] != "reference" and row["passed"] == 0 and all(g.get("passed") is True for g in recorded)


def replay(campaigns: Iterable[dict], sources: dict[str, dict], *, rule: str = stats.RULE,
           thresholds: dict[str, float] | None = None, virtual: int = 10_000, block: int = 5, seed: int = 0) -> list[Replayed]:
    """Every campaign row that kept its rounds, decided again and simulated. ``sources``: lesson id -> its source
    notebook (the checks' settings); ``thresholds``: check name (or cell id) -> a threshold to try instead."""
    thresholds = thresholds or {}
    out = []
    for campaign in campaigns:
        for row in campaign["rows"]:
            if not row.get("gradings") or row["lesson"] not in sources:
                continue
            settings = check_settings(sources[row["lesson"]], row["cell"])
            for name, check in settings.items():
                wanted = thresholds.get(name, thresholds.get(row["cell"]))
                if wanted is not None:
                    check = dataclasses.replace(check, threshold=float(wanted))
                recorded = [g for g in row["gradings"] if g.get("name", name) == name]
                if not recorded or stopped_elsewhere(row, recorded):
                    continue
                gradings = [Grading.of(g) for g in recorded]
                should_pass = row["answer"] == "reference"
                # the real gradings' verdicts are their own rule's: decided again only under it (their rounds end where
                # it stopped them, before another rule might have)
                own = row.get("rule") == rule
                recorded_wrong = sum(decide(g, check, rule=rule) != should_pass for g in gradings) if own else 0
                passes = simulate(gradings, check, rule=rule, virtual=virtual, block=block, seed=seed)
                measured_at = row.get("threshold") if row.get("threshold") not in (None, check.threshold) else None
                out.append(Replayed(row["lesson"], row["cell"], name, row["answer"], load_of(campaign), check.threshold,
                                    len(gradings) if own else 0, recorded_wrong, virtual, virtual - passes if should_pass else passes,
                                    measured_at, None if own else row.get("rule")))
    return out


def _measured_at(row: Replayed) -> str:
    return f" (graded at {row.measured_at:g}x)" if row.measured_at is not None else ""


def table(rows: list[Replayed]) -> list[str]:
    """Markdown lines: one per check, answer and load."""
    lines = ["| lesson | check | answer | load | threshold | recorded: wrong / gradings | upper bound (95%) | "
             "virtual: wrong / gradings | upper bound (95%) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        real = ((f"{r.recorded_wrong} / {r.recorded} | {upper(r.recorded_upper, '.1%')}") if r.recorded else
                f"none yet (rounds from `{r.recorded_under}`) | -")
        lines.append(f"| {r.lesson[:2]} | {r.name} | {r.answer} | {r.load} | {r.threshold:g}x{_measured_at(r)} | {real} | "
                     f"{r.virtual_wrong} / {r.virtual} ({r.kind}) | {upper(r.wrong_upper, '.3%')} |")
    return lines


# -- calibration: the rule's level on recorded rounds moved onto the threshold ------------------------------------

# How `calibrate` builds virtual gradings: (rounds per block, each virtual grading keeps one recorded grading's offset).
MODES: dict[str, tuple[int, bool]] = {
    "independent rounds": (1, False),  # the control: the rule's proof holds here, so it must pass at most the nominal share
    "blocks of 5": (5, False),
    "blocks of 20": (20, False),
    "blocks of 20, offsets kept": (20, True),  # each grading centred, then one offset per virtual grading (`offsets_of`)
}


@dataclasses.dataclass(frozen=True)
class Calibration:
    """One check and load: its reference's recorded rounds moved onto the threshold, and how many virtual gradings
    passed in each of `MODES` (a pass here is a false pass: the true median ratio is the threshold)."""

    lesson: str
    cell: str
    name: str
    load: str
    threshold: float
    gradings: int
    rounds: int  # kept rounds, all gradings together
    virtual: int
    passes: dict
    confidence: float = timing.CheckOptions.confidence

    @property
    def nominal(self) -> float:
        """What the rule promises: a pass at a true ratio equal to the threshold at most (1 - confidence) / 2 of the time."""
        return (1 - self.confidence) / 2

    def rate(self, mode: str) -> float:
        return self.passes[mode] / self.virtual

    def holds(self, mode: str) -> bool:
        """At or below the nominal share (a rate a little above it may still be the resampling's noise: `over`)."""
        return self.rate(mode) <= self.nominal

    def over(self, mode: str) -> bool:
        """Clearly above the nominal share: the rate's one-sided 95% lower bound is above it."""
        return stats.clopper_pearson(self.passes[mode], self.virtual, 0.90)[0] > self.nominal


def median_variance(x: np.ndarray, rng: np.random.Generator, block: int = 5, reps: int = 200) -> float:
    """The variance of a series' median, by a moving-block bootstrap (blocks of ``block`` consecutive values, so that
    short-range dependence stays in). benchmarks/round_dependence.py's sd_b uses it too."""
    n = len(x)
    block = min(block, n)
    count = int(np.ceil(n / block))
    index = (rng.integers(0, n - block + 1, (reps, count))[:, :, None] + np.arange(block)).reshape(reps, -1)[:, :n]
    return float(np.var(np.median(x[index], axis=1), ddof=1))


def offsets_of(gradings: list[Grading], *, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Each grading's median log ratio of its kept rounds, minus their pooled median (``raw``: 0 for a grading with no
    kept round), and the same offsets shrunk toward their mean so that their variance is only what the medians' own
    noise (`median_variance`) does not explain: sd_b of benchmarks/round_dependence.py. Raw offsets carry that noise,
    and drawing them would add a spread that independent rounds have too."""
    logs = [np.log(g.ratios[g.kept]) for g in gradings]
    pooled = float(np.median(np.concatenate(logs))) if any(len(x) for x in logs) else 0.0
    raw = np.array([float(np.median(x)) - pooled if len(x) else 0.0 for x in logs])
    rng = np.random.default_rng(seed)
    noisy = [x for x in logs if len(x) >= 2]
    spread = float(np.var(raw, ddof=1)) if len(raw) >= 2 else 0.0
    noise = float(np.mean([median_variance(x, rng) for x in noisy])) if noisy else 0.0
    shrink = np.sqrt(max(spread - noise, 0.0) / spread) if spread > 0 else 0.0
    return raw, raw.mean() + (raw - raw.mean()) * shrink


def calibrate(campaigns: Iterable[dict], sources: dict[str, dict], *, rule: str = stats.RULE, virtual: int = 2_000,
              seed: int = 0, modes: dict[str, tuple[int, bool]] | None = None,
              min_span: float = MIN_SPAN) -> list[Calibration]:
    """Every check and load whose reference kept its rounds, ``virtual`` gradings per mode built from its recorded
    rounds and then moved by one factor, so that the median of their kept rounds' ratios IS the threshold (the
    population the rule samples from sits exactly there; each grading and block keeps its place above or below the
    others), through the rule's loop, budget and round limit included. In the mode that keeps offsets, every
    grading is first centred on its own median and each virtual grading draws one grading's offset."""
    out = []
    for campaign in campaigns:
        for row in campaign["rows"]:
            if row["answer"] != "reference" or not row.get("gradings") or row["lesson"] not in sources:
                continue
            for name, check in check_settings(sources[row["lesson"]], row["cell"]).items():
                gradings = [Grading.of(g) for g in row["gradings"] if g.get("name", name) == name]
                gradings = [g for g in gradings if g.kept.any()]
                if not gradings:
                    continue
                passes = at_the_threshold(gradings, check, rule=rule, virtual=virtual, seed=seed, modes=modes, min_span=min_span)
                out.append(Calibration(row["lesson"], row["cell"], name, load_of(campaign), check.threshold, len(gradings),
                                       int(sum(g.kept.sum() for g in gradings)), virtual, passes, check.confidence))
    return out


def at_the_threshold(gradings: list[Grading], check: Check, *, rule: str = stats.RULE, virtual: int = 2_000, seed: int = 0,
                     modes: dict[str, tuple[int, bool]] | None = None, min_span: float = MIN_SPAN) -> dict[str, int]:
    """Mode -> how many of ``virtual`` gradings pass when built from ``gradings``' rounds (`MODES`) and moved by one
    factor so that the median ratio of all their kept rounds is ``check.threshold``: false passes, which the rule
    promises at most (1 - confidence) / 2 of the time."""
    raw, offsets = offsets_of(gradings, seed=seed)
    centred = [g.moved(float(np.exp(-o))) for g, o in zip(gradings, raw)]
    passes = {}
    for mode, (block, keep_offsets) in (modes or MODES).items():
        ratios, seconds, kept, scale = virtual_rounds(centred if keep_offsets else gradings, check, virtual=virtual, block=block,
                                                      seed=seed, offsets=offsets if keep_offsets else None)
        ratios, seconds = _stretched(ratios, seconds, check.threshold / float(np.median(ratios[kept])))
        passes[mode] = int(_run(ratios, seconds, kept, check, rule, min_span, scale).sum())
    return passes


def calibration_table(rows: list[Calibration]) -> list[str]:
    """Markdown lines: one per check and load, the share of virtual gradings that passed in each mode (bold: clearly
    above the nominal share)."""
    modes = list(rows[0].passes) if rows else list(MODES)
    lines = ["| lesson | check | load | gradings (kept rounds) | " + " | ".join(modes) + " |",
             "|---|---|---|---|" + "---|" * len(modes)]
    for r in rows:
        cells = [(f"**{r.rate(m):.1%}**" if r.over(m) else f"{r.rate(m):.1%}") for m in modes]
        lines.append(f"| {r.lesson[:2]} | {r.name} | {r.load} | {r.gradings} ({r.rounds}) | " + " | ".join(cells) + " |")
    return lines


def summary_lines(rows: list[Calibration]) -> list[str]:
    """One line per mode, as the CLI prints it and docs/flake-campaigns.md's calibration block says it."""
    lines = []
    for mode, summary in calibration_summary(rows).items():
        worst = summary["worst"]
        lines.append(f"{mode}: {summary['holding']} of {summary['rows']} at or below {worst.nominal:.1%}, {summary['over']} "
                     f"clearly above, mean {summary['mean']:.1%}, worst {worst.rate(mode):.1%} ({worst.lesson[:2]} "
                     f"`{worst.name}`, {worst.load})")
    return lines


def calibration_summary(rows: list[Calibration]) -> dict[str, dict]:
    """Per mode: how many checks and loads hold the nominal share, how many are clearly above it, the mean rate and
    the worst row."""
    out = {}
    for mode in (rows[0].passes if rows else ()):
        worst = max(rows, key=lambda r: r.rate(mode))
        out[mode] = {"rows": len(rows), "holding": sum(r.holds(mode) for r in rows), "over": sum(r.over(mode) for r in rows),
                     "mean": float(np.mean([r.rate(mode) for r in rows])), "worst": worst}
    return out
