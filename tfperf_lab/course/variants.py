"""Answers that are correct but not optimized, for every lesson that grades speed or structure: the one registry.

Each variant is the reference solution with text replaced in one or more solution cells. It must keep the points of
``keeps`` and score 0 on ``loses``, on every grading run: the pipeline tests check this once, and
``tfperf-lab flake --variants`` checks it many times, under load: the committed campaigns cover every variant
(tests/unit/test_flake_records.py).
"""

from __future__ import annotations

import dataclasses

from . import notebook
from .config import RECORD_VARIABLE
from .lessons import Lesson


@dataclasses.dataclass(frozen=True)
class Variant:
    lesson: str
    name: str
    changes: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]  # (cell id, ((old, new), ...)), ...
    keeps: tuple[str, ...]
    loses: tuple[str, ...]

    @property
    def cells(self) -> tuple[str, ...]:
        return tuple(cell for cell, _ in self.changes)

    def notebook(self, lesson: Lesson) -> dict:
        """The reference solution of ``lesson`` with this variant's replacements applied (a fresh copy)."""
        if lesson.id != self.lesson:
            raise ValueError(f"variant {self.name} belongs to {self.lesson}, not {lesson.id}")
        return apply(lesson.source_notebook(), dict(self.changes), what=f"variant {self.name}")


def apply(nb: dict, changes: dict[str, tuple[tuple[str, str], ...]], *, what: str = "change") -> dict:
    """``nb`` with text replaced in the named cells: ``{cell id: ((old, new), ...)}``; raises ValueError if a text is missing."""
    for cell in nb["cells"]:
        if cell.get("id") in changes:
            body = notebook.source(cell)
            for old, new in changes[cell["id"]]:
                if old not in body:
                    raise ValueError(f"{what}: {old!r} is not in cell {cell['id']}")
                body = body.replace(old, new)
            cell["source"] = body
    missing = set(changes) - {cell.get("id") for cell in nb["cells"]}
    if missing:
        raise ValueError(f"{what}: no cells {sorted(missing)}")
    return nb


def one(lesson: str, name: str, cell: str, replace: tuple[tuple[str, str], ...], **kw) -> Variant:
    """A variant that changes one cell."""
    return Variant(lesson, name, ((cell, replace),), **kw)


_HANDLE = "    handle = sess._make_callable_from_options(options)\n"

VARIANTS = [
    one("01_callable_handles", "calls_sess_run", "make_callable_solution",
            ((_HANDLE, _HANDLE + "    def handle(*values):\n        return sess.run(fetch + target, dict(zip(feed, values)))[: len(fetch)]\n"),),
            keeps=("handle_matches_sess_run", "handle_rejects_bad_elements"), loses=("handle_built_once", "handle_is_faster")),
    one("01_callable_handles", "public_make_callable", "make_callable_solution",
            ((_HANDLE, "    public = sess.make_callable(fetch + target, feed_list=feed)\n"
                       "    def handle(*values):\n        return list(public(*values))[: len(fetch)]\n"),),
            keeps=("handle_matches_sess_run", "handle_rejects_bad_elements"), loses=("handle_built_once", "handle_is_faster")),
]

_FINALIZE = "        self.graph.finalize()\n"
_AUGMENT_CALL = ("        feed = {self.image: image, self.flip: flip, self.brightness: brightness, self.contrast: contrast}\n"
                 "        return self.session.run(self.output, feed)\n")
VARIANTS.append(one(
    "02_graph_growth", "leaky_loop", "augmenter_solution",
    ((_FINALIZE, ""), (_AUGMENT_CALL, "        with self.graph.as_default():\n            output = augment_ops(image, flip, brightness, contrast)\n"
                                     "        return self.session.run(output)\n")),
    keeps=("augmenter_matches_leaky",),
    loses=("augmenter_graph_stays_fixed", "augmenter_graph_finalized", "augmenter_time_flat", "augmenter_beats_leaky")))
VARIANTS.append(one(  # the article's fix: flat, finalized, and slower than the leaky loop after 40 images
    "02_graph_growth", "new_graph_per_image", "augmenter_solution",
    ((_AUGMENT_CALL, "        self.graph = tf.Graph()\n        with self.graph.as_default():\n"
                     "            output = augment_ops(image, flip, brightness, contrast)\n        self.graph.finalize()\n"
                     "        with v1.Session(graph=self.graph) as self.session:\n            return self.session.run(output)\n"),),
    keeps=("augmenter_matches_leaky", "augmenter_graph_finalized", "augmenter_time_flat"),
    loses=("augmenter_graph_stays_fixed", "augmenter_beats_leaky")))
VARIANTS.append(one(
    "06_gradient_tape", "eager_train_step", "train_step_solution", (("    @tf.function\n    def train_step", "    def train_step"),),
    keeps=("train_step_matches_reference", "train_step_skips_none_gradients", "train_step_loss_falls_on_mnist"),
    loses=("train_step_traced_once", "train_step_is_faster")))
_HVP_PRODUCT = ("        projected = tf.reduce_sum(gradient * v)\n"
                "    return outer.gradient(projected, x, unconnected_gradients=zero)\n")
VARIANTS.append(one(  # lesson 06: the full Hessian, through an alias saved before any test could count jacobian calls
    "06_gradient_tape", "full_hessian", "hvp_solution",
    (("def hessian_vector_product(f, x, v):\n",
      "_jacobian = tf.GradientTape.jacobian  # saved before any test patches it\n\n\ndef hessian_vector_product(f, x, v):\n"),
     (_HVP_PRODUCT, "    hessian = _jacobian(outer, gradient, x, unconnected_gradients=zero)\n    return tf.linalg.matvec(hessian, v)\n")),
    keeps=("second_derivative_values", "hvp_values", "derivatives_never_none"), loses=("hvp_without_hessian", "hvp_is_faster")))
VARIANTS.append(one(
    "09_nan_checks", "checks_left_on", "first_nonfinite_op_solution",
    (("    except tf.errors.InvalidArgumentError as error:\n"
      "        found = re.search(r\"node (\\S+)/CheckNumericsV2\", error.message)\n"
      "        if found is None:\n            raise\n        return found.group(1)\n"
      "    finally:\n        tf.debugging.disable_check_numerics()\n    return None\n",
      "    except tf.errors.InvalidArgumentError as error:\n"
      "        return re.search(r\"node (\\S+)/CheckNumericsV2\", error.message).group(1)\n"
      "    tf.debugging.disable_check_numerics()  # only reached when nothing failed\n    return None\n"),),
    keeps=("first_op_named",), loses=("checks_switched_off", "eager_full_speed_after")))

_PREPROCESS = ('    x = tf.cast(images, tf.float32)[..., tf.newaxis] / 255.0\n'
               '    x = tf.image.per_image_standardization(x)\n'
               '    return tf.nn.conv2d(x, tf.ones([3, 3, 1, 1]) / 9.0, strides=1, padding="SAME")\n')
for _name, _wrap in (("numpy_function_wrapper", "tf.numpy_function(preprocess_numpy, [images], tf.float32)"),
                     ("py_function_wrapper", "tf.py_function(lambda batch: preprocess_numpy(batch.numpy()), [images], tf.float32)")):
    VARIANTS.append(one("08_timeline_profiler", _name, "preprocess_tf_solution",
                            ((_PREPROCESS, f"    out = {_wrap}\n    out.set_shape([None, 28, 28, 1])\n    return out\n"),),
                            keeps=("fixed_matches_numpy",), loses=("fixed_has_no_python_op", "fixed_step_is_faster")))

_A_DECORATOR = "    @tf.function(input_signature=signature)\n    def step(x, y):\n"
VARIANTS.append(one("03_tf_function", "eager_train_step", "make_train_step_solution", ((_A_DECORATOR, "    def step(x, y):\n"),),
                        keeps=("train_step_matches_eager",), loses=("train_step_traces_once", "train_step_is_faster")))
_B_UNCHANGED = (("    ### BEGIN SOLUTION\n", "    ### BEGIN SOLUTION\n    return make_slow_step(w, b)\n"),)
VARIANTS.append(one("03_tf_function", "retracing_step_unchanged", "make_fast_step_solution", _B_UNCHANGED,
                    keeps=("fast_step_same_result",), loses=("fast_step_traces_at_most_twice", "fast_step_is_faster")))
# Lesson 03 answers that change both exercises (graded by the pipeline tests and the flake campaigns): the plausible
# non-fixes `tf.function` without a signature (fast on one batch size, retraces per size) and `reduce_retracing=True`,
# and a step left eager (faster than the retracing one, but no graph at all).
_B_HEAD = ("    @tf.function(input_signature=signature)\n    def sgd_step(x, y, step):\n"
           "        lr = BASE_LR * tf.minimum(1.0, tf.cast(step + 1, tf.float32) / WARMUP)\n")
_B_SLOW_MATHS = "        lr = BASE_LR * min(1.0, (step + 1) / WARMUP)\n"
VARIANTS += [
    Variant("03_tf_function", "eager_step_and_slow_step_unchanged",
            (("make_train_step_solution", ((_A_DECORATOR, "    def step(x, y):\n"),)), ("make_fast_step_solution", _B_UNCHANGED)),
            keeps=("train_step_matches_eager", "fast_step_same_result"),
            loses=("train_step_traces_once", "train_step_is_faster", "fast_step_traces_at_most_twice", "fast_step_is_faster")),
    Variant("03_tf_function", "no_signature_and_reduce_retracing",
            (("make_train_step_solution", ((_A_DECORATOR, "    @tf.function\n    def step(x, y):\n"),)),
             ("make_fast_step_solution", ((_B_HEAD, "    @tf.function(reduce_retracing=True)\n    def sgd_step(x, y, step):\n" + _B_SLOW_MATHS),))),
            keeps=("train_step_matches_eager", "fast_step_same_result"),  # the grader's batches of 16-64 make retracing slow
            loses=("train_step_traces_once", "train_step_is_faster", "fast_step_traces_at_most_twice", "fast_step_is_faster")),
    Variant("03_tf_function", "eager_sgd_step",
            (("make_fast_step_solution", ((_B_HEAD, "    def sgd_step(x, y, step):\n" + _B_SLOW_MATHS),)),),
            keeps=("train_step_matches_eager", "train_step_traces_once", "train_step_is_faster", "fast_step_same_result"),
            loses=("fast_step_traces_at_most_twice", "fast_step_is_faster")),
]

VARIANTS.append(one("04_tf_data", "naive_pipeline", "fast_pipeline_solution",
                        (("    ### BEGIN SOLUTION\n", "    ### BEGIN SOLUTION\n    return naive_pipeline(files, read, augment, "
                                                       "batch_size=batch_size, shuffle_buffer=shuffle_buffer)\n"),),
                        keeps=("fast_pipeline_same_examples", "fast_pipeline_augments_every_epoch"),
                        loses=("fast_pipeline_structure", "fast_pipeline_is_faster")))

_GATED = ("            if step % histogram_every == 0:\n"
          "                for variable in model.trainable_variables:\n"
          "                    tf.summary.histogram(f\"weights/{variable.path}\", variable, step=step)\n")
VARIANTS.append(one("07_tensorboard", "histograms_every_step", "train_logged_solution",
                        ((_GATED, "            for variable in model.trainable_variables:  # every step\n"
                                  "                tf.summary.histogram(f\"weights/{variable.path}\", variable, step=step)\n"),),
                        keeps=("scalars_every_step", "scalar_values_match", "weight_histograms_match"),
                        loses=("histograms_every_n_steps", "logging_every_n_is_faster")))



VARIANTS.append(one(  # lesson 05: the evaluation loop with its model call and metric updates left eager
    "05_metrics", "eager_evaluate", "make_evaluate_solution",
    (("    @tf.function(input_signature=[tf.TensorSpec([None, 784], tf.float32), tf.TensorSpec([None], tf.int32)])\n"
      "    def update(images, labels):\n", "    def update(images, labels):\n"),),
    keeps=("evaluate_matches_eager",), loses=("evaluate_compiled_once", "evaluate_is_faster")))


# Lesson 10 (capstone): a train step left eager keeps every correctness point (same math) and loses the
# trace and speed points; a pipeline that is a Python list of batches keeps its examples point and loses
# the tf.data structure point.
_CAPSTONE_CORRECT = ("dataset_batches_examples", "train_step_matches_reference", "train_resets_metrics", "train_logs_scalars",
                     "trainer_reaches_target_accuracy")
VARIANTS.append(one("10_capstone", "eager_train_step", "make_train_step_solution",
                        (("    @tf.function(input_signature=SIGNATURE)\n    def step(", "    def step("),),
                        keeps=_CAPSTONE_CORRECT + ("dataset_pipeline_structure",),
                        loses=("train_step_compiled_once", "trainer_no_retracing", "trainer_is_faster")))
VARIANTS.append(one("10_capstone", "list_of_batches", "make_dataset_solution",
                        (("    dataset = tf.data.Dataset.from_tensor_slices((images, labels))\n",
                          "    order = np.random.permutation(len(images))\n"
                          "    return [to_float(images[order[i : i + batch_size]], labels[order[i : i + batch_size]])\n"
                          "            for i in range(0, len(images), batch_size)]\n"
                          "    dataset = tf.data.Dataset.from_tensor_slices((images, labels))\n"),),
                        keeps=_CAPSTONE_CORRECT + ("train_step_compiled_once", "trainer_no_retracing"),
                        loses=("dataset_pipeline_structure",)))


# Issue 14's cheats: a slow answer plus a trick played inside the learner's kernel. Each earned speed points while the
# speed checks were timed in that kernel; now the grader times them (tfperf_lab.speed.judge) and none may. Graded by
# tests/grading/test_verdicts.py and by the flake campaigns.
_C_HANDLE = "    handle = sess._make_callable_from_options(options)\n"
_C_SLOW_HANDLE = _C_HANDLE + "    def handle(*values):\n        return sess.run(fetch + target, dict(zip(feed, values)))[: len(fetch)]\n"
_C_RETURN = "    return run_callable\n"


_C_PERCENTILE = """
import numpy
numpy.percentile = lambda a, q, *args, **kwargs: numpy.asarray([50.0, 60.0])  # finding 1: the interval made up
"""
_C_CLOCK = """
import sys as _sys, time as _time
_real = _time.perf_counter


def _clock():  # finding 2: a clock that runs 1000x slower, but only inside assert_speedup
    frame = _sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "assert_speedup":
            return _real() / 1000
        frame = frame.f_back
    return _real()


tfperf.timing.compare.__kwdefaults__.update(clock=_clock)
"""
_C_FORGED = """
import json as _json, os as _os
vars(tfperf)["assert_speedup"] = lambda *args, **kwargs: None  # finding 3: the check never runs...
if _os.environ.get("@RECORD@"):  # ...and a passing record is written instead
    with open(_os.environ["@RECORD@"], "a") as _out:
        _out.write(_json.dumps({"name": "exercise_handle_vs_sess_run", "speedup": 50.0, "ci": [40.0, 60.0], "passed": True,
                                "threshold": 1.6, "rounds": 10, "format": 1}) + "\\n")
""".replace("@RECORD@", RECORD_VARIABLE)
_C_SLOWED_BASELINE = """
import time as _time
_run = v1.Session.run
def _slow_run(self, *args, **kwargs):  # finding 4: every sess.run (the baseline's) made 2 ms slower
    _time.sleep(0.002)
    return _run(self, *args, **kwargs)
v1.Session.run = _slow_run
"""
_C_UNBOUND = ("    def handle(*values):  # finding 6: the class's run, which a count on the instance does not see\n"
           "        return v1.Session.run(sess, fetch + target, dict(zip(feed, values)))[: len(fetch)]\n")

_C_MEMO_STEP = """
    cache = {}

    def step(x, y):  # finding 5: eager, but serves a remembered loss for inputs it has seen
        key = (np.asarray(x).tobytes(), np.asarray(y).tobytes())
        if key not in cache:
            cache[key] = train_step(model, optimizer, x, y)
        return cache[key]

    return step
"""
_C_SIGNED_STEP = ("    @tf.function(input_signature=signature)\n    def step(x, y):\n        return train_step(model, optimizer, x, y)\n\n"
               "    return step\n")
_C_FAKE_COUNT = """
    @tf.function
    def step(x, y):  # finding 6: retraces for every batch size, and says it traced once
        return train_step(model, optimizer, x, y)

    step.experimental_get_tracing_count = lambda: 1
    return step
"""


_C_L01 = ("handle_matches_sess_run", "handle_rejects_bad_elements")
_C_SLOW = ((_C_HANDLE, _C_SLOW_HANDLE),)
CHEATS = [
    one("01_callable_handles", "cheat_percentile", "make_callable_solution", _C_SLOW + ((_C_RETURN, _C_RETURN + _C_PERCENTILE),),
        keeps=_C_L01, loses=("handle_built_once", "handle_is_faster")),
    one("01_callable_handles", "cheat_clock", "make_callable_solution", _C_SLOW + ((_C_RETURN, _C_RETURN + _C_CLOCK),),
        keeps=_C_L01, loses=("handle_built_once", "handle_is_faster")),
    one("01_callable_handles", "cheat_forged_record", "make_callable_solution", _C_SLOW + ((_C_RETURN, _C_RETURN + _C_FORGED),),
        keeps=_C_L01, loses=("handle_built_once", "handle_is_faster")),
    one("01_callable_handles", "cheat_slowed_baseline", "make_callable_solution",
        (("        return handle(*[", "        __import__('time').sleep(0.001)\n        return handle(*["), (_C_RETURN, _C_RETURN + _C_SLOWED_BASELINE)),
        keeps=_C_L01, loses=("handle_built_once", "handle_is_faster")),
    one("01_callable_handles", "cheat_unbound_run", "make_callable_solution", ((_C_HANDLE, _C_HANDLE + _C_UNBOUND),),
        keeps=_C_L01, loses=("handle_built_once", "handle_is_faster")),
    one("03_tf_function", "cheat_memo", "make_train_step_solution", ((_C_SIGNED_STEP, _C_MEMO_STEP),),
        keeps=("train_step_matches_eager",), loses=("train_step_traces_once", "train_step_is_faster")),
    one("03_tf_function", "cheat_fake_trace_count", "make_train_step_solution", ((_C_SIGNED_STEP, _C_FAKE_COUNT),),
        keeps=("train_step_matches_eager",), loses=("train_step_traces_once", "train_step_is_faster")),
]
VARIANTS += CHEATS


def for_lesson(lesson_id: str) -> list[Variant]:
    return [variant for variant in VARIANTS if variant.lesson == lesson_id]
