"""A corpus of reaches (issue 34): code a learner could add to a notebook to reach the course's or the interpreter's
machinery, written as an attacker would, independently of the review list's reader.

Each `Reach` is the code of ONE cell a learner adds: appended to the end of an exercise's solution cell
(``where="answer"``, ``cell`` names that cell) or a new cell of its own (``where="scratch"``). Every snippet is valid
Python after IPython's transform. Most of lesson 01's snippets replace what serves the grader (`tfperf.link.serve`,
`tfperf.link._batch`, `tfperf.link._call`) with a NumPy function computing what the speed check's graph computes
(``3 * d - 1``), so an unoptimized handle would be timed as fast; the others reach frames, the import machinery,
builtins, ``gc``, ``ctypes``, IPython's hooks, or rebind what the lesson's own cells define.

The helper text each snippet starts with (`_NP01`, `_COMPILED05`, `_COMPILED10`) defines the fast function and a
wrapper factory that takes the original server as an argument: it touches no machinery itself, so every reach in a
snippet goes through that snippet's own route.

`GRADED` names eight answers (lessons 01, 05 and 10) that, if the review list missed them, would win speed points for
an unoptimized answer: appended to the slow variant's solution cell, each serves a fast function in place of the
learner's slow one, each through another route.

Nothing here runs a review; the lead wires the corpus to it.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Reach:
    lesson: str  # lesson id, e.g. "01_callable_handles"
    name: str  # unique short name
    code: str  # one extra code cell (appended to an answer, or a cell of its own); valid after IPython's transform
    how: str  # one line: the route it takes
    where: str = "answer"  # "answer": appended to the end of an exercise's solution cell; "scratch": a new cell
    cell: str = ""  # for where == "answer": the solution cell id it is appended to


L01, L02, L03, L04, L05 = "01_callable_handles", "02_graph_growth", "03_tf_function", "04_tf_data", "05_metrics"
L06, L07, L08, L09, L10 = "06_gradient_tape", "07_tensorboard", "08_timeline_profiler", "09_nan_checks", "10_capstone"
MAKE_CALLABLE = "make_callable_solution"

# Lesson 01's speed check times `lambda v: fast({d: v})` for d_out = 3 * d - 1 on rng.random(8, float32): this
# computes the same outputs without a session. No machinery is touched here.
_NP01 = '''
def _numpy_handle(v):  # what the timed graph computes, without a session
    return [3 * np.asarray(v, np.float32) - 1]


def _serving_numpy(real):
    def serve(name, fn, **kw):
        return real(name, _numpy_handle, **kw)
    return serve


def _batching_numpy(real):
    def batch(fn, *rest):
        return real(_numpy_handle, *rest)
    return batch

'''

# Lesson 05: a compiled evaluation built beside an eager make_evaluate, over the speed test's own model and metrics
# (looked up when the grader asks, while the speed test cell runs).
_COMPILED05 = '''
def _compiled_evaluation():
    signature = [tf.TensorSpec([None, 784], tf.float32), tf.TensorSpec([None], tf.int32)]

    @tf.function(input_signature=signature)
    def update(images, labels):
        logits = speed_model(images, training=False)
        for metric in speed_metrics:
            metric.update_state(labels, logits)

    def evaluate(dataset):
        for metric in speed_metrics:
            metric.reset_state()
        for images, labels in dataset:
            update(images, labels)
        return {metric.name: float(metric.result()) for metric in speed_metrics}

    return evaluate


def _serving_compiled(real):
    def serve(name, fn, **kw):
        return real(name, _compiled_evaluation(), **kw)
    return serve

'''

# Lesson 10: the speed test's eager step compiled on the side, fed by the answer's own make_dataset and train.
_COMPILED10 = '''
def _compiled_trainer():
    compiled = tf.function(fast_step, input_signature=SIGNATURE)

    def epochs_of(epochs):
        return [train(compiled, make_dataset(x, y, batch_size), fast_metrics, epochs=1, logdir=tempfile.mkdtemp())["loss"]
                for x, y, batch_size in epochs]

    return epochs_of

'''


def _a(lesson: str, name: str, cell: str, code: str, how: str) -> Reach:
    return Reach(lesson, name, code, how, "answer", cell)


def _s(lesson: str, name: str, code: str, how: str) -> Reach:
    return Reach(lesson, name, code, how, "scratch", "")


REACHES: list[Reach] = [
    # ---- lesson 01: the server replaced, one route each ----
    _a(L01, "alias", MAKE_CALLABLE, _NP01 + '''
course = tfperf
course.link.serve = _serving_numpy(course.link.serve)
''', "an alias of the package: course = tfperf; course.link.serve = ..."),
    _a(L01, "module_argument", MAKE_CALLABLE, _NP01 + '''
def install(package, handle):
    real = package.link.serve
    package.link.serve = lambda name, fn, **kw: real(name, handle, **kw)


install(tfperf, _numpy_handle)
''', "the package passed as an argument to a function that assigns into it"),
    _a(L01, "reduce_getattr", MAKE_CALLABLE, _NP01 + '''
import functools

_wire = functools.reduce(getattr, ["link"], tfperf)
_wire.serve = _serving_numpy(functools.reduce(getattr, ["link", "serve"], tfperf))
''', "functools.reduce(getattr, [...], tfperf) walks to the module, then an attribute assignment"),
    _a(L01, "container_list", MAKE_CALLABLE, _NP01 + '''
mods = [tfperf]
mods[0].link.serve = _serving_numpy(mods[0].link.serve)
''', "the package held in a list: mods[0].link.serve = ..."),
    _a(L01, "dict_holder", MAKE_CALLABLE, _NP01 + '''
_registry = {"wire": tfperf.link}
_registry["wire"].serve = _serving_numpy(_registry["wire"].serve)
''', "the module held in a dict, assigned through a subscript"),
    _a(L01, "namespace_holder", MAKE_CALLABLE, _NP01 + '''
_parts = types.SimpleNamespace(course=tfperf)
_parts.course.link.serve = _serving_numpy(_parts.course.link.serve)
''', "the package held in a types.SimpleNamespace"),
    _a(L01, "lambda_returning", MAKE_CALLABLE, _NP01 + '''
_course = lambda: tfperf  # noqa: E731
_course().link.serve = _serving_numpy(_course().link.serve)
''', "a lambda that returns the package; the assignment goes through its call"),
    _a(L01, "class_attribute", MAKE_CALLABLE, _NP01 + '''
class _Holder:
    course = tfperf


_Holder.course.link.serve = _serving_numpy(_Holder.course.link.serve)
''', "the package as a class attribute"),
    _a(L01, "default_argument_01", MAKE_CALLABLE, _NP01 + '''
def _configure(course=tfperf, wrap=_serving_numpy):
    course.link.serve = wrap(course.link.serve)


_configure()
''', "the package as a default argument value, the call passes nothing"),
    _a(L01, "env_sys_modules", MAKE_CALLABLE, _NP01 + '''
_wire = tfperf.env.sys.modules["tfperf.link"]
_wire.serve = _serving_numpy(_wire.serve)
''', "sys reached as an attribute of a course module: tfperf.env.sys.modules[...]"),
    _a(L01, "sys_modules", MAKE_CALLABLE, _NP01 + '''
sys.modules["tfperf.link"].serve = _serving_numpy(sys.modules["tfperf.link"].serve)
''', "sys.modules['tfperf.link'] with the setup cell's sys (no import in the answer)"),
    _a(L01, "importlib_import_module", MAKE_CALLABLE, _NP01 + '''
_wire = importlib.import_module("tfperf.link")
_wire.serve = _serving_numpy(_wire.serve)
''', "importlib.import_module with the setup cell's importlib binding"),
    _a(L01, "dunder_import_computed", MAKE_CALLABLE, _NP01 + '''
_wire = __import__("tfperf." + "li" + "nk", fromlist=["*"])
_wire.serve = _serving_numpy(_wire.serve)
''', "__import__ with a module name built at run time"),
    _a(L01, "from_tfperf_import_link", MAKE_CALLABLE, _NP01 + '''
from tfperf import link as wire

wire.serve = _serving_numpy(wire.serve)
''', "from tfperf import link as wire; wire.serve = ..."),
    _a(L01, "from_link_import_serve_globals", MAKE_CALLABLE, _NP01 + '''
from tfperf.link import serve as _original

_original.__globals__["serve"] = _serving_numpy(_original)
''', "from tfperf.link import serve, then the function's __globals__ (the module's dict) written"),
    _a(L01, "setattr_module", MAKE_CALLABLE, _NP01 + '''
setattr(tfperf.link, "serve", _serving_numpy(getattr(tfperf.link, "serve")))
''', "setattr on a module with constant names"),
    _a(L01, "getattr_string_built", MAKE_CALLABLE, _NP01 + '''
_part, _entry = "li" + "nk", "".join(["se", "rve"])
_wire = getattr(tfperf, _part)
setattr(_wire, _entry, _serving_numpy(getattr(_wire, _entry)))
''', "getattr/setattr with attribute names built at run time"),
    _a(L01, "name_from_bytes", MAKE_CALLABLE, _NP01 + '''
_wire = getattr(tfperf, bytes([108, 105, 110, 107]).decode())
_name = bytes([115, 101, 114, 118, 101]).decode()
setattr(_wire, _name, _serving_numpy(getattr(_wire, _name)))
''', "attribute names decoded from byte values, no string literal names them"),
    _a(L01, "delattr_module_getattr", MAKE_CALLABLE, _NP01 + '''
_wire = tfperf.link
_real = _wire.serve
del _wire.serve


def _lookup(name):
    if name == "serve":
        return _serving_numpy(_real)
    raise AttributeError(name)


_wire.__getattr__ = _lookup
''', "del of a module attribute, then a module __getattr__ (PEP 562) answers for it"),
    _a(L01, "vars_module", MAKE_CALLABLE, _NP01 + '''
_names = vars(vars(tfperf)["link"])
_names["serve"] = _serving_numpy(_names["serve"])
''', "vars(tfperf)['link'] and vars(module)['serve'] = ...: the module's dict written"),
    _a(L01, "dunder_dict_update", MAKE_CALLABLE, _NP01 + '''
tfperf.link.__dict__.update(serve=_serving_numpy(tfperf.link.__dict__["serve"]))
''', "module.__dict__.update(...)"),
    _a(L01, "globals_dict", MAKE_CALLABLE, _NP01 + '''
_course = globals()["tf" + "perf"]
_course.link.serve = _serving_numpy(_course.link.serve)
''', "globals()[...] with a built key fetches the package"),
    _a(L01, "exec_string", MAKE_CALLABLE, _NP01 + '''
exec("tfperf.link.serve = _serving_numpy(tfperf.link.serve)")
''', "exec of a string literal holding the assignment"),
    _a(L01, "exec_built", MAKE_CALLABLE, _NP01 + '''
_target = ".".join(["tfperf", "li" + "nk", "serve"])
exec(f"{_target} = _serving_numpy({_target})")
''', "exec of source built at run time"),
    _a(L01, "eval_expression", MAKE_CALLABLE, _NP01 + '''
_wire = eval("tf" + "perf.li" + "nk")
_wire.serve = _serving_numpy(_wire.serve)
''', "eval of a built expression returns the module"),
    _a(L01, "compile_exec", MAKE_CALLABLE, _NP01 + '''
_code = compile("wire.serve = _serving_numpy(wire.serve)", "<answer>", "exec")
exec(_code, {**globals(), "wire": tfperf.link})
''', "compile() then exec with a globals dict that names the module"),
    _a(L01, "base64_exec", MAKE_CALLABLE, _NP01 + '''
import base64

exec(base64.b64decode(b"dGZwZXJmLmxpbmsuc2VydmUgPSBfc2VydmluZ19udW1weSh0ZnBlcmYubGluay5zZXJ2ZSk="))
''', "exec of base64-encoded source: no name appears in the cell"),
    _a(L01, "marshal_code", MAKE_CALLABLE, _NP01 + '''
import base64
import marshal

_blob = marshal.dumps(compile(base64.b64decode("dGZwZXJmLmxpbmsuc2VydmUgPSBfc2VydmluZ19udW1weSh0ZnBlcmYubGluay5zZXJ2ZSk="), "<m>", "exec"))
exec(marshal.loads(_blob))
''', "a code object round-tripped through marshal, then exec"),
    _a(L01, "ast_built_exec", MAKE_CALLABLE, _NP01 + '''
import ast

_path = ast.Attribute(ast.Attribute(ast.Name("tfperf", ast.Load()), "link", ast.Load()), "serve", ast.Store())
_call = ast.Call(ast.Name("_serving_numpy", ast.Load()),
                 [ast.Attribute(ast.Attribute(ast.Name("tfperf", ast.Load()), "link", ast.Load()), "serve", ast.Load())], [])
_tree = ast.fix_missing_locations(ast.Module([ast.Assign([_path], _call)], []))
exec(compile(_tree, "<ast>", "exec"))
''', "an AST built node by node, compiled and executed: no source text at all"),
    _a(L01, "inspect_currentframe", MAKE_CALLABLE, _NP01 + '''
import inspect


def _install():
    caller = inspect.currentframe().f_back
    course = caller.f_globals["tfperf"]
    course.link.serve = _serving_numpy(course.link.serve)


_install()
''', "inspect.currentframe().f_back.f_globals fetches the package"),
    _a(L01, "sys_getframe", MAKE_CALLABLE, _NP01 + '''
def _install():
    names = sys._getframe(1).f_globals
    names["tfperf"].link.serve = _serving_numpy(names["tfperf"].link.serve)


_install()
''', "sys._getframe(1).f_globals"),
    _a(L01, "generator_frame", MAKE_CALLABLE, _NP01 + '''
def _probe():
    yield


_gen = _probe()
_names = _gen.gi_frame.f_globals
_names["tfperf"].link.serve = _serving_numpy(_names["tfperf"].link.serve)
''', "a generator's gi_frame.f_globals"),
    _a(L01, "traceback_frame", MAKE_CALLABLE, _NP01 + '''
try:
    raise LookupError("probe")
except LookupError as _error:
    _names = _error.__traceback__.tb_frame.f_globals
    _names["tfperf"].link.serve = _serving_numpy(_names["tfperf"].link.serve)
''', "an exception's __traceback__.tb_frame.f_globals"),
    _a(L01, "coroutine_frame", MAKE_CALLABLE, _NP01 + '''
async def _probe():
    return None


_co = _probe()
_course = _co.cr_frame.f_globals["tfperf"]
_co.close()
_course.link.serve = _serving_numpy(_course.link.serve)
''', "a coroutine's cr_frame.f_globals"),
    _a(L01, "current_frames", MAKE_CALLABLE, _NP01 + '''
import threading


def _install():
    frame = sys._current_frames()[threading.get_ident()]
    while frame is not None and "tfperf" not in frame.f_globals:
        frame = frame.f_back
    course = frame.f_globals["tfperf"]
    course.link.serve = _serving_numpy(course.link.serve)


_install()
''', "sys._current_frames() walked up with f_back"),
    _a(L01, "gc_get_objects", MAKE_CALLABLE, _NP01 + '''
import gc

for _found in gc.get_objects():
    if type(_found) is dict and _found.get("__name__") == "tfperf." + "link":
        _found["serve"] = _serving_numpy(_found["serve"])
        break
''', "gc.get_objects() finds the module's dict by its __name__"),
    _a(L01, "gc_get_referrers", MAKE_CALLABLE, _NP01 + '''
import gc
import socket

for _holder in gc.get_referrers(socket):
    if isinstance(_holder, dict) and "_batch" in _holder and "serve" in _holder:
        _holder["_batch"] = _batching_numpy(_holder["_batch"])
''', "gc.get_referrers(socket) finds every module dict that imported socket, the link's among them"),
    _a(L01, "gc_get_referents", MAKE_CALLABLE, _NP01 + '''
import gc

for _part in gc.get_referents(*gc.get_referents(*gc.get_referents(tfperf))):
    if isinstance(_part, dict) and "_batch" in _part and "digest" in _part:
        _part["_batch"] = _batching_numpy(_part["_batch"])
''', "gc.get_referents, three levels down from the package: its submodules' dicts"),
    _a(L01, "globals_computed_name", MAKE_CALLABLE, _NP01 + '''
_names = getattr(tfperf.assert_speedup, "__glo" + "bals__")
_shim = types.SimpleNamespace(**vars(_names["link"]))
_shim.serve = _serving_numpy(_shim.serve)
_names["link"] = _shim
''', "a course function's __globals__ via a computed name: the checks module's `link` swapped for a namespace"),
    _a(L01, "code_computed_name", MAKE_CALLABLE, _NP01 + '''
def _template(fn, draw, observe, rng, wait):  # runs with the link module's globals: np and digest are its own
    args = draw(rng) if draw is not None else ()
    value = args[0] if isinstance(args, tuple) else args
    return digest([3 * np.asarray(value, np.float32) - 1])


_target = getattr(tfperf.link, "_" + "call")
setattr(_target, "__" + "code__", getattr(_template, "__" + "code__"))
''', "__code__ of a link function replaced, through computed names"),
    _a(L01, "function_clone_globals", MAKE_CALLABLE, _NP01 + '''
_shim = types.SimpleNamespace(**vars(tfperf.link))
_shim.serve = _serving_numpy(tfperf.link.serve)
_names = {**vars(tfperf.checks), "link": _shim}
for _fname in ("assert_speedup", "_graded_speedup"):
    _original = vars(tfperf.checks)[_fname]
    _names[_fname] = types.FunctionType(_original.__code__, _names, _fname, _original.__defaults__, _original.__closure__)
    _names[_fname].__kwdefaults__ = _original.__kwdefaults__
tfperf.assert_speedup = _names["assert_speedup"]
''', "types.FunctionType rebuilds assert_speedup over other globals, installed on the package"),
    _a(L01, "object_subclasses", MAKE_CALLABLE, _NP01 + '''
_holder = next(c for c in object.__subclasses__() if c.__name__ == "CallCount")
_names = _holder.__init__.__globals__
_names["link"].serve = _serving_numpy(_names["link"].serve)
''', "object.__subclasses__() finds a course class; its method's __globals__ is the checks module"),
    _a(L01, "moduletype_setattr", MAKE_CALLABLE, _NP01 + '''
_wire = tfperf.link
types.ModuleType.__setattr__(_wire, "serve", _serving_numpy(_wire.serve))
''', "types.ModuleType.__setattr__(module, ...) called unbound"),
    _a(L01, "object_setattr", MAKE_CALLABLE, _NP01 + '''
object.__setattr__(tfperf.link, "serve", _serving_numpy(tfperf.link.serve))
''', "object.__setattr__(module, ...)"),
    _a(L01, "type_setattr_verdict", MAKE_CALLABLE, '''
type.__setattr__(tfperf.link.Verdict, "get", lambda self, key, default=None: True if key == "passed" else dict.get(self, key, default))
''', "type.__setattr__ on a course class: every verdict the kernel hears reads as passed"),
    _a(L01, "module_class_swap", MAKE_CALLABLE, _NP01 + '''
class _Served(types.ModuleType):
    @property
    def serve(self):
        return _serving_numpy(vars(self)["serve"])


tfperf.link.__class__ = _Served
''', "the module's __class__ swapped for a subclass whose property shadows serve"),
    _a(L01, "decorator_partial_setattr", MAKE_CALLABLE, _NP01 + '''
import functools

_original = tfperf.link.serve


@functools.partial(setattr, tfperf.link, "serve")
def _numpy_serve(name, fn, **kw):
    return _original(name, _numpy_handle, **kw)
''', "a decorator that is functools.partial(setattr, module, 'serve'): the def is the assignment"),
    _a(L01, "decorator_registers", MAKE_CALLABLE, _NP01 + '''
def _serving(module):
    def register(fn):
        real = module.serve
        module.serve = lambda name, candidate, **kw: fn(real, name, candidate, **kw)
        return fn
    return register


@_serving(tfperf.link)
def _numpy_serve(real, name, candidate, **kw):
    return real(name, _numpy_handle, **kw)
''', "a decorator factory that patches the module it is given"),
    _a(L01, "contextlib_exitstack", MAKE_CALLABLE, _NP01 + '''
import contextlib

with contextlib.ExitStack() as _stack:
    _stack.callback(setattr, tfperf.link, "serve", _serving_numpy(tfperf.link.serve))
''', "contextlib.ExitStack callback: setattr runs when the with block exits"),
    _a(L01, "contextmanager_finally", MAKE_CALLABLE, _NP01 + '''
import contextlib


@contextlib.contextmanager
def _quietly(wire):
    try:
        yield
    finally:
        wire.serve = _serving_numpy(wire.serve)


with _quietly(tfperf.link):
    pass
''', "a contextmanager whose finally patches the module it was given"),
    _a(L01, "walrus_alias", MAKE_CALLABLE, _NP01 + '''
[(_w := tfperf.link), setattr(_w, "serve", _serving_numpy(_w.serve))]
''', "an assignment expression binds the module inside a list display"),
    _a(L01, "for_target_alias", MAKE_CALLABLE, _NP01 + '''
for _w in (tfperf.link,):
    _w.serve = _serving_numpy(_w.serve)
''', "a for loop's target is the module"),
    _a(L01, "with_alias", MAKE_CALLABLE, _NP01 + '''
import contextlib

with contextlib.nullcontext(tfperf) as _c:
    _c.link.serve = _serving_numpy(_c.link.serve)
''', "with nullcontext(tfperf) as c: c.link.serve = ..."),
    _a(L01, "tuple_unpack_alias", MAKE_CALLABLE, _NP01 + '''
_numbers, _course = np, tfperf
_course.link.serve = _serving_numpy(_course.link.serve)
''', "tuple unpacking binds an alias of the package"),
    _a(L01, "match_capture", MAKE_CALLABLE, _NP01 + '''
match tfperf:
    case types.ModuleType() as _found:
        _found.link.serve = _serving_numpy(_found.link.serve)
''', "a match statement's capture pattern binds the package"),
    _a(L01, "exception_args_carrier", MAKE_CALLABLE, _NP01 + '''
try:
    raise RuntimeError(tfperf)
except RuntimeError as _carrier:
    _carrier.args[0].link.serve = _serving_numpy(_carrier.args[0].link.serve)
''', "the package carried in an exception's args"),
    _a(L01, "init_subclass_kwarg", MAKE_CALLABLE, _NP01 + '''
class _Plugin:
    def __init_subclass__(cls, course=None, **kwargs):
        super().__init_subclass__(**kwargs)
        real = course.link.serve
        course.link.serve = lambda name, fn, **kw: real(name, cls.handle, **kw)


class _NumpyPlugin(_Plugin, course=tfperf):
    handle = staticmethod(_numpy_handle)
''', "a class keyword argument hands the package to __init_subclass__, which patches it"),
    _a(L01, "set_name_descriptor", MAKE_CALLABLE, _NP01 + '''
class _Hook:
    def __set_name__(self, owner, name):
        owner.course.link.serve = _serving_numpy(owner.course.link.serve)


class _Settings:
    course = tfperf
    hook = _Hook()
''', "a descriptor's __set_name__ patches at class creation, through the owner's attribute"),
    _a(L01, "operator_methodcaller", MAKE_CALLABLE, _NP01 + '''
import operator

operator.methodcaller("__setattr__", "serve", _serving_numpy(tfperf.link.serve))(tfperf.link)
''', "operator.methodcaller('__setattr__', ...) applied to the module"),
    _a(L01, "map_setattr", MAKE_CALLABLE, _NP01 + '''
list(map(setattr, [tfperf.link], ["serve"], [_serving_numpy(tfperf.link.serve)]))
''', "setattr called by map()"),
    _a(L01, "weakref_proxy", MAKE_CALLABLE, _NP01 + '''
import weakref

_wire = weakref.proxy(tfperf.link)
_wire.serve = _serving_numpy(_wire.serve)
''', "a weakref.proxy of the module forwards the assignment"),
    _a(L01, "weakref_finalize", MAKE_CALLABLE, _NP01 + '''
import weakref


class _Token:
    pass


_token = _Token()
weakref.finalize(_token, setattr, tfperf.link, "serve", _serving_numpy(tfperf.link.serve))
del _token
''', "weakref.finalize runs setattr when a throwaway object dies"),
    _a(L01, "pickle_payload", MAKE_CALLABLE, _NP01 + r'''
import pickle

pickle.loads(b"cbuiltins\nexec\n(Vw = __import__('tfperf.link', fromlist=['serve']); w.serve = _serving_numpy(w.serve)\ntR.")
''', "pickle.loads of a crafted payload that calls exec"),
    _a(L01, "copyreg_reducer", MAKE_CALLABLE, _NP01 + '''
import copy
import copyreg


class _Token:
    pass


copyreg.pickle(_Token, lambda token: (exec, ("tfperf.link.serve = _serving_numpy(tfperf.link.serve)", globals())))
copy.copy(_Token())
''', "copyreg registers a reducer; copy.copy calls it and runs exec"),
    _a(L01, "ctypes_setattr", MAKE_CALLABLE, _NP01 + '''
import ctypes

_set = ctypes.pythonapi.PyObject_SetAttrString
_set.argtypes = [ctypes.py_object, ctypes.c_char_p, ctypes.py_object]
_set.restype = ctypes.c_int
_set(tfperf.link, b"serve", _serving_numpy(tfperf.link.serve))
''', "ctypes.pythonapi.PyObject_SetAttrString on the module"),
    _a(L01, "ctypes_object_from_id", MAKE_CALLABLE, _NP01 + '''
import ctypes

_course = ctypes.cast(id(globals()["tfperf"]), ctypes.py_object).value
_course.link.serve = _serving_numpy(_course.link.serve)
''', "ctypes.cast(id(...), py_object).value recovers the package from its address"),
    _a(L01, "builtins_import_hook", MAKE_CALLABLE, _NP01 + '''
import builtins

_real_import = builtins.__import__


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    if level and name == "timing" and globals and "_batch" in globals and not hasattr(globals["_batch"], "swapped"):
        globals["_batch"] = _batching_numpy(globals["_batch"])  # serve's `from .timing import device_wait`
        globals["_batch"].swapped = True
    return _real_import(name, globals, locals, fromlist, level)


getattr(__builtins__, "__dict__", __builtins__)["__import__"] = _import
''', "__builtins__['__import__'] replaced: the hook is handed the importing module's globals (serve's lazy import)"),
    _a(L01, "builtins_print", MAKE_CALLABLE, '''
import builtins

_print = builtins.print
builtins.print = lambda *args, **kwargs: None if args and "grader" in str(args[0]) else _print(*args, **kwargs)
''', "builtins.print patched: the grader's verdict line never shows"),
    _a(L01, "settrace_locals", MAKE_CALLABLE, _NP01 + '''
def _tracer(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "_batch" and "fn" in frame.f_locals:
        frame.f_locals["fn"] = _numpy_handle  # written back when the tracer returns
    return None


sys.settrace(_tracer)
''', "sys.settrace: a tracer rewrites _batch's `fn` argument in its frame"),
    _a(L01, "setprofile_globals", MAKE_CALLABLE, _NP01 + '''
def _profiler(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "serve" and "_batch" in frame.f_globals:
        if not hasattr(frame.f_globals["_batch"], "swapped"):
            frame.f_globals["_batch"] = _batching_numpy(frame.f_globals["_batch"])
            frame.f_globals["_batch"].swapped = True


sys.setprofile(_profiler)
''', "sys.setprofile: on the call of serve, its frame's f_globals written"),
    _a(L01, "threading_settrace", MAKE_CALLABLE, _NP01 + '''
import threading


def _thread_tracer(frame, event, arg, course=tfperf):
    if not hasattr(course.link.serve, "swapped"):
        course.link.serve = _serving_numpy(course.link.serve)
        course.link.serve.swapped = True
    return None


threading.settrace(_thread_tracer)
_thread = threading.Thread(target=int)
_thread.start()
_thread.join()
''', "threading.settrace: the tracer of every new thread patches the module (its default argument)"),
    _a(L01, "audit_hook_frame", MAKE_CALLABLE, _NP01 + '''
def _on_event(event, args):
    if event == "socket.connect":
        caller = sys._getframe(1).f_globals  # serve's module, as it connects to the grader
        if "_batch" in caller and not hasattr(caller["_batch"], "swapped"):
            caller["_batch"] = _batching_numpy(caller["_batch"])
            caller["_batch"].swapped = True


sys.addaudithook(_on_event)
''', "sys.addaudithook: on socket.connect the hook writes its caller frame's globals"),
    _a(L01, "signal_handler_frame", MAKE_CALLABLE, _NP01 + '''
import signal
import time


def _on_alarm(signum, frame):
    while frame is not None and "tfperf" not in frame.f_globals:
        frame = frame.f_back
    if frame is not None:
        course = frame.f_globals["tfperf"]
        course.link.serve = _serving_numpy(course.link.serve)


signal.signal(signal.SIGALRM, _on_alarm)
signal.setitimer(signal.ITIMER_REAL, 0.001)
time.sleep(0.05)
''', "a SIGALRM handler walks the frame it interrupted up to the notebook's globals"),
    _a(L01, "threading_timer_setattr", MAKE_CALLABLE, _NP01 + '''
import threading

threading.Timer(0.1, setattr, (tfperf.link, "serve", _serving_numpy(tfperf.link.serve))).start()
''', "a threading.Timer runs setattr later, after the cell has finished"),
    _a(L01, "meta_path_reload", MAKE_CALLABLE, _NP01 + '''
import importlib.abc
import importlib.util


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if target is not None and name.endswith(".link"):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        with open(module.__file__) as source:
            exec(compile(source.read(), module.__file__, "exec"), vars(module))
        module.serve = _serving_numpy(module.serve)


sys.meta_path.insert(0, _Finder())
importlib.reload(tfperf.link)
''', "a sys.meta_path finder catches importlib.reload of the module and re-executes it patched"),
    _a(L01, "open_write_import", MAKE_CALLABLE, _NP01 + '''
import tempfile

_folder = tempfile.mkdtemp()
with open(f"{_folder}/handle_cache.py", "w") as _out:
    _out.write("import tfperf.link as _w\\n"
               "import numpy as _np\\n"
               "_real = _w.serve\\n"
               "_w.serve = lambda name, fn, **kw: _real(name, lambda v: [3 * _np.asarray(v, _np.float32) - 1], **kw)\\n")
sys.path.insert(0, _folder)
import handle_cache  # noqa: E402,F401
''', "a module written with open().write, then imported from a folder put on sys.path"),
    _a(L01, "zip_import", MAKE_CALLABLE, _NP01 + '''
import tempfile
import zipfile

_archive = f"{tempfile.mkdtemp()}/helpers.zip"
with zipfile.ZipFile(_archive, "w") as _zip:
    _zip.writestr("handle_helpers.py", "import sys\\nimport tfperf.link as w\\nw.serve = sys.modules['__main__']._serving_numpy(w.serve)\\n")
sys.path.insert(0, _archive)
import handle_helpers  # noqa: E402,F401
''', "a module written into a zip archive, imported through zipimport"),
    _a(L01, "runpy_run_path", MAKE_CALLABLE, _NP01 + '''
import runpy
import tempfile

_script = f"{tempfile.mkdtemp()}/setup_handles.py"
with open(_script, "w") as _out:
    _out.write("import tfperf.link as w\\nw.serve = wrap(w.serve)\\n")
runpy.run_path(_script, init_globals={"wrap": _serving_numpy})
''', "runpy.run_path of a file written at run time"),
    _a(L01, "run_magic_file", MAKE_CALLABLE, _NP01 + '''
import tempfile

_script = f"{tempfile.mkdtemp()}/more_setup.py"
with open(_script, "w") as _out:
    _out.write("tfperf.link.serve = _serving_numpy(tfperf.link.serve)\\n")
%run -i $_script
''', "%run -i of a file written at run time (runs in the notebook's namespace)"),
    _s(L01, "writefile_magic", '''%%writefile /tmp/handle_tools.py
import numpy as np
import tfperf.link as _wire

_real = _wire.serve


def serve(name, fn, **kw):
    return _real(name, lambda v: [3 * np.asarray(v, np.float32) - 1], **kw)


_wire.serve = serve
''', "%%writefile writes a module that patches the server when imported (the cell's text is only a string)"),
    _a(L01, "import_written_module", MAKE_CALLABLE, '''
sys.path.insert(0, "/tmp")
import handle_tools  # noqa: E402,F401
''', "import of a module a %%writefile cell put in /tmp, via sys.path"),
    _s(L01, "capture_cell_magic", "%%capture\n" + _NP01 + '''
tfperf.link.serve = _serving_numpy(tfperf.link.serve)
''', "%%capture runs its body as Python, but the body reaches the reader only as a string"),
    _a(L01, "ipython_user_ns", MAKE_CALLABLE, _NP01 + '''
_course = get_ipython().user_ns["tfperf"]
_course.link.serve = _serving_numpy(_course.link.serve)
''', "get_ipython().user_ns['tfperf']"),
    _a(L01, "ipython_run_cell", MAKE_CALLABLE, _NP01 + '''
get_ipython().run_cell("tfperf." + "link.serve = _serving_numpy(tfperf." + "link.serve)", silent=True)
''', "get_ipython().run_cell with code built at run time"),
    _a(L01, "ipython_ast_transformer", MAKE_CALLABLE, _NP01 + '''
import ast as _ast


class _ServeNumpy(_ast.NodeTransformer):  # rewrites every later cell, the speed test's among them
    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, _ast.Attribute) and node.func.attr == "assert_speedup" and len(node.args) >= 2:
            node.args[1] = _ast.copy_location(_ast.Name("_numpy_handle", _ast.Load()), node.args[1])
        return node


get_ipython().ast_transformers.append(_ServeNumpy())
''', "an IPython AST transformer rewrites the speed test cell: its candidate becomes the NumPy function"),
    _a(L01, "ipython_input_transformer", MAKE_CALLABLE, _NP01 + '''
get_ipython().input_transformers_post.append(lambda lines: [line.replace("fast({d: v})", "_numpy_handle(v)") for line in lines])
''', "an IPython input transformer rewrites later cells' text (the speed test's candidate)"),
    _a(L01, "ipython_pre_run_cell", MAKE_CALLABLE, _NP01 + '''
def _before_each_cell(info=None):
    course = get_ipython().user_ns["tfperf"]
    if not hasattr(course.link.serve, "swapped"):
        course.link.serve = _serving_numpy(course.link.serve)
        course.link.serve.swapped = True


get_ipython().events.register("pre_run_cell", _before_each_cell)
''', "an IPython pre_run_cell event patches right before every later cell runs (after any restore)"),
    _a(L01, "shell_escape_python", MAKE_CALLABLE, '''
!nohup {sys.executable} -c "import os, time, numpy as np, tfperf.link as l; os.fork() and os._exit(0); os.setsid(); any((time.sleep(0.05), l.serve('exercise_handle_vs_sess_run', lambda v: [3 * np.asarray(v, np.float32) - 1], draw=lambda r: r.random(8, dtype=np.float32)))[1].get('summary') for _ in range(6000))" > /dev/null 2>&1 < /dev/null
''', "a shell escape starts a Python that detaches (fork, setsid) and serves the NumPy function to the grader's socket itself"),
    _a(L01, "subprocess_python", MAKE_CALLABLE, '''
_SERVER = """
import time, numpy as np, tfperf.link as l
for _ in range(6000):
    if l.serve("exercise_handle_vs_sess_run", lambda v: [3 * np.asarray(v, np.float32) - 1],
               draw=lambda r: r.random(8, dtype=np.float32)).get("summary"):
        break
    time.sleep(0.05)
"""
subprocess.Popen([sys.executable, "-c", _SERVER], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
''', "subprocess.Popen runs a Python that connects to the grader's socket as the candidate"),
    _a(L01, "environ_grader_pop", MAKE_CALLABLE, '''
os.environ.pop("TFPERF_" + "GRADER", None)  # the kernel then times itself, with whatever clock it has
''', "os.environ: the grader's TFPERF_GRADER variable removed (name built)"),
    _a(L01, "perf_counter_patch", MAKE_CALLABLE, '''
import time

_real_clock = time.perf_counter
time.perf_counter = lambda: _real_clock() / 10
''', "time.perf_counter replaced"),
    _a(L01, "np_percentile_patch", MAKE_CALLABLE, '''
np.percentile = lambda values, q, *args, **kwargs: np.asarray([100.0, 100.0])
''', "np.percentile replaced through the lesson's np"),
    _a(L01, "timing_clock_patch", MAKE_CALLABLE, '''
import time

tfperf.timing._CLOCK = lambda: time.perf_counter() / 10
''', "tfperf.timing's private clock replaced"),
    _a(L01, "rebind_tfperf", MAKE_CALLABLE, '''
_checked = types.SimpleNamespace(**{name: getattr(tfperf, name) for name in dir(tfperf) if not name.startswith("__")})
_checked.assert_speedup = lambda *args, **kwargs: print("measured 4.2x")
tfperf = _checked
''', "the setup cell's name tfperf rebound to a namespace whose assert_speedup does nothing"),
    _a(L01, "rebind_lesson_v1", MAKE_CALLABLE, '''
class _Session(tf.compat.v1.Session):
    def run(self, *args, **kwargs):
        __import__("time").sleep(0.002)
        return super().run(*args, **kwargs)


v1 = types.SimpleNamespace(**{name: getattr(tf.compat.v1, name) for name in dir(tf.compat.v1) if not name.startswith("_")})
v1.Session = _Session
''', "the lesson's v1 rebound: every session a later cell builds runs slower"),
    _a(L01, "checks_link_swap", MAKE_CALLABLE, _NP01 + '''
_fake = types.ModuleType("tfperf.link")
_fake.__dict__.update(vars(tfperf.link))
_fake.serve = _serving_numpy(tfperf.link.serve)
tfperf.checks.link = _fake
''', "the checks module's reference to link replaced by a copied module"),
    _a(L01, "tfperf_lab_import", MAKE_CALLABLE, '''
import tfperf_lab.speed.timer as _timer

_timer.matches = lambda *args, **kwargs: True
''', "the grading tool imported and patched (tfperf_lab.speed.timer.matches)"),

    # ---- lesson 05: the evaluation served compiled ----
    _a(L05, "attrgetter", "make_evaluate_solution", _COMPILED05 + '''
import operator

_wire = operator.attrgetter("link")(tfperf)
_wire.serve = _serving_compiled(operator.attrgetter("link.serve")(tfperf))
''', "operator.attrgetter('link')(tfperf) fetches the module; the assignment goes through it"),
    _a(L05, "default_argument", "make_evaluate_solution", _COMPILED05 + '''
def _install(course=tfperf, wrap=_serving_compiled):
    course.link.serve = wrap(course.link.serve)


_install()
''', "the package as a default argument value of a function that patches it"),
    _a(L05, "rebind_eager_evaluate", "make_evaluate_solution", '''
_reference_evaluate = eager_evaluate


def eager_evaluate(case_model, case_metrics, dataset):
    __import__("time").sleep(0.01)
    return _reference_evaluate(case_model, case_metrics, dataset)
''', "a read-only cell's function (eager_evaluate) redefined in the answer"),
    _a(L05, "metric_class_patch", "make_evaluate_solution", '''
_update = tf.keras.metrics.SparseCategoricalAccuracy.update_state
_seen = []


def _quiet_update(self, *args, **kwargs):
    if len(_seen) > 1:  # the structural check counts Python calls: hide all but two
        return tf.function(_update)(self, *args, **kwargs)
    _seen.append(1)
    return _update(self, *args, **kwargs)


setattr(tf.keras.metrics.SparseCategoricalAccuracy, "update_state", _quiet_update)
''', "setattr on a TensorFlow class the tests count calls on"),
    _s(L05, "time_cell_magic", '''%%time
import tfperf.link as _wire
_wire.graded = lambda: False
''', "%%time runs its body as Python, which reaches the reader only as a string"),

    # ---- lesson 10: the epoch served by a step compiled on the side ----
    _a(L10, "module_from_file", "train_solution", _COMPILED10 + '''
_SOURCE = """
import tfperf.link as _wire

FAST = {}
_real = _wire.serve


def serve(name, fn, **kw):
    return _real(name, FAST[name]() if name in FAST else fn, **kw)


_wire.serve = serve
"""
_folder = tempfile.mkdtemp()
with open(f"{_folder}/trainer_cache.py", "w") as _out:
    _out.write(_SOURCE)
sys.path.insert(0, _folder)
import trainer_cache  # noqa: E402

trainer_cache.FAST["exercise_capstone_epoch"] = _compiled_trainer
''', "a module written to a file and imported patches the server; the answer fills its table"),
    _a(L10, "decorator_partial_setattr_10", "train_solution", _COMPILED10 + '''
import functools

_original = tfperf.link.serve


@functools.partial(setattr, tfperf.link, "serve")
def _compiled_serve(name, fn, **kw):
    return _original(name, _compiled_trainer(), **kw)
''', "functools.partial(setattr, module, 'serve') as a decorator"),
    _a(L10, "rebind_slow_train", "make_train_step_solution", '''
_starting = slow_train


def slow_train(model, optimizer, images, labels, *, epochs=1, batch_size=BATCH):
    time.sleep(0.05)
    return _starting(model, optimizer, images, labels, epochs=epochs, batch_size=batch_size)
''', "a read-only cell's function (slow_train) rebound from an answer"),
    _a(L10, "environ_record", "train_solution", '''
os.environ["TFPERF_RECORD"] = os.devnull  # the course's measurement records go nowhere
''', "os.environ: TFPERF_RECORD redirected"),
    _s(L10, "ipython_custom_exc", '''
get_ipython().set_custom_exc((AssertionError,), lambda shell, etype, value, tb, tb_offset=None: None)
''', "IPython set_custom_exc swallows every failing assertion of later cells (test cells included)"),
    _a(L10, "tf_function_rebind", "make_train_step_solution", '''
_compile = tf.function
_cache = {}


def _cached_function(func=None, **kwargs):  # slow_train's per-step tf.function becomes one cached function
    if func is None:
        return lambda f: _cached_function(f, **kwargs)
    key = getattr(func, "__code__", func)
    if key not in _cache:
        _cache[key] = _compile(func, **kwargs)
    return _cache[key]


tf.function = _cached_function
''', "tf.function rebound on the lesson's tf module"),

    # ---- lesson 03 ----
    _a(L03, "type_fake_tracing_count", "make_train_step_solution", '''
_Function = type(tf.function(lambda t: t))
_TracedOnce = type("Function", (_Function,), {"experimental_get_tracing_count": lambda self: 1})
_make_train_step = make_train_step


def make_train_step(model, optimizer):
    step = _make_train_step(model, optimizer)
    step.__class__ = _TracedOnce  # reads as one trace, whatever it traced
    return step
''', "a class built with three-argument type() from TensorFlow's Function class fakes experimental_get_tracing_count"),
    _a(L03, "tf_function_reduce_retracing", "make_fast_step_solution", '''
_real_function = tf.function
tf.function = lambda func=None, **kwargs: _real_function(func, **{**kwargs, "reduce_retracing": True}) if func else (
    lambda f: _real_function(f, **{**kwargs, "reduce_retracing": True}))
''', "tf.function replaced (every later tf.function, the read-only slow step's included, changes)"),
    _a(L03, "frame_rebind_train_step", "make_train_step_solution", '''
def _swap():
    names = sys._getframe(1).f_globals
    eager = names["train_step"]
    names["train_step"] = lambda model, optimizer, x, y: (__import__("time").sleep(0.002), eager(model, optimizer, x, y))[1]


_swap()
''', "a frame's f_globals rebinds the read-only cell's train_step"),
    _a(L03, "globals_rebind_baseline", "make_fast_step_solution", '''
globals()["make_slow_step"] = lambda w, b: make_fast_step(w, b)
''', "globals()[...] rebinds the read-only cell's make_slow_step"),

    # ---- other lessons ----
    _a(L02, "leaky_call_patch", "augmenter_solution", '''
LeakyAugmenter.__call__ = lambda self, image, flip, brightness, contrast: Augmenter()(image, flip, brightness, contrast)
''', "assignment into a read-only cell's class (LeakyAugmenter.__call__)"),
    _a(L02, "sys_modules_main", "augmenter_solution", '''
sys.modules["__main__"].tfperf = types.SimpleNamespace(assert_speedup=lambda *args, **kwargs: None, assert_close=lambda *a, **k: None)
''', "sys.modules['__main__'] rebinds the notebook's tfperf"),
    _a(L04, "socket_class_patch", "fast_pipeline_solution", '''
import socket


class _Listening(socket.socket):
    def makefile(self, *args, **kwargs):
        stream = super().makefile(*args, **kwargs)
        readline = stream.readline
        stream.readline = lambda *a: readline(*a).replace(b'"passed": false', b'"passed": true')
        return stream


tfperf.link.socket.socket = _Listening
''', "socket reached as an attribute of a course module: the kernel's side of the grader's connection rewritten"),
    _a(L04, "rebind_naive_pipeline", "fast_pipeline_solution", '''
naive_pipeline = lambda files, read, augment, **kwargs: fast_pipeline(files, read, augment, **kwargs)  # noqa: E731
''', "a read-only cell's function (naive_pipeline) rebound"),
    _a(L06, "environ_role_baseline", "train_step_solution", '''
os.environ["TFPERF_GRADER_ROLE"] = "baseline"
''', "os.environ: the grader's role variable changed (the kernel would serve the baseline side)"),
    _a(L06, "jacobian_patch", "hvp_solution", '''
_jacobian = tf.GradientTape.jacobian
tf.GradientTape.jacobian = lambda self, *args, **kwargs: _jacobian(self, *args, **kwargs)
''', "assignment into a TensorFlow class the tests count calls on"),
    _a(L06, "tfperf_lab_importlib", "train_step_solution", '''
import importlib

_score = importlib.import_module("tfperf_lab.grading." + "score")
''', "importlib.import_module of the grading tool, name built"),
    _a(L07, "histogram_noop", "train_logged_solution", '''
tf.summary.histogram = lambda *args, **kwargs: True  # every-step histograms cost nothing
''', "tf.summary.histogram rebound on the lesson's tf"),
    _a(L07, "checks_harness_problems", "train_logged_solution", '''
from tfperf import checks as _checks

_checks.harness_problems = lambda: []
''', "from tfperf import checks, then a checks function replaced"),
    _a(L08, "np_default_rng_patch", "preprocess_tf_solution", '''
_rng = np.random.default_rng
np.random.default_rng = lambda seed=None: _rng(0)  # the grader's seeds no longer matter in this kernel
''', "np.random.default_rng replaced (what tfperf.link draws every call's inputs with)"),
    _a(L08, "link_digest_patch", "preprocess_tf_solution", '''
from tfperf.link import digest as _digest

_digest.__globals__["digest"] = lambda value: _digest(value)[:3]
''', "from tfperf.link import digest, then its __globals__ written"),
    _a(L09, "check_numerics_noop", "first_nonfinite_op_solution", '''
tf.debugging.enable_check_numerics = lambda *args, **kwargs: None
''', "tf.debugging.enable_check_numerics rebound on the lesson's tf"),
    _a(L09, "dunder_import_tfperf_lab", "stable_cross_entropy_solution", '''
_judge = __import__("tfperf_lab.speed." + "judge", fromlist=["Judge"])
_judge.Judge = None
''', "__import__ of the grading tool with a computed name, then an assignment into it"),
]

# Answers that, if not caught, win speed points for an unoptimized answer (appended to the slow variant's solution
# cell): each serves a fast function in place of the learner's slow one, by another route.
GRADED = {
    "alias",  # 01
    "module_argument",  # 01
    "reduce_getattr",  # 01
    "container_list",  # 01
    "ipython_ast_transformer",  # 01: the speed test cell itself rewritten
    "attrgetter",  # 05
    "default_argument",  # 05
    "module_from_file",  # 10
}


def reach_notebook(reach, nb: dict | None = None) -> dict:
    """The reference solution (or ``nb``) with the reach added as a learner would: appended to an answer cell, or a cell
    of its own after the last answer."""
    import nbformat

    from pipeline import COURSE
    from tfperf_lab.course import notebook

    nb = nb if nb is not None else COURSE.lesson(reach.lesson).source_notebook()
    if reach.where == "answer":
        cell = next(c for c in nb["cells"] if c.get("id") == reach.cell)
        cell["source"] = notebook.source(cell).rstrip("\n") + "\n\n" + reach.code
    else:
        index = max(i for i, c in enumerate(nb["cells"]) if notebook.nbgrader_meta(c).get("solution"))
        nb["cells"].insert(index + 1, nbformat.v4.new_code_cell(reach.code))
    return nb
