"""Thresholds across machines (`tfperf_lab.publish.margins`): the generated table, the rule on synthetic records, and the
rule held against every recorded machine."""

import json

import pytest

from pipeline import COURSE
from tfperf_lab.course import figures, notebook
from tfperf_lab.publish import campaigns, margins, readme

LESSON = COURSE.lesson("04")
CELL = next(iter(LESSON.speed_checks()))
T = figures.thresholds_of(LESSON.source_notebook())[CELL]  # today's threshold: the synthetic records are read against it


def _grading(ratio: float, rounds: int = 8) -> dict:
    return {"name": "exercise_fast_pipeline", "baseline": [ratio * 0.01] * rounds, "candidate": [0.01] * rounds, "dropped": [],
            "calls": 1, "elapsed": 1.0, "passed": True}


def _campaign(folder, name: str, ratios: list[float], machine: dict | None, *, fingerprint: str | None = None) -> None:
    row = {"lesson": LESSON.id, "cell": CELL, "answer": "reference", "runs": len(ratios), "passed": len(ratios),
           "threshold": T, "gradings": [_grading(r) for r in ratios],
           "check_source": fingerprint or notebook.check_fingerprint(LESSON.source_notebook(), CELL)}
    record = {"date": "2026-12-04", "cpu_count": 2, "hogs": 1, "bursts": 0, "workers": 2, "runs": len(ratios), "protocol": 2,
              "sandbox": "bubblewrap", "rows": [row], "verdicts": "grader"}
    if machine is not None:
        record["machine"] = machine
    (folder / name).write_text(json.dumps(record), encoding="utf-8")


def test_the_margins_block_is_generated_from_the_committed_records():
    assert readme.current(COURSE, "margins") == readme.generate(COURSE, "margins"), \
        "docs/flake-campaigns.md's margins block is stale: run `tfperf-lab margins --docs`"


def test_the_slowest_machine_at_its_lower_tenth_decides(tmp_path):
    here, there = tmp_path / "flake", tmp_path / "machines"
    here.mkdir(), there.mkdir()
    _campaign(here, "a.json", [2.0 * T] * 20, None)  # the dev VM: a margin of 2, kept
    _campaign(there, "laptop.json", [1.8 * T] * 2 + [1.3 * T] * 18, {"name": "laptop", "cores": 4})  # its lower 10%: a margin of 1.3
    found = margins.collect(COURSE, [here, there])
    by_machine = {m.machine: m for m in found}
    assert set(by_machine) == {"dev VM, 2 cores", "laptop, 4 cores"}
    assert by_machine["laptop, 4 cores"].low == pytest.approx(1.3 * T) and by_machine["dev VM, 2 cores"].low == pytest.approx(2.0 * T)
    assert margins.slowest(found)[(LESSON.id, "exercise_fast_pipeline")].machine == "laptop, 4 cores"
    assert margins.not_kept(found) == {(LESSON.id, "exercise_fast_pipeline"): pytest.approx(1.3 * T / 1.5)}
    table = "\n".join(margins.table(found))
    assert f"**not kept**: at most {1.3 * T / 1.5:.2f}x" in table and "laptop, 4 cores" in table
    assert margins.not_kept(margins.collect(COURSE, [here])) == {}, "the dev VM alone keeps it"


def test_a_record_of_another_check_or_without_rounds_does_not_count(tmp_path):
    _campaign(tmp_path, "old.json", [1.0] * 20, None, fingerprint="measured-another-check")
    assert margins.collect(COURSE, [tmp_path]) == []


def test_a_campaign_record_names_its_machine(tmp_path):
    path = tmp_path / "r.json"
    campaigns.record([], hogs=1, workers=2, runs=20, path=path, machine_name="CI runner")
    machine = json.loads(path.read_text(encoding="utf-8"))["machine"]
    assert machine["name"] == "CI runner" and machine["cores"] >= 1 and "cpu_model" in machine
    assert margins.machine_of({"machine": machine, "cpu_count": 2}) == f"CI runner, {machine['cores']} cores"


# The dev VM's own campaigns showed two thresholds the rule did not keep (2026-12-04): their references cleared them by
# 1.42x (lesson 04, 1.85x at the lower 10% against 1.3x) and 1.32x (lesson 10, 2.64x against 2x). Both were lowered on
# 2026-12-05 (to 1.2x and 1.75x), read again from every load's kept rounds (`campaigns.at_todays_thresholds`) and
# confirmed by a real campaign (tests/unit/test_flake_records.py).
SLOWEST = margins.slowest(margins.collect(COURSE))


@pytest.mark.parametrize("key", sorted(SLOWEST), ids=lambda key: f"{key[0][:2]}-{key[1]}")
def test_every_threshold_is_cleared_by_its_slowest_machines_reference_with_room(key):
    margin = SLOWEST[key]
    assert margin.margin >= margins.KEEP, (f"{key}: {margin.machine}'s reference clears {margin.threshold:g}x by only "
                                           f"{margin.margin:.2f}x at its lower 10% ({margin.low:.2f}x): lower it to at most "
                                           f"{margin.low / margins.KEEP:.2f}x")
