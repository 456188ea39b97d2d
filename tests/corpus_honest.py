"""Honest answers in styles the lessons do not show: a corpus for the review list (issue 34).

Every entry is a CORRECT, equally optimized answer to one lesson, written the way a real learner might write it
(dataclasses, closures, protobuf ``getattr(...).extend``, generators, ``match``, ``contextlib``, ...), and/or scratch
cells such a learner adds to explore (``inspect.signature``, ``%timeit``, ``pickle.dumps`` of plain data, ``gc.collect()``).
None of them reaches into the grading machinery, so none may be put on the review list, and the entries of ``GRADED``
get every autograded point when graded for real.

``Honest.cells`` maps a solution cell's id to the FULL new source of that cell; ``Honest.scratch`` holds extra code
cells, inserted right after the last replaced cell (or at the end of the notebook when ``cells`` is empty).
This module holds data only; tests/unit/test_corpus_honest.py checks that every entry builds a valid notebook.
"""

from __future__ import annotations

import dataclasses

import nbformat

from tfperf_lab.course import notebook as _notebook


@dataclasses.dataclass(frozen=True)
class Honest:
    lesson: str  # lesson id, e.g. "01_callable_handles"
    name: str  # short unique name, e.g. "getattr_extend"
    cells: dict  # {solution cell id: FULL new source of that solution cell} (may be empty)
    scratch: tuple = ()  # extra code cells, after the last replaced cell (or at the end when `cells` is empty)
    style: str = ""  # one line: which idiom it shows

    def scratch_id(self, index: int) -> str:
        """The id of scratch cell `index`: fresh, stable, and valid for nbformat (letters, digits, - and _, at most 64)."""
        return f"honest-{self.name}-{index}"[:64]

    def notebook(self, lesson) -> dict:
        """``lesson.source_notebook()`` with this entry's solution cells replaced and its scratch cells inserted."""
        if lesson.id != self.lesson:
            raise ValueError(f"honest answer {self.name} belongs to {self.lesson}, not {lesson.id}")
        nb = lesson.source_notebook()
        ids = [cell.get("id") for cell in nb["cells"]]
        missing = sorted(set(self.cells) - set(ids))
        if missing:
            raise ValueError(f"honest answer {self.name}: no cells {missing} in {lesson.id}")
        last = None
        for index, cell in enumerate(nb["cells"]):
            if cell.get("id") in self.cells:
                if cell.get("cell_type") != "code" or not _notebook.nbgrader_meta(cell).get("solution"):
                    raise ValueError(f"honest answer {self.name}: cell {cell['id']} is not a code solution cell")
                cell["source"] = self.cells[cell["id"]]
                cell["outputs"], cell["execution_count"] = [], None
                last = index
        at = len(nb["cells"]) if last is None else last + 1
        taken = set(ids)
        new = []
        for index, source in enumerate(self.scratch):
            cell_id = self.scratch_id(index)
            if cell_id in taken:
                raise ValueError(f"honest answer {self.name}: scratch cell id {cell_id} is taken")
            taken.add(cell_id)
            new.append(_plain(nbformat.v4.new_code_cell(source, id=cell_id)))
        nb["cells"][at:at] = new
        return nb


def _plain(node):
    """An nbformat NotebookNode as plain dicts and lists (what the rest of the course passes around)."""
    if isinstance(node, dict):
        return {key: _plain(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_plain(value) for value in node]
    return node


def _code(text: str) -> str:
    """A cell's source as written below: without the first newline, with one newline at the end."""
    return text.lstrip("\n").rstrip() + "\n"


HONEST: list[Honest] = []


def _add(lesson: str, name: str, style: str, cells: dict | None = None, scratch: tuple = ()) -> None:
    if isinstance(scratch, str):
        raise TypeError(f"{name}: scratch is a tuple of cell sources, not one string")
    HONEST.append(Honest(lesson, name, {cell: _code(source) for cell, source in (cells or {}).items()},
                         tuple(_code(source) for source in scratch), style))


# ---------------------------------------------------------------------------------------------------------------------
# Lesson 01: make_callable (make_callable_solution)
L01 = "01_callable_handles"

_add(L01, "getattr_extend", "getattr(options, role).extend(...) on an empty CallableOptions protobuf; hasattr duck-typing", {
    "make_callable_solution": r'''
def make_callable(sess, feed=(), target=(), fetch=()):
    """Return run_callable(feed_dict) -> list of fetch values, backed by one low-overhead handle."""
    roles = {"feed": list(feed), "fetch": list(fetch), "target": list(target)}
    options = config_pb2.CallableOptions()
    for role, elements in roles.items():
        names = []
        for index, element in enumerate(elements):
            if not (hasattr(element, "graph") and hasattr(element, "name")):
                raise TypeError(f"{role}[{index}] must be a tf.Tensor or tf.Operation, not {type(element).__name__}")
            if isinstance(element, tf.Operation):
                if role != "target":
                    raise TypeError(f"{role}[{index}] is the Operation {element.name}: put it in target=")
                name = element.name
            elif isinstance(element, tf.Tensor):
                name = element.op.name if role == "target" else element.name
            else:
                raise TypeError(f"{role}[{index}] must be a tf.Tensor or tf.Operation, not {type(element).__name__}")
            if element.graph is not sess.graph:
                raise ValueError(f"{role}[{index}] ({name}) is not in the session's graph")
            names.append(name)
        getattr(options, role).extend(names)  # options.feed, options.fetch, options.target are repeated fields
    handle = sess._make_callable_from_options(options)
    placeholders = roles["feed"]
    dtypes = [placeholder.dtype.as_numpy_dtype for placeholder in placeholders]
    declared = {id(placeholder) for placeholder in placeholders}

    def run_callable(feed_dict):
        missing = [p.name for p in placeholders if p not in feed_dict]
        unknown = [getattr(key, "name", repr(key)) for key in feed_dict if id(key) not in declared]
        if missing or unknown:
            raise ValueError(f"feed_dict must hold exactly the declared feeds; missing {missing}, not declared {unknown}")
        return handle(*[np.asarray(feed_dict[p], dtype=dtype) for p, dtype in zip(placeholders, dtypes)])

    return run_callable
'''})

_add(L01, "handle_class", "a class with __call__, a setattr(self, key, value) loop in __init__, @property, self.finalized", {
    "make_callable_solution": r'''
class CallableHandle:
    """One low-overhead handle of a session, for fixed feeds, targets and fetches."""

    def __init__(self, sess, **roles):
        self.finalized = False
        self.sess = sess
        for key, value in roles.items():  # self.feed, self.target, self.fetch
            setattr(self, key, list(value))
        self.options = config_pb2.CallableOptions(
            feed=[self._name(e, "feed", i) for i, e in enumerate(self.feed)],
            target=[self._name(e, "target", i) for i, e in enumerate(self.target)],
            fetch=[self._name(e, "fetch", i) for i, e in enumerate(self.fetch)],
        )
        self._handle = sess._make_callable_from_options(self.options)
        self._dtypes = tuple(p.dtype.as_numpy_dtype for p in self.feed)
        self.finalized = True

    @property
    def feed_names(self):
        return [p.name for p in self.feed]

    def _name(self, element, role, index):
        if isinstance(element, tf.Operation) and role == "target":
            name = element.name
        elif isinstance(element, tf.Tensor):
            name = element.op.name if role == "target" else element.name
        elif isinstance(element, tf.Operation):
            raise TypeError(f"{role}[{index}] is an Operation; only target= takes Operations")
        else:
            raise TypeError(f"{role}[{index}] should be a tf.Tensor, got a {type(element).__name__}")
        if element.graph is not self.sess.graph:
            raise ValueError(f"{role}[{index}] ({name}) comes from another graph")
        return name

    def __call__(self, feed_dict):
        missing = [p.name for p in self.feed if p not in feed_dict]
        unknown = [getattr(k, "name", repr(k)) for k in feed_dict if not any(k is p for p in self.feed)]
        if missing or unknown:
            raise ValueError(f"expected the feeds {self.feed_names}; missing {missing}, not declared {unknown}")
        return self._handle(*[np.asarray(feed_dict[p], dtype=d) for p, d in zip(self.feed, self._dtypes)])


def make_callable(sess, feed=(), target=(), fetch=()):
    """Return run_callable(feed_dict) -> list of fetch values, backed by one low-overhead handle."""
    return CallableHandle(sess, feed=feed, target=target, fetch=fetch)
'''})

_add(L01, "frozen_dataclass_partial", "frozen dataclass with object.__setattr__ in __post_init__, functools.partial, typing hints", {
    "make_callable_solution": r'''
import dataclasses
import functools
from typing import Any, Callable, Sequence


@dataclasses.dataclass(frozen=True)
class GraphElement:
    """A feed, target or fetch, with the name CallableOptions wants for it."""
    element: Any
    role: str
    index: int

    def __post_init__(self):
        element, role = self.element, self.role
        if isinstance(element, tf.Operation):
            if role != "target":
                raise TypeError(f"{role}[{self.index}]: an Operation belongs in target=")
            name = element.name
        elif isinstance(element, tf.Tensor):
            name = element.op.name if role == "target" else element.name
        else:
            raise TypeError(f"{role}[{self.index}] must be a tf.Tensor; got {type(element).__name__}")
        object.__setattr__(self, "name", name)


def make_callable(sess, feed: Sequence = (), target: Sequence = (), fetch: Sequence = ()) -> Callable[[dict], list]:
    """Return run_callable(feed_dict) -> list of fetch values, backed by one low-overhead handle."""
    elements = {role: [GraphElement(e, role, i) for i, e in enumerate(values)]
                for role, values in (("feed", feed), ("target", target), ("fetch", fetch))}
    for item in (item for group in elements.values() for item in group):
        if item.element.graph is not sess.graph:
            raise ValueError(f"{item.role}[{item.index}] ({item.name}) belongs to another graph")
    options = config_pb2.CallableOptions(**{role: [item.name for item in items] for role, items in elements.items()})
    handle = sess._make_callable_from_options(options)
    placeholders = [item.element for item in elements["feed"]]
    converters = [functools.partial(np.asarray, dtype=p.dtype.as_numpy_dtype) for p in placeholders]

    def run_callable(feed_dict: dict) -> list:
        missing = [p.name for p in placeholders if p not in feed_dict]
        unknown = [getattr(k, "name", repr(k)) for k in feed_dict if all(k is not p for p in placeholders)]
        if missing or unknown:
            raise ValueError(f"feed_dict: missing {missing}, not declared {unknown}")
        return handle(*[convert(feed_dict[p]) for p, convert in zip(placeholders, converters)])

    return run_callable
'''})

_add(L01, "match_enum", "enum.Enum roles and a match statement on the element's type", {
    "make_callable_solution": r'''
import enum


class Role(enum.Enum):
    FEED = "feed"
    TARGET = "target"
    FETCH = "fetch"


def element_name(element, role, index):
    match element:
        case tf.Operation() if role is Role.TARGET:
            name = element.name
        case tf.Operation():
            raise TypeError(f"{role.value}[{index}] is an Operation: it belongs in target=")
        case tf.Tensor():
            name = element.op.name if role is Role.TARGET else element.name
        case _:
            raise TypeError(f"{role.value}[{index}] must be a tf.Tensor, not {type(element).__name__}")
    return name


def make_callable(sess, feed=(), target=(), fetch=()):
    """Return run_callable(feed_dict) -> list of fetch values, backed by one low-overhead handle."""
    given = {Role.FEED: list(feed), Role.TARGET: list(target), Role.FETCH: list(fetch)}
    names = {}
    for role, elements in given.items():
        names[role.value] = [element_name(e, role, i) for i, e in enumerate(elements)]
        strangers = [n for e, n in zip(elements, names[role.value]) if e.graph is not sess.graph]
        if strangers:
            raise ValueError(f"{role.value}: {strangers} belong to another graph than the session's")
    handle = sess._make_callable_from_options(config_pb2.CallableOptions(**names))
    placeholders = given[Role.FEED]
    dtypes = [p.dtype.as_numpy_dtype for p in placeholders]

    def run_callable(feed_dict):
        missing = [p.name for p in placeholders if p not in feed_dict]
        unknown = [getattr(k, "name", repr(k)) for k in feed_dict if not any(k is p for p in placeholders)]
        if missing or unknown:
            raise ValueError(f"feed_dict must hold the declared feeds only; missing {missing}, not declared {unknown}")
        return handle(*(np.asarray(feed_dict[p], dtype=d) for p, d in zip(placeholders, dtypes)))

    return run_callable
'''})

_add(L01, "scratch_inspect_timeit", "scratch cells: import inspect/sys, print(inspect.signature(fn)), %timeit, time.perf_counter", scratch=(r'''
import inspect
import sys

print(sys.version.split()[0], tf.__version__)
print("make_callable", inspect.signature(make_callable))
''', r'''
my_tiny_handle = make_callable(tiny_sess, feed=[x], fetch=[y])
%timeit -n 200 -r 3 my_tiny_handle({x: pool[0]})
%timeit -n 200 -r 3 tiny_sess.run(y, {x: pool[0]})
''', r'''
import time

clock_start = time.perf_counter()
for value in pool:
    my_tiny_handle({x: value})
print(f"{len(pool)} calls of my handle in {(time.perf_counter() - clock_start) * 1e6:.0f} us")
'''))

# ---------------------------------------------------------------------------------------------------------------------
# Lesson 02: Augmenter (augmenter_solution)
L02 = "02_graph_growth"

_add(L02, "dataclass_fields", "@dataclasses.dataclass with field(default_factory=tf.Graph), __post_init__, a dict comprehension of placeholders", {
    "augmenter_solution": r'''
import dataclasses

AUGMENT_INPUTS = {"image": (tf.uint8, [None, None, 1]), "flip": (tf.bool, []), "brightness": (tf.float32, []),
                  "contrast": (tf.float32, [])}


@dataclasses.dataclass(eq=False)
class Augmenter:
    """Augment images of any size with one graph, built once and finalized."""

    graph: tf.Graph = dataclasses.field(default_factory=tf.Graph)
    inputs: dict = dataclasses.field(init=False, default_factory=dict)

    def __post_init__(self):
        with self.graph.as_default():
            self.inputs = {name: v1.placeholder(dtype, shape, name=name) for name, (dtype, shape) in AUGMENT_INPUTS.items()}
            self.output = augment_ops(**self.inputs)
        self.graph.finalize()
        self.session = v1.Session(graph=self.graph)

    def __call__(self, image, flip, brightness, contrast):
        values = (image, flip, brightness, contrast)
        return self.session.run(self.output, dict(zip(self.inputs.values(), values)))
'''})

_add(L02, "setattr_loop", "a setattr(self, key, value) loop in __init__, getattr(self, key), self.finalized on my own class, *args", {
    "augmenter_solution": r'''
class Augmenter:
    """Augment images of any size with one graph, built once and finalized."""

    FEEDS = (("image", tf.uint8, [None, None, 1]), ("flip", tf.bool, []), ("brightness", tf.float32, []),
             ("contrast", tf.float32, []))

    def __init__(self):
        self.graph = tf.Graph()
        with self.graph.as_default():
            for key, dtype, shape in self.FEEDS:
                setattr(self, key, v1.placeholder(dtype, shape, name=key))
            self.placeholders = tuple(getattr(self, key) for key, _, _ in self.FEEDS)
            self.output = augment_ops(*self.placeholders)
        self.graph.finalize()
        self.finalized = self.graph.finalized  # my own flag, printed below
        self.session = v1.Session(graph=self.graph)
        self.calls = 0

    def __call__(self, *values):
        self.calls += 1
        return self.session.run(self.output, dict(zip(self.placeholders, values)))
'''})

_add(L02, "frozen_dataclass", "@dataclasses.dataclass(frozen=True) with object.__setattr__(self, ...) in __post_init__", {
    "augmenter_solution": r'''
import dataclasses


@dataclasses.dataclass(frozen=True, eq=False)
class Augmenter:
    """Augment images of any size with one graph, built once and finalized."""

    graph: tf.Graph = dataclasses.field(default_factory=tf.Graph)

    def __post_init__(self):
        with self.graph.as_default():
            feeds = (v1.placeholder(tf.uint8, [None, None, 1], name="image"), v1.placeholder(tf.bool, [], name="flip"),
                     v1.placeholder(tf.float32, [], name="brightness"), v1.placeholder(tf.float32, [], name="contrast"))
            output = augment_ops(*feeds)
        self.graph.finalize()
        object.__setattr__(self, "feeds", feeds)
        object.__setattr__(self, "output", output)
        object.__setattr__(self, "session", v1.Session(graph=self.graph))

    def __call__(self, image, flip, brightness, contrast):
        return self.session.run(self.output, dict(zip(self.feeds, (image, flip, brightness, contrast))))
'''})

_add(L02, "closure_kwargs", "a builder function returning a closure; __call__ forwarding *args/**kwargs", {
    "augmenter_solution": r'''
def build_augmenter_graph():
    """One finalized graph and its session, and a function that runs it on one image."""
    graph = tf.Graph()
    with graph.as_default():
        image = v1.placeholder(tf.uint8, [None, None, 1], name="image")
        flip = v1.placeholder(tf.bool, [], name="flip")
        brightness = v1.placeholder(tf.float32, [], name="brightness")
        contrast = v1.placeholder(tf.float32, [], name="contrast")
        output = augment_ops(image, flip, brightness, contrast)
    graph.finalize()
    session = v1.Session(graph=graph)

    def run(image_value, flip_value, brightness_value, contrast_value):
        return session.run(output, {image: image_value, flip: flip_value, brightness: brightness_value, contrast: contrast_value})

    return graph, session, run


class Augmenter:
    """Augment images of any size with one graph, built once and finalized."""

    def __init__(self):
        self.graph, self.session, self._run = build_augmenter_graph()

    def __call__(self, *args, **kwargs):
        return self._run(*args, **kwargs)
'''})

_add(L02, "scratch_gc_counter", "scratch cells: collections.Counter of op types, del of my own object, gc.collect(), %%time", scratch=(r'''
import collections
import gc

op_types = collections.Counter(op.type for op in augmenter.graph.get_operations())
print(len(augmenter.graph.get_operations()), "ops:", op_types.most_common(5))
''', r'''
%%time
spare_augmenter = Augmenter()
spare_outputs = [spare_augmenter(*item) for item in items[:20]]
print(len(spare_outputs), spare_outputs[0].shape, spare_augmenter.graph.finalized)
''', r'''
del spare_augmenter, spare_outputs
print("unreachable objects collected:", gc.collect())
'''))

# ---------------------------------------------------------------------------------------------------------------------
# Lesson 03: make_train_step, make_fast_step (make_train_step_solution, make_fast_step_solution)
L03 = "03_tf_function"

_add(L03, "partial_keyword_only", "tf.function(functools.partial(...), input_signature=...); a keyword-only helper for the warm-up", {
    "make_train_step_solution": r'''
import functools

STEP_SIGNATURE = (tf.TensorSpec([None, 784], tf.float32), tf.TensorSpec([None], tf.int32))


def make_train_step(model, optimizer):
    """Return a tf.function step(x, y) -> mean loss that trains `model` and traces once."""
    return tf.function(functools.partial(train_step, model, optimizer), input_signature=STEP_SIGNATURE)
''',
    "make_fast_step_solution": r'''
def warmup_lr(step, *, base=BASE_LR, warmup=WARMUP):
    """BASE_LR * min(1, (step + 1) / WARMUP), computed on a tensor step."""
    return base * tf.minimum(1.0, tf.cast(step + 1, tf.float32) / warmup)


def make_fast_step(w, b):
    """The slow step's maths in a tf.function that does not retrace per step."""
    params = (w, b)

    @tf.function(input_signature=(tf.TensorSpec([None, 784], tf.float32), tf.TensorSpec([None], tf.int32),
                                  tf.TensorSpec([], tf.int32)))
    def sgd_step(x, y, step):
        lr = warmup_lr(step)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=x @ w + b))
        for param, grad in zip(params, tape.gradient(loss, params)):
            param.assign_sub(lr * grad)
        return loss

    return sgd_step
'''})

_add(L03, "tf_module", "tf.Module subclasses holding a compiled step as an attribute", {
    "make_train_step_solution": r'''
class CompiledTrainStep(tf.Module):
    """A model, its optimizer and one compiled step."""

    def __init__(self, model, optimizer):
        super().__init__(name="compiled_train_step")
        self.model, self.optimizer = model, optimizer
        self.step = tf.function(self._step, input_signature=[tf.TensorSpec([None, 784], tf.float32),
                                                             tf.TensorSpec([None], tf.int32)])

    def _step(self, x, y):
        return train_step(self.model, self.optimizer, x, y)


def make_train_step(model, optimizer):
    """Return a tf.function step(x, y) -> mean loss that trains `model` and traces once."""
    return CompiledTrainStep(model, optimizer).step
''',
    "make_fast_step_solution": r'''
class WarmupSGD(tf.Module):
    """SGD on (w, b) with the linear warm-up of make_slow_step, compiled once."""

    def __init__(self, w, b):
        super().__init__(name="warmup_sgd")
        self.w, self.b = w, b
        self.step = tf.function(self._step, input_signature=[tf.TensorSpec([None, 784], tf.float32),
                                                             tf.TensorSpec([None], tf.int32), tf.TensorSpec([], tf.int32)])

    def _step(self, x, y, step):
        lr = BASE_LR * tf.minimum(1.0, tf.cast(step + 1, tf.float32) / WARMUP)
        with tf.GradientTape() as tape:
            logits = tf.matmul(x, self.w) + self.b
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        grad_w, grad_b = tape.gradient(loss, [self.w, self.b])
        self.w.assign_sub(lr * grad_w)
        self.b.assign_sub(lr * grad_b)
        return loss


def make_fast_step(w, b):
    """The slow step's maths in a tf.function that does not retrace per step."""
    return WarmupSGD(w, b).step
'''})

_add(L03, "lambda_varargs", "a lambda forwarding *batch inside tf.function; a list comprehension of assign_sub updates", {
    "make_train_step_solution": r'''
def make_train_step(model, optimizer):
    """Return a tf.function step(x, y) -> mean loss that trains `model` and traces once."""
    signature = [tf.TensorSpec([None, 784], tf.float32), tf.TensorSpec([None], tf.int32)]
    return tf.function(lambda *batch: train_step(model, optimizer, *batch), input_signature=signature)
''',
    "make_fast_step_solution": r'''
def make_fast_step(w, b):
    """The slow step's maths in a tf.function that does not retrace per step."""
    params = [w, b]
    specs = [tf.TensorSpec(shape, dtype) for shape, dtype in (([None, 784], tf.float32), ([None], tf.int32), ([], tf.int32))]

    @tf.function(input_signature=specs)
    def sgd_step(x, y, step):
        lr = BASE_LR * tf.minimum(1.0, tf.cast(step + 1, tf.float32) / WARMUP)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=tf.matmul(x, w) + b))
        [param.assign_sub(lr * grad) for param, grad in zip(params, tape.gradient(loss, params))]
        return loss

    return sgd_step
'''})

_add(L03, "typing_hints", "typing/type hints on both factories; hasattr guard on the arguments", {
    "make_train_step_solution": r'''
from typing import Callable

import tensorflow as tf


def make_train_step(model: tf.keras.Model, optimizer: tf.keras.optimizers.Optimizer) -> Callable[[tf.Tensor, tf.Tensor], tf.Tensor]:
    """Return a tf.function step(x, y) -> mean loss that trains `model` and traces once."""
    if not hasattr(optimizer, "apply_gradients"):
        raise TypeError(f"expected a Keras optimizer, got {type(optimizer).__name__}")

    @tf.function(input_signature=(tf.TensorSpec(shape=(None, 784), dtype=tf.float32), tf.TensorSpec(shape=(None,), dtype=tf.int32)))
    def step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        return train_step(model, optimizer, x, y)

    return step
''',
    "make_fast_step_solution": r'''
def make_fast_step(w: tf.Variable, b: tf.Variable) -> Callable[[tf.Tensor, tf.Tensor, tf.Tensor], tf.Tensor]:
    """The slow step's maths in a tf.function that does not retrace per step."""
    warmup_steps: float = float(WARMUP)

    @tf.function(input_signature=(tf.TensorSpec(shape=(None, 784), dtype=tf.float32), tf.TensorSpec(shape=(None,), dtype=tf.int32),
                                  tf.TensorSpec(shape=(), dtype=tf.int32)))
    def sgd_step(x: tf.Tensor, y: tf.Tensor, step: tf.Tensor) -> tf.Tensor:
        fraction = tf.minimum(1.0, tf.cast(step + 1, tf.float32) / warmup_steps)
        lr = BASE_LR * fraction
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=tf.matmul(x, w) + b))
        grad_w, grad_b = tape.gradient(loss, [w, b])
        w.assign_sub(lr * grad_w)
        b.assign_sub(lr * grad_b)
        return loss

    return sgd_step
'''})

_add(L03, "scratch_itertools_time", "scratch cells: inspect.signature, itertools.count, %%time", scratch=(r'''
import inspect

print("make_train_step", inspect.signature(make_train_step))
print("make_fast_step", inspect.signature(make_fast_step))
explore_step = make_fast_step(*init_params(seed=42))
explore_losses = [float(explore_step(xb, yb, n)) for n, (xb, yb) in zip(itertools.count(), mnist_pool[:6])]
print([round(value, 3) for value in explore_losses], "traces:", explore_step.experimental_get_tracing_count())
''', r'''
%%time
explore_traces = traces(tf.function(total, reduce_retracing=True), batch_sizes)
print("reduce_retracing traces:", explore_traces)
'''))

# ---------------------------------------------------------------------------------------------------------------------
# Lesson 04: fixed_pipeline, fast_pipeline (fixed_pipeline_solution, fast_pipeline_solution)
L04 = "04_tf_data"

_add(L04, "reduce_methodcaller", "functools.reduce over stage functions: operator.methodcaller and lambdas", {
    "fixed_pipeline_solution": r'''
import functools
import operator


def chain_stages(dataset, *stages):
    """Apply the stages (functions dataset -> dataset) in order."""
    return functools.reduce(lambda ds, stage: stage(ds), stages, dataset)


def fixed_pipeline(images, labels, *, batch_size=32, shuffle_buffer=1000):
    """The article's pipeline with augmentation that is drawn afresh every epoch."""
    return chain_stages(
        tf.data.Dataset.from_tensor_slices((images, labels)),
        operator.methodcaller("map", preprocess, num_parallel_calls=tf.data.AUTOTUNE),
        operator.methodcaller("cache"),
        operator.methodcaller("shuffle", shuffle_buffer),
        operator.methodcaller("map", random_shift, num_parallel_calls=tf.data.AUTOTUNE),
        operator.methodcaller("batch", batch_size),
        operator.methodcaller("prefetch", tf.data.AUTOTUNE),
    )
''',
    "fast_pipeline_solution": r'''
def fast_pipeline(files, read, augment, *, batch_size=32, shuffle_buffer=64):
    """naive_pipeline made fast: parallel reads, a cache before the random work, prefetch last."""
    return chain_stages(
        tf.data.Dataset.from_tensor_slices(files),
        lambda ds: ds.map(read, num_parallel_calls=tf.data.AUTOTUNE),
        lambda ds: ds.unbatch(),
        lambda ds: ds.cache(),
        lambda ds: ds.shuffle(shuffle_buffer),
        lambda ds: ds.map(augment, num_parallel_calls=tf.data.AUTOTUNE),
        lambda ds: ds.batch(batch_size),
        lambda ds: ds.prefetch(tf.data.AUTOTUNE),
    )
'''})

_add(L04, "generator_apply", "generators that yield the stages, applied with Dataset.apply", {
    "fixed_pipeline_solution": r'''
def fixed_stages(batch_size, shuffle_buffer):
    """The stages of fixed_pipeline, in order: deterministic work, the cache, then everything random."""
    yield lambda ds: ds.map(preprocess, num_parallel_calls=tf.data.AUTOTUNE)
    yield tf.data.Dataset.cache
    yield lambda ds: ds.shuffle(shuffle_buffer)
    yield lambda ds: ds.map(random_shift, num_parallel_calls=tf.data.AUTOTUNE)
    yield lambda ds: ds.batch(batch_size)
    yield lambda ds: ds.prefetch(tf.data.AUTOTUNE)


def fixed_pipeline(images, labels, *, batch_size=32, shuffle_buffer=1000):
    """The article's pipeline with augmentation that is drawn afresh every epoch."""
    dataset = tf.data.Dataset.from_tensor_slices((images, labels))
    for stage in fixed_stages(batch_size, shuffle_buffer):
        dataset = dataset.apply(stage)
    return dataset
''',
    "fast_pipeline_solution": r'''
def fast_stages(read, augment, batch_size, shuffle_buffer):
    """The stages of fast_pipeline, in order."""
    yield lambda ds: ds.map(read, num_parallel_calls=tf.data.AUTOTUNE)  # reads wait for I/O: several at once
    yield tf.data.Dataset.unbatch
    yield tf.data.Dataset.cache  # every file is read once
    yield lambda ds: ds.shuffle(shuffle_buffer)
    yield lambda ds: ds.map(augment, num_parallel_calls=tf.data.AUTOTUNE)
    yield lambda ds: ds.batch(batch_size)
    yield lambda ds: ds.prefetch(tf.data.AUTOTUNE)


def fast_pipeline(files, read, augment, *, batch_size=32, shuffle_buffer=64):
    """naive_pipeline made fast: parallel reads, a cache before the random work, prefetch last."""
    dataset = tf.data.Dataset.from_tensor_slices(files)
    for stage in fast_stages(read, augment, batch_size, shuffle_buffer):
        dataset = dataset.apply(stage)
    return dataset
'''})

_add(L04, "namespace_vars", "types.SimpleNamespace of map options passed as **vars(namespace); method chaining", {
    "fixed_pipeline_solution": r'''
import types

MAP_OPTIONS = types.SimpleNamespace(num_parallel_calls=tf.data.AUTOTUNE)


def fixed_pipeline(images, labels, *, batch_size=32, shuffle_buffer=1000):
    """The article's pipeline with augmentation that is drawn afresh every epoch."""
    return (tf.data.Dataset.from_tensor_slices((images, labels))
            .map(preprocess, **vars(MAP_OPTIONS))
            .cache()
            .shuffle(shuffle_buffer)
            .map(random_shift, **vars(MAP_OPTIONS))
            .batch(batch_size)
            .prefetch(tf.data.AUTOTUNE))
''',
    "fast_pipeline_solution": r'''
def fast_pipeline(files, read, augment, *, batch_size=32, shuffle_buffer=64):
    """naive_pipeline made fast: parallel reads, a cache before the random work, prefetch last."""
    return (tf.data.Dataset.from_tensor_slices(files)
            .map(read, **vars(MAP_OPTIONS))
            .unbatch()
            .cache()
            .shuffle(shuffle_buffer)
            .map(augment, **vars(MAP_OPTIONS))
            .batch(batch_size)
            .prefetch(tf.data.AUTOTUNE))
'''})

_add(L04, "abc_recipe", "an abc.ABC base class with abstract methods, two subclasses", {
    "fixed_pipeline_solution": r'''
import abc


class PipelineRecipe(abc.ABC):
    """A pipeline with its deterministic work cached and its random work after the cache."""

    @abc.abstractmethod
    def source(self):
        """The dataset of raw elements."""

    @abc.abstractmethod
    def deterministic(self, dataset):
        """The work worth caching."""

    @abc.abstractmethod
    def random(self, dataset):
        """The work that must change every epoch."""

    def build(self, batch_size, shuffle_buffer):
        dataset = self.deterministic(self.source()).cache().shuffle(shuffle_buffer)
        return self.random(dataset).batch(batch_size).prefetch(tf.data.AUTOTUNE)


class InMemoryRecipe(PipelineRecipe):
    def __init__(self, images, labels):
        self.images, self.labels = images, labels

    def source(self):
        return tf.data.Dataset.from_tensor_slices((self.images, self.labels))

    def deterministic(self, dataset):
        return dataset.map(preprocess, num_parallel_calls=tf.data.AUTOTUNE)

    def random(self, dataset):
        return dataset.map(random_shift, num_parallel_calls=tf.data.AUTOTUNE)


def fixed_pipeline(images, labels, *, batch_size=32, shuffle_buffer=1000):
    """The article's pipeline with augmentation that is drawn afresh every epoch."""
    return InMemoryRecipe(images, labels).build(batch_size, shuffle_buffer)
''',
    "fast_pipeline_solution": r'''
class FileRecipe(PipelineRecipe):
    def __init__(self, files, read, augment):
        self.files, self.read, self.augment = files, read, augment

    def source(self):
        return tf.data.Dataset.from_tensor_slices(self.files)

    def deterministic(self, dataset):
        return dataset.map(self.read, num_parallel_calls=tf.data.AUTOTUNE).unbatch()

    def random(self, dataset):
        return dataset.map(self.augment, num_parallel_calls=tf.data.AUTOTUNE)


def fast_pipeline(files, read, augment, *, batch_size=32, shuffle_buffer=64):
    """naive_pipeline made fast: parallel reads, a cache before the random work, prefetch last."""
    return FileRecipe(files, read, augment).build(batch_size, shuffle_buffer)
'''})

_add(L04, "scratch_logging_clock", "scratch cells: the logging module configured to stdout, time.perf_counter, collections.Counter", scratch=(r'''
import logging
import sys

pipeline_notes = logging.getLogger("my_pipeline_notes")
pipeline_notes.setLevel(logging.INFO)
pipeline_notes.propagate = False
if not pipeline_notes.handlers:
    pipeline_notes.addHandler(logging.StreamHandler(sys.stdout))
clock_start = time.perf_counter()
probe_reader = make_reader(images, labels, latency=0.001)
probe_batches = sum(1 for _ in fast_pipeline(np.arange(8), probe_reader, random_shift))
pipeline_notes.info("%d batches from %d reads in %.3f s", probe_batches, probe_reader.calls, time.perf_counter() - clock_start)
''', r'''
label_counts = collections.Counter(int(label) for _, batch_labels in fixed_pipeline(images[:256], labels[:256])
                                   for label in batch_labels.numpy())
print(sorted(label_counts.items()))
'''))

# ---------------------------------------------------------------------------------------------------------------------
# Lesson 05: MacroF1, make_evaluate (macro_f1_solution, make_evaluate_solution)
L05 = "05_metrics"

_add(L05, "confusion_matrix_class", "the state as one confusion-matrix variable; make_evaluate returns an instance of a class with __call__", {
    "macro_f1_solution": r'''
class MacroF1(tf.keras.metrics.Metric):
    """Streaming macro-averaged F1 over arg-max predictions of logits."""

    def __init__(self, num_classes, name="macro_f1", **kwargs):
        super().__init__(name=name, **kwargs)
        self.num_classes = int(num_classes)
        # rows: true class, columns: predicted class
        self.confusion = self.add_variable(shape=(self.num_classes, self.num_classes), initializer="zeros", name="confusion")

    def update_state(self, y_true, logits, sample_weight=None):
        labels = tf.reshape(tf.cast(y_true, tf.int32), [-1])
        predicted = tf.argmax(logits, axis=-1, output_type=tf.int32)
        weights = None if sample_weight is None else tf.reshape(tf.cast(sample_weight, tf.float32), [-1])
        self.confusion.assign_add(tf.math.confusion_matrix(labels, predicted, num_classes=self.num_classes,
                                                           weights=weights, dtype=tf.float32))

    def result(self):
        hits = tf.linalg.diag_part(self.confusion)
        denominator = tf.reduce_sum(self.confusion, axis=0) + tf.reduce_sum(self.confusion, axis=1)  # 2TP + FP + FN
        seen = tf.cast(denominator > 0, tf.float32)
        per_class = tf.math.divide_no_nan(2 * hits, denominator)
        return tf.math.divide_no_nan(tf.reduce_sum(per_class * seen), tf.reduce_sum(seen))
''',
    "make_evaluate_solution": r'''
class Evaluator:
    """evaluate(dataset) -> {metric name: value}; the model call and the metric updates compiled once."""

    def __init__(self, model, metrics):
        self.model, self.metrics = model, tuple(metrics)
        self.update = tf.function(self._update, input_signature=SPEC)

    def _update(self, images, labels):
        logits = self.model(images, training=False)
        for metric in self.metrics:
            metric.update_state(labels, logits)

    def __call__(self, dataset):
        for metric in self.metrics:
            metric.reset_state()
        for images, labels in dataset:
            self.update(images, labels)
        return {metric.name: float(metric.result()) for metric in self.metrics}


def make_evaluate(model, metrics):
    """Return evaluate(dataset) -> {metric name: value}, with the updates compiled once."""
    return Evaluator(model, metrics)
'''})

_add(L05, "setattr_property_nonlocal", "a setattr loop over add_variable in __init__, a @property, a closure counting calls with nonlocal", {
    "macro_f1_solution": r'''
class MacroF1(tf.keras.metrics.Metric):
    """Streaming macro-averaged F1 over arg-max predictions of logits."""

    COUNTS = ("true_positives", "false_positives", "false_negatives")

    def __init__(self, num_classes, name="macro_f1", **kwargs):
        super().__init__(name=name, **kwargs)
        self.num_classes = int(num_classes)
        for count in self.COUNTS:
            setattr(self, count, self.add_variable(shape=(self.num_classes,), initializer="zeros", name=count))

    def update_state(self, y_true, logits, sample_weight=None):
        labels = tf.one_hot(tf.reshape(tf.cast(y_true, tf.int32), [-1]), self.num_classes)
        predicted = tf.one_hot(tf.argmax(logits, axis=-1), self.num_classes)
        if sample_weight is None:
            weights = tf.ones_like(labels[:, 0])
        else:
            weights = tf.reshape(tf.cast(sample_weight, tf.float32), [-1])
        weights = weights[:, tf.newaxis]
        hits = tf.reduce_sum(labels * predicted * weights, axis=0)
        self.true_positives.assign_add(hits)
        self.false_positives.assign_add(tf.reduce_sum(predicted * weights, axis=0) - hits)
        self.false_negatives.assign_add(tf.reduce_sum(labels * weights, axis=0) - hits)

    @property
    def per_class(self):
        """(F1 of every class, whether the class was seen at all)."""
        denominator = 2 * self.true_positives + self.false_positives + self.false_negatives
        return tf.math.divide_no_nan(2 * self.true_positives, denominator), tf.cast(denominator > 0, tf.float32)

    def result(self):
        scores, seen = self.per_class
        return tf.math.divide_no_nan(tf.reduce_sum(scores * seen), tf.reduce_sum(seen))
''',
    "make_evaluate_solution": r'''
def make_evaluate(model, metrics):
    """Return evaluate(dataset) -> {metric name: value}, with the updates compiled once."""
    metrics = list(metrics)
    evaluations = 0

    @tf.function(input_signature=SPEC)
    def update(images, labels):
        logits = model(images, training=False)
        for metric in metrics:
            metric.update_state(labels, logits)

    def evaluate(dataset):
        nonlocal evaluations
        evaluations += 1
        for metric in metrics:
            metric.reset_state()
        for batch in dataset:
            update(*batch)
        return {metric.name: float(metric.result()) for metric in metrics}

    return evaluate
'''})

_add(L05, "enum_counts_typing", "enum.IntEnum indexes one (3, C) count variable; type hints; reduce_retracing=True", {
    "macro_f1_solution": r'''
import enum


class Count(enum.IntEnum):
    TRUE_POSITIVE = 0
    FALSE_POSITIVE = 1
    FALSE_NEGATIVE = 2


class MacroF1(tf.keras.metrics.Metric):
    """Streaming macro-averaged F1 over arg-max predictions of logits."""

    def __init__(self, num_classes: int, name: str = "macro_f1", **kwargs):
        super().__init__(name=name, **kwargs)
        self.num_classes = int(num_classes)
        self.counts = self.add_variable(shape=(len(Count), self.num_classes), initializer="zeros", name="counts")

    def update_state(self, y_true, logits, sample_weight=None) -> None:
        labels = tf.one_hot(tf.reshape(tf.cast(y_true, tf.int32), [-1]), self.num_classes)
        predicted = tf.one_hot(tf.argmax(logits, axis=-1, output_type=tf.int32), self.num_classes)
        weights = 1.0 if sample_weight is None else tf.reshape(tf.cast(sample_weight, tf.float32), [-1, 1])
        hits = tf.reduce_sum(labels * predicted * weights, axis=0)
        self.counts.assign_add(tf.stack([hits, tf.reduce_sum(predicted * weights, axis=0) - hits,
                                         tf.reduce_sum(labels * weights, axis=0) - hits]))

    def result(self) -> tf.Tensor:
        counts = tf.convert_to_tensor(self.counts)
        tp, fp, fn = (counts[which] for which in Count)
        denominator = 2 * tp + fp + fn
        seen = tf.cast(denominator > 0, tf.float32)
        return tf.math.divide_no_nan(tf.reduce_sum(tf.math.divide_no_nan(2 * tp, denominator) * seen), tf.reduce_sum(seen))
''',
    "make_evaluate_solution": r'''
from typing import Callable, Iterable


def make_evaluate(model: tf.keras.Model, metrics: Iterable[tf.keras.metrics.Metric]) -> Callable[[tf.data.Dataset], dict[str, float]]:
    """Return evaluate(dataset) -> {metric name: value}, with the updates compiled once."""
    metrics = tuple(metrics)

    @tf.function(reduce_retracing=True)
    def update(images: tf.Tensor, labels: tf.Tensor) -> None:
        logits = model(images, training=False)
        for metric in metrics:
            metric.update_state(labels, logits)

    def evaluate(dataset: tf.data.Dataset) -> dict[str, float]:
        for metric in metrics:
            metric.reset_state()
        for images, labels in dataset:
            update(images, labels)
        return {metric.name: float(metric.result()) for metric in metrics}

    return evaluate
'''})

_add(L05, "bincount_starmap", "tf.math.bincount counts; itertools.starmap drained by collections.deque(maxlen=0)", {
    "macro_f1_solution": r'''
class MacroF1(tf.keras.metrics.Metric):
    """Streaming macro-averaged F1 over arg-max predictions of logits."""

    def __init__(self, num_classes, name="macro_f1", **kwargs):
        super().__init__(name=name, **kwargs)
        self.num_classes = int(num_classes)
        self.tp = self.add_variable(shape=(self.num_classes,), initializer="zeros", name="tp")
        self.fp = self.add_variable(shape=(self.num_classes,), initializer="zeros", name="fp")
        self.fn = self.add_variable(shape=(self.num_classes,), initializer="zeros", name="fn")

    def _count(self, classes, weights):
        return tf.math.bincount(classes, weights=weights, minlength=self.num_classes, maxlength=self.num_classes,
                                dtype=tf.float32)

    def update_state(self, y_true, logits, sample_weight=None):
        labels = tf.reshape(tf.cast(y_true, tf.int32), [-1])
        predicted = tf.argmax(logits, axis=-1, output_type=tf.int32)
        weights = tf.ones(tf.shape(labels), tf.float32) if sample_weight is None else tf.reshape(tf.cast(sample_weight, tf.float32), [-1])
        right = tf.cast(tf.equal(labels, predicted), tf.float32)
        self.tp.assign_add(self._count(labels, weights * right))
        self.fp.assign_add(self._count(predicted, weights * (1.0 - right)))
        self.fn.assign_add(self._count(labels, weights * (1.0 - right)))

    def result(self):
        denominator = 2 * self.tp + self.fp + self.fn
        seen = tf.cast(denominator > 0, tf.float32)
        return tf.math.divide_no_nan(tf.reduce_sum(tf.math.divide_no_nan(2 * self.tp, denominator) * seen), tf.reduce_sum(seen))
''',
    "make_evaluate_solution": r'''
import collections
import itertools


def make_evaluate(model, metrics):
    """Return evaluate(dataset) -> {metric name: value}, with the updates compiled once."""
    metrics = list(metrics)

    @tf.function(input_signature=[tf.TensorSpec([None, 784], tf.float32), tf.TensorSpec([None], tf.int32)])
    def update(images, labels):
        logits = model(images, training=False)
        for metric in metrics:
            metric.update_state(labels, logits)

    def evaluate(dataset):
        for metric in metrics:
            metric.reset_state()
        collections.deque(itertools.starmap(update, dataset), maxlen=0)  # run update on every batch
        return {metric.name: float(metric.result()) for metric in metrics}

    return evaluate
'''})

_add(L05, "scratch_pickle_sys", "scratch cells: import pickle (dumps of a plain dict), import sys; print(sys.version), %timeit", scratch=(r'''
import pickle
import sys

history_bytes = pickle.dumps(history)
print(f"python {sys.version.split()[0]}: history pickles to {len(history_bytes)} bytes; "
      f"round trip equal: {pickle.loads(history_bytes) == history}")
''', r'''
%timeit -n 3 -r 2 evaluate_val(val_ds)
'''))

# ---------------------------------------------------------------------------------------------------------------------
# Lesson 06: second_derivative, hessian_vector_product, make_train_step (hvp_solution, train_step_solution)
L06 = "06_gradient_tape"

_add(L06, "forward_over_reverse_property", "tf.autodiff.ForwardAccumulator over a tape; a trainer class with @property trainable_variables", {
    "hvp_solution": r'''
ZERO_IF_UNCONNECTED = tf.UnconnectedGradients.ZERO


def second_derivative(f, x):
    """Element-wise second derivative f''(x) of an element-wise function f."""
    x = tf.convert_to_tensor(x, dtype=tf.float32)
    with tf.autodiff.ForwardAccumulator(primals=x, tangents=tf.ones_like(x)) as accumulator:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        first = tape.gradient(y, x, unconnected_gradients=ZERO_IF_UNCONNECTED)
    return accumulator.jvp(first, unconnected_gradients=ZERO_IF_UNCONNECTED)  # forward-over-reverse: H 1 = f'' here


def hessian_vector_product(f, x, v):
    """H(x) @ v for a scalar function f of the vector x, without forming the Hessian H."""
    x = tf.convert_to_tensor(x, dtype=tf.float32)
    v = tf.convert_to_tensor(v, dtype=tf.float32)
    if x.shape != v.shape:
        raise ValueError(f"x and v must have the same shape; got {x.shape} and {v.shape}")
    with tf.autodiff.ForwardAccumulator(primals=x, tangents=v) as accumulator:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        if y.shape.rank != 0:
            raise ValueError(f"f(x) must be a scalar; got shape {y.shape}")
        gradient = tape.gradient(y, x, unconnected_gradients=ZERO_IF_UNCONNECTED)
    return accumulator.jvp(gradient, unconnected_gradients=ZERO_IF_UNCONNECTED)  # the directional derivative of g along v
''',
    "train_step_solution": r'''
class ClippedTrainer:
    """What a clipped training step needs; the step itself is compiled once."""

    def __init__(self, model, optimizer, clip_norm):
        if not clip_norm > 0:
            raise ValueError(f"clip_norm must be positive; got {clip_norm}")
        self.model, self.optimizer, self.clip_norm = model, optimizer, clip_norm
        self.cross_entropy = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        self.step = tf.function(self._step)

    @property
    def trainable_variables(self):
        return self.model.trainable_variables

    def _step(self, images, labels):
        with tf.GradientTape() as tape:
            loss = self.cross_entropy(labels, self.model(images, training=True))
        pairs = [(g, v) for g, v in zip(tape.gradient(loss, self.trainable_variables), self.trainable_variables) if g is not None]
        clipped, _ = tf.clip_by_global_norm([g for g, _ in pairs], self.clip_norm)
        self.optimizer.apply_gradients(zip(clipped, [v for _, v in pairs]))
        return loss


def make_train_step(model, optimizer, clip_norm):
    """A tf.function train_step(images, labels) -> loss, with gradients clipped by their global norm."""
    return ClippedTrainer(model, optimizer, clip_norm).step
'''})

_add(L06, "hasattr_unzip", "hasattr guards; tensordot of the flattened gradient; zip(*pairs) to drop None gradients", {
    "hvp_solution": r'''
def as_float_tensor(value):
    return tf.convert_to_tensor(value, dtype=tf.float32)


def second_derivative(f, x):
    """Element-wise second derivative f''(x) of an element-wise function f."""
    x = as_float_tensor(x)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        slope = inner.gradient(y, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    return outer.gradient(slope, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)


def hessian_vector_product(f, x, v):
    """H(x) @ v for a scalar function f of the vector x, without forming the Hessian H."""
    if not hasattr(f, "__call__"):
        raise TypeError(f"f must be callable, not {type(f).__name__}")
    x, v = as_float_tensor(x), as_float_tensor(v)
    if x.shape != v.shape:
        raise ValueError(f"x {x.shape} and v {v.shape} differ in shape")
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        rank = y.shape.rank if hasattr(y, "shape") else None
        if rank != 0:
            raise ValueError(f"f(x) must be a scalar, got rank {rank}")
        gradient = inner.gradient(y, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        along_v = tf.tensordot(tf.reshape(gradient, [-1]), tf.reshape(v, [-1]), axes=1)
    return outer.gradient(along_v, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)
''',
    "train_step_solution": r'''
def make_train_step(model, optimizer, clip_norm):
    """A tf.function train_step(images, labels) -> loss, with gradients clipped by their global norm."""
    if not hasattr(optimizer, "apply_gradients"):
        raise TypeError(f"optimizer has no apply_gradients: {type(optimizer).__name__}")
    if not clip_norm > 0:
        raise ValueError(f"clip_norm must be positive; got {clip_norm}")
    cross_entropy = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def train_step(images, labels):
        with tf.GradientTape() as tape:
            loss = cross_entropy(labels, model(images, training=True))
        variables = model.trainable_variables
        gradients, used = zip(*[(g, v) for g, v in zip(tape.gradient(loss, variables), variables) if g is not None])
        clipped, _ = tf.clip_by_global_norm(list(gradients), clip_norm)
        optimizer.apply_gradients(zip(clipped, used))
        return loss

    return train_step
'''})

_add(L06, "recursion_dataclass", "recursion for the n-th derivative; a callable @dataclass(eq=False) wrapped in tf.function; del of my own tapes", {
    "hvp_solution": r'''
def derivative(f):
    """x -> the gradient of f at x (the element-wise derivative for an element-wise f), zeros where unconnected."""
    def df(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        return tape.gradient(y, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    return df


def nth_derivative(f, order):
    return f if order == 0 else derivative(nth_derivative(f, order - 1))


def second_derivative(f, x):
    """Element-wise second derivative f''(x) of an element-wise function f."""
    return nth_derivative(f, 2)(tf.convert_to_tensor(x, dtype=tf.float32))


def hessian_vector_product(f, x, v):
    """H(x) @ v for a scalar function f of the vector x, without forming the Hessian H."""
    x = tf.convert_to_tensor(x, dtype=tf.float32)
    v = tf.convert_to_tensor(v, dtype=tf.float32)
    if x.shape != v.shape:
        raise ValueError(f"x and v must have the same shape; got {x.shape} and {v.shape}")
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        if y.shape.rank != 0:
            raise ValueError(f"f(x) must be a scalar; got shape {y.shape}")
        projected = tf.reduce_sum(inner.gradient(y, x, unconnected_gradients=tf.UnconnectedGradients.ZERO) * v)
        del inner
    product = outer.gradient(projected, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    del outer
    return product
''',
    "train_step_solution": r'''
import dataclasses


@dataclasses.dataclass(eq=False)
class ClippedStep:
    model: tf.keras.Model
    optimizer: tf.keras.optimizers.Optimizer
    clip_norm: float

    def __post_init__(self):
        if not self.clip_norm > 0:
            raise ValueError(f"clip_norm must be positive; got {self.clip_norm}")
        self.cross_entropy = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def __call__(self, images, labels):
        with tf.GradientTape() as tape:
            loss = self.cross_entropy(labels, self.model(images, training=True))
        variables = self.model.trainable_variables
        kept = [(g, v) for g, v in zip(tape.gradient(loss, variables), variables) if g is not None]
        clipped, _ = tf.clip_by_global_norm([g for g, _ in kept], self.clip_norm)
        self.optimizer.apply_gradients(zip(clipped, [v for _, v in kept]))
        return loss


def make_train_step(model, optimizer, clip_norm):
    """A tf.function train_step(images, labels) -> loss, with gradients clipped by their global norm."""
    return tf.function(ClippedStep(model, optimizer, clip_norm))
'''})

_add(L06, "lambda_walrus_partial", "a module-level lambda with a walrus; functools.partial of a plain step function inside tf.function", {
    "hvp_solution": r'''
import functools


def grad_of_contracted_grad(f, x, weights):
    """d/dx sum(grad f(x) * weights) with two nested tapes, and f(x)."""
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        contracted = tf.reduce_sum(g * weights)
    return outer.gradient(contracted, x, unconnected_gradients=tf.UnconnectedGradients.ZERO), y


# For an element-wise f the Hessian is diagonal, so H @ ones is f'' element by element.
second_derivative = lambda f, x: grad_of_contracted_grad(f, (t := tf.convert_to_tensor(x, tf.float32)), tf.ones_like(t))[0]


def hessian_vector_product(f, x, v):
    """H(x) @ v for a scalar function f of the vector x, without forming the Hessian H."""
    x, v = tf.convert_to_tensor(x, tf.float32), tf.convert_to_tensor(v, tf.float32)
    if x.shape != v.shape:
        raise ValueError(f"x and v must have the same shape; got {x.shape} and {v.shape}")
    product, y = grad_of_contracted_grad(f, x, v)
    if y.shape.rank != 0:
        raise ValueError(f"f(x) must be a scalar; got shape {y.shape}")
    return product
''',
    "train_step_solution": r'''
def clipped_step(model, optimizer, clip_norm, loss_fn, images, labels):
    with tf.GradientTape() as tape:
        loss = loss_fn(labels, model(images, training=True))
    variables = model.trainable_variables
    pairs = [(g, v) for g, v in zip(tape.gradient(loss, variables), variables) if g is not None]
    clipped, _ = tf.clip_by_global_norm([g for g, _ in pairs], clip_norm)
    optimizer.apply_gradients(zip(clipped, [v for _, v in pairs]))
    return loss


def make_train_step(model, optimizer, clip_norm):
    """A tf.function train_step(images, labels) -> loss, with gradients clipped by their global norm."""
    if not clip_norm > 0:
        raise ValueError(f"clip_norm must be positive; got {clip_norm}")
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    return tf.function(functools.partial(clipped_step, model, optimizer, clip_norm, loss_fn))
'''})

_add(L06, "scratch_getattr_optimizers", "scratch cells: getattr(tf.keras.optimizers, name), del, gc.collect(), %timeit", scratch=(r'''
import gc

for optimizer_name in ("SGD", "Adam", "RMSprop"):
    trial_model = build_mlp(seed=4)
    trial_optimizer = getattr(tf.keras.optimizers, optimizer_name)(learning_rate=1e-3)
    trial_step = make_train_step(trial_model, trial_optimizer, clip_norm=1.0)
    trial_losses = [float(trial_step(xb, yb)) for xb, yb in batches[:10]]
    print(f"{optimizer_name:8s} loss {trial_losses[0]:.3f} -> {trial_losses[-1]:.3f}")
del trial_model, trial_optimizer, trial_step
print("unreachable objects collected:", gc.collect())
''', r'''
%timeit -n 20 -r 3 your_product(*hvp_pool[0])
'''))

# ---------------------------------------------------------------------------------------------------------------------
# Lesson 07: train_logged (train_logged_solution)
L07 = "07_tensorboard"

_add(L07, "exitstack_closing", "contextlib.ExitStack with contextlib.closing(writer); dict(zip(...)) of the step's outputs", {
    "train_logged_solution": r'''
import contextlib


def checked_every(histogram_every):
    if type(histogram_every) is not int or histogram_every < 1:
        raise ValueError(f"histogram_every must be a positive int; got {histogram_every!r}")
    return histogram_every


def train_logged(step_fn, model, batches, logdir, *, histogram_every=10):
    """Train with step_fn on every batch, logging to logdir; return the per-step loss and accuracy."""
    every = checked_every(histogram_every)  # before the writer: a bad value writes nothing
    history = {"loss": [], "accuracy": []}
    with contextlib.ExitStack() as stack:
        writer = stack.enter_context(contextlib.closing(tf.summary.create_file_writer(str(logdir))))
        stack.enter_context(writer.as_default())
        for step, (x, y) in enumerate(batches):
            values = dict(zip(history, step_fn(x, y)))  # {"loss": ..., "accuracy": ...}
            for tag, value in values.items():
                tf.summary.scalar(tag, value, step=step)
                history[tag].append(float(value))
            if step % every == 0:
                for variable in model.trainable_variables:
                    tf.summary.histogram(f"weights/{variable.path}", variable, step=step)
    return history
'''})

_add(L07, "generator_ordereddict", "a generator that trains lazily; itertools.count; collections.OrderedDict; try/finally close", {
    "train_logged_solution": r'''
import collections
import itertools


def trained_steps(step_fn, batches):
    """Train on one batch at a time; yield (step, loss, accuracy) after each update."""
    for step, (x, y) in zip(itertools.count(), batches):
        loss, accuracy = step_fn(x, y)
        yield step, loss, accuracy


def train_logged(step_fn, model, batches, logdir, *, histogram_every=10):
    """Train with step_fn on every batch, logging to logdir; return the per-step loss and accuracy."""
    if isinstance(histogram_every, bool) or not isinstance(histogram_every, int) or histogram_every <= 0:
        raise ValueError(f"histogram_every must be a positive int; got {histogram_every!r}")
    history = collections.OrderedDict((key, []) for key in ("loss", "accuracy"))
    writer = tf.summary.create_file_writer(str(logdir))
    try:
        with writer.as_default():
            for step, loss, accuracy in trained_steps(step_fn, batches):
                tf.summary.scalar("loss", loss, step=step)
                tf.summary.scalar("accuracy", accuracy, step=step)
                if step % histogram_every == 0:
                    for variable in model.trainable_variables:
                        tf.summary.histogram(f"weights/{variable.path}", variable, step=step)
                history["loss"].append(float(loss))
                history["accuracy"].append(float(accuracy))
    finally:
        writer.close()
    return history
'''})

_add(L07, "match_schedule_partial", "a match statement validating the argument in a class with __call__; functools.partial(tf.summary.scalar, step=...)", {
    "train_logged_solution": r'''
import functools


class HistogramSchedule:
    """schedule(step) -> whether to log weight histograms at this step."""

    def __init__(self, every):
        match every:
            case bool():
                raise ValueError(f"histogram_every must be a positive int, not a bool ({every!r})")
            case int() if every >= 1:
                self.every = every
            case _:
                raise ValueError(f"histogram_every must be a positive int; got {every!r}")

    def __call__(self, step):
        return step % self.every == 0


def train_logged(step_fn, model, batches, logdir, *, histogram_every=10):
    """Train with step_fn on every batch, logging to logdir; return the per-step loss and accuracy."""
    due = HistogramSchedule(histogram_every)
    losses, accuracies = [], []
    writer = tf.summary.create_file_writer(str(logdir))
    with writer.as_default():
        for step, (x, y) in enumerate(batches):
            loss, accuracy = step_fn(x, y)
            scalar = functools.partial(tf.summary.scalar, step=step)
            scalar("loss", loss)
            scalar("accuracy", accuracy)
            if due(step):
                for variable in model.trainable_variables:
                    tf.summary.histogram(f"weights/{variable.path}", variable, step=step)
            losses.append(float(loss))
            accuracies.append(float(accuracy))
    writer.close()
    return {"loss": losses, "accuracy": accuracies}
'''})

_add(L07, "lambda_walrus", "a validating lambda, a walrus in the histogram test, *batch unpacking", {
    "train_logged_solution": r'''
def train_logged(step_fn, model, batches, logdir, *, histogram_every=10):
    """Train with step_fn on every batch, logging to logdir; return the per-step loss and accuracy."""
    positive_int = lambda n: isinstance(n, int) and not isinstance(n, bool) and n > 0
    if not positive_int(histogram_every):
        raise ValueError(f"histogram_every must be a positive int; got {histogram_every!r}")
    history = {"loss": [], "accuracy": []}
    writer = tf.summary.create_file_writer(str(logdir))
    with writer.as_default():
        for step, batch in enumerate(batches):
            loss, accuracy = step_fn(*batch)
            for tag, value in (("loss", loss), ("accuracy", accuracy)):
                tf.summary.scalar(tag, value, step=step)
                history[tag].append(float(value))
            if not (remainder := step % histogram_every):
                for variable in model.trainable_variables:
                    tf.summary.histogram(f"weights/{variable.path}", variable, step=step)
    writer.close()
    return history
'''})

_add(L07, "scratch_time_logging", "scratch cells: %%time, logging to stdout, time.perf_counter around my own function", scratch=(r'''
%%time
import logging
import sys
import time

notes = logging.getLogger("lesson07.notes")
notes.setLevel(logging.INFO)
notes.propagate = False
if not notes.handlers:
    notes.addHandler(logging.StreamHandler(stream=sys.stdout))
trial_model, trial_step = make_model_and_step(seed=8)
with tempfile.TemporaryDirectory(prefix="my-07-notes-") as trial_dir:
    trial_start = time.perf_counter()
    trial_history = train_logged(trial_step, trial_model, BATCHES[:20], trial_dir, histogram_every=5)
    notes.info("20 logged steps in %.3f s; last loss %.3f", time.perf_counter() - trial_start, trial_history["loss"][-1])
''',))

# ---------------------------------------------------------------------------------------------------------------------
# Lesson 08: top_ops, preprocess_tf (top_ops_solution, preprocess_tf_solution)
L08 = "08_timeline_profiler"

_add(L08, "counter_moments_slices", "collections.Counter totals; tf.nn.moments and a sum of nine shifted slices", {
    "top_ops_solution": r'''
import collections


def top_ops(trace, n=5):
    """[(op_type, total_seconds, count), ...] of a chrome trace, largest total first."""
    if n < 1:
        raise ValueError(f"n must be at least 1; got {n}")
    if isinstance(trace, (str, bytes, bytearray)):
        trace = json.loads(trace)
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        raise ValueError("expected a chrome trace: a dict with a 'traceEvents' list")
    microseconds, counts = collections.Counter(), collections.Counter()
    for event in trace["traceEvents"]:
        if event.get("ph") == "X":  # complete events: the ops that ran
            microseconds[event["name"]] += event.get("dur", 0)
            counts[event["name"]] += 1
    ranked = sorted(counts, key=lambda op: (-microseconds[op], op))[:n]
    return [(op, microseconds[op] / 1e6, counts[op]) for op in ranked]
''',
    "preprocess_tf_solution": r'''
def preprocess_tf(images):
    """preprocess_numpy with TensorFlow ops on the whole batch."""
    x = tf.cast(images, tf.float32) / 255.0
    mean, variance = tf.nn.moments(x, axes=[1, 2], keepdims=True)
    x = (x - mean) / tf.maximum(tf.sqrt(variance), 1.0 / 28)
    padded = tf.pad(x, [[0, 0], [1, 1], [1, 1]])  # zeros around every image
    blurred = tf.add_n([padded[:, dy : dy + 28, dx : dx + 28] for dy in range(3) for dx in range(3)]) / 9.0
    return blurred[..., tf.newaxis]
'''})

_add(L08, "groupby_depthwise", "itertools.groupby with operator.itemgetter; try/except KeyError; a keyword-only blur helper", {
    "top_ops_solution": r'''
import itertools
import operator


def top_ops(trace, n=5):
    """[(op_type, total_seconds, count), ...] of a chrome trace, largest total first."""
    if n < 1:
        raise ValueError(f"n must be at least 1; got {n}")
    parsed = json.loads(trace) if isinstance(trace, (str, bytes)) else trace
    try:
        events = parsed["traceEvents"]
    except (KeyError, TypeError, IndexError):
        raise ValueError("a chrome trace is a dict with a 'traceEvents' list") from None
    if not isinstance(events, list):
        raise ValueError("'traceEvents' should be a list")
    by_name = operator.itemgetter("name")
    complete = sorted((event for event in events if event.get("ph") == "X"), key=by_name)
    rows = []
    for name, group in itertools.groupby(complete, key=by_name):
        durations = [event.get("dur", 0) for event in group]
        rows.append((name, sum(durations) / 1e6, len(durations)))
    rows.sort(key=lambda row: (-row[1], row[0]))
    return rows[:n]
''',
    "preprocess_tf_solution": r'''
def box_blur(x, *, size=3):
    """Mean of each size x size neighbourhood, zeros outside the image."""
    kernel = tf.fill([size, size, 1, 1], 1.0 / size**2)
    return tf.nn.depthwise_conv2d(x, kernel, strides=[1, 1, 1, 1], padding="SAME")


def preprocess_tf(images):
    """preprocess_numpy with TensorFlow ops on the whole batch."""
    pixels = tf.cast(images, tf.float32)[..., tf.newaxis] / 255.0
    return box_blur(tf.image.per_image_standardization(pixels))
'''})

_add(L08, "match_events_avgpool", "match statements on the trace and on each event dict; reduce_std and avg_pool2d over padded images", {
    "top_ops_solution": r'''
def top_ops(trace, n=5):
    """[(op_type, total_seconds, count), ...] of a chrome trace, largest total first."""
    if n < 1:
        raise ValueError(f"n must be at least 1; got {n}")
    match trace:
        case str() | bytes():
            trace = json.loads(trace)
    match trace:
        case {"traceEvents": list(events)}:
            pass
        case _:
            raise ValueError("a chrome trace is a dict with a 'traceEvents' list")
    totals = {}
    for event in events:
        match event:
            case {"ph": "X", "name": name}:
                duration, count = totals.get(name, (0, 0))
                totals[name] = (duration + event.get("dur", 0), count + 1)
    rows = [(name, duration / 1e6, count) for name, (duration, count) in totals.items()]
    return sorted(rows, key=lambda row: (-row[1], row[0]))[:n]
''',
    "preprocess_tf_solution": r'''
def preprocess_tf(images):
    """preprocess_numpy with TensorFlow ops on the whole batch."""
    x = tf.cast(images, tf.float32)[..., tf.newaxis] / 255.0
    mean = tf.reduce_mean(x, axis=[1, 2, 3], keepdims=True)
    spread = tf.maximum(tf.math.reduce_std(x, axis=[1, 2, 3], keepdims=True), 1.0 / 28)
    x = (x - mean) / spread
    padded = tf.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]])
    return tf.nn.avg_pool2d(padded, ksize=3, strides=1, padding="VALID")  # every window has 9 pixels: the zeros count
'''})

_add(L08, "namedtuple_walrus_partial", "typing.NamedTuple rows, a walrus, functools.partial(tf.nn.conv2d, ...)", {
    "top_ops_solution": r'''
import typing


class OpRow(typing.NamedTuple):
    op: str
    seconds: float
    count: int


def top_ops(trace, n=5):
    """[(op_type, total_seconds, count), ...] of a chrome trace, largest total first."""
    if n < 1:
        raise ValueError(f"n must be at least 1; got {n}")
    data = json.loads(trace) if isinstance(trace, (str, bytes)) else trace
    if not isinstance(events := data.get("traceEvents") if isinstance(data, dict) else None, list):
        raise ValueError("a chrome trace is a dict with a 'traceEvents' list")
    totals: dict[str, list[int]] = {}
    for event in (e for e in events if e.get("ph") == "X"):
        entry = totals.setdefault(event["name"], [0, 0])
        entry[0] += event.get("dur", 0)
        entry[1] += 1
    rows = [OpRow(op, microseconds / 1e6, count) for op, (microseconds, count) in totals.items()]
    return sorted(rows, key=lambda row: (-row.seconds, row.op))[:n]
''',
    "preprocess_tf_solution": r'''
import functools

same_size_conv = functools.partial(tf.nn.conv2d, strides=1, padding="SAME")


def preprocess_tf(images):
    """preprocess_numpy with TensorFlow ops on the whole batch."""
    standardized = tf.image.per_image_standardization(tf.cast(images, tf.float32)[..., tf.newaxis] / 255.0)
    return same_size_conv(standardized, tf.ones([3, 3, 1, 1]) / 9.0)
'''})

_add(L08, "scratch_clock_json", "scratch cells: time.perf_counter comparisons, json.dumps of my table, print(sys.version)", scratch=(r'''
import sys

sample_batch = train_images[:BATCH]
seconds_per_call = {}
for label, function in (("numpy", preprocess_numpy), ("tf", lambda b: preprocess_tf(tf.constant(b)).numpy())):
    clock_start = time.perf_counter()
    for _ in range(5):
        function(sample_batch)
    seconds_per_call[label] = (time.perf_counter() - clock_start) / 5
print(sys.version.split()[0], {label: f"{seconds * 1e3:.2f} ms" for label, seconds in seconds_per_call.items()})
''', r'''
print(json.dumps([list(row) for row in top_ops(chrome_trace, n=3)], indent=1))
'''))

# ---------------------------------------------------------------------------------------------------------------------
# Lesson 09: first_nonfinite_op, stable_cross_entropy (first_nonfinite_op_solution, stable_cross_entropy_solution)
L09 = "09_nan_checks"

_add(L09, "contextmanager_logsumexp", "@contextlib.contextmanager around the checks, a walrus, a compiled regex; logsumexp of shifted logits", {
    "first_nonfinite_op_solution": r'''
import contextlib

CHECK_NODE = re.compile(r"node (\S+)/CheckNumericsV2")


@contextlib.contextmanager
def numerics_checked():
    """enable_check_numerics for the with block only, however it ends."""
    tf.debugging.enable_check_numerics()
    try:
        yield
    finally:
        tf.debugging.disable_check_numerics()


def first_nonfinite_op(fn, *args):
    """Name of the first op of fn(*args) with a non-finite output, or None; checks off afterwards."""
    with numerics_checked():
        try:
            tf.function(fn)(*args)
        except tf.errors.InvalidArgumentError as error:
            if (found := CHECK_NODE.search(error.message)) is None:
                raise
            return found.group(1)
    return None
''',
    "stable_cross_entropy_solution": r'''
def stable_cross_entropy(labels, logits):
    """Mean cross-entropy of class ids `labels` from `logits`, finite for any finite logits."""
    logits = tf.convert_to_tensor(logits)
    shifted = logits - tf.stop_gradient(tf.reduce_max(logits, axis=-1, keepdims=True))  # the largest logit becomes 0
    picked = tf.gather(shifted, labels, axis=-1, batch_dims=1)
    return tf.reduce_mean(tf.reduce_logsumexp(shifted, axis=-1) - picked)
'''})

_add(L09, "try_except_else_log_softmax", "try/except/else/finally around the TF error; one_hot times tf.nn.log_softmax", {
    "first_nonfinite_op_solution": r'''
def first_nonfinite_op(fn, *args):
    """Name of the first op of fn(*args) with a non-finite output, or None; checks off afterwards."""
    compiled = tf.function(fn)  # traced at its first call, below, while the checks are on
    tf.debugging.enable_check_numerics()
    try:
        compiled(*args)
    except tf.errors.InvalidArgumentError as error:
        found = re.search(r"node (\S+)/CheckNumericsV2", error.message)
        if not found:
            raise
        culprit = found.group(1)
    else:
        culprit = None
    finally:
        tf.debugging.disable_check_numerics()
    return culprit
''',
    "stable_cross_entropy_solution": r'''
def stable_cross_entropy(labels, logits):
    """Mean cross-entropy of class ids `labels` from `logits`, finite for any finite logits."""
    log_probs = tf.nn.log_softmax(logits, axis=-1)  # computed from the logits: no log(0)
    chosen = tf.one_hot(labels, depth=tf.shape(log_probs)[-1], dtype=log_probs.dtype)
    return -tf.reduce_mean(tf.reduce_sum(chosen * log_probs, axis=-1))
'''})

_add(L09, "class_call_global", "a class with __call__ and a class-level pattern; `global` for my own call counter; Keras' sparse_categorical_crossentropy", {
    "first_nonfinite_op_solution": r'''
FINDER_CALLS = 0


class NonfiniteOpFinder:
    """finder(fn, *args) -> the first op of fn(*args) with a non-finite output, or None."""

    PATTERN = re.compile(r"node (\S+)/CheckNumericsV2")

    def __call__(self, fn, *args):
        global FINDER_CALLS
        FINDER_CALLS += 1
        tf.debugging.enable_check_numerics()
        try:
            tf.function(fn)(*args)
            return None
        except tf.errors.InvalidArgumentError as error:
            match = self.PATTERN.search(error.message)
            if match is None:
                raise
            return match.group(1)
        finally:
            tf.debugging.disable_check_numerics()


first_nonfinite_op = NonfiniteOpFinder()
''',
    "stable_cross_entropy_solution": r'''
def stable_cross_entropy(labels, logits):
    """Mean cross-entropy of class ids `labels` from `logits`, finite for any finite logits."""
    per_example = tf.keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
    return tf.reduce_mean(per_example)
'''})

_add(L09, "wraps_decorator", "a decorator written with functools.wraps forwarding *args/**kwargs; softmax_cross_entropy_with_logits on one-hot labels", {
    "first_nonfinite_op_solution": r'''
import functools


def with_numerics_checks(function):
    """Run `function` with enable_check_numerics on, and switch the checks off however it ends."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        tf.debugging.enable_check_numerics()
        try:
            return function(*args, **kwargs)
        finally:
            tf.debugging.disable_check_numerics()
    return wrapper


@with_numerics_checks
def first_nonfinite_op(fn, *args):
    """Name of the first op of fn(*args) with a non-finite output, or None; checks off afterwards."""
    try:
        tf.function(fn)(*args)
    except tf.errors.InvalidArgumentError as error:
        names = re.findall(r"node (\S+)/CheckNumericsV2", error.message)
        if not names:
            raise
        return names[0]
    return None
''',
    "stable_cross_entropy_solution": r'''
def stable_cross_entropy(labels, logits):
    """Mean cross-entropy of class ids `labels` from `logits`, finite for any finite logits."""
    logits = tf.convert_to_tensor(logits)
    targets = tf.one_hot(labels, depth=tf.shape(logits)[-1], dtype=logits.dtype)
    return tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=targets, logits=logits))
'''})

_add(L09, "scratch_try_timeit", "scratch cells: try/except/else/finally around a TF error, %timeit", scratch=(r'''
try:
    mystery_culprit = first_nonfinite_op(mystery_model, *mystery_inputs)
except tf.errors.OpError as mystery_error:
    print("TensorFlow error:", type(mystery_error).__name__)
else:
    print("first non-finite op of the mystery model:", mystery_culprit)
finally:
    tf.debugging.disable_check_numerics()
''', r'''
%timeit -n 50 -r 3 stable_cross_entropy(tf.constant([1, 2]), tf.constant([[200.0, 0.0, -10.0], [1.0, 2.0, 3.0]]))
'''))

# ---------------------------------------------------------------------------------------------------------------------
# Lesson 10: make_dataset, make_train_step, train (make_dataset_solution, make_train_step_solution, train_solution)
L10 = "10_capstone"

_add(L10, "reduce_module_closing", "functools.reduce over stages; a tf.Module holding the compiled step; contextlib.closing; itertools.islice", {
    "make_dataset_solution": r'''
import functools


def to_float(images, labels):
    """uint8 pixels -> float32 in [0, 1]; labels -> int32."""
    return tf.cast(images, tf.float32) / 255.0, tf.cast(labels, tf.int32)


def make_dataset(images, labels, batch_size=64):
    """A shuffled, batched, prefetched tf.data pipeline over MNIST arrays."""
    images, labels = np.asarray(images), np.asarray(labels)
    problems = [message for failed, message in (
        (len(images) != len(labels), f"images and labels differ in length: {len(images)} and {len(labels)}"),
        (images.shape[1:] != (28, 28), f"images must be [N, 28, 28]; got {images.shape}"),
        (batch_size < 1, f"batch_size must be at least 1; got {batch_size}"),
    ) if failed]
    if problems:
        raise ValueError("; ".join(problems))
    stages = (
        lambda ds: ds.shuffle(len(images), reshuffle_each_iteration=True),
        lambda ds: ds.batch(batch_size),
        lambda ds: ds.map(to_float, num_parallel_calls=tf.data.AUTOTUNE),
        lambda ds: ds.prefetch(tf.data.AUTOTUNE),
    )
    return functools.reduce(lambda ds, stage: stage(ds), stages, tf.data.Dataset.from_tensor_slices((images, labels)))
''',
    "make_train_step_solution": r'''
SIGNATURE = (tf.TensorSpec([None, 28, 28], tf.float32), tf.TensorSpec([None], tf.int32))


class CompiledStep(tf.Module):
    """A model, its optimizer, loss and metrics, and one training step compiled for every batch size."""

    def __init__(self, model, optimizer, loss_fn, metrics):
        super().__init__(name="compiled_step")
        self.model, self.optimizer, self.loss_fn = model, optimizer, loss_fn
        self.loss_metric, self.accuracy_metric = metrics["loss"], metrics["accuracy"]
        self.step = tf.function(self._step, input_signature=SIGNATURE)

    def _step(self, images, labels):
        with tf.GradientTape() as tape:
            logits = self.model(images, training=True)
            loss = self.loss_fn(labels, logits)
        variables = self.model.trainable_variables
        self.optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        self.loss_metric.update_state(tf.fill(tf.shape(labels), loss))  # every example counts once
        self.accuracy_metric.update_state(labels, logits)
        return loss


def make_train_step(model, optimizer, loss_fn, metrics):
    """One tf.function step(images, labels) -> loss that trains `model` and updates `metrics`."""
    missing = [name for name in ("loss", "accuracy") if name not in metrics]
    if missing:
        raise ValueError(f"metrics needs the keys 'loss' and 'accuracy'; missing {missing}")
    if not optimizer.built:
        optimizer.build(model.trainable_variables)
    return CompiledStep(model, optimizer, loss_fn, metrics).step
''',
    "train_solution": r'''
import itertools


def train(step, dataset, metrics, *, epochs, logdir):
    """Run `epochs` epochs of `step` over `dataset`; reset, read and log `metrics` per epoch."""
    if epochs < 1:
        raise ValueError(f"epochs must be at least 1; got {epochs}")
    history = {name: [] for name in metrics}
    with contextlib.closing(tf.summary.create_file_writer(str(logdir))) as writer, writer.as_default():
        for epoch in itertools.islice(itertools.count(), epochs):
            for metric in metrics.values():
                metric.reset_state()
            for images, labels in dataset:
                step(images, labels)
            for name, metric in metrics.items():
                history[name].append(value := float(metric.result()))
                tf.summary.scalar(name, value, step=epoch)
    return history
'''})

_add(L10, "frozen_dataclass_global", "a frozen dataclass with object.__setattr__ in __post_init__; type hints; defaultdict; `global` counter", {
    "make_dataset_solution": r'''
import dataclasses


def to_float(images, labels):
    """uint8 pixels -> float32 in [0, 1]; labels -> int32."""
    return tf.cast(images, tf.float32) / 255.0, tf.cast(labels, tf.int32)


@dataclasses.dataclass(frozen=True, eq=False)
class PipelineSpec:
    images: np.ndarray
    labels: np.ndarray
    batch_size: int = 64

    def __post_init__(self):
        object.__setattr__(self, "images", np.asarray(self.images))
        object.__setattr__(self, "labels", np.asarray(self.labels))
        if len(self.images) != len(self.labels):
            raise ValueError(f"{len(self.images)} images but {len(self.labels)} labels")
        if self.images.shape[1:] != (28, 28):
            raise ValueError(f"images must be [N, 28, 28]; got {self.images.shape}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be at least 1; got {self.batch_size}")

    def build(self) -> tf.data.Dataset:
        dataset = tf.data.Dataset.from_tensor_slices((self.images, self.labels))
        dataset = dataset.shuffle(len(self.images))  # reshuffled every epoch (the default)
        dataset = dataset.batch(self.batch_size).map(to_float, num_parallel_calls=tf.data.AUTOTUNE)
        return dataset.prefetch(tf.data.AUTOTUNE)


def make_dataset(images, labels, batch_size=64):
    """A shuffled, batched, prefetched tf.data pipeline over MNIST arrays."""
    return PipelineSpec(images, labels, batch_size).build()
''',
    "make_train_step_solution": r'''
SIGNATURE = (tf.TensorSpec([None, 28, 28], tf.float32), tf.TensorSpec([None], tf.int32))


def make_train_step(model, optimizer, loss_fn, metrics):
    """One tf.function step(images, labels) -> loss that trains `model` and updates `metrics`."""
    if missing := sorted({"loss", "accuracy"} - set(metrics)):
        raise ValueError(f"metrics is missing {missing}")
    if not getattr(optimizer, "built", False):
        optimizer.build(model.trainable_variables)
    loss_metric, accuracy_metric = metrics["loss"], metrics["accuracy"]

    def step(images: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            logits = model(images, training=True)
            loss = loss_fn(labels, logits)
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        loss_metric.update_state(loss, sample_weight=tf.cast(tf.size(labels), tf.float32))
        accuracy_metric.update_state(labels, logits)
        return loss

    return tf.function(step, input_signature=SIGNATURE)
''',
    "train_solution": r'''
import collections

TRAIN_CALLS = 0  # how often I called train in this notebook


def train(step, dataset, metrics, *, epochs, logdir):
    """Run `epochs` epochs of `step` over `dataset`; reset, read and log `metrics` per epoch."""
    global TRAIN_CALLS
    if epochs < 1:
        raise ValueError(f"epochs must be at least 1; got {epochs}")
    TRAIN_CALLS += 1
    history = collections.defaultdict(list)
    writer = tf.summary.create_file_writer(str(logdir))
    with writer.as_default():
        for epoch in range(epochs):
            for metric in metrics.values():
                metric.reset_state()
            for batch in dataset:
                step(*batch)
            for name, metric in metrics.items():
                history[name].append(float(metric.result()))
                tf.summary.scalar(name, history[name][-1], step=epoch)
    writer.close()
    return dict(history)
'''})

_add(L10, "namespace_methodcaller", "types.SimpleNamespace(**metrics) and vars(namespace); operator.methodcaller; method chaining", {
    "make_dataset_solution": r'''
def to_float(images, labels):
    """uint8 pixels -> float32 in [0, 1]; labels -> int32."""
    return tf.cast(images, tf.float32) / 255.0, tf.cast(labels, tf.int32)


def make_dataset(images, labels, batch_size=64):
    """A shuffled, batched, prefetched tf.data pipeline over MNIST arrays."""
    images, labels = np.asarray(images), np.asarray(labels)
    if len(images) != len(labels) or images.shape[1:] != (28, 28) or batch_size < 1:
        raise ValueError(f"need images [N, 28, 28], N labels and batch_size >= 1; got {images.shape}, {labels.shape}, {batch_size}")
    return (tf.data.Dataset.from_tensor_slices((images, labels))
            .shuffle(len(images), reshuffle_each_iteration=True)
            .batch(batch_size)
            .map(to_float, num_parallel_calls=tf.data.AUTOTUNE)
            .prefetch(tf.data.AUTOTUNE))
''',
    "make_train_step_solution": r'''
import types

SIGNATURE = (tf.TensorSpec([None, 28, 28], tf.float32), tf.TensorSpec([None], tf.int32))


def make_train_step(model, optimizer, loss_fn, metrics):
    """One tf.function step(images, labels) -> loss that trains `model` and updates `metrics`."""
    if not {"loss", "accuracy"} <= set(metrics):
        raise ValueError(f"metrics needs 'loss' and 'accuracy'; got {sorted(metrics)}")
    tracked = types.SimpleNamespace(**metrics)
    if not optimizer.built:
        optimizer.build(model.trainable_variables)

    @tf.function(input_signature=SIGNATURE)
    def step(images, labels):
        with tf.GradientTape() as tape:
            logits = model(images, training=True)
            loss = loss_fn(labels, logits)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        tracked.loss.update_state(loss, sample_weight=tf.shape(labels)[0])
        tracked.accuracy.update_state(labels, logits)
        return loss

    return step
''',
    "train_solution": r'''
import operator
import types

reset = operator.methodcaller("reset_state")


def train(step, dataset, metrics, *, epochs, logdir):
    """Run `epochs` epochs of `step` over `dataset`; reset, read and log `metrics` per epoch."""
    if epochs < 1:
        raise ValueError(f"epochs must be at least 1; got {epochs}")
    named = types.SimpleNamespace(**metrics)
    history = {name: [] for name in vars(named)}
    writer = tf.summary.create_file_writer(str(logdir))
    with writer.as_default():
        for epoch in range(epochs):
            for metric in vars(named).values():
                reset(metric)
            for images, labels in dataset:
                step(images, labels)
            for name, metric in vars(named).items():
                history[name].append(float(metric.result()))
                tf.summary.scalar(name, history[name][-1], step=epoch)
    writer.close()
    return history
'''})

_add(L10, "generator_apply_kwonly", "a generator of epoch results; Dataset.apply; keyword-only helpers; *args forwarding", {
    "make_dataset_solution": r'''
def to_float(images, labels):
    """uint8 pixels -> float32 in [0, 1]; labels -> int32."""
    return tf.cast(images, tf.float32) / 255.0, tf.cast(labels, tf.int32)


def shuffled_batches(dataset, *, size, batch_size):
    return dataset.shuffle(size, reshuffle_each_iteration=True).batch(batch_size)


def make_dataset(images, labels, batch_size=64):
    """A shuffled, batched, prefetched tf.data pipeline over MNIST arrays."""
    images, labels = np.asarray(images), np.asarray(labels)
    for failed, message in ((len(images) != len(labels), "images and labels differ in length"),
                            (images.shape[1:] != (28, 28), f"images must be [N, 28, 28], not {images.shape}"),
                            (batch_size < 1, f"batch_size must be at least 1, not {batch_size}")):
        if failed:
            raise ValueError(message)
    dataset = tf.data.Dataset.from_tensor_slices((images, labels))
    dataset = dataset.apply(lambda ds: shuffled_batches(ds, size=len(images), batch_size=batch_size))
    return dataset.map(to_float, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
''',
    "make_train_step_solution": r'''
SIGNATURE = (tf.TensorSpec([None, 28, 28], tf.float32), tf.TensorSpec([None], tf.int32))


def apply_step(model, optimizer, loss_fn, metrics, *batch):
    images, labels = batch
    with tf.GradientTape() as tape:
        logits = model(images, training=True)
        loss = loss_fn(labels, logits)
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    metrics["loss"].update_state(loss, sample_weight=tf.shape(labels)[0])
    metrics["accuracy"].update_state(labels, logits)
    return loss


def make_train_step(model, optimizer, loss_fn, metrics):
    """One tf.function step(images, labels) -> loss that trains `model` and updates `metrics`."""
    for key in ("loss", "accuracy"):
        if key not in metrics:
            raise ValueError(f"metrics has no {key!r} metric")
    if not optimizer.built:
        optimizer.build(model.trainable_variables)
    return tf.function(lambda *batch: apply_step(model, optimizer, loss_fn, metrics, *batch), input_signature=SIGNATURE)
''',
    "train_solution": r'''
def epoch_results(step, dataset, metrics, epochs):
    """Yield (epoch, {metric name: value}) after each epoch, the metrics reset before it."""
    for epoch in range(epochs):
        for metric in metrics.values():
            metric.reset_state()
        for images, labels in dataset:
            step(images, labels)
        yield epoch, {name: float(metric.result()) for name, metric in metrics.items()}


def train(step, dataset, metrics, *, epochs, logdir):
    """Run `epochs` epochs of `step` over `dataset`; reset, read and log `metrics` per epoch."""
    if epochs < 1:
        raise ValueError(f"epochs must be at least 1; got {epochs}")
    history = {name: [] for name in metrics}
    writer = tf.summary.create_file_writer(str(logdir))
    with writer.as_default():
        for epoch, values in epoch_results(step, dataset, metrics, epochs):
            for name, value in values.items():
                history[name].append(value)
                tf.summary.scalar(name, value, step=epoch)
    writer.close()
    return history
'''})

_add(L10, "scratch_pickle_inspect", "scratch cells: pickle.dumps of a plain history dict, inspect.signature, sys.version, time.perf_counter", scratch=(r'''
import inspect
import pickle
import sys

print(sys.version.split()[0], "train", inspect.signature(train))
history_bytes = pickle.dumps(try_history)
print(len(history_bytes), "bytes of history; round trip equal:", pickle.loads(history_bytes) == try_history)
''', r'''
clock_start = time.perf_counter()
batches_seen = sum(1 for _ in make_dataset(data.x_train[:2048], data.y_train[:2048], BATCH))
print(f"{batches_seen} batches in {time.perf_counter() - clock_start:.3f} s")
'''))

# ---------------------------------------------------------------------------------------------------------------------
# Graded for real in CI (tfperf-lab grade): every autograded cell gets its points.
GRADED = {
    (L01, "getattr_extend"), (L01, "handle_class"),
    (L02, "dataclass_fields"), (L02, "setattr_loop"),
    (L03, "partial_keyword_only"), (L03, "tf_module"),
    (L04, "reduce_methodcaller"), (L04, "generator_apply"),
    (L05, "confusion_matrix_class"), (L05, "setattr_property_nonlocal"),
    (L06, "forward_over_reverse_property"), (L06, "hasattr_unzip"),
    (L07, "exitstack_closing"), (L07, "generator_ordereddict"),
    (L08, "counter_moments_slices"), (L08, "groupby_depthwise"),
    (L09, "contextmanager_logsumexp"), (L09, "try_except_else_log_softmax"),
    (L10, "reduce_module_closing"), (L10, "frozen_dataclass_global"),
}
