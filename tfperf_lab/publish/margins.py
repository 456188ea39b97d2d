"""Thresholds that hold on other machines: each speed check's reference margin on every machine that has graded it.

A threshold is kept only while the slowest recorded machine's reference clears it by at least `KEEP` (1.5x) at its
lower quantile (`QUANTILE`, the 10th percentile of its gradings' median round ratios): a reference that passes by a
hair on the dev VM fails on a slower CPU. The gradings come from flake campaign records that kept their raw rounds, each
tied to the machine that ran it: the dev VM's campaigns under docs/flake/, and any other machine's under
docs/machines/ (the same record, written there by ``tfperf-lab flake ... --machine NAME --out docs/machines/NAME.json``
on that machine: CI, a learner's laptop, a GPU box). Only rows that measured today's check (its fingerprint) count,
under today's decision rule or the one they were recorded under: a reference's ratios do not depend on the rule.
"""

from __future__ import annotations

import dataclasses
import pathlib

import numpy as np

from ..course import Course
from ..speed import replay
from . import campaigns

KEEP = 1.5  # the slowest machine's reference clears a threshold by at least this much at its lower quantile
QUANTILE = 0.10  # the lower quantile: of the per-grading median round ratios, over every load the machine ran


@dataclasses.dataclass(frozen=True)
class Margin:
    """One check's reference on one machine."""

    lesson: str
    name: str
    machine: str
    medians: tuple[float, ...]  # each grading's median ratio of its kept rounds
    threshold: float

    @property
    def median(self) -> float:
        return float(np.median(self.medians))

    @property
    def low(self) -> float:
        return float(np.quantile(self.medians, QUANTILE))

    @property
    def margin(self) -> float:
        return self.low / self.threshold


def machine_of(campaign: dict) -> str:
    """The machine a campaign ran on, with its cores: the name its record gives (``--machine``), else its CPU model;
    the dev VM's records written before campaigns named their machine are the dev VM's (docs/flake/ holds its own)."""
    machine = campaign.get("machine") or {}
    cores = machine.get("cores") or campaign.get("cpu_count")
    return f"{machine.get('name') or machine.get('cpu_model') or 'dev VM'}, {cores} cores"


def folders(course: Course) -> list[pathlib.Path]:
    """Where machines' records are: the dev VM's campaigns, then other machines' reports."""
    return [course.docs / "flake", course.docs / "machines"]


def collect(course: Course, places: list[pathlib.Path] | None = None) -> list[Margin]:
    """Every speed check's reference margin on every machine that graded today's check (at any threshold: the
    reference's ratios do not depend on it) with its rounds kept."""
    sources = {lesson.id: lesson.source_notebook() for lesson in course.lessons}
    found: dict[tuple[str, str, str], list[float]] = {}
    thresholds: dict[tuple[str, str], float] = {}
    for folder in places if places is not None else folders(course):
        if not folder.is_dir():
            continue
        for campaign in campaigns.load_campaigns(folder):
            machine = machine_of(campaign)
            for row in campaign["rows"]:
                if row["answer"] != "reference" or not row.get("gradings") or not campaigns.measures_today(row, sources, any_threshold=True, any_rule=True):
                    continue
                for name, check in replay.check_settings(sources[row["lesson"]], row["cell"]).items():
                    thresholds[(row["lesson"], name)] = check.threshold
                    for recorded in row["gradings"]:
                        if recorded.get("name", name) != name:
                            continue
                        grading = replay.Grading.of(recorded)
                        kept = grading.ratios[grading.kept]
                        if kept.size:
                            found.setdefault((row["lesson"], name, machine), []).append(float(np.median(kept)))
    return [Margin(lesson, name, machine, tuple(medians), thresholds[(lesson, name)])
            for (lesson, name, machine), medians in sorted(found.items())]


def slowest(margins: list[Margin]) -> dict[tuple[str, str], Margin]:
    """(lesson, check) -> the machine whose reference clears the threshold by the least, at the lower quantile."""
    out: dict[tuple[str, str], Margin] = {}
    for margin in margins:
        key = (margin.lesson, margin.name)
        if key not in out or margin.low < out[key].low:
            out[key] = margin
    return out


def not_kept(margins: list[Margin]) -> dict[tuple[str, str], float]:
    """(lesson, check) -> the highest threshold the rule would keep, for every check whose threshold it does not keep."""
    return {key: margin.low / KEEP for key, margin in slowest(margins).items() if margin.margin < KEEP}


def table(margins: list[Margin]) -> list[str]:
    """Markdown: a line per check and machine, the check's verdict on its slowest machine's line."""
    worst = slowest(margins)
    lines = ["| lesson | check | machine | gradings | reference median | lower 10% | threshold | margin (lower / threshold) | "
             "rule |", "|---|---|---|---|---|---|---|---|---|"]
    for m in margins:
        verdict = ""
        if worst[(m.lesson, m.name)] is m:
            verdict = "kept" if m.margin >= KEEP else f"**not kept**: at most {m.low / KEEP:.2f}x"
        lines.append(f"| {m.lesson[:2]} | {m.name} | {m.machine} | {len(m.medians)} | {m.median:.2f}x | {m.low:.2f}x | "
                     f"{m.threshold:g}x | {m.margin:.2f} | {verdict} |")
    return lines


def block(course: Course, places: list[pathlib.Path] | None = None) -> str:
    """docs/flake-campaigns.md's margins block."""
    margins = collect(course, places)
    if not margins:
        return "No campaign has kept a reference's rounds under today's checks yet."
    machines = sorted({m.machine for m in margins})
    failing = not_kept(margins)
    said = (f"{len(failing)} of {len(slowest(margins))} thresholds are not kept: "
            + "; ".join(f"{lesson[:2]} `{name}` at most {limit:.2f}x" for (lesson, name), limit in sorted(failing.items()))
            if failing else f"every one of the {len(slowest(margins))} thresholds is kept")
    return "\n".join(table(margins) + ["", f"Machines: {', '.join(machines)}. The rule: the slowest machine's reference clears "
                                            f"the threshold by at least {KEEP:g}x at its lower 10%; {said}."])
