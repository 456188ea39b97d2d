"""Issue 35: every figure in a lesson's prose is rendered from recorded runs of the lesson's current code, or labelled
a claim or a definition (`tfperf_lab.course.figures`); the runs behind them are current and numerous enough."""

import copy
import json
import re

import pytest

from tfperf_lab.course import figures, notebook
from tfperf_lab.publish import ranges
from pipeline import COURSE

LESSONS = COURSE.lessons
RECORDED = figures.recorded()


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.id)
def test_every_figure_in_a_lesson_is_rendered_claimed_or_defined(lesson):
    found = figures.problems(notebook.read(lesson.source), lesson.id, RECORDED, generated=(lesson.run_time_text,))
    assert not found, "\n".join(found)


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.id)
def test_every_lesson_has_five_runs_of_its_current_code_in_each_profile(lesson):
    runs = ranges.current_runs(COURSE)
    for profile in figures.PROFILES:
        kept = len(runs.get(profile, {}).get(lesson.id, []))
        assert kept >= ranges.RUNS_NEEDED, (
            f"{lesson.id}: {kept} {profile}-profile run(s) of today's code; record them: "
            f"tfperf-lab run --profile {profile} --keep-run --runs {ranges.RUNS_NEEDED - kept}")


def test_the_readme_quotes_no_speedup_by_hand():
    text = (COURSE.root / "README.md").read_text(encoding="utf-8")
    typed = [figure for figure in figures.hand_typed(text) if figure.rstrip().endswith(("x", "×"))]
    assert not typed, typed
    found = [problem for problem in figures.text_problems(text, "README.md", "", RECORDED, {}) if "hand-typed" not in problem]
    assert not found, found


# The scanner itself: each kind of mistake is found, on a real lesson changed in one place.

def _lesson_with(text: str, lesson=LESSONS[2]) -> list[str]:
    nb = copy.deepcopy(notebook.read(lesson.source))
    cell = next(c for c in nb["cells"] if c["cell_type"] == "markdown" and c.get("id") not in ("md-01",))
    cell["source"] = notebook.source(cell) + "\n\n" + text
    return [p for p in figures.problems(nb, lesson.id, RECORDED, generated=(lesson.run_time_text,)) if str(cell.get("id")) in p]


def test_a_hand_typed_figure_is_reported():
    assert any("hand-typed figure '15-25x'" in p for p in _lesson_with("On this CPU the tiny-op loop gained 15-25x."))
    assert any("'0.3-1.5 ms'" in p for p in _lesson_with("Building once took 0.3-1.5 ms per image."))
    assert any("'0.6x to 1.4x'" in p for p in _lesson_with("It ranged from 0.6x to 1.4x."))
    assert any("'20%'" in p for p in _lesson_with("It saved 20% per epoch."))


def test_numbers_that_are_not_figures_are_left_alone():
    assert figures.hand_typed("the line at 1x, a 512x512 matmul, `y = 2x + 1`, 60,000 images, lesson 03, [a](#1.5x)") == []


def test_a_mark_that_names_no_record_or_shows_a_stale_value_is_reported():
    assert any("not recorded" in p or "no lesson" in p for p in _lesson_with("It gained <!--fig 03.no_such_record-->9x<!--/fig-->."))
    record = next(iter(RECORDED["profiles"]["full"]["03_tf_function"]))
    stale = _lesson_with(f"It gained <!--fig 03.{record}-->123456x<!--/fig-->.")
    assert any("the runs say" in p for p in stale), stale


def test_a_claim_must_say_whose_and_a_mark_must_not_open_a_line():
    assert any("whose it is" in p for p in _lesson_with("It is <!--claim-->about 10x<!--/claim--> faster."))
    assert not _lesson_with("The article claims <!--claim-->about 10x<!--/claim-->.")
    assert any("opens a line" in p for p in _lesson_with("<!--def-->10 ms<!--/def--> per read."))


SYNTHETIC = {"profiles": {
    "full": {"03_x": {"loop": {"low": 19.91, "high": 29.48, "runs": 5, "one_run": [17.04, 32.61], "faster": 5, "slower": 0, "none": 0,
                               "baseline": [0.0121, 0.0152], "candidate": [0.00061, 0.0007],
                               "baseline_one_run": [0.01109, 0.01681], "candidate_one_run": [0.000551, 0.000771]},
                      "mixed": {"low": 0.88, "high": 1.3, "runs": 5, "one_run": [0.86, 1.43], "faster": 2, "slower": 1, "none": 2},
                      "wide": {"low": 1.1, "high": 1.9, "runs": 4, "one_run": [0.81, 2.42], "faster": 2, "slower": 0, "none": 2,
                               "baseline_one_run": [0.002, 0.0061]},
                      "two": {"low": 2.0, "high": 2.2, "runs": 2, "faster": 2, "slower": 0, "none": 0}}},
    "reduced": {"03_x": {"loop": {"low": 28.5, "high": 35.4, "runs": 5, "one_run": [26.02, 38.71], "faster": 5, "slower": 0, "none": 0}}}},
    "graded": {"03_x": {"train_step_is_faster": {"one_run": [5.66, 9.2], "gradings": 60, "loads": ["1 busy core"]}}}}


@pytest.mark.parametrize("key, shown", [
    ("03.loop", "17-32.7x"),  # where one run lands (tfperf.stats.one_run_range), not the medians' 19.9-29.5x; outward
    ("03.loop@reduced", "26-38.8x"),
    ("03.loop:runs", "5"),
    ("03.loop:words", "faster in all 5 recorded runs"),
    ("03.mixed:words", "faster in 2, slower in 1 and no measurable difference in 2 of the 5 recorded runs"),
    ("03.loop:baseline", "11-17 ms"),
    ("03.loop:candidate", "551-771 us"),
    ("03.loop:gain", "1604-3161%"),
    ("03.mixed:saved", "-17% to 31%"),
    ("03.wide", "anywhere from 0.81x to 2.42x"),  # runs that spread say so, no narrow range
    ("03.wide:baseline", "anywhere from 2 ms to 6.1 ms"),
    ("threshold:train_step_is_faster", "3x"),
    ("grader:train_step_is_faster", "5.66-9.2x"),  # where one graded run of the reference lands (the campaigns)
])
def test_each_format_renders_from_the_recorded_runs(key, shown):
    assert figures.render(key, "03_x", SYNTHETIC, {"train_step_is_faster": 3.0}) == shown


def test_two_runs_give_no_range_of_one_run_and_an_unknown_format_is_an_error():
    with pytest.raises(figures.FigureError, match="3 or more"):
        figures.render("03.two", "03_x", SYNTHETIC, {})
    with pytest.raises(figures.FigureError, match="two or more"):
        figures.render("03.missing", "03_x", SYNTHETIC, {})
    with pytest.raises(figures.FigureError, match="unknown format"):
        figures.render("03.loop:median", "03_x", SYNTHETIC, {})
    with pytest.raises(figures.FigureError, match="no campaign the grader timed"):
        figures.render("grader:fast_step_is_faster", "03_x", SYNTHETIC, {})


def test_rendering_is_idempotent_and_fills_the_marks():
    nb = {"cells": [{"cell_type": "markdown", "id": "m", "metadata": {}, "source": "It gained <!--fig 03.loop-->?<!--/fig-->."}]}
    once = figures.rendered(nb, "03_x", SYNTHETIC)
    assert notebook.source(once["cells"][0]) == "It gained <!--fig 03.loop-->17-32.7x<!--/fig-->."
    assert figures.rendered(once, "03_x", SYNTHETIC) == once


def test_a_run_of_other_code_does_not_count(tmp_path, monkeypatch):
    """A lesson whose code changed since its runs loses them: its figures cannot render until it is recorded again."""
    run = {"date": "2026-01-01", "profile": "full", "environment": {"tensorflow": "2.21.0"}, "code": {"03_tf_function": "0000000000000000"},
           "seconds": {}, "lessons": {"03_tf_function": {"loop": {"speedup": 2.0, "ci": [1.5, 2.5], "baseline": 1.0, "candidate": 0.5}}}}
    folder = tmp_path / "docs" / "runs" / "full"
    folder.mkdir(parents=True)
    (folder / "a.json").write_text(json.dumps(run))
    monkeypatch.setattr(ranges, "runs_folder", lambda course: tmp_path / "docs" / "runs")
    assert ranges.current_runs(COURSE) == {}
    (run["code"]["03_tf_function"],) = ranges.fingerprints(COURSE)["03_tf_function"]
    (folder / "a.json").write_text(json.dumps(run))
    assert len(ranges.current_runs(COURSE)["full"]["03_tf_function"]) == 1


def test_a_run_at_an_earlier_threshold_named_by_the_cell_still_counts_and_no_other_change_does():
    """A lowered threshold decides grades, not what the lesson measures: a run made at the threshold a speed test cell
    names in ``metadata.tfperf.threshold_was`` keeps counting; the same claim over code that changed otherwise does not."""
    nb = COURSE.lesson("03_tf_function").source_notebook()
    (cell_id, *_) = notebook.speed_checks(nb)
    (cell,) = [c for c in nb["cells"] if c.get("id") == cell_id]
    before = notebook.code_fingerprint(nb)
    assert notebook.code_fingerprints(nb) == {before}
    today = float(re.findall(r"threshold=([0-9.]+)", notebook.source(cell))[0])
    cell["source"] = notebook.at_threshold(notebook.source(cell), today / 2)  # lowered
    cell.setdefault("metadata", {}).setdefault("tfperf", {})[notebook.THRESHOLD_WAS] = [today]
    assert before in notebook.code_fingerprints(nb) and notebook.code_fingerprint(nb) != before
    cell["source"] = notebook.source(cell) + "\n# and something else"
    assert before not in notebook.code_fingerprints(nb)
