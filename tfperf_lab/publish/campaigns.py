"""The flake campaigns' records: how a campaign's rows are written under docs/flake/, read back, printed and counted.

`tfperf_lab.grading.flake` runs a campaign (it grades); this module only reads and writes what campaigns measured, so the
README and docs/ writers need no grading code (and no nbgrader) to render them.
"""

from __future__ import annotations

import json
import os
import pathlib

from tfperf.units import lower, upper

from ..course import variants


def render(rows: list[dict], *, hogs: int, workers: int, bursts: int = 0) -> str:
    lines = [f"speed checks: {hogs} busy core(s)" + (f" and {bursts} bursty neighbour(s)" if bursts else "") + f" beside grading, {workers} worker(s)",
             "| lesson | cell | answer | passed / runs | median speedup | lowest CI low | highest CI high | threshold | load |",
             "|---|---|---|---|---|---|---|---|---|"]
    fmt = lambda v: "-" if v is None else f"{v:.2f}"
    low = lambda v: "-" if v is None else lower(v)  # an interval's bounds print outward (tfperf.units)
    high = lambda v: "-" if v is None else upper(v)
    for r in rows:
        lines.append(f"| {r['lesson']} | {r['cell']} | {r['answer']} | {r['passed']} / {r['runs']} | {fmt(r['speedup_median'])} | "
                     f"{low(r['ci_low_min'])} | {high(r['ci_high_max'])} | {fmt(r['threshold'])} | {fmt(r.get('load_median'))} |")
    return "\n".join(lines)


def wrong(rows: list[dict]) -> int:
    """False failures of the reference plus false passes of unoptimized answers."""
    return sum(r["runs"] - r["passed"] if r["answer"] == "reference" else r["passed"] for r in rows)


def record(rows: list[dict], *, hogs: int, workers: int, runs: int, path: pathlib.Path, sandbox: str = "bubblewrap", bursts: int = 0,
           machine_name: str | None = None) -> None:
    """Write one campaign's rows with its conditions (the sandbox backend its gradings ran in) and the machine it ran on
    (``machine_name``, its CPU model and cores: the margins table's column, `tfperf_lab.publish.margins`), as committed
    under docs/flake/ (the dev VM) or docs/machines/ (any other)."""
    import datetime

    from tfperf import env as tf_env
    from tfperf.link import PROTOCOL

    state = tf_env.machine_state()
    machine = {"name": machine_name, "cpu_model": state.get("cpu_model"), "cores": state.get("cores"), "governor": state.get("governor"),
               "cpu_max": state.get("cpu_max")}

    # the link's protocol version: campaigns measured before protocol 2 (chained inputs, every call compared) say 1 or nothing
    summary = {"date": datetime.date.today().isoformat(), "cpu_count": os.cpu_count(), "hogs": hogs, "bursts": bursts, "workers": workers,
               "runs": runs, "protocol": PROTOCOL, "sandbox": sandbox, "machine": machine, "rows": rows,
               "verdicts": "grader" if rows and all(r.get("measured_by") == "grader" for r in rows) else "kernel"}
    path.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")


def flake_folder(course) -> pathlib.Path:
    """Where the committed campaign records live: ``docs/flake/``."""
    return course.docs / "flake"


def measures_today(row: dict, sources: dict[str, dict], *, any_threshold: bool = False, any_rule: bool = False) -> bool:
    """Whether a campaign row measured today's check (its fingerprint, `notebook.check_fingerprint`, which names the
    decision rule) of a lesson in ``sources`` (lesson id -> its source notebook). ``any_threshold``: or today's check
    at the threshold the row records, nothing else changed (what its rounds say holds at any threshold: the reference's
    margin, a replay at today's). ``any_rule``: or under the rule the row records (its rounds are today's check's, what
    resampling them says holds under any rule; its verdicts are that rule's)."""
    from ..course import notebook

    if row["lesson"] not in sources:
        return False
    nb = sources[row["lesson"]]
    rules = [None] + ([row["rule"]] if any_rule and row.get("rule") else [])
    thresholds = [None] + ([row["threshold"]] if any_threshold and row.get("threshold") is not None else [])
    return any(row.get("check_source") == notebook.check_fingerprint(nb, row["cell"], threshold=t, rule=r)
               for r in rules for t in thresholds)


def at_todays_thresholds(campaigns: list[dict], sources: dict[str, dict]) -> list[dict]:
    """The campaigns with every row that measured today's check at another threshold decided again at today's
    (`tfperf_lab.speed.replay.at_threshold`), where its kept rounds can say; every other row as recorded. A lowered
    threshold is then read from the rounds already measured under every load, and one real campaign confirms it."""
    from ..speed import replay

    def today(row: dict) -> dict:
        if measures_today(row, sources) or not measures_today(row, sources, any_threshold=True):
            return row
        return replay.at_threshold(row, sources[row["lesson"]]) or row

    return [campaign | {"rows": [today(row) for row in campaign["rows"]]} for campaign in campaigns]


def load_campaigns(folder: pathlib.Path) -> list[dict]:
    """Every campaign under FOLDER; an unoptimized answer's rows only for the speed checks its exercise has."""
    targets = {(variant.lesson, variant.name): set(variant.loses) for variant in variants.VARIANTS}
    campaigns = []
    for path in sorted(folder.glob("*.json")):
        campaign = json.loads(path.read_text(encoding="utf-8"))
        campaign["rows"] = [r for r in campaign["rows"]
                            if r["answer"] == "reference" or r["cell"] in targets.get((r["lesson"], r["answer"]), ())]
        campaigns.append(campaign | {"file": path.name})
    return campaigns
