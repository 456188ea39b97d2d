"""Lesson 04's exercises against answers that are correct but not optimized, and its timeline plot.

Exercise 1 (augmentation that changes every epoch): the article's order (random shift, then
`cache()`) keeps the examples point and loses the fresh-augmentation and structure points.
Exercise 2 (a fast pipeline): `naive_pipeline` returned unchanged, and a serial pipeline that caches
in the right place but reads one file at a time and has no prefetch, keep the correctness points
and lose the structure and speed points. The reference pipeline with a sequential 40 ms Python stage
per batch before its prefetch (slower than naive_pipeline at steady state: 40 ms against 20 + 10 ms a
batch) keeps every structure point and loses the speed point: the speed check times whole epochs on
fresh pipelines, so a prefetch buffer filled while naive_pipeline is timed cannot hide the slow stage.
"""

import matplotlib

matplotlib.use("Agg")

import pytest

import tfperf
from pipeline import COURSE, assert_keeps_and_loses, class_results, with_changes

pytestmark = pytest.mark.pipeline
LESSON = COURSE.lesson("04_tf_data")
FIXED, FAST = "fixed_pipeline_solution", "fast_pipeline_solution"
FIXED_ORDER = (
    "    dataset = dataset.map(preprocess, num_parallel_calls=tf.data.AUTOTUNE)  # deterministic: cache it\n"
    "    dataset = dataset.cache()\n"
    "    dataset = dataset.shuffle(shuffle_buffer)\n"
    "    dataset = dataset.map(random_shift, num_parallel_calls=tf.data.AUTOTUNE)  # random: after the cache\n"
)
ARTICLE_ORDER = (
    "    dataset = dataset.map(lambda image, label: random_shift(*preprocess(image, label)), num_parallel_calls=tf.data.AUTOTUNE)\n"
    "    dataset = dataset.cache()\n"
    "    dataset = dataset.shuffle(shuffle_buffer)\n"
)
FAST_TO_SERIAL = {
    "dataset.map(read, num_parallel_calls=tf.data.AUTOTUNE)": "dataset.map(read)",
    "dataset.map(augment, num_parallel_calls=tf.data.AUTOTUNE)": "dataset.map(augment)",
    "    return dataset.prefetch(tf.data.AUTOTUNE)\n": "    return dataset\n",
}
FAST_LAST_STAGES = "    dataset = dataset.batch(batch_size)\n    return dataset.prefetch(tf.data.AUTOTUNE)\n"
SEQUENTIAL_PYTHON_STAGE = {  # 40 ms of Python per batch, one batch at a time (no num_parallel_calls), then prefetch
    FAST_LAST_STAGES: "    dataset = dataset.batch(batch_size)\n"
                      "    def python_stage(batch):\n        time.sleep(0.04)\n        return batch\n"
                      "    dataset = dataset.map(lambda images, labels: (tf.py_function(python_stage, [images], tf.float32), labels))\n"
                      "    return dataset.prefetch(tf.data.AUTOTUNE)\n",
}

# name -> {solution cell: {old: new}}
VARIANTS = {
    "article_order_and_naive_pipeline": {
        FIXED: {FIXED_ORDER: ARTICLE_ORDER},
        FAST: {"    ### BEGIN SOLUTION\n": "    ### BEGIN SOLUTION\n    return naive_pipeline(files, read, augment, "
                                          "batch_size=batch_size, shuffle_buffer=shuffle_buffer)\n"},
    },
    "cached_but_serial": {FAST: FAST_TO_SERIAL},
    "sequential_python_stage": {FAST: SEQUENTIAL_PYTHON_STAGE},
}
EXPECTED = {  # name -> (cells that keep their points, cells that score 0)
    "article_order_and_naive_pipeline": (
        ("fixed_pipeline_keeps_the_examples", "fast_pipeline_same_examples", "fast_pipeline_augments_every_epoch"),
        ("fixed_pipeline_changes_every_epoch", "fixed_pipeline_caches_before_random_work", "fast_pipeline_structure",
         "fast_pipeline_is_faster"),
    ),
    "cached_but_serial": (
        ("fixed_pipeline_changes_every_epoch", "fixed_pipeline_keeps_the_examples", "fixed_pipeline_caches_before_random_work",
         "fast_pipeline_same_examples", "fast_pipeline_augments_every_epoch"),
        ("fast_pipeline_structure", "fast_pipeline_is_faster"),
    ),
    "sequential_python_stage": (
        ("fixed_pipeline_changes_every_epoch", "fixed_pipeline_keeps_the_examples", "fixed_pipeline_caches_before_random_work",
         "fast_pipeline_same_examples", "fast_pipeline_augments_every_epoch", "fast_pipeline_structure"),
        ("fast_pipeline_is_faster",),
    ),
}


def class_submissions():
    return {name: with_changes(LESSON, changes) for name, changes in VARIANTS.items()}


graded = class_results(LESSON)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_unoptimized_answers_keep_correctness_and_lose_structure_and_speed_points(graded, name):
    assert_keeps_and_loses(graded[name], *EXPECTED[name])


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_unoptimized_pipelines_are_measured_below_the_threshold(graded, name):
    """By the grader, with the whole interval below the threshold: these answers fail clearly, not by chance."""
    (measured,) = [m for m in graded[name].measurements if m.name == "exercise_fast_pipeline"]
    assert measured.ci[1] < measured.threshold and not measured.passed, measured


def test_a_sequential_python_stage_is_slower_than_naive_pipeline(graded):
    """The stage costs 40 ms a batch against naive_pipeline's 30: no prefetch buffer can make that up over a whole epoch."""
    (measured,) = [m for m in graded["sequential_python_stage"].measurements if m.name == "exercise_fast_pipeline"]
    assert measured.speedup < 1.0, measured


def test_timeline_puts_overlapping_spans_in_extra_lanes():
    spans = {"read": [(0.0, 0.020), (0.001, 0.021), (0.020, 0.040)], "train": [(0.021, 0.031)]}
    ax = tfperf.plots.timeline(spans, title="t")
    assert [label.get_text() for label in ax.get_yticklabels()] == ["read", "read (2)", "train"]
    bars = [collection.get_paths() for collection in ax.collections]
    assert [len(paths) for paths in bars] == [2, 1, 1]  # the third read reuses the first lane
    assert ax.get_xlabel() == "time (ms)" and ax.get_title() == "t"
    extent = ax.collections[2].get_paths()[0].get_extents()
    assert extent.x0 == pytest.approx(21.0) and extent.x1 == pytest.approx(31.0)  # ms from the earliest start


def test_timeline_rejects_no_spans():
    with pytest.raises(ValueError, match="at least one"):
        tfperf.plots.timeline({"read": [], "train": []})
