"""docs/benchmarks.md's table of graded speed checks (`readme.checks_block`): generated from the lessons' test cells and
the campaigns under today's rule, never typed."""

import json

from pipeline import COURSE
from tfperf import stats
from tfperf_lab.course import figures, notebook
from tfperf_lab.publish import readme

LESSON = COURSE.lesson("04")
CELL = next(iter(LESSON.speed_checks()))
T = figures.thresholds_of(LESSON.source_notebook())[CELL]


def _row(answer: str, median: float, low: float, *, passed: int, threshold: float = T, fingerprint: str | None = None) -> dict:
    return {"lesson": LESSON.id, "cell": CELL, "answer": answer, "runs": 20, "passed": passed, "speedup_median": median,
            "ci_low_min": low, "ci_high_max": median * 1.1, "threshold": threshold, "rule": stats.RULE,
            "gradings": [{"name": "exercise_fast_pipeline", "passed": passed > 0}],
            "check_source": fingerprint or notebook.check_fingerprint(LESSON.source_notebook(), CELL)}


def _campaign(folder, name: str, rows: list[dict], *, hogs: int = 1, bursts: int = 0) -> None:
    record = {"date": "2026-12-05", "cpu_count": 2, "hogs": hogs, "bursts": bursts, "workers": 2, "runs": 20, "protocol": 2,
              "sandbox": "bubblewrap", "rows": rows, "verdicts": "grader"}
    (folder / name).write_text(json.dumps(record), encoding="utf-8")


def _line(block: str) -> str:
    (line,) = [line for line in block.splitlines() if f"`{CELL}`" in line]
    return line


def test_the_checks_block_is_generated_from_the_lessons_and_the_committed_campaigns():
    assert readme.current(COURSE, "checks") == readme.generate(COURSE, "checks"), \
        "docs/benchmarks.md's checks block is stale: run `tfperf-lab flake --docs`"


def test_a_row_says_what_its_test_cell_says_and_what_the_campaigns_measured(tmp_path):
    _campaign(tmp_path, "a.json", [_row("reference", 1.93, 1.69, passed=20), _row("naive_pipeline", 1.01, 0.92, passed=0)], hogs=2)
    line = _line(readme.generate(COURSE, "checks", tmp_path))
    cell = next(c for c in LESSON.source_notebook()["cells"] if c.get("id") == CELL)
    said = notebook.source(cell).split('"""')[1]
    assert said in line, "the check's description is its test cell's docstring"
    assert f"{T:g}x" in line and "1.93x (1.69)" in line and "0 / 20 of 1 answer; 1.01x (naive pipeline, 2 busy cores)" in line
    assert "`fast_pipeline_same_examples`" in line, "the tests the speed points need come from paid_with"
    assert "not yet measured under the rule" not in line and "2 busy cores" in readme.generate(COURSE, "checks", tmp_path).splitlines()[0]


def test_a_load_not_measured_under_the_rule_or_at_another_threshold_says_so(tmp_path):
    _campaign(tmp_path, "a.json", [_row("reference", 1.9, 1.5, passed=20, threshold=T + 0.1)], hogs=1)
    _campaign(tmp_path, "b.json", [_row("reference", 2.0, 1.7, passed=20)], hogs=2)
    _campaign(tmp_path, "c.json", [_row("reference", 9.0, 9.0, passed=20, fingerprint="another-check")], bursts=2)
    block = readme.generate(COURSE, "checks", tmp_path)
    line = _line(block)
    assert f"1.90x (1.50, graded at {T + 0.1:g}x)" in line and "2.00x (1.70)" in line
    assert "9.00x" not in line, "a campaign of another check does not count"
    assert "bursty" not in block.splitlines()[0], "a load whose only campaign measured another check has no column"
    other = [line for line in block.splitlines() if line.startswith("| 10 ")]
    assert other and "not yet measured under the rule" in other[0]
