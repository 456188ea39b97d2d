"""The review list (`tfperf_lab.grading.review`): every reach into the course's or the interpreter's machinery is found, and no
correct answer is: not the references, not the variants, not honest answers written in styles the lessons do not show.
Static, so fast: no notebook runs here."""

from __future__ import annotations

import nbformat
import pytest

from tfperf_lab.grading import review
from tfperf_lab.course import notebook, variants
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


REACHES = [  # (lesson, code, a word of the reason): every route the review must see, by value, not by word
    ("01_callable_handles", "tfperf.link.serve = lambda *a, **k: None", "tfperf.link"),
    ("01_callable_handles", "from tfperf import link\nlink.serve = print", "grading internals"),
    ("01_callable_handles", "import tfperf.link as wire\nwire.serve = print", "grading internals"),
    ("01_callable_handles", "import sys\nsys.modules['tfperf.link'].serve = print", "sys.modules"),
    ("01_callable_handles", "setattr(getattr(tfperf, 'li' + 'nk'), 'serve', print)", "tfperf.link"),
    ("01_callable_handles", "vars(tfperf)['link'] = None", "vars()"),
    ("01_callable_handles", "tfperf.assert_speedup.__globals__['link'] = None", "__globals__"),
    ("01_callable_handles", "import gc\nfound = [o for o in gc.get_objects() if callable(o)]", "gc.get_objects"),
    ("01_callable_handles", "import ctypes", "ctypes"),
    ("01_callable_handles", "import importlib\nwire = importlib.import_module('tfperf.link')", "importlib.import_module"),
    ("01_callable_handles", "namespace = tfperf.__dict__", "tfperf.__dict__"),
    ("01_callable_handles", "def swap():\n    global tfperf\n    tfperf = None\n", "rebinds tfperf"),
    ("01_callable_handles", "exec('tfperf.link.serve = None')", "exec()"),
    ("01_callable_handles", "np.random.default_rng = lambda *a: None", "numpy"),
    ("01_callable_handles", "tf.function = lambda f: f", "tensorflow"),
    ("01_callable_handles", "import os\nos.environ['TFPERF_GRADER'] = ''", "TFPERF_"),
    ("01_callable_handles", "import threading\nthreading.settrace(print)", "threading.settrace"),
    ("01_callable_handles", "code = (lambda: 0).__code__", "__code__"),
    ("01_callable_handles", "kinds = object.__subclasses__()", "__subclasses__"),
    ("01_callable_handles", "v1.Session.run = lambda self, *a, **k: None", "v1.Session.run"),
    ("01_callable_handles", "tfperf = None", "rebinds tfperf"),
    ("01_callable_handles", "import numpy as tfperf", "rebinds tfperf"),
    ("01_callable_handles", "_serve = tfperf.checks.link.serve", "tfperf.checks.link"),
    ("05_metrics", "import sys\nframe = sys._getframe(0)", "sys._getframe"),
    # the forms the last round's outside checks used, and their neighbours
    ("01_callable_handles", "course = tfperf\ncourse.link.serve = print\n", "uses tfperf as a value"),
    ("01_callable_handles", "def install(p):\n    p.link.serve = print\n\n\ninstall(tfperf)\n", "uses tfperf as a value"),
    ("01_callable_handles", "import functools\nfunctools.reduce(getattr, ['link', 'serve'], tfperf)\n", "uses tfperf as a value"),
    ("01_callable_handles", "import operator\noperator.attrgetter('link')(tfperf).serve = print\n", "uses tfperf as a value"),
    ("01_callable_handles", "tfperf.env.sys.modules['tfperf.link'].serve = print\n", "tfperf.env.sys"),
    ("01_callable_handles", "open('helper.py', 'w').write('x = 1')\nimport helper\n", "imports helper"),
    ("01_callable_handles", "import runpy\nrunpy.run_path('helper.py')\n", "imports runpy"),
    ("01_callable_handles", "mods = [tfperf]\nmods[0].link.serve = print\n", "uses tfperf as a value"),
    ("01_callable_handles", "def f(m=tfperf):\n    m.link.serve = print\n", "uses tfperf as a value"),
    ("01_callable_handles", "class Holder:\n    course = tfperf\n", "uses tfperf as a value"),
    ("01_callable_handles", "get_ipython().user_ns['tfperf'] = None\n", "user_ns"),
    ("01_callable_handles", "%timeit tfperf.link.serve = print\n", "tfperf.link"),
    ("01_callable_handles", "!python -c 'import tfperf'\n", "runs a program"),
    ("01_callable_handles", "import subprocess\nsubprocess.run(['python', '-c', 'pass'])\n", "runs a program"),
    ("01_callable_handles", "import pickle\npickle.loads(b'cos\\nsystem\\n(S\\'true\\'\\ntR.')\n", "unpickles"),
    ("10_capstone", "Fake = type('Fake', (tf.types.experimental.PolymorphicFunction,), {})\n", "three-argument type()"),
    ("01_callable_handles", "hidden = tf._sys.modules\n", "tf._sys"),
    ("01_callable_handles", "import unittest.mock\n", "imports unittest.mock"),
    ("01_callable_handles", "def g():\n    yield 1\n\n\nfound = g().gi_frame.f_globals\n", "gi_frame"),
    ("01_callable_handles", "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    e.__traceback__.tb_frame.f_globals['tfperf'] = None\n", "tb_frame"),
    ("01_callable_handles", "f = lambda: 0\ngetattr(f, '__glo' + 'bals__')['tfperf'] = None\n", "__globals__"),
    ("01_callable_handles", "import time\ntime.perf_counter = lambda: 0.0\n", "time.perf_counter"),
    ("01_callable_handles", "del tfperf.link.serve\n", "tfperf.link"),
    ("01_callable_handles", "import builtins\n", "imports builtins"),
    ("01_callable_handles", "__builtins__.print = None\n", "__builtins__"),
    ("01_callable_handles", "type.__setattr__(tf.Graph, 'finalized', True)\n", "tf.Graph"),
    ("01_callable_handles", "import inspect\nframe = inspect.currentframe()\n", "inspect.currentframe"),
    ("01_callable_handles", "tfperf.compare.__defaults__ = None\n", "__defaults__"),
    ("01_callable_handles", "serve = (lambda: tfperf)().link.serve\n", "uses tfperf as a value"),
    ("01_callable_handles", "from tfperf.link import serve\n", "grading internals"),
    ("01_callable_handles", "course = globals()['tfperf']\n", "globals()"),
    ("01_callable_handles", "print(tfperf.link)\n", "tfperf.link"),
    ("01_callable_handles", "import time\ntime.perf_counter = print\n", "time.perf_counter"),
    ("01_callable_handles", "np.percentile = print\n", "numpy"),
]


@pytest.mark.parametrize(("lesson", "code", "why"), REACHES, ids=[f"{i:02d}" for i in range(len(REACHES))])
def test_every_reach_is_on_the_review_list(lesson, code, why):
    found = _found(lesson, code)
    assert any(why in finding.why or why in finding.code for finding in found), (code, [str(f) for f in found])


# Honest idioms that an earlier list of words flagged: each a grading error against a correct answer.
IDIOMS = {
    "01_callable_handles": [
        "def fill(options, role, names):\n    getattr(options, role).extend(names)\n",
        "from types import SimpleNamespace\nsettings = SimpleNamespace(calls=3)\nprint(vars(settings))\n",
        "import inspect\nprint(inspect.signature(make_callable))\n",
        "import pickle\nblob = pickle.dumps({'a': 1})\nprint(pickle.loads(blob))\n",
        "import gc\ngc.collect()\n",
        "class Options:\n    def __init__(self, **values):\n        for key, value in values.items():\n            setattr(self, key, value)\n",
        "import dataclasses\n\n\n@dataclasses.dataclass(frozen=True)\nclass Pair:\n    a: int\n\n    def __post_init__(self):\n"
        "        object.__setattr__(self, 'b', self.a * 2)\n",
        "import sys\nprint(sys.version, file=sys.stdout)\n",
        "%%time\ntotal = sum(range(10))\n",
        "import importlib.metadata\nprint(importlib.metadata.version('tensorflow'))\n",
        "from IPython.display import display\ndisplay(1)\n",
        "import functools\nrun = functools.partial(tfperf.compare, labels=('a', 'b'))\n",
        "import timeit\nprint(timeit.timeit('sum(range(100))', number=10))\n",
        "!nvidia-smi\n",
        "import matplotlib.pyplot as pyplot\npyplot.rcParams['figure.figsize'] = (8, 4)\n",
        "print(dir(tfperf))\nhelp(tfperf.compare)\nprint(type(tfperf), tfperf)\n",
        "if 'scratch' not in globals():\n    scratch = []\n",
        "def exec(text):\n    return text.upper()\n\n\nexec('mine')\n",
    ],
    "02_graph_growth": ["class Mine:\n    def __init__(self):\n        self.finalized = False\n\n    def seal(self):\n        self.finalized = True\n"],
    "03_tf_function": [
        "def guard(obj, name):\n    if hasattr(obj, name):\n        return getattr(obj, name)\n    return None\n",
        "def optimizer(name):\n    return getattr(tf.keras.optimizers, name)(learning_rate=0.1)\n",
    ],
    "06_gradient_tape": ["class Step:\n    def __init__(self, model):\n        self.model = model\n\n    @property\n"
                         "    def trainable_variables(self):\n        return self.model.trainable_variables\n"],
}


@pytest.mark.parametrize(("lesson", "code"), [(lesson, code) for lesson, codes in IDIOMS.items() for code in codes])
def test_honest_idioms_are_not_on_the_review_list(lesson, code):
    assert _found(lesson, code) == []


def test_the_cheats_of_earlier_rounds_that_reach_into_the_machinery_are_on_the_review_list():
    """Every cheat that reaches into the machinery is found; the one that only fakes a trace count on its own tf.function
    is the structural test's to catch (it reads TensorFlow's own count), and the review leaves it alone."""
    reaching = {"cheat_percentile", "cheat_clock", "cheat_forged_record", "cheat_slowed_baseline"}
    for variant in variants.CHEATS:
        lesson = COURSE.lesson(variant.lesson)
        found = review.review(variant.notebook(lesson), lesson.release_notebook(), lesson.source_notebook())
        assert bool(found) == (variant.name in reaching), (variant.name, [str(f) for f in found])


def _release_with(lesson_id: str, change) -> tuple[dict, dict, dict]:
    lesson = COURSE.lesson(lesson_id)
    nb = lesson.release_notebook()
    change(nb)
    return nb, lesson.release_notebook(), lesson.source_notebook()


def test_an_answer_cell_carrying_a_test_cells_id_is_read_and_named_as_tampering():
    """nbgrader restores a test cell by its grade_id: a cell with a test's id but no grade_id would run unread."""
    def swap(nb):
        cell = nbformat.v4.new_code_cell("tfperf.link.serve = print\n")
        cell["id"], cell["metadata"]["nbgrader"] = "handle_built_once", {}
        nb["cells"].append(cell)

    found = review.review(*_release_with("01_callable_handles", swap))
    assert any("tampered cell identity" in f.why for f in found) and any("tfperf.link" in f.why for f in found), [str(f) for f in found]


def test_code_hidden_between_test_markers_is_a_tamper_note_and_never_runs_unread():
    """A test cell whose id and grade_id are its own is restored by nbgrader before it runs: code the learner hid in it
    between hidden-test markers is named by a tamper note (the whole source is compared) and cannot run. The same code
    under another grade_id is read, and is tampering."""
    from tfperf_lab.grading import stage

    def wrap(nb):
        cell = next(c for c in nb["cells"] if c.get("id") == "handle_is_faster")
        cell["source"] = notebook.source(cell) + "\n### BEGIN HIDDEN TESTS\ntfperf.link.serve = print\n### END HIDDEN TESTS\n"

    nb, release, source = _release_with("01_callable_handles", wrap)
    assert "test cell handle_is_faster was edited: the original was restored and graded" in stage.tamper_notes(nb, release, source)
    assert review.review(nb, release, source) == []

    def rename(nb):
        wrap(nb)
        next(c for c in nb["cells"] if c.get("id") == "handle_is_faster")["metadata"]["nbgrader"]["grade_id"] = "mine"

    found = review.review(*_release_with("01_callable_handles", rename))
    assert any("tampered cell identity" in f.why for f in found) and any("tfperf.link" in f.why for f in found), [str(f) for f in found]


def test_an_old_copy_of_a_test_cell_is_not_read_as_the_learners_code():
    """A learner who opened an earlier release keeps its test cells: nbgrader restores them, so the instructor's code in
    them (which reaches into TensorFlow's internals on purpose) is never a finding."""
    def stale(nb):
        cell = next(c for c in nb["cells"] if c.get("id") == "handle_built_once")
        cell["source"] = notebook.source(cell) + "\nimport ctypes  # an instructor's older test\n"

    assert review.review(*_release_with("01_callable_handles", stale)) == []


def test_a_cell_that_repeats_a_grade_id_is_tampering():
    def repeat(nb):
        original = next(c for c in nb["cells"] if c.get("id") == "handle_is_faster")
        copy = notebook.copy(original)
        copy["id"], copy["source"] = "mine", "x = 1\n"
        nb["cells"].insert(nb["cells"].index(original), copy)

    found = review.review(*_release_with("01_callable_handles", repeat))
    assert any("tampered cell identity" in f.why for f in found), [str(f) for f in found]


def test_the_untouched_release_has_no_finding():
    for lesson in COURSE.lessons:
        assert review.review(lesson.release_notebook(), lesson.release_notebook(), lesson.source_notebook()) == [], lesson.id


def test_a_cell_that_does_not_parse_or_nests_deeply_is_read_without_crashing():
    assert _found("01_callable_handles", "def broken(:\n    pass") == []
    assert _found("01_callable_handles", "x = " + "(" * 5000 + "1" + ")" * 5000) == []


# -- the corpora: reaches written by someone who never read this reader, honest answers in styles the lessons do not show
import corpus_reaches  # noqa: E402
from corpus_reaches import reach_notebook  # noqa: E402


@pytest.mark.parametrize("reach", corpus_reaches.REACHES, ids=lambda r: f"{r.lesson[:2]}-{r.name}")
def test_every_reach_of_the_corpus_is_on_the_review_list(reach):
    lesson = COURSE.lesson(reach.lesson)
    found = review.review(reach_notebook(reach), lesson.release_notebook(), lesson.source_notebook())
    assert found, (reach.how, reach.code)


import corpus_honest  # noqa: E402


@pytest.mark.parametrize("answer", corpus_honest.HONEST, ids=lambda a: f"{a.lesson[:2]}-{a.name}")
def test_no_honest_answer_of_the_corpus_is_on_the_review_list(answer):
    lesson = COURSE.lesson(answer.lesson)
    found = review.review(answer.notebook(lesson), lesson.release_notebook(), lesson.source_notebook())
    assert found == [], (answer.style, [str(f) for f in found])


def test_both_corpora_are_large_enough_to_mean_something():
    assert len(corpus_reaches.REACHES) >= 40 and len(corpus_honest.HONEST) >= 40
    assert len({a.lesson for a in corpus_honest.HONEST}) == len(COURSE.lessons)
