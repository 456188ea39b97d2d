import json

import matplotlib

matplotlib.use("Agg")

import pytest

import tfperf


def test_record_appends_json_lines_only_when_asked(tmp_path, monkeypatch, clock):
    result = tfperf.compare(clock.workload(2e-3), clock.workload(1e-3), clock=clock)
    monkeypatch.delenv("TFPERF_RECORD", raising=False)
    assert tfperf.record("off", result) is result
    path = tmp_path / "r.jsonl"
    monkeypatch.setenv("TFPERF_RECORD", str(path))
    tfperf.record("on", result, claim="2x")
    (entry,) = tfperf.report.load_records(path)
    assert entry.name == "on" and entry.claim == "2x" and entry.speedup == pytest.approx(2.0)


def test_record_rejects_something_that_is_not_a_comparison():
    with pytest.raises(TypeError, match="takes a Comparison"):
        tfperf.record("x", 2.0)


def test_load_records_reports_a_broken_line(tmp_path):
    path = tmp_path / "r.jsonl"
    good = {"name": "a", "speedup": 2.0, "ci": [1.5, 2.5]}
    path.write_text(json.dumps(good) + "\n{broken\n")
    with pytest.raises(ValueError, match="line 2 is not a JSON record"):
        tfperf.report.load_records(path)
    path.write_text(json.dumps({"name": "a"}) + "\n")
    with pytest.raises(ValueError, match="line 1 is not a JSON record .*not a measurement record"):
        tfperf.report.load_records(path)


def test_speedup_bars_draw_one_bar_per_result_on_a_log_axis(clock):
    results = [tfperf.compare(clock.workload(t), clock.workload(1e-3), labels=(f"b{t}", "c"), clock=clock) for t in (2e-3, 8e-3)]
    ax = tfperf.plots.speedups(results, threshold=2.0)
    assert len(ax.patches) == 2 and ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["c vs b0.002", "c vs b0.008"]


def test_comparison_plot_and_step_latency_return_their_axes(clock):
    result = tfperf.compare(clock.workload(2e-3, jitter=0.1), clock.workload(1e-3, jitter=0.1, seed=2), threshold=1.5, clock=clock)
    ax = result.plot()
    assert len(ax.lines[0].get_xdata()) == result.rounds
    ax2 = tfperf.plots.step_latency({"leaky": [1e-3, 2e-3, 3e-3], "fixed": [1e-3] * 3})
    assert ax2.get_ylabel() == "time per step (ms)" and len(ax2.lines) == 2
    ax3 = tfperf.plots.speedup_vs_time([result], saving=0.5e-3)
    assert ax3.get_xscale() == "log" and len(ax3.lines) >= 2


def test_public_surface_is_the_documented_one():
    assert sorted(tfperf.__all__) == sorted([
        "Comparison", "TimingResult", "assert_close", "assert_raises", "assert_speedup", "checks", "compare",
        "count_calls", "data", "env", "events", "load_mnist", "measure", "plots", "record", "report", "selfcheck", "timing",
        "trace", "units",
    ])
    for name in tfperf.__all__:
        assert hasattr(tfperf, name)


def test_report_says_whether_each_lesson_kept_to_its_stated_run_time():
    from pipeline import COURSE
    from tfperf_lab import report

    lesson = COURSE.lessons[0]
    limit = report.stated_seconds(lesson, "reduced")
    assert limit == 60 * lesson.minutes_grading and report.stated_seconds(lesson, "full") == 60 * lesson.minutes_full
    environment = {"profile": "reduced"}
    within = report.render([(lesson, [], [], limit - 1)], limit - 1, environment, "plot.png")
    over = report.render([(lesson, [], [], limit + 1)], limit + 1, environment, "plot.png")
    assert f"within the {lesson.minutes_grading:g} minutes it states" in within and "over the" not in within
    assert f"**over the {lesson.minutes_grading:g} minutes it states**" in over
