"""Issue 53, item 6: printing that cannot contradict the verdict. Every interval the course prints has its lower bound
rounded down and its upper bound rounded up at the precision shown (`tfperf.units.interval`, `lower`, `upper`), so a
check whose lower bound is 1.5951 against a threshold of 1.6 fails printing 1.59, never "1.60". A point estimate (the
median) stays rounded to nearest.

Three parts: the helper itself; the real call sites, each through its public function with that failing record; and a
scan of the sources so that a new f-string cannot format an interval's bound by hand."""

import ast
import math
import pathlib
import re

import numpy as np
import pytest

import tfperf
from tfperf import checks, selfcheck, stats, timing
from tfperf.report import Record
from tfperf.units import ceil_to, floor_to, interval, lower, upper
from pipeline import ROOT

LOW, HIGH, THRESHOLD = 1.5951, 2.3901, 1.6  # the statistical review's case: FAIL, yet nearest rounding printed 1.60-2.39


# ------------------------------------------------------------------------------------------------- the helper

def test_a_lower_bound_rounds_down_and_an_upper_bound_up():
    assert lower(LOW) == "1.59" and upper(HIGH) == "2.40"
    assert floor_to(LOW, 2) == 1.59 and ceil_to(HIGH, 2) == 2.4
    assert interval(LOW, HIGH) == "1.59-2.40x"
    assert f"{LOW:.2f}-{HIGH:.2f}x" == "1.60-2.39x"  # what nearest rounding printed: neither bound is safe


@pytest.mark.parametrize("value", [1.6, 1.6000000000000001, 1.60, 16 / 10, 0.16 * 10])
def test_a_value_on_the_grid_stays_where_it_is_on_both_sides(value):
    # 1.6 is 1.600000000000000088... in binary and 1.6 * 100 is 160.00000000000003: neither may move it a step
    assert lower(value) == upper(value) == "1.60"
    assert floor_to(value, 2) == ceil_to(value, 2) == 1.6
    assert interval(value, value) == "1.60-1.60x"


def test_a_bound_a_hair_below_the_grid_rounds_down_so_it_agrees_with_the_float_comparison():
    below = 1.5999999999999999  # the float just below 1.6: a check at 1.6 fails it
    assert below < THRESHOLD and lower(below) == "1.59"
    # values whose binary form lies below the decimal they are written as (1.15 * 100 is 114.99999999999999)
    assert lower(1.15) == upper(1.15) == "1.15" and floor_to(1.15, 2) == 1.15 == ceil_to(1.15, 2)
    for value in (2.675, 1.005, 0.285):
        assert floor_to(value, 3) == value == ceil_to(value, 3)
    assert (lower(2.675), upper(2.675)) == ("2.67", "2.68")  # off the grid: one step apart


@pytest.mark.parametrize("spec, value, down, up", [
    (".3g", 1.5951, "1.59", "1.6"), (".3g", 9.996, "9.99", "10"), (".3g", 123.4, "123", "124"), (".3g", 1.6, "1.6", "1.6"),
    (".0f", 12.2, "12", "13"), (".1f", 0.25, "0.2", "0.3"), (".3%", 0.0123412, "1.234%", "1.235%"),
    (".2%", 0.0010049, "0.10%", "0.11%"), (".2%", 0.001, "0.10%", "0.10%"), ("6.2f", 1.5951, "  1.59", "  1.60"),
])
def test_each_precision_the_course_prints_keeps_its_digits_and_only_changes_direction(spec, value, down, up):
    assert lower(value, spec) == down and upper(value, spec) == up
    assert len(lower(value, spec)) == len(format(value, spec)) or spec.endswith("g")


def test_infinite_and_zero_bounds_print_as_before():
    assert interval(0.0, math.inf) == f"{0.0:.2f}-{math.inf:.2f}x" == "0.00-infx"
    with pytest.raises(ValueError):
        lower(1.0, ".2e")


def test_the_printed_interval_always_contains_the_computed_one():
    rng = np.random.default_rng(53)
    for low, high in np.sort(np.exp(rng.normal(0, 1.5, size=(2000, 2))), axis=1):
        shown_low, shown_high = (float(v) for v in interval(low, high, unit="").split("-"))
        assert shown_low <= low <= high <= shown_high
        assert shown_low >= THRESHOLD or low < THRESHOLD  # a printed lower bound reaches a threshold only when the bound does


# ---------------------------------------------------------------------------------------------- the call sites

def _comparison(low=LOW, high=HIGH, threshold=THRESHOLD) -> timing.Comparison:
    base = tfperf.TimingResult("baseline", (2e-3,) * 12, 10)
    cand = tfperf.TimingResult("candidate", (1e-3,) * 12, 10)
    return timing.Comparison(base, cand, (2.0,) * 12, (low, high), threshold=threshold)


def _record(low=LOW, high=HIGH, threshold=THRESHOLD) -> Record:
    return Record("handle_is_faster", 2.0, (low, high), passed=low >= threshold, threshold=threshold, rounds=12)


def test_the_harness_prints_the_failed_check_with_its_lower_bound_below_the_threshold():
    result = _comparison()
    assert not result.passed
    summary = result.summary()
    assert "(needs >= 1.6x: FAIL)" in summary and "95% CI 1.59-2.40x" in summary and "1.60-" not in summary, summary
    assert "(95% CI 1.59-2.40x)" in result.describe() and "1.60-" not in result.describe()
    assert "ci=(1.59, 2.40)" in repr(result)
    # the median ratio of 2.00x is inside the printed interval: no "outside the interval" warning
    assert "outside the interval" not in summary


def test_the_median_stays_rounded_to_nearest():
    result = timing.Comparison(tfperf.TimingResult("b", (2e-3,) * 12, 10), tfperf.TimingResult("c", (1e-3,) * 12, 10),
                               (1.9951,) * 12, (LOW, HIGH), threshold=THRESHOLD)
    assert result.summary().startswith("c vs b: 2.00x (needs >= 1.6x: FAIL)")


def test_assert_speedup_calls_an_interval_holding_the_threshold_undecided_printed_outward(monkeypatch, capsys):
    """1.5951-2.40 holds 1.6: undecided, printed outward (1.59), marked in the self-check and not raised (Run All goes on)."""
    monkeypatch.delenv(tfperf.link.GRADER_VARIABLE, raising=False)
    monkeypatch.delenv(tfperf.report.RECORD_VARIABLE, raising=False)
    monkeypatch.setattr(checks, "harness_problems", lambda: [])  # the measurement itself is replaced below
    monkeypatch.setattr(timing, "compare", lambda *args, **kwargs: _comparison())
    monkeypatch.setattr(selfcheck, "_PENDING", [])
    monkeypatch.setattr(selfcheck, "_UNDECIDED", [])
    tfperf.assert_speedup(lambda: None, lambda: None, threshold=THRESHOLD, labels=("a", "b"))
    assert "undecided: b measured 2.00x (95% CI 1.59-2.40x over 12 rounds)" in capsys.readouterr().out
    assert selfcheck._PENDING == ["undecided: measured 2.00x (CI 1.59-2.40x), needs at least 1.6x"]
    outcome = selfcheck.record_cell('"""Check that b is fast."""\n', None)
    assert outcome.undecided and not outcome.passed and outcome.line().startswith(selfcheck.UNDECIDED)
    summary = selfcheck.summary_text({"Exercise": [("Check that b is fast.", 2.0)]})
    assert "0 of 1 test cells pass (0 of 2 autograded points)" in summary and "could not decide on this machine" in summary


def test_assert_speedup_fails_an_interval_below_the_threshold_printed_outward(monkeypatch):
    monkeypatch.delenv(tfperf.link.GRADER_VARIABLE, raising=False)
    monkeypatch.delenv(tfperf.report.RECORD_VARIABLE, raising=False)
    monkeypatch.setattr(checks, "harness_problems", lambda: [])
    monkeypatch.setattr(timing, "compare", lambda *args, **kwargs: _comparison(low=1.0049, high=1.5951))
    monkeypatch.setattr(selfcheck, "_PENDING", [])
    monkeypatch.setattr(selfcheck, "_UNDECIDED", [])
    with pytest.raises(AssertionError) as raised:
        tfperf.assert_speedup(lambda: None, lambda: None, threshold=THRESHOLD, labels=("a", "b"))
    assert "(95% CI 1.00-1.60x over 12 rounds)" in str(raised.value), raised.value
    assert selfcheck._PENDING == ["measured 2.00x (CI 1.00-1.60x), needs at least 1.6x"] and selfcheck._UNDECIDED == []


def test_the_graders_result_line_and_export_print_the_lower_bound_down():
    from tfperf_lab.grading import exports
    from tfperf_lab.grading.results import CellResult, SubmissionResult

    result = SubmissionResult("ada", "01_callable_handles", cells=[CellResult("speed", 0.0, 2.0, "auto", "failed")],
                              measurements=[_record()])
    line = next(line for line in result.lines() if "handle_is_faster" in line)
    assert line.strip() == "speed check handle_is_faster: 2.00x (95% CI 1.59-2.40x, needs >= 1.6x)", line
    assert exports.measurement(_record()) == "speed check handle_is_faster: 2.00x (95% CI 1.59-2.40x, needs >= 1.6x): failed"


def test_the_grading_job_says_why_no_speed_points_with_the_lower_bound_down():
    from tfperf_lab.grading.execute import Deciding

    assert Deciding("grader", (_record(),)).missing(["handle_is_faster"]) == [
        "handle_is_faster: measured 2.00x (1.59-2.40x), needs 1.6x"]


def test_an_appeal_page_prints_the_failed_check_outward():
    from tfperf_lab.grading import appeal

    verdict = {"speedup": 2.0, "ci": [LOW, HIGH], "threshold": THRESHOLD, "passed": False, "rounds": 12, "rounds_dropped": 0,
               "baseline": {"label": "sess.run", "median": 2e-3}, "candidate": {"label": "handle", "median": 1e-3}}
    said = appeal._failed_because(verdict, [], [], "handle_is_faster")
    assert "2.00x (95% CI 1.59-2.40x)" in said and "the interval's lower end, 1.59x, must reach it" in said, said


def test_the_course_report_row_prints_the_interval_outward():
    from tfperf_lab.publish import report

    item = _record()
    item = Record(item.name, item.speedup, item.ci, item.passed, item.threshold, baseline={"label": "a", "median": 2e-3},
                  candidate={"label": "b", "median": 1e-3})
    assert "**2.00x** (1.59-2.40) |" in report._row(type("Lesson", (), {"id": "01_callable_handles"})(), item)


def test_campaign_tables_print_the_lowest_lower_bound_down_and_the_highest_upper_bound_up():
    from tfperf_lab.publish import campaigns

    row = {"lesson": "01_callable_handles", "cell": "handle_is_faster", "answer": "reference", "passed": 19, "runs": 20,
           "speedup_median": 2.0, "ci_low_min": LOW, "ci_high_max": HIGH, "threshold": THRESHOLD, "load_median": 1.0}
    assert "| 19 / 20 | 2.00 | 1.59 | 2.40 | 1.60 |" in campaigns.render([row], hogs=1, workers=2)


def test_an_error_rates_upper_bound_rounds_up_in_the_replay_and_the_doctor():
    from tfperf_lab.speed import doctor, replay

    wrong = next(k for k in range(1, 60) if format(stats.clopper_pearson(k, 10_000, 0.90)[1], ".3%")
                 != upper(stats.clopper_pearson(k, 10_000, 0.90)[1], ".3%"))
    row = replay.Replayed("01_callable_handles", "handle_is_faster", "handle_is_faster", "reference", "1 busy", THRESHOLD,
                          20, 0, 10_000, wrong)
    assert replay.table([row])[-1].endswith(f"| {upper(row.wrong_upper, '.3%')} |")
    assert float(replay.table([row])[-1].split("|")[-2].strip().rstrip("%")) / 100 >= row.wrong_upper
    noise = doctor.Noise(np.ones(8), np.ones(8), np.ones(8, dtype=bool), {})
    verdict = doctor.Verdict("01_callable_handles", "handle_is_faster", THRESHOLD, 3.0, None, (9, 0.0010049), None, 10_000)
    line = next(line for line in doctor.report(noise, [verdict]) if "handle_is_faster" in line)
    assert "(< 0.11%)" in line and "NOT reliable" in line, line  # nearest printed "< 0.10%", NOT reliable at 0.1%


# ------------------------------------------------------------------------------------------------ everywhere

# An expression that is an interval's bound: a CI (``ci``, ``ci[0]``, ``ci_low_min``), ``low``/``high``/``lower``/``upper``
# names, an error rate's upper bound, or a call that computes an interval.
BOUND = re.compile(r"\bci\b|\bci_(?:low|high)|\b(?:low|high|lower|upper)\b|_(?:lower|upper)\b|\bfalse_(?:fail|pass)\[1\]"
                   r"|\b(?:clopper_pearson|confidence_sequence|median_interval)\(")
# Reviewed expressions that match BOUND yet are no interval's bound: file -> expression -> why it stays nearest.
NOT_AN_INTERVAL = {
    "tfperf_lab/publish/margins.py": {
        "m.low": "the 10th percentile of a machine's per-grading medians: a point estimate, no interval",
        "m.low / KEEP": "the highest threshold the 1.5x rule keeps, from that quantile: a point estimate",
    },
}


def _sources() -> list[pathlib.Path]:
    return sorted(p for package in ("tfperf", "tfperf_lab") for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts)


def _hand_formatted(text: str, relative: str) -> list[str]:
    """Every place in the source ``text`` (of file ``relative``) that formats an interval's bound itself: an f-string
    field with a format spec, a ``format(bound, spec)`` or a ``round(bound, digits)`` (nearest rounding "as printed")."""
    allowed = NOT_AN_INTERVAL.get(relative, {})
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            expression = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("format", "round") and len(node.args) == 2:
            expression = node.args[0]
        else:
            continue
        said = ast.unparse(expression)
        if BOUND.search(said) and said not in allowed:
            found.append(f"{relative}:{node.lineno}: {said}")
    return found


def test_no_source_formats_an_intervals_bound_without_the_helper():
    found = [place for path in _sources() for place in _hand_formatted(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())]
    assert not found, ("these format an interval's bound by hand; print it with tfperf.units.interval / lower / upper "
                       "(lower bounds round down, upper bounds up), or, if it is no interval's bound, list it in "
                       "NOT_AN_INTERVAL with why:\n" + "\n".join(found))


def test_the_scan_finds_what_the_issue_found():
    cases = ['f"{item.ci[0]:.2f}-{item.ci[1]:.2f}x"', 'f"{low:.2f}-{high:.2f}"', 'f"{r[\'ci_low_min\']:.2f}"',
             'f"{row.wrong_upper:.3%}"', 'f"{v.false_fail[1]:.2%}"', "round(low, 2)", 'format(high, ".2f")',
             'f"{m.low:.2f}x"']  # the last: a quantile, allowed in margins.py only
    assert len(_hand_formatted("\n".join(cases), "tfperf_lab/grading/new.py")) == len(cases) + 2  # the first two format two each
    assert len(_hand_formatted("\n".join(cases), "tfperf_lab/publish/margins.py")) == len(cases) + 1
    fine = 'f"{speedup:.2f}x {interval(low, high)} {lower(ci[0])} {seconds:.1f} {threshold:g} {median:.3g}"'
    assert _hand_formatted(fine, "tfperf_lab/grading/new.py") == []


def test_every_reviewed_exception_still_exists():
    for relative, expressions in NOT_AN_INTERVAL.items():
        texts = set()
        for node in ast.walk(ast.parse((ROOT / relative).read_text(encoding="utf-8"))):
            if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
                texts.add(ast.unparse(node.value))
        assert set(expressions) <= texts, f"{relative}: {set(expressions) - texts} no longer formatted: drop it from NOT_AN_INTERVAL"
