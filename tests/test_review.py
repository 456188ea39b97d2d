"""The review list (`tfperf_lab.grading.review`): every reach into the course's or the interpreter's machinery is found, and no
correct answer is: not the references, not the variants, not honest answers written in styles the lessons do not show.
Static, so fast: no notebook runs here."""

from __future__ import annotations

import nbformat
import pytest

from tfperf_lab.grading import review
from tfperf_lab.course import variants
from pipeline import COURSE


def _with_cell(lesson_id: str, code: str) -> dict:
    lesson = COURSE.lesson(lesson_id)
    nb = lesson.source_notebook()
    nb["cells"].append(nbformat.v4.new_code_cell(code))
    return nb


def _found(lesson_id: str, code: str) -> list[review.Finding]:
    return review.review(_with_cell(lesson_id, code), COURSE.lesson(lesson_id).release_notebook(), COURSE.lesson(lesson_id).source_notebook())


@pytest.mark.parametrize("lesson", [lesson.id for lesson in COURSE.lessons])
def test_no_reference_solution_is_on_the_review_list(lesson):
    source = COURSE.lesson(lesson).source_notebook()
    assert review.review(source, COURSE.lesson(lesson).release_notebook(), source) == []


@pytest.mark.parametrize("variant", [v for v in variants.VARIANTS if v not in variants.CHEATS], ids=lambda v: f"{v.lesson}-{v.name}")
def test_no_correct_variant_is_on_the_review_list(variant):
    lesson = COURSE.lesson(variant.lesson)
    assert review.review(variant.notebook(lesson), lesson.release_notebook(), lesson.source_notebook()) == []


HONEST = {  # answers and scratch cells in styles the lessons do not show
    "01_callable_handles": [
        "import numpy as np\nimport tensorflow as tf\nfrom tensorflow.core.protobuf import config_pb2\n",
        "class Runner:\n    def __init__(self, sess, options):\n        self.handle = sess._make_callable_from_options(options)\n"
        "        self.calls = 0\n        setattr(self, 'label', 'runner')\n        self.__dict__.setdefault('extra', 1)\n\n"
        "    def __call__(self, *values):\n        self.calls += 1\n        return self.handle(*values)\n",
        "def make(sess, feed):\n    sess = sess  # a parameter named like the lesson's global\n    sess.note = 'mine'\n"
        "    names = [getattr(p, 'name', None) for p in feed]\n    return {n: i for i, n in enumerate(names)}\n",
        "import os\nos.environ['TF_CPP_MIN_LOG_LEVEL'] = '2'\nprint(sys.version if 'sys' in dir() else '')\n",
        "%timeit -n 3 sum(range(10))\n",
        "import functools, collections, itertools, time\n@functools.lru_cache\ndef f(x):\n    return x * 2\n"
        "counts = collections.Counter(itertools.repeat('a', 3))\nstarted = time.perf_counter()\n",
        "result = tfperf.compare(lambda: 1, lambda: 2, labels=('a', 'b'))\nprint(result.summary())\n",
    ],
    "05_metrics": [
        "@tf.function(reduce_retracing=True)\ndef evaluate_fast(model, images):\n    return model(images, training=False)\n",
        "metric = tf.keras.metrics.Mean()\nmetric.reset_state()\nfor value in [1.0, 2.0]:\n    metric.update_state(value)\n",
    ],
    "03_tf_function": [
        "def make(model, optimizer):\n    step = tf.function(lambda x, y: train_step(model, optimizer, x, y))\n    step.label = 'mine'\n    return step\n",
    ],
}


@pytest.mark.parametrize(("lesson", "code"), [(lesson, code) for lesson, codes in HONEST.items() for code in codes])
def test_honest_styles_are_not_on_the_review_list(lesson, code):
    assert _found(lesson, code) == []


REACHES = [  # (lesson, code, a word of the reason)
    ("01_callable_handles", "tfperf.link.serve = lambda *a, **k: None", "tfperf.link"),
    ("01_callable_handles", "from tfperf import link\nlink.serve = print", "grading internals"),
    ("01_callable_handles", "import tfperf.link as wire\nwire.serve = print", "grading internals"),
    ("01_callable_handles", "import sys\nsys.modules['tfperf.link'].serve = print", "sys.modules"),
    ("01_callable_handles", "setattr(getattr(tfperf, 'li' + 'nk'), 'serve', print)", "built at run time"),
    ("01_callable_handles", "vars(tfperf)['link'] = None", "vars()"),
    ("01_callable_handles", "tfperf.assert_speedup.__globals__['link'] = None", "__globals__"),
    ("01_callable_handles", "import gc\nfound = [o for o in gc.get_objects() if callable(o)]", "gc"),
    ("01_callable_handles", "import ctypes", "ctypes"),
    ("01_callable_handles", "import importlib\nwire = importlib.import_module('tfperf.link')", "importlib"),
    ("01_callable_handles", "namespace = tfperf.__dict__", "__dict__"),
    ("01_callable_handles", "def swap():\n    global tfperf\n    tfperf = None\n", "rebinds tfperf"),
    ("01_callable_handles", "exec('tfperf.link.serve = None')", "exec()"),
    ("01_callable_handles", "np.random.default_rng = lambda *a: None", "module numpy"),
    ("01_callable_handles", "tf.function = lambda f: f", "module tensorflow"),
    ("01_callable_handles", "import os\nos.environ['TFPERF_GRADER'] = ''", "TFPERF_GRADER"),
    ("01_callable_handles", "import threading\nthreading.settrace(print)", "threading.settrace"),
    ("01_callable_handles", "code = (lambda: 0).__code__", "__code__"),
    ("01_callable_handles", "kinds = object.__subclasses__()", "__subclasses__"),
    ("01_callable_handles", "v1.Session.run = lambda self, *a, **k: None", "v1"),
    ("01_callable_handles", "tfperf = None", "rebinds tfperf"),
    ("01_callable_handles", "import numpy as tfperf", "rebinds tfperf"),
    ("01_callable_handles", "_serve = tfperf.checks.link.serve", "grading internals"),
    ("03_tf_function", "def make(fn):\n    fn.experimental_get_tracing_count = lambda: 1\n    return fn\n", "structural test reads"),
    ("10_capstone", "class PerSize(tf.types.experimental.PolymorphicFunction):\n    def experimental_get_tracing_count(self):\n"
                    "        return 1\n", "defines experimental_get_tracing_count"),
    ("02_graph_growth", "class Sealed:\n    finalized = True\n", "defines finalized"),
    ("01_callable_handles", "def make(sess):\n    sess.run = lambda *a, **k: None\n    return sess\n", "tests read"),
    ("05_metrics", "import sys\nframe = sys._getframe(0)", "sys._getframe"),
]


@pytest.mark.parametrize(("lesson", "code", "why"), REACHES, ids=[f"{i:02d}" for i in range(len(REACHES))])
def test_every_reach_is_on_the_review_list(lesson, code, why):
    found = _found(lesson, code)
    assert any(why in finding.why for finding in found), (code, [str(f) for f in found])


def test_the_cheats_of_earlier_rounds_that_reach_into_the_machinery_are_on_the_review_list():
    reaching = {"cheat_percentile", "cheat_clock", "cheat_forged_record", "cheat_slowed_baseline", "cheat_fake_trace_count"}
    for variant in variants.CHEATS:
        lesson = COURSE.lesson(variant.lesson)
        found = review.review(variant.notebook(lesson), lesson.release_notebook(), lesson.source_notebook())
        assert bool(found) == (variant.name in reaching), (variant.name, [str(f) for f in found])


def test_a_cell_that_does_not_parse_or_nests_deeply_is_read_without_crashing():
    assert _found("01_callable_handles", "def broken(:\n    pass") == []
    assert _found("01_callable_handles", "x = " + "(" * 5000 + "1" + ")" * 5000) == []
