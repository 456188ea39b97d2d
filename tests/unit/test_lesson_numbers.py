"""Numbers that disagree with themselves (issue 24, section 1): what the lessons and helpers print must agree.

Each notebook check takes a notebook dict (as `json.load` gives it), so it can be run against an older
version (`git show <commit>:solutions/...`). Some checks execute a lesson's printing cell against fake
measurements; nothing here times anything or imports TensorFlow.
"""

import contextlib
import io
import json
import pathlib
import re
import types

import numpy as np
import pytest

import tfperf
from tfperf import plots, timing
from conftest import make_result
from test_truth import cell, notebook, source  # the solution notebooks, read one way

ROOT = pathlib.Path(__file__).resolve().parents[2]




def index(nb: dict, cell_id: str) -> int:
    return next(i for i, c in enumerate(nb["cells"]) if c.get("id") == cell_id)


def first_unit(nb: dict, word: str) -> str:
    """The first markdown paragraph (or list item) that uses ``word``."""
    for c in nb["cells"]:
        if c["cell_type"] == "markdown":
            for paragraph in re.split(r"\n\s*\n|\n(?=- )", source(c)):
                if word in paragraph.lower():
                    return " ".join(paragraph.split())
    raise AssertionError(f"{word!r} is not used")


def run_cell(text: str, namespace: dict) -> str:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(text, "<cell>", "exec"), namespace)
    return printed.getvalue()


# The helpers: a summary line's speedup and medians, and the one rule for the words.

def comparison(ratios, ci, baseline_ms, candidate_ms) -> timing.Comparison:
    return timing.Comparison(make_result("start", samples=(baseline_ms / 1e3,) * 3),
                             make_result("fast", samples=(candidate_ms / 1e3,) * 3), tuple(ratios), ci)


def test_a_summary_names_the_medians_ratio_and_says_when_it_leaves_the_interval():
    # lesson 10's line: the paired median said 0.95x while the medians said 67.6 ms -> 51.2 ms (1.32x)
    line = comparison((0.9, 0.95, 1.0), (0.80, 1.10), 67.6, 51.2).summary()
    assert "0.95x" in line and "paired" in line
    assert "1.32x" in line and "outside the interval" in line, line
    steady = comparison((1.9, 2.0, 2.1), (1.9, 2.1), 2.0, 1.0).summary()
    assert "a ratio of 2.00x" in steady and "outside" not in steady, steady


def test_describe_uses_the_rubrics_rule_an_interval_reaching_one_is_no_difference():
    below = comparison((0.83,), (0.78, 0.99), 1.0, 1.2)
    assert below.describe().endswith("slower on this run."), below.describe()
    reaching = comparison((0.97,), (0.94, 1.01), 1.0, 1.03)
    assert "no measurable difference on this run (the interval reaches 1x)" in reaching.describe()
    assert plots._verdict(0.78, 0.99) == "slower" and plots._verdict(1.01, 1.04) == "faster"
    rubric = source(cell(notebook("10_capstone"), "md-44"))
    assert "an interval that reaches 1x is \"no\nmeasurable difference\"" in rubric or "reaches 1x is \"no measurable difference\"" in " ".join(rubric.split())


# Ranges quoted from the course's runs: recorded, per profile, never typed into a lesson.

LESSONS = sorted(path.parent.name for path in (ROOT / "solutions").glob("*/*.ipynb"))


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_seen_range_is_read_from_the_recorded_runs(lesson):
    for c in notebook(lesson)["cells"]:
        text = source(c)
        if c["cell_type"] != "code" or "seen" not in text:
            continue
        for argument in re.findall(r"describe\(seen=([^\n]*)", text):
            assert argument.startswith("tfperf.report.seen("), f"{lesson}, {c['id']}: a range typed by hand: seen={argument}"
        assert not re.search(r"SEEN\w* = \{", text), f"{lesson}, {c['id']}: a table of ranges typed by hand"


def test_recorded_ranges_belong_to_a_profile_and_describe_says_which(tmp_path, monkeypatch):
    ranges = {"profiles": {"full": {"10_capstone": {"capstone_trainer": {"low": 7.5, "high": 9.0, "runs": 3, "one_run": [6.9, 9.8]}}},
                           "reduced": {"10_capstone": {"capstone_trainer": {"low": 2.3, "high": 5.9, "runs": 3, "one_run": [1.9, 7.1]},
                                                       "twice": {"low": 1.0, "high": 1.1, "runs": 2}}}}}
    (tmp_path / "ranges.json").write_text(json.dumps(ranges))
    monkeypatch.setattr(tfperf.report, "RANGES_FILE", tmp_path / "ranges.json")
    full = tfperf.report.seen("10_capstone", "capstone_trainer", profile="full")
    assert tuple(full) == (6.9, 9.8) and full.profile == "full"  # where one run lands, not the medians' 7.5-9
    assert tuple(tfperf.report.seen("10_capstone", "capstone_trainer", profile="reduced")) == (1.9, 7.1)
    assert tfperf.report.seen("10_capstone", "twice", profile="reduced") is None  # two runs give no range of one run
    sentence = comparison((8.8,), (8.1, 9.4), 80.0, 9.1).describe(seen=full)
    assert "On the course's 2-core VM one run lands in 6.9-9.8x (9 runs in 10, from its 3 recorded runs in the full profile)." in sentence
    assert "outside" not in sentence  # 8.8x lands inside
    assert "This run landed outside that range." in comparison((2.0,), (1.9, 2.1), 2.0, 1.0).describe(seen=full)


def test_the_sentence_quotes_the_articles_claim_the_lesson_recorded_and_not_the_courses_notes(tmp_path, monkeypatch):
    """Issue 51 item 2: "your run: ...; this course's 2-core VM: ...; the article: about 10x", the claim read from what
    this kernel recorded (`tfperf.report.record`), never typed twice."""
    ranges = {"profiles": {"full": {"03_tf_function": {name: {"low": 18.0, "high": 31.0, "runs": 5, "one_run": [17.0, 33.0]}
                                                       for name in ("step", "tiny", "unrecorded")}}}}
    (tmp_path / "ranges.json").write_text(json.dumps(ranges))
    monkeypatch.setattr(tfperf.report, "RANGES_FILE", tmp_path / "ranges.json")
    monkeypatch.setattr(tfperf.report, "_CLAIMS", {})
    run = comparison((23.7,), (21.0, 26.1), 23.7, 1.0)
    tfperf.report.record("step", run, claim="tens of seconds become a few (about 10x)")
    tfperf.report.record("tiny", run, claim="not measured in the article")
    sentence = run.describe(seen=tfperf.report.seen("03_tf_function", "step", profile="full"))
    assert sentence.endswith("in the full profile); the article: tens of seconds become a few (about 10x)."), sentence
    assert "the article" not in run.describe(seen=tfperf.report.seen("03_tf_function", "tiny", profile="full"))
    assert "the article" not in run.describe(seen=tfperf.report.seen("03_tf_function", "unrecorded", profile="full"))


def test_describe_calls_an_effect_fragile_only_when_the_rule_called_recorded_runs_faster_and_slower():
    from tfperf.report import Seen

    run = comparison((1.1,), (1.02, 1.2), 1.1, 1.0)
    # medians on both sides of 1x, but no run's interval left "no measurable difference" on the slow side: not fragile
    nulls = Seen(0.9, 1.12, runs=5, profile="full", counts=(1, 0, 4))
    assert "fragile" not in run.describe(seen=nulls).lower()
    assert "lands in 0.9-1.12x (9 runs in 10, from its 5 recorded runs in the full profile): faster in 1 and no measurable " \
           "difference in 4 of the 5 recorded runs." in run.describe(seen=nulls)
    both = Seen(0.7, 1.4, runs=5, profile="full", counts=(2, 1, 2))
    assert "A fragile effect: on the course's 2-core VM one run lands in 0.7-1.4x (9 runs in 10, from its 5 recorded runs in " \
           "the full profile), faster in 2, slower in 1" in run.describe(seen=both)
    assert "fragile" not in run.describe(seen=(0.7, 1.4)).lower()  # a bare range holds no intervals: no judgment


def test_the_packaged_ranges_are_built_from_the_kept_runs():
    from tfperf_lab.publish import ranges
    from tfperf_lab.course import Course

    course = Course.find(ROOT)
    assert tfperf.report.RANGES_FILE.read_text(encoding="utf-8") == ranges.text(course), (
        "tfperf/ranges.json differs from docs/runs/: run `tfperf-lab ranges`")


# Lesson 07: one per-step table, every variant from every comparison that timed it.

STEP_MS = {"none": 1.0, "scalars": 3.0, "every_10": 10.0, "every_step": 60.0, "in_graph": 2.0}


def variant(label: str) -> str:
    for words, name in (("inside tf.function", "in_graph"), ("no logging", "none"), ("scalars every step", "scalars"),
                        ("histograms every step", "every_step"), ("every 10", "every_10")):
        if words in label:
            return name
    raise AssertionError(f"unknown variant {label!r}")


def test_tensorboard_per_step_table_pools_each_variant_over_every_comparison():
    nb = notebook("07_tensorboard")
    chunk, pooled, made = 20, {}, []

    def fake_compare(baseline, candidate, *, labels, **options):
        load = 1 + 0.4 * len(made)  # the machine gets busier from one comparison to the next
        sides = []
        for label in labels:
            samples = tuple(STEP_MS[variant(label)] * chunk / 1e3 * load * (1 + 0.01 * np.arange(5)))
            pooled.setdefault(variant(label), []).extend(samples)
            sides.append(make_result(label, samples=samples))
        made.append(timing.Comparison(sides[0], sides[1], (1.0,) * 5, (0.9, 1.1)))
        return made[-1]

    fake = types.SimpleNamespace(compare=fake_compare, record=lambda name, result, **_: result)
    namespace = {"tfperf": fake, "np": np, "CHUNK": chunk, "HISTOGRAM_EVERY": 10, "chunks": [], "BUDGET": 1.0, "ROUNDS": 2,
                 "logged_chunk": None, "in_graph_chunk": None, "tf": None, "cost_writer": None}
    for cell_id in ("code-38", "code-40", "code-40-scalars", "code-45"):
        run_cell(source(cell(nb, cell_id)), namespace)
    assert index(nb, "code-42") > index(nb, "code-45"), "the per-step table comes before the last comparison it should use"
    printed = run_cell(source(cell(nb, "code-42")), namespace)
    rows = re.findall(r"^(.+?)\s+([\d.]+) ms per step", printed, flags=re.M)
    assert {variant(label) for label, _ in rows} == set(STEP_MS), printed
    for label, value in rows:
        expected = np.median(pooled[variant(label)]) / chunk * 1e3
        assert float(value) == pytest.approx(expected, abs=0.006), f"{label}: {value} ms per step, pooled median {expected:.2f} ms"


def test_tensorboard_draws_the_cost_of_logging_below_one_as_lesson_08_draws_a_cost():
    nb = notebook("07_tensorboard")
    for cell_id in ("code-40", "code-40-scalars"):
        assert re.search(r'labels=\("no logging", ', source(cell(nb, cell_id))), f"{cell_id}: the cost should be timed against no logging"
    every_n = source(cell(nb, "code-40"))
    assert "technique=" in every_n and "below 1x" in every_n


def test_per_epoch_plots_count_epochs_in_whole_numbers():
    import matplotlib

    matplotlib.use("Agg")
    series = types.SimpleNamespace(steps=(0, 1, 2), values=(0.5, 0.3, 0.2))
    ax = plots.logged_scalars({"loss": series}, xlabel="epoch")
    assert ax.get_xlabel() == "epoch"
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert all(float(t).is_integer() for t in ticks), ticks
    curves = plots.metric_curves({"accuracy": [0.8, 0.9, 0.95]})
    assert all(float(t).is_integer() for t in curves.get_xticks() if curves.get_xlim()[0] <= t <= curves.get_xlim()[1])
    for lesson, cell_id in (("07_tensorboard", "code-32"), ("10_capstone", "code-34")):
        assert 'xlabel="epoch' in source(cell(notebook(lesson), cell_id)), f"{lesson} {cell_id}: a per-epoch plot labels its axis 'step'"


# Lesson 02: the growth of the leaky loop, printed and drawn.

def test_graph_growth_calls_the_slowdown_slower_and_labels_the_slope_in_ops():
    nb = notebook("02_graph_growth")
    samples = tuple(0.008 + 0.0001 * np.arange(60))  # 8 ms growing to 14 ms
    graph = types.SimpleNamespace(get_operations=lambda: [None] * 1400)
    namespace = {"np": np, "tfperf": tfperf, "window": 6, "ops_in_graph": np.arange(60) * 23,
                 "leaky_run": types.SimpleNamespace(samples=samples), "leaky": types.SimpleNamespace(graph=graph)}
    printed = run_cell(source(cell(nb, "code-21")), namespace)
    assert "faster" not in printed and "slower on this run" in printed, printed
    import matplotlib

    matplotlib.use("Agg")
    values = np.array(samples)
    values[30] = 1.0
    points, _, slope = plots.growth(values, x=np.arange(60) * 23, window=6).get_lines()
    assert "(1 spike drawn at the top edge)" in points.get_label() and " ms per 1,000 ops" in slope.get_label()
    prose = source(cell(nb, "md-20"))
    assert "rises\nroughly in a straight line" not in prose or "busy" in prose, "the text promises a straight line a busy machine does not draw"


def test_prose_numbers_come_from_the_run():
    assert "50-150 ms" not in source(cell(notebook("02_graph_growth"), "md-43"))
    assert "a call that traced" in source(cell(notebook("02_graph_growth"), "code-44"))
    assert "half a millisecond" not in source(cell(notebook("04_tf_data"), "md-48-permutation-notice"))
    answer = source(cell(notebook("10_capstone"), "performance_report"))
    assert "8,000 training images" not in answer and "on 384 images" not in answer, "the model answer quotes the reduced profile"
    assert "1,280-image epochs" in answer, "the model answer should say it is the learner's workload"


def test_metrics_lesson_explains_the_second_trace_where_it_prints_it():
    text = source(cell(notebook("05_metrics"), "code-29"))
    assert "traces of train_step" in text and "optimizer" in text and "variables" in text


# Terms explained where first used; lesson 04 shows the measurement its question relies on; lesson 10's layout.

@pytest.mark.parametrize("lesson, word, explained", [
    ("01_callable_handles", "executor", "runs the graph's ops"),
    ("01_callable_handles", "confidence sequence", "whatever round"),
    ("08_timeline_profiler", "all-reduce", "combines"),
])
def test_jargon_is_explained_at_first_use(lesson, word, explained):
    assert explained in first_unit(notebook(lesson), word), first_unit(notebook(lesson), word)[:200]


def test_tf_data_times_the_pipeline_alone_against_the_step_alone():
    nb = notebook("04_tf_data")
    cells = [source(c) for c in nb["cells"][index(nb, "md-44"):index(nb, "md-47")] if c["cell_type"] == "code"]
    assert any("pipeline_alone" in text and "step_alone" in text for text in cells), "section 4.5 never times each side alone"


def anchor(heading: str) -> str:
    """Jupyter's anchor of a markdown heading: the rendered text (no code marks), spaces as hyphens."""
    return heading.lstrip("#").strip().replace("`", "").replace(" ", "-")


@pytest.mark.parametrize("lesson", LESSONS)
def test_summary_links_match_their_headings(lesson):
    nb = notebook(lesson)
    anchors = {anchor(line) for c in nb["cells"] if c["cell_type"] == "markdown" for line in source(c).splitlines()
               if line.startswith("#")}
    for c in nb["cells"]:
        if c["cell_type"] == "markdown":
            for target in re.findall(r"\]\(#(\S+)\)", source(c)):
                assert target in anchors, f"{lesson}, {c['id']}: link #{target} matches no heading"


def test_capstone_plots_the_logs_right_after_introducing_them():
    nb = notebook("10_capstone")
    assert "logged_scalars" in source(nb["cells"][index(nb, "md-31") + 1])
