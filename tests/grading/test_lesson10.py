"""Lesson 10 (capstone) against answers that are correct but not optimized, or optimized differently, graded once.

One submission carries both of the lesson's variants (`tfperf_lab.course.variants`), which sit in different
exercises: a train step left eager (no `tf.function`) and a "pipeline" that is a Python list of batches.
It must keep every correctness point (examples, the step's math, metric resets, logs, test accuracy) and
lose the structure points of both exercises and the speed point. Beside it, in the same grading run:

- the pipeline order the exercise also allows, `map` per example and then `batch`: it keeps every point,
  the speed point included (it once measured 2.65x against 2x and failed under load);
- a step that holds one `tf.function` per batch size inside a `PolymorphicFunction` subclass that reports
  a single trace: it passed the two trace-count cells while they were checked in the learner's kernel only;
  they are now backed by the speed check, whose epochs come in fresh batch sizes, so it loses them with it;
- a step that retraces for every batch size, wrapped in a subclass of tf.function's own class built with three-argument
  `type()` that reports one trace: the two trace cells read the count through TensorFlow's class and require its exact
  type, so their own tests fail (the review list may withhold them as well).
"""

import pytest

from tfperf_lab.course import variants
from pipeline import COURSE, assert_keeps_and_loses, class_results, scores, with_changes, with_solution

pytestmark = pytest.mark.pipeline
LESSON = COURSE.lesson("10_capstone")
FAULTS = {variant.name: variant for variant in variants.for_lesson(LESSON.id)}
KEEPS = set.intersection(*(set(variant.keeps) for variant in FAULTS.values()))
LOSES = set.union(*(set(variant.loses) for variant in FAULTS.values()))
CHECK = "exercise_capstone_epoch"

BATCH_THEN_MAP = ("    dataset = dataset.batch(batch_size)\n"
                  "    dataset = dataset.map(to_float, num_parallel_calls=tf.data.AUTOTUNE)  # one vectorised op per batch\n")
MAP_THEN_BATCH = ("    dataset = dataset.map(to_float, num_parallel_calls=tf.data.AUTOTUNE)  # one op per example\n"
                  "    dataset = dataset.batch(batch_size)\n")
PER_BATCH_SIZE = {
    "    @tf.function(input_signature=SIGNATURE)\n    def step(": "    def step(",
    "    return step\n": '''    class PerBatchSize(tf.types.experimental.PolymorphicFunction):
        """One tf.function per batch size, each traced once: it reports a single trace."""

        def __init__(self):
            self.functions = {}

        def __call__(self, images, labels):
            size = int(images.shape[0])
            if size not in self.functions:
                self.functions[size] = tf.function(step)
            return self.functions[size](images, labels)

        def experimental_get_tracing_count(self):
            return 1

        def get_concrete_function(self, *args, **kwargs):
            raise NotImplementedError

        @property
        def function_type(self):
            return None

    return PerBatchSize()
''',
}
TRACE_CELLS = ("train_step_compiled_once", "trainer_no_retracing")
SUBCLASS_REPORTS_ONE = {
    "    @tf.function(input_signature=SIGNATURE)\n    def step(": "    def step(",
    "    return step\n": (
        "    # tf.function's own class, subclassed with type(): retraces for every batch size, reports a single trace\n"
        '    counted = type("Step", (type(tf.function(lambda: None)),), {"experimental_get_tracing_count": lambda self: 1})\n'
        '    return counted(step, "step")\n'),
}
SUBCLASS_KEEPS = ("dataset_batches_examples", "dataset_pipeline_structure", "train_step_matches_reference", "train_resets_metrics",
                  "train_logs_scalars", "trainer_reaches_target_accuracy")


def class_submissions():
    changes = {cell: dict(replace) for variant in FAULTS.values() for cell, replace in variant.changes}
    return {
        "eager_step_list_batches": with_changes(LESSON, changes),
        "map_then_batch": with_solution(LESSON, "make_dataset_solution", {BATCH_THEN_MAP: MAP_THEN_BATCH}),
        "function_per_batch_size": with_solution(LESSON, "make_train_step_solution", PER_BATCH_SIZE),
        "function_subclass_reports_one_trace": with_solution(LESSON, "make_train_step_solution", SUBCLASS_REPORTS_ONE),
    }


graded = class_results(LESSON)


def test_both_variants_are_in_different_exercises():
    assert sorted(FAULTS) == ["eager_train_step", "list_of_batches"]
    assert len({cell for variant in FAULTS.values() for cell in variant.cells}) == 2
    assert KEEPS and LOSES and not KEEPS & LOSES


def test_unoptimized_capstone_keeps_correctness_and_loses_structure_and_speed(graded):
    assert_keeps_and_loses(graded["eager_step_list_batches"], KEEPS, LOSES)


def test_eager_trainer_is_measured_below_the_threshold(graded):
    (measured,) = [m for m in graded["eager_step_list_batches"].measurements if m.name == CHECK]
    assert not measured.passed and measured.ci[0] < measured.threshold, measured


def test_the_trace_cells_need_the_speed_verdict():
    assert {cell: LESSON.review_cells().get(cell) for cell in TRACE_CELLS} == {cell: [CHECK] for cell in TRACE_CELLS}


def test_mapping_each_example_then_batching_keeps_every_point_and_the_speed_cell(graded):
    result = graded["map_then_batch"]
    got = scores(result)
    assert result.error is None and all(got[c["id"]] == c["points"] for c in LESSON.grade_cells() if c["kind"] == "auto"), "\n".join(result.lines())
    (measured,) = [m for m in result.measurements if m.name == CHECK]
    assert measured.passed and measured.ci[0] >= measured.threshold and "grader" in measured.technique, measured


def test_one_function_per_batch_size_loses_the_trace_cells_with_the_speed_check(graded):
    result = graded["function_per_batch_size"]
    got = scores(result)
    assert got["train_step_matches_reference"] == 2 and got["trainer_reaches_target_accuracy"] == 2, "\n".join(result.lines())
    assert {cell: got[cell] for cell in TRACE_CELLS + ("trainer_is_faster",)} == dict.fromkeys(TRACE_CELLS + ("trainer_is_faster",), 0), (
        "\n".join(result.lines()))
    (measured,) = [m for m in result.measurements if m.name == CHECK]
    assert not measured.passed, measured


def test_a_subclass_of_tf_functions_class_loses_the_trace_cells_on_their_own_evidence(graded):
    result = graded["function_subclass_reports_one_trace"]
    assert_keeps_and_loses(result, SUBCLASS_KEEPS, TRACE_CELLS)
    # The review list may also withhold these cells (it reads three-argument type() on a library's class); either way the
    # trace cells' own tests must fail: a withheld cell whose test passed says "its test passed".
    lost = [cell for cell in result.cells if cell.id in TRACE_CELLS]
    assert all(cell.status == "failed" and "not TensorFlow's own tf.function object" in cell.message
               or cell.status == "review" and "its test passed" not in cell.message for cell in lost), "\n".join(result.lines())
