"""The course does not contradict itself (issue 15, section 1), read from the source notebooks as JSON.

Each check takes a notebook (a dict, as `json.load` gives it), so it can also be run against an older
version of a notebook (`git show HEAD:solutions/...`): every check here failed on the notebooks before
the fix. No import of the course tool package; lesson 10's check executes three of its cells.
"""

import json
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
QUOTED_AS_FACT = {  # numbers issue 15 found stated as facts in a lesson's prose
    "02_graph_growth": ("8x after 240", "30-80 us"),
    "04_tf_data": ("no reliable gain",),
    "07_tensorboard": ("5-30x slower", "3-11x faster"),
}


def notebook(lesson: str) -> dict:
    return json.loads((ROOT / "solutions" / lesson / f"{lesson}.ipynb").read_text(encoding="utf-8"))


def source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def cell(nb: dict, cell_id: str) -> dict:
    (found,) = [c for c in nb["cells"] if c.get("id") == cell_id]
    return found


def units(text: str) -> list[str]:
    """Paragraphs, list items and table rows of a markdown text, each joined into one line."""
    found, current = [], []
    for line in text.splitlines() + [""]:
        starts_new = not line.strip() or line.startswith(("|", "- ", "#")) or re.match(r"\d+\. ", line)
        if starts_new and current:
            found.append(" ".join(current))
            current = []
        if line.startswith("|"):
            found.append(line)
        elif line.strip():
            current.append(line.strip())
    return found


# Lesson 10: the capstone grades what lesson 05 teaches.

def run_loss_test(nb: dict, solution: str) -> None:
    """Run lesson 10's support code, `solution` (a make_train_step cell) and Exercise 2's test, hidden part included."""
    import numpy as np
    import tensorflow as tf

    import tfperf

    namespace = {"np": np, "tf": tf, "tfperf": tfperf}
    exec(source(cell(nb, "baseline_build_model")), namespace)
    exec(solution, namespace)
    exec(source(cell(nb, "train_step_matches_reference")), namespace)


def mean_of_batch_means(solution: str) -> str:
    """The same solution, with the loss metric fed the batch mean unweighted (what lesson 05 shows to be wrong)."""
    changed, count = re.subn(r'metrics\["loss"\]\.update_state\(.*\)', 'metrics["loss"].update_state(loss)', solution)
    assert count == 1, "expected one update of metrics['loss'] in the reference step"
    return changed


def check_capstone_asks_for_a_mean_over_examples(nb: dict) -> None:
    text = source(cell(nb, "md-23"))
    assert "sample_weight" in text and "per-example" in text, "Exercise 2 should ask for the loss weighted by batch size"
    reference = source(cell(nb, "make_train_step_solution"))
    assert "sample_weight" in reference, "the reference step should weight the batch loss by the batch size"


def check_capstone_test_rejects_a_mean_of_batch_means(nb: dict) -> None:
    reference = source(cell(nb, "make_train_step_solution"))
    run_loss_test(nb, reference)  # the reference passes its own test
    try:
        run_loss_test(nb, mean_of_batch_means(reference))
    except AssertionError as error:
        assert "metrics['loss']" in str(error), f"failed for another reason: {error}"
    else:
        raise AssertionError("Exercise 2's test accepts a loss metric fed unweighted batch means")


def check_capstone_ids_and_points_unchanged(nb: dict) -> None:
    meta = cell(nb, "train_step_matches_reference")["metadata"]["nbgrader"]
    assert meta["grade_id"] == "train_step_matches_reference" and meta["points"] == 2 and meta["locked"]
    assert cell(nb, "make_train_step_solution")["metadata"]["nbgrader"]["solution"]


def test_capstone_exercise_and_reference_ask_for_a_mean_over_examples():
    check_capstone_asks_for_a_mean_over_examples(notebook("10_capstone"))


def test_capstone_loss_test_rejects_a_mean_of_batch_means():
    check_capstone_test_rejects_a_mean_of_batch_means(notebook("10_capstone"))


def test_capstone_loss_test_keeps_its_id_and_points():
    check_capstone_ids_and_points_unchanged(notebook("10_capstone"))


# Lesson 07: the takeaway follows section 4's measurement.

def logging_advice(nb: dict) -> list[str]:
    """The units that advise how often to log: the Overview's takeaways, section 1's cost row, the Summary."""
    advice = []
    for c in nb["cells"]:
        text = source(c)
        if c["cell_type"] == "markdown" and (text.startswith("## Overview") or text.startswith("## Summary")):
            advice += units(text)
        elif c["cell_type"] == "markdown":
            advice += [row for row in units(text) if row.startswith("| (no cost mentioned)")]
    return advice


def check_tensorboard_takeaway(nb: dict) -> None:
    advice = logging_advice(nb)
    assert any(unit.startswith("| (no cost mentioned)") for unit in advice), "section 1's cost row is missing"
    loose = [unit for unit in advice if "if you like" in unit
             or (re.search(r"scalars every step", unit) and "tf.function" not in unit)]
    assert not loose, f"advice to log scalars every step from Python, which section 4 measures as costly: {loose}"
    overview = next(source(c) for c in nb["cells"] if source(c).startswith("## Overview"))
    assert "tf.function" in overview and "section 4" in overview, "the Overview's logging takeaway should point to the measurement"


def test_tensorboard_takeaway_does_not_advise_logging_every_step_from_python():
    check_tensorboard_takeaway(notebook("07_tensorboard"))


# Lessons 02, 04, 07: a "What to notice" prints the learner's numbers and takes its words from the interval.

def check_what_to_notice(nb: dict, lesson: str) -> None:
    cells = nb["cells"]
    noticed = 0
    for index, c in enumerate(cells):
        text = source(c)
        if c["cell_type"] != "markdown":
            continue
        quoted = [phrase for phrase in QUOTED_AS_FACT[lesson] if phrase in text]
        if not (text.startswith("What to notice") or quoted):
            continue
        following = cells[index + 1] if index + 1 < len(cells) else None
        assert text.startswith("What to notice") and following is not None and following["cell_type"] == "code" \
            and ".describe(" in source(following), (
            f"{lesson}, cell {c.get('id')}: states {quoted or 'a measured effect'} without printing the learner's numbers "
            "in the words of their interval (a code cell calling Comparison.describe right after it)")
        noticed += 1
    assert noticed, f"{lesson}: no 'What to notice' prints the learner's own numbers"


@pytest.mark.parametrize("lesson", sorted(QUOTED_AS_FACT))
def test_what_to_notice_prints_the_learners_numbers(lesson):
    check_what_to_notice(notebook(lesson), lesson)


def check_cpu_overlap_called_fragile(nb: dict) -> None:
    markdown = " ".join(source(c) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "no reliable gain" not in markdown, "lesson 04 still states 'no reliable gain' as a fact"
    overview = next(source(c) for c in nb["cells"] if source(c).startswith("## Overview"))
    assert "fragile" in overview, "the Overview should call the CPU-bound overlap fragile"


def test_tf_data_calls_cpu_bound_overlap_fragile():
    check_cpu_overlap_called_fragile(notebook("04_tf_data"))


# Lesson 01: the article's 15-20% explained as a hypothesis.

def check_article_speedup_is_a_hypothesis(nb: dict) -> None:
    guesses = [unit for c in nb["cells"] if c["cell_type"] == "markdown" for unit in units(source(c))
               if "GPU" in unit and "older" in unit]
    assert guesses, "the explanation of the article's 15-20% is missing"
    stated = [unit for unit in guesses if "hypothes" not in unit]
    assert not stated, f"a guess stated as fact: {stated}"


def test_callable_handles_explains_the_article_speedup_as_a_hypothesis():
    check_article_speedup_is_a_hypothesis(notebook("01_callable_handles"))
