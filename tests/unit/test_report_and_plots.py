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


def test_speedup_bars_state_the_one_convention_and_colour_by_the_interval():
    rows = [{"label": "fast vs base", "speedup": 3.0, "ci": [2.5, 3.5]}, {"label": "slow vs base", "speedup": 0.5, "ci": [0.4, 0.6]},
            {"label": "same vs base", "speedup": 1.3, "ci": [0.9, 1.8]}]
    ax = tfperf.plots.speedups(rows, title="three")
    assert ax.get_title().startswith("three\n") and tfperf.plots.SPEEDUP_CONVENTION in ax.get_title()
    assert ax.get_xlabel() == tfperf.plots.SPEEDUP_AXIS and "faster" in ax.get_xlabel() and "slower" in ax.get_xlabel()
    assert [tuple(bar.get_facecolor()) for bar in ax.patches] == [matplotlib.colors.to_rgba(c) for c in ("tab:green", "tab:red", "tab:gray")]
    assert any(line.get_xdata()[0] == 1.0 for line in ax.get_lines())  # the 1x line
    legend = [text.get_text() for text in ax.figure.legends[0].get_texts()]  # below the axes when the function made the figure
    assert len(legend) == 3 and "no measurable difference" in legend[2]
    import matplotlib.pyplot as plt

    given = tfperf.plots.speedups(rows, ax=plt.subplots()[1], threshold=2.0)
    assert [text.get_text() for text in given.get_legend().get_texts()][-1] == "threshold 2x"
    untitled = tfperf.plots.speedups(rows[:1])
    assert untitled.get_title() == f"({tfperf.plots.SPEEDUP_CONVENTION})"


def test_growth_draws_items_a_rolling_median_and_the_slope_between_the_ends():
    import numpy as np

    seconds = 0.010 + np.arange(100) * 1e-4  # 10 ms growing 0.1 ms per item, i.e. 4 us per op at 25 ops per item
    seconds[50] = 0.4  # one spike
    ax = tfperf.plots.growth(seconds, x=np.arange(100) * 25, window=10, unit="ms")
    points, rolling, slope = ax.get_lines()
    assert ax.get_ylabel() == "time per image (ms)" and ax.get_xlabel() == "ops already in the graph"
    assert ax.get_ylim()[1] < 400 and max(points.get_ydata()) <= ax.get_ylim()[1]  # the spike does not set the axis
    assert "(1 spike drawn at the top edge)" in points.get_label()
    assert slope.get_ydata()[0] == pytest.approx(10.45) and slope.get_ydata()[1] == pytest.approx(19.45)
    assert "4 ms per 1,000 ops" in slope.get_label()
    with pytest.raises(ValueError, match="at least 2 \\* window"):
        tfperf.plots.growth(seconds[:15], window=10)


def test_timeline_says_when_the_machine_stretched_its_spans():
    spans = {"read": [(0.0, 0.040), (0.050, 0.090)], "train": [(0.040, 0.050)]}
    assert tfperf.plots.stretch(spans, {"read": 0.010, "train": 0.010}) == {"read": pytest.approx(4.0), "train": pytest.approx(1.0)}
    busy = tfperf.plots.timeline(spans, title="t", expected={"read": 0.010, "train": 0.010})
    assert "NOT FAITHFUL" in busy.get_title() and "10 ms spans last 40 ms" in busy.get_title()
    quiet = tfperf.plots.timeline(spans, title="t", expected={"read": 0.040, "train": 0.010})
    assert quiet.get_title() == "t"


def test_comparison_plot_and_step_latency_return_their_axes(clock):
    result = tfperf.compare(clock.workload(2e-3, jitter=0.1), clock.workload(1e-3, jitter=0.1, seed=2), threshold=1.5, clock=clock)
    ax = result.plot()
    assert len(ax.lines[0].get_xdata()) == result.rounds
    ax2 = tfperf.plots.step_latency({"leaky": [1e-3, 2e-3, 3e-3], "fixed": [1e-3] * 3})
    assert ax2.get_ylabel() == "time per step (ms)" and len(ax2.lines) == 2
    ax4 = tfperf.plots.step_latency({"leaky": [1e-3, 2e-3]}, ylabel="time per image", unit="us")
    assert ax4.get_ylabel() == "time per image (us)" and list(ax4.lines[0].get_ydata()) == pytest.approx([1000, 2000])
    ax3 = tfperf.plots.speedup_vs_time([result], saving=0.5e-3)
    assert ax3.get_xscale() == "log" and len(ax3.lines) >= 2


def test_public_surface_is_the_documented_one():
    assert sorted(tfperf.__all__) == sorted([
        "Comparison", "TimingResult", "assert_close", "assert_raises", "assert_speedup", "checks", "compare",
        "count_calls", "data", "env", "events", "link", "load_mnist", "measure", "plots", "present", "record", "report", "selfcheck", "stats", "timing",
        "trace", "units",
    ])
    for name in tfperf.__all__:
        assert hasattr(tfperf, name)


def test_report_says_whether_each_lesson_kept_to_its_stated_run_time():
    from pipeline import COURSE
    from tfperf_lab.publish import report

    lesson = COURSE.lessons[0]
    limit = report.stated_seconds(lesson, "reduced")
    assert limit == 60 * lesson.minutes_grading and report.stated_seconds(lesson, "full") == 60 * lesson.minutes_full
    environment = {"profile": "reduced"}
    within = report.render([(lesson, [], [], limit - 1)], limit - 1, environment, "plot.png")
    over = report.render([(lesson, [], [], limit + 1)], limit + 1, environment, "plot.png")
    assert f"within the {lesson.minutes_grading:g} minutes it states" in within and "over the" not in within
    assert f"**over the {lesson.minutes_grading:g} minutes it states**" in over
