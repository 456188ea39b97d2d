"""`tfperf-lab doctor`: can this machine grade speed reliably? Measured here, check by check.

For about 20 seconds it times two identical workloads against each other the way the grader times a check (paired
rounds of about 20 ms a side, the order alternating, rounds a burst landed on marked as the grader marks them from the
run-queue wait): on a quiet machine every ratio is close to 1, and how far they stray is this machine's noise. Beside
it: what the machine was doing (`tfperf.env.machine_state`: CPU model, governor, cgroup quota, load, stolen and
throttled CPU time while it measured).

Then, for every speed check of the course, it asks whether that noise could move a verdict: the check's recorded
effect (the reference's lowest median speedup in the committed campaigns, and the fastest unoptimized answer's highest)
times this machine's ratios, resampled in blocks of consecutive rounds, through the shipped rule with the check's own
threshold, budget and round limits (`tfperf_lab.speed.replay`): 10,000 virtual gradings for each side, and each
wrong-outcome rate with its one-sided 95% upper bound. A check is *reliable here* when both bounds are below 0.1%.
The effects are the course's 2-core development VM's; another CPU has other effects, which only a campaign measures.
"""

from __future__ import annotations

import dataclasses
import os
import time

import numpy as np

from tfperf import env as tf_env, stats, timing
from tfperf.units import upper

from . import replay, timer

SECONDS = 20.0
SAMPLE = timer.MIN_SAMPLE  # seconds a side's sample lasts, as the grader's batches
RELIABLE = 0.001  # both wrong-outcome rates' upper bounds below this: reliable here


def _workload(size: int = 64) -> callable:
    """A small mixed workload: Python bytecode and a single-threaded NumPy product, about what a grader's batch costs."""
    matrix = np.random.default_rng(0).standard_normal((size, size))

    def work():
        total = 0.0
        for row in matrix[:16]:
            total += float(row @ row)
        return total + float(np.sum(matrix @ matrix[:, :8]))

    return work


@dataclasses.dataclass(frozen=True)
class Noise:
    """What `measure` saw: the per-round ratios of two identical sides, each round's seconds, whether the grader's rule
    would keep it, and the machine's state meanwhile."""

    ratios: np.ndarray
    seconds: np.ndarray
    kept: np.ndarray
    state: dict

    @property
    def spread(self) -> float:
        """Robust spread of the log ratios of the kept rounds (1.4826 x their median absolute deviation)."""
        logs = np.log(self.ratios[self.kept]) if self.kept.any() else np.log(self.ratios)
        return float(1.4826 * np.median(np.abs(logs - np.median(logs))))

    @property
    def worst(self) -> float:
        """The 1st-99th percentile band of the kept ratios, as a factor: a burst that slows one side shows here."""
        kept = self.ratios[self.kept] if self.kept.any() else self.ratios
        low, high = np.percentile(kept, [1, 99])
        return float(max(high, 1 / low))


def measure(seconds: float = SECONDS, *, work=None, clock=time.perf_counter) -> Noise:
    """Time ``work`` against itself in paired rounds for ``seconds`` (see the module docstring)."""
    work = work or _workload()
    for _ in range(3):
        work()
    one = min(timing.seconds_per_call(work, 1, clock) for _ in range(5))  # the harness's own sample: seconds per call
    calls = max(1, round(SAMPLE / max(one, 1e-7)))
    before, began, pid = tf_env.cpu_times(), clock(), os.getpid()
    pairs, durations, waits = [], [], []
    index = 0
    while clock() - began < seconds:
        started, waited = clock(), timer.run_delay(pid)
        first = timing.seconds_per_call(work, calls, clock)
        second = timing.seconds_per_call(work, calls, clock)
        after = timer.run_delay(pid)
        a, b = (first, second) if index % 2 == 0 else (second, first)
        pairs.append((a, b))
        elapsed = clock() - started
        durations.append(elapsed)
        share = (after - waited) / elapsed if waited is not None and after is not None and elapsed > 0 else None
        waits.append((share, share))
        index += 1
    ratios = np.array([a / b for a, b in pairs])
    disturbance = timer.Disturbance(waits[:3])  # as the grader judges its rounds: each once, against the first batches
    kept = [disturbance.judge(w, d) for w, d in zip(waits, durations)]
    return Noise(ratios, np.array(durations), np.array(kept, dtype=bool), tf_env.machine_state(before))


@dataclasses.dataclass(frozen=True)
class Verdict:
    lesson: str
    name: str
    threshold: float
    reference: float  # recorded effect, lowest reference median
    unoptimized: float | None  # recorded effect, highest unoptimized median
    false_fail: tuple[int, float]  # count in `virtual`, upper bound
    false_pass: tuple[int, float] | None
    virtual: int

    @property
    def reliable(self) -> bool:
        return self.false_fail[1] < RELIABLE and (self.false_pass is None or self.false_pass[1] < RELIABLE)


def effects(course, campaigns: list[dict]) -> dict[tuple[str, str], tuple[float, float | None]]:
    """(lesson, check name) -> (the reference's lowest median speedup, the highest of the unoptimized answers the speed
    check itself must fail) over the committed campaigns with a load beside (any rule: a median does not depend much on
    when the rounds stopped). An unoptimized answer faster than the threshold is left out: its cell's structural test
    fails it, not the timing. A row that mixes several checks of one cell counts only when it kept its rounds per check."""
    from ..course import notebook

    found: dict[tuple[str, str], list[list[float]]] = {}
    for campaign in campaigns:
        if not (campaign.get("hogs") or campaign.get("bursts")):
            continue
        for row in campaign["rows"]:
            names = notebook.speed_checks(course.lesson(row["lesson"]).source_notebook()).get(row["cell"], [])
            medians: dict[str, list[float]] = {}
            if row.get("gradings"):
                for grading in row["gradings"]:
                    ratios = [b / c for b, c in zip(grading["baseline"], grading["candidate"])]
                    if ratios:
                        medians.setdefault(grading.get("name"), []).append(float(np.median(ratios)))
                medians = {name: [float(np.median(values))] for name, values in medians.items()}
            elif len(names) == 1 and row.get("speedup_median") is not None:
                medians = {names[0]: [row["speedup_median"]]}
            for name, values in medians.items():
                if row["answer"] != "reference" and row.get("threshold") and values[0] >= row["threshold"]:
                    continue
                found.setdefault((row["lesson"], name), [[], []])[row["answer"] != "reference"].append(values[0])
    return {key: (min(ref), max(slow) if slow else None) for key, (ref, slow) in found.items() if ref}


def verdicts(course, campaigns: list[dict], noise: Noise, *, virtual: int = 10_000, block: int = 5) -> list[Verdict]:
    """Every speed check with a recorded effect in ``campaigns``, judged against this machine's noise (see the module
    docstring)."""
    recorded = effects(course, campaigns)
    out = []
    for lesson in course.lessons:
        nb = lesson.source_notebook()
        for cell_id in lesson.speed_checks():
            for name, check in replay.check_settings(nb, cell_id).items():
                if (lesson.id, name) not in recorded:
                    continue
                reference, slowest = recorded[(lesson.id, name)]

                def rates(effect: float, should_pass: bool) -> tuple[int, float]:
                    grading = replay.Grading(noise.ratios * effect, noise.seconds, noise.kept)
                    passes = replay.simulate([grading], check, virtual=virtual, block=block)
                    wrong = virtual - passes if should_pass else passes
                    return wrong, stats.clopper_pearson(wrong, virtual, 0.90)[1]

                out.append(Verdict(lesson.id, name, check.threshold, reference, slowest, rates(reference, True),
                                   rates(slowest, False) if slowest is not None else None, virtual))
    return out


def report(noise: Noise, found: list[Verdict]) -> list[str]:
    """The doctor's printout: the machine, its noise, and a line per check."""
    state = noise.state
    lines = [f"machine: {state.get('cpu_model') or 'unknown CPU'}, {state.get('cores')} cores, governor "
             f"{state.get('governor') or 'not exposed'}, cgroup quota {state.get('cpu_max') or 'none'}, load {state.get('load1')}, "
             f"stolen {state.get('steal_share', 0):.1%}, throttled {state.get('throttled_share', 0):.1%} of periods",
             f"noise: {len(noise.ratios)} paired rounds of two identical workloads in {noise.seconds.sum():.0f} s; "
             f"{int((~noise.kept).sum())} disturbed (a neighbour took the CPU); spread of the log ratios {noise.spread:.3f}; "
             f"99% of ratios within {noise.worst:.2f}x", "",
             "| lesson | check | threshold | recorded effect: reference / fastest unoptimized | false fails | false passes | here |",
             "|---|---|---|---|---|---|---|"]
    for v in found:
        slow = f"{v.unoptimized:.2f}x" if v.unoptimized is not None else "-"
        passes = f"{v.false_pass[0]} / {v.virtual} (< {upper(v.false_pass[1], '.2%')})" if v.false_pass else "-"
        lines.append(f"| {v.lesson[:2]} | {v.name} | {v.threshold:g}x | {v.reference:.2f}x / {slow} | "
                     f"{v.false_fail[0]} / {v.virtual} (< {upper(v.false_fail[1], '.2%')}) | {passes} | "
                     f"{'reliable' if v.reliable else 'NOT reliable'} |")
    bad = [v for v in found if not v.reliable]
    lines.append("")
    lines.append(f"{len(found) - len(bad)} of {len(found)} speed checks can be graded reliably on this machine as it is now"
                 + (f"; not: {', '.join(f'{v.lesson[:2]} {v.name}' for v in bad)} (grade on a quieter machine, or with fewer "
                    "workers)" if bad else "."))
    return lines


def warning(state: dict) -> str | None:
    """One line for `tfperf-lab grade` when the machine's state says its speed verdicts may suffer, else None: others'
    load on the cores, CPU time stolen by a hypervisor, a cgroup quota below the cores, throttling."""
    said = []
    cores = state.get("cores") or 1
    if (state.get("load1") or 0) > 0.5 * cores:
        said.append(f"load average {state['load1']} on {cores} cores before grading started")
    if state.get("steal_share", 0) > 0.02:
        said.append(f"{state['steal_share']:.0%} of CPU time stolen by the hypervisor")
    quota = (state.get("cpu_max") or "").split()
    if len(quota) == 2 and quota[0].isdigit() and int(quota[0]) / int(quota[1]) < cores:
        said.append(f"a cgroup quota of {int(quota[0]) / int(quota[1]):.1f} CPUs on {cores} cores")
    if state.get("throttled_share", 0) > 0:
        said.append(f"throttled in {state['throttled_share']:.0%} of periods")
    if not said:
        return None
    return ("WARNING: this machine is busy or constrained (" + "; ".join(said) + "): speed verdicts are decided with "
            "their margins, but run `tfperf-lab doctor` to see which checks it can grade reliably")
