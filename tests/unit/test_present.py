"""Issue 51, item 8: the words in one place. `tfperf.present` decides the word an interval allows (`verdict`) and writes
the measurement line (`measurement`); the lessons, the plots, the recorded ranges, the grader's result lines, the
exports and the review list all call it, each keeping the wording it printed before.

Three parts: the two functions; each call site, through its public function, printing what it printed before the
refactor; and a scan of the sources so that no other module decides faster or slower from an interval again."""

import ast
import math
import pathlib
import re

import pytest

import tfperf
from tfperf import plots, present, report, timing
from tfperf.report import Record
from pipeline import ROOT

# (interval, verdict): above 1x, below, straddling, touching 1x from either side, a point on 1x, no interval yet
CASES = [((1.5951, 2.3901), "faster"), ((1.0000001, 3.0), "faster"), ((0.5, 0.93), "slower"), ((0.2, 0.9999999), "slower"),
         ((0.9, 1.1), "none"), ((1.0, 1.2), "none"), ((0.8, 1.0), "none"), ((1.0, 1.0), "none"), ((0.0, math.inf), "none")]
SAID = {"faster": "faster", "slower": "slower", "none": "no measurable difference"}  # Comparison.words's, as before


# ------------------------------------------------------------------------------------------------ the functions

@pytest.mark.parametrize("ci, word", CASES)
def test_the_rule_calls_an_interval_faster_or_slower_only_when_it_lies_wholly_above_or_below_1x(ci, word):
    assert present.verdict(ci) == word
    assert present.verdict(list(ci)) == word  # a record read back from JSON keeps its interval as a list
    assert present.verdict(ci, neither="inconclusive") == ("inconclusive" if word == "none" else word)
    assert word in present.VERDICTS


def _record(ci=(1.5951, 2.3901), threshold=1.6, name="handle_is_faster", speedup=2.0) -> Record:
    return Record(name, speedup, ci, passed=None if threshold is None else ci[0] >= threshold, threshold=threshold, rounds=12)


def test_the_measurement_line_of_a_check_and_of_a_headline():
    failed, passed, headline = _record(), _record((3.84, 5.98), 1.75, "scale", 4.74), _record((1.2, 1.45), None, "loop", 1.3)
    assert present.measurement(failed) == "speed check handle_is_faster: 2.00x (95% CI 1.59-2.40x, needs >= 1.6x)"
    assert present.measurement(failed, outcome=": ") == "speed check handle_is_faster: 2.00x (95% CI 1.59-2.40x, needs >= 1.6x): failed"
    assert present.measurement(passed, outcome=" ") == "speed check scale: 4.74x (95% CI 3.84-5.98x, needs >= 1.75x) passed"
    # a headline has no threshold, so no outcome whatever is asked
    assert present.measurement(headline) == present.measurement(headline, outcome=": ") == "measured loop: 1.30x (95% CI 1.20-1.45x)"
    assert present.measurement(_record(threshold=0.0)) == "measured handle_is_faster: 2.00x (95% CI 1.59-2.40x)"


def test_an_interval_too_few_rounds_left_open_is_said_or_shown_as_its_bounds():
    item = _record((0.0, math.inf))
    assert present.measurement(item) == "speed check handle_is_faster: 2.00x (95% CI 0.00-infx, needs >= 1.6x)"
    assert present.measurement(item, too_few=True) == (
        "speed check handle_is_faster: 2.00x (no 95% interval yet: at least 8 blocks of 0.2 s of rounds are needed, needs >= 1.6x)")
    assert present.measurement(_record(), too_few=True) == present.measurement(_record())  # a bounded interval: the same


def test_replacing_the_rule_is_seen_as_tampering_with_the_harness(monkeypatch):
    # Comparison.words is guarded by its code object; the rule it now calls is guarded as well
    assert tfperf.checks.harness_problems() == []
    monkeypatch.setattr(present, "verdict", lambda ci, neither="none": "faster")
    assert tfperf.checks.harness_problems() == ["tfperf.present.verdict"]


# ---------------------------------------------------------------------------------------------- the call sites

def _comparison(ci, threshold=None) -> timing.Comparison:
    base = tfperf.TimingResult("baseline", (2e-3,) * 12, 10)
    cand = tfperf.TimingResult("candidate", (1e-3,) * 12, 10)
    return timing.Comparison(base, cand, (2.0,) * 12, ci, threshold=threshold)


@pytest.mark.parametrize("ci, word", CASES)
def test_a_lessons_comparison_a_plot_bar_and_the_recorded_ranges_keep_their_words(ci, word):
    from tfperf_lab.publish import ranges

    result = _comparison(ci)
    assert result.words == result.to_dict()["words"] == SAID[word]
    assert plots._verdict(*ci) == {"none": "inconclusive"}.get(word, word)
    entry = ranges.summarise([{"speedup": 2.0, "ci": list(ci)}, {"speedup": 1.0, "ci": [0.9, 1.1]}])
    assert {key: entry[key] for key in present.VERDICTS} == {key: (key == word) + (key == "none") for key in present.VERDICTS}


def test_describe_words_each_verdict_as_before():
    assert _comparison((0.5, 0.93)).describe().endswith("(95% CI 0.50-0.93x): slower on this run.")
    assert _comparison((1.5951, 2.3901)).describe().endswith("(95% CI 1.59-2.40x): faster on this run.")
    assert _comparison((0.95, 1.05)).describe().endswith("no measurable difference on this run (the interval reaches 1x).")
    assert "too noisy to tell on this run" in _comparison((0.5, 1.2)).describe()
    assert "too few rounds to tell on this run" in _comparison((0.0, math.inf)).describe()


def test_the_recorded_runs_words_and_the_lessons_figures_read_the_same_counts():
    from tfperf_lab.course import figures

    assert report.recorded_words(5, 0, 0) == "faster in all 5 recorded runs"
    assert report.recorded_words(0, 0, 5) == "no measurable difference in any of the 5 recorded runs"
    assert report.recorded_words(2, 1, 2) == "faster in 2, slower in 1 and no measurable difference in 2 of the 5 recorded runs"
    assert report.Seen(1.0, 2.0, runs=5, profile="full", counts=(3, 0, 2)).words == "faster in 3 and no measurable difference in 2 of the 5 recorded runs"
    assert figures._words({"faster": 2, "slower": 1, "none": 2}) == report.recorded_words(2, 1, 2)
    assert figures._words({"none": 4}) == "no measurable difference in any of the 4 recorded runs"


def test_a_plot_colours_and_names_its_bars_by_the_rule():
    import matplotlib
    from matplotlib.colors import to_hex

    matplotlib.use("Agg")
    colour = {"faster": "tab:green", "slower": "tab:red", "none": "tab:gray"}
    drawn = [(ci, word) for ci, word in CASES if ci[0] > 0]  # (0, inf) has no bar to draw
    ax = plots.speedups([{"label": str(ci), "speedup": 1.0, "ci": list(ci)} for ci, _ in drawn])
    assert [to_hex(patch.get_facecolor()) for patch in ax.patches] == [to_hex(colour[word]) for _, word in drawn]
    assert [text.get_text() for text in ax.figure.legends[0].get_texts()] == [
        "faster (interval above 1x)", "slower (interval below 1x)", "no measurable difference (interval reaches 1x)"]


def test_the_graders_result_lines_and_the_exports_print_the_line_as_before():
    from tfperf_lab.grading import exports
    from tfperf_lab.grading.results import CellResult, SubmissionResult

    items = [_record(), _record((0.0, math.inf), name="undecided"), _record((1.2, 1.45), None, "loop", 1.3)]
    result = SubmissionResult("ada", "01_callable_handles", cells=[CellResult("speed", 0.0, 2.0, "auto", "failed")], measurements=items)
    assert result.lines()[-3:] == ["  speed check handle_is_faster: 2.00x (95% CI 1.59-2.40x, needs >= 1.6x)",
                                   "  speed check undecided: 2.00x (95% CI 0.00-infx, needs >= 1.6x)",
                                   "  measured loop: 1.30x (95% CI 1.20-1.45x)"]
    # the exports (and the feedback they carry) say the outcome, and say an open interval in words
    assert [exports.measurement(item) for item in items] == [
        "speed check handle_is_faster: 2.00x (95% CI 1.59-2.40x, needs >= 1.6x): failed",
        "speed check undecided: 2.00x (no 95% interval yet: at least 8 blocks of 0.2 s of rounds are needed, needs >= 1.6x): failed",
        "measured loop: 1.30x (95% CI 1.20-1.45x)"]
    assert exports.cell_measurements(result, {"speed": ["loop"]}, "speed") == ["measured loop: 1.30x (95% CI 1.20-1.45x)"]


def test_the_review_list_prints_each_withheld_cells_speed_checks_as_before(monkeypatch):
    from tfperf_lab.grading import decisions, store
    from tfperf_lab.grading.results import CellResult, SubmissionResult

    class Work:
        root = pathlib.Path("/work/class")

        def submitted(self, student, lesson):
            raise OSError("not kept here")

    class Lesson:
        def speed_checks(self):
            return {"speed": ["handle_is_faster", "scale"]}

    class Course:
        def lesson(self, lesson_id):
            return Lesson()

    result = SubmissionResult("ada", "01_callable_handles", cells=[CellResult("speed", 0.0, 2.0, "auto", "review")],
                              measurements=[_record(), _record((3.84, 5.98), 1.75, "scale", 4.74), _record((1.2, 1.45), None, "loop")],
                              review=["reads tfperf.timing._CLOCK"], withheld={"speed": {"earned": 2}})
    monkeypatch.setattr(store, "results", lambda work: [result])
    withheld = next(line for line in decisions.listing(Course(), Work()) if line.startswith("  withheld: speed"))
    assert withheld == ("  withheld: speed: its test earned 2 of 2; speed check handle_is_faster: 2.00x (95% CI 1.59-2.40x, "
                        "needs >= 1.6x) failed; speed check scale: 4.74x (95% CI 3.84-5.98x, needs >= 1.75x) passed")


# ------------------------------------------------------------------------------------------------ everywhere

SOURCE_OF_THE_RULE = "tfperf/present.py"
WORDS = {"faster", "slower"}
ORDERING = (ast.Gt, ast.GtE, ast.Lt, ast.LtE)
SAID_INLINE = re.compile(r"""["'](?:faster|slower)["']\s+if\b""")  # the shape the rule had in three modules


def _against_one(test: ast.AST) -> bool:
    """Whether ``test`` orders something against 1x: ``low > 1``, ``1 < ci[0]``, ``high < 1.0``."""
    return any(isinstance(node, ast.Compare) and any(isinstance(op, ORDERING) for op in node.ops)
               and any(isinstance(side, ast.Constant) and side.value == 1 and not isinstance(side.value, bool)
                       for side in (node.left, *node.comparators))
               for node in ast.walk(test))


def _chooses_a_word(branch) -> bool:
    parts = branch if isinstance(branch, list) else [branch]
    return any(isinstance(node, ast.Constant) and node.value in WORDS for part in parts for node in ast.walk(part))


def _rules(text: str, relative: str) -> list[str]:
    """Every place in ``text`` (the file ``relative``) that chooses "faster" or "slower" by comparing a value with 1:
    a conditional expression or an ``if`` ordering something against 1 whose branch holds either word, and any
    ``"faster" if`` written out."""
    found = [f"{relative}:{node.lineno}: {ast.unparse(node.test)}" for node in ast.walk(ast.parse(text))
             if isinstance(node, (ast.IfExp, ast.If)) and _against_one(node.test)
             and (_chooses_a_word(node.body) or _chooses_a_word(node.orelse))]
    found += [f"{relative}:{text.count(chr(10), 0, hit.start()) + 1}: {hit.group()}" for hit in SAID_INLINE.finditer(text)]
    return found


def _sources() -> list[pathlib.Path]:
    return sorted(p for package in ("tfperf", "tfperf_lab") for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts)


def test_only_the_presentation_module_decides_faster_or_slower_from_an_interval():
    found = [place for path in _sources() if path.relative_to(ROOT).as_posix() != SOURCE_OF_THE_RULE
             for place in _rules(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())]
    assert not found, ("these decide faster or slower from an interval themselves; call tfperf.present.verdict (with "
                       "neither= for the word this place shows for an interval that reaches 1x):\n" + "\n".join(found))
    assert _rules((ROOT / SOURCE_OF_THE_RULE).read_text(encoding="utf-8"), SOURCE_OF_THE_RULE), "the scan no longer sees the rule itself"


def test_the_scan_finds_the_rule_as_it_was_written_before():
    before = ['"faster" if low > 1 else "slower" if high < 1 else "no measurable difference"',  # timing, plots, ranges
              'word = "slower" if ci[1] < 1.0 else "none"',
              'if 1 < ci[0]:\n    return "faster"']
    for text in before:
        assert _rules(text, "tfperf/new.py"), text
    assert len(_rules(before[0], "tfperf/new.py")) == 4  # both nested choices, by their comparison and by their words
    fine = ['present.verdict(ci, neither="inconclusive")', 'x = "faster" in entry', 'if high / low > 1.5:\n    words = "too noisy"',
            'if value > 1:\n    said = "larger"', 'counts = [(faster, "faster"), (slower, "slower")]']
    assert _rules("\n".join(fine), "tfperf/new.py") == []
