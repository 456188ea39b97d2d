"""The review list: a static reading (Python's `ast`, with the scopes of each function) of every cell a learner wrote,
for reaches into the course's machinery or the interpreter's.

Code in a learner's kernel can patch that kernel (the function that serves the grader, the clock), so no check that
runs there can prove it was not patched. What a patch has to do can be read before anything runs, though, and the
reading follows *values*, not words:

- **Tainted values.** The course's packages (``tfperf``, ``tfperf_lab``) and the interpreter's machinery (``sys``,
  ``gc``, ``inspect``, ``types``, ``pickle``, ``os``, ``threading``, ``subprocess``, ``traceback``, IPython's shell,
  ``builtins``...) are tainted module values. An answer may use one only as the root of an attribute chain through
  public names (`tfperf.compare(...)`, ``tfperf.env.choose``, ``inspect.signature``, ``gc.collect``,
  ``types.SimpleNamespace``: each module's allowed names are listed in `GUARDED`, the course's are read from its
  ``__all__``). Every other use is a finding: an alias (``course = tfperf``), an argument (``install(tfperf)``,
  ``functools.reduce(getattr, ..., tfperf)``, ``operator.attrgetter(...)(tfperf)``), a container element, a default
  value, a return value, a link that is not public (``tfperf.link``, ``tfperf.env.sys``, ``sys.modules``), a store.
- **Modules an answer reads freely**: TensorFlow, NumPy, Matplotlib and the harmless standard library (`FREE`). A
  store into any module or into anything reached from one (``tf.function = ...``, ``np.random.default_rng = ...``)
  is a finding, and so is a private or machinery link on one (``tf._sys``, ``np.lib.format.os``).
- **Imports**: a module outside `FREE`, `GUARDED` and the course's public modules is a finding (a file the learner
  wrote, ``importlib``, ``ctypes``, ``runpy``, ``unittest.mock``...).
- **Names**: ``getattr``/``setattr``/``delattr``/``hasattr`` with a computed name are a finding only on a tainted value
  or when the name folds to one of the interpreter's reach attributes (`REACH_DUNDERS`); ``setattr``/``delattr`` are
  stores. ``globals()``, ``locals()``, ``vars()`` of a module, ``eval``, ``exec``, ``compile``, ``__import__`` and
  three-argument ``type()`` deriving from a module's class are findings. Code given as text to IPython's magics
  (``%timeit``, ``%%time``) and to ``timeit`` is read as code; shell escapes and subprocesses may run only a short list
  of harmless programs.
- **The lesson's own names**: rebinding a name the instructor's cells bind and the tests read, or storing into an object
  they bind, is a finding.

The reading is Python's own ``ast`` with a scope table of its own (names each function, class body and comprehension
binds), not an analysis library: what it needs is a taint rule over attribute chains, which neither def-use chains
(beniget) nor libcst's scope provider give, and astroid's inference would import the lesson's libraries into the
grading process. IPython's own transformer turns magics into the calls the reading follows.

A learner's own objects are theirs: ``self.finalized = ...``, a ``@property``, ``setattr(self, key, value)``, a frozen
dataclass's ``object.__setattr__``, ``hasattr`` duck typing, ``getattr(tf.keras.optimizers, name)`` are not findings.
Structural tests read TensorFlow's own implementation (the function's exact type, the base class's counters), so no
name an answer defines can stand in for TensorFlow's evidence.

`review` reads every code cell the learner wrote or changed. A test or read-only cell is the course's own, and is not
read, only when its id and nbgrader ``grade_id`` name that release cell and no other cell repeats them: nbgrader then
restores its source before anything runs (a changed one gets a tamper note when staging). A cell whose id and grade_id
do not name the same release cell, or that repeats another cell's, is a finding of its own and is read: nbgrader
restores test cells by ``grade_id`` and strips a repeated one's metadata, so such a cell's code would run. The score stage withholds the speed and ``review_with`` cells of the exercise
that holds a finding until a person decides (`tfperf-lab review`). tests/unit/test_review.py measures the reading on two
corpora: honest answers in styles the lessons do not show (no finding) and reaches (every one found).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib.util
import pathlib

from ..course import notebook

COURSE_PACKAGES = frozenset({"tfperf", "tfperf_lab"})
COURSE_INTERNAL = frozenset({"link"})  # tfperf's modules an answer never names: what serves the grader
# Modules an answer may import and read freely (top-level package names).
FREE = frozenset({
    "tensorflow", "keras", "tf_keras", "numpy", "matplotlib", "tensorboard", "PIL", "tqdm", "scipy", "pandas", "sklearn",
    "absl", "psutil", "h5py",
    "math", "cmath", "random", "statistics", "time", "datetime", "functools", "itertools", "collections", "dataclasses",
    "typing", "typing_extensions", "abc", "enum", "operator", "copy", "json", "csv", "re", "string", "textwrap", "pprint",
    "pathlib", "tempfile", "shutil", "glob", "fnmatch", "io", "contextlib", "warnings", "logging", "numbers", "decimal",
    "fractions", "heapq", "bisect", "array", "struct", "hashlib", "zlib", "gzip", "zipfile", "base64", "uuid", "platform",
    "queue", "concurrent", "weakref", "secrets", "calendar", "locale", "tracemalloc", "dis", "resource", "reprlib",
    "graphlib", "colorsys", "difflib", "errno", "keyword", "unicodedata", "__future__",
})
# The interpreter's machinery: importing it is fine, using it is limited to these names (first link of a chain).
GUARDED = {
    "sys": {"version", "version_info", "platform", "maxsize", "float_info", "int_info", "byteorder", "implementation",
            "getsizeof", "getrecursionlimit", "setrecursionlimit", "stdout", "stderr", "executable", "argv", "flags",
            "hexversion", "getdefaultencoding", "exc_info", "exception", "float_repr_style", "maxunicode", "exit"},
    "gc": {"collect", "isenabled", "enable", "disable", "get_count", "get_threshold", "set_threshold", "get_stats", "freeze"},
    "inspect": {"signature", "Signature", "Parameter", "isfunction", "ismethod", "isclass", "isgenerator",
                "isgeneratorfunction", "iscoroutinefunction", "isabstract", "getdoc", "cleandoc", "getsource",
                "getsourcelines", "ismodule", "isbuiltin", "isroutine", "getfullargspec", "isdatadescriptor", "BoundArguments"},
    "types": {"SimpleNamespace", "MappingProxyType", "GeneratorType", "FunctionType", "MethodType", "LambdaType",
              "BuiltinFunctionType", "ModuleType", "NoneType", "GenericAlias", "TracebackType", "CoroutineType"},
    "pickle": {"dumps", "dump", "loads", "load", "HIGHEST_PROTOCOL", "DEFAULT_PROTOCOL", "PicklingError", "UnpicklingError"},
    "traceback": {"format_exc", "print_exc", "format_exception", "print_exception", "format_exception_only", "format_tb",
                  "print_tb", "extract_tb", "format_list", "TracebackException"},
    "threading": {"Thread", "Lock", "RLock", "Event", "Condition", "Semaphore", "BoundedSemaphore", "Barrier", "Timer",
                  "current_thread", "get_ident", "get_native_id", "active_count", "main_thread", "local", "enumerate"},
    "subprocess": {"run", "check_output", "call", "check_call", "Popen", "PIPE", "DEVNULL", "STDOUT", "CalledProcessError",
                   "TimeoutExpired", "CompletedProcess"},
    "os": {"path", "environ", "getenv", "getcwd", "listdir", "scandir", "makedirs", "mkdir", "remove", "unlink", "rename",
           "replace", "rmdir", "walk", "stat", "cpu_count", "getpid", "sep", "linesep", "devnull", "fspath", "urandom",
           "sched_getaffinity", "getloadavg", "times", "uname", "name", "curdir", "pardir", "PathLike", "process_cpu_count"},
    "timeit": {"default_timer", "timeit", "repeat", "Timer"},
    "IPython": {"display", "version_info", "core"},
    "importlib": {"metadata"},
}
GUARDED_PARTS = {"IPython.core": {"display"}}  # deeper public parts of a guarded package
FREE_PARTS = frozenset({"IPython.display", "IPython.core.display", "importlib.metadata", "os.path"})  # read freely
PROGRAM_CALLS = frozenset({"subprocess.run", "subprocess.check_output", "subprocess.call", "subprocess.check_call",
                           "subprocess.Popen"})
CODE_TEXT_CALLS = frozenset({"timeit.timeit", "timeit.repeat", "timeit.Timer"})
# The interpreter's attributes that lead to code, frames, namespaces and every object: never read, never written.
REACH_DUNDERS = frozenset({"__code__", "__globals__", "__closure__", "__builtins__", "__subclasses__", "__import__",
                           "__loader__", "__spec__", "__reduce__", "__reduce_ex__", "__kwdefaults__", "__defaults__"})
REACH_ATTRIBUTES = frozenset({"f_back", "f_globals", "f_locals", "f_code", "f_builtins", "gi_frame", "cr_frame",
                              "ag_frame", "tb_frame", "co_code", "co_consts", "user_ns", "user_global_ns"})
SAFE_DUNDERS = frozenset({"__version__", "__name__", "__doc__", "__file__", "__qualname__"})
# Names of the interpreter's machinery: a link of that name on any module is a reach (``tf._sys``, ``np.lib.format.os``).
MACHINERY_NAMES = frozenset({"sys", "os", "gc", "inspect", "importlib", "builtins", "ctypes", "ctypeslib", "runpy",
                             "site", "pickle", "marshal", "subprocess", "threading", "tf_inspect", "modules"})
STRONG_BUILTINS = {"__builtins__": "builtins", "__import__": "builtins", "__loader__": "builtins", "__spec__": "builtins",
                   "get_ipython": "IPython.shell"}
NAMESPACE_CALLS = frozenset({"globals", "locals", "eval", "exec", "compile", "breakpoint"})
# Builtins that only read a value's name or text: a tainted module may be shown to them (``dir(tfperf)``, ``help(sys)``).
SHOWING_CALLS = frozenset({"dir", "help", "print", "repr", "str", "type", "id", "isinstance", "issubclass", "callable",
                           "hash", "format", "display"})
ATTRIBUTE_CALLS = frozenset({"getattr", "setattr", "delattr", "hasattr"})
# IPython magics: those whose argument is code (read as code), and those that change nothing the grader relies on.
CODE_MAGICS = frozenset({"time", "timeit", "capture", "prun"})
PLAIN_MAGICS = frozenset({"matplotlib", "load_ext", "tensorboard", "pip", "config", "who", "whos", "who_ls", "lsmagic",
                          "xmode", "pwd", "precision", "pinfo", "pinfo2", "pdoc", "psource", "history", "writefile",
                          "html", "markdown", "latex", "svg", "javascript", "js", "autoreload", "ls", "env", "conda"})
SAFE_PROGRAMS = frozenset({"nvidia-smi", "ls", "cat", "head", "tail", "wc", "nproc", "free", "lscpu", "df", "du",
                           "echo", "uname", "pip", "pip3", "date", "hostname", "whoami", "pwd", "mkdir", "tree", "file"})


@dataclasses.dataclass(frozen=True)
class Finding:
    """One reach: the cell, the line (1-based, in the cell) and its code, and why it is on the review list."""

    cell: str
    line: int
    code: str
    why: str

    def __str__(self) -> str:
        return f"cell {self.cell}, line {self.line}: {self.why}: {self.code}"


def _python(source_text: str) -> ast.Module | None:
    """A cell's code as Python (IPython's magics and shell escapes turned into calls first); None when it does not parse
    (such a cell raises when it runs and defines nothing)."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        source_text = TransformerManager().transform_cell(source_text)
    except Exception:  # noqa: BLE001  (without IPython, plain Python)
        pass
    try:
        return notebook.parse(source_text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


@functools.lru_cache(maxsize=1)
def course_api() -> dict[str, frozenset[str]]:
    """The course's public names, read from its sources without importing them: ``{"tfperf": {...}, "tfperf.env": {...}}``
    (each module's ``__all__``; tfperf's own submodules appear as names of ``tfperf``, `COURSE_INTERNAL` ones left out)."""
    spec = importlib.util.find_spec("tfperf")
    folder = pathlib.Path(next(iter(spec.submodule_search_locations))) if spec and spec.submodule_search_locations else None
    api: dict[str, frozenset[str]] = {}
    for path in sorted(folder.glob("*.py")) if folder else []:
        name = "tfperf" if path.stem == "__init__" else f"tfperf.{path.stem}"
        if path.stem.startswith("_") and path.stem != "__init__" or path.stem in COURSE_INTERNAL:
            continue
        api[name] = frozenset(_declared_all(path.read_text(encoding="utf-8")) - COURSE_INTERNAL)
    return api


def _declared_all(text: str) -> set[str]:
    """The names a module's ``__all__`` lists (a literal list, ``+=`` and ``.append``)."""
    names: set[str] = set()
    for node in ast.walk(notebook.parse(text)):
        value = None
        if isinstance(node, (ast.Assign, ast.AugAssign)) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in (node.targets if isinstance(node, ast.Assign) else [node.target])):
            value = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("append", "extend") \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "__all__" and node.args:
            value = node.args[0]
        if isinstance(value, (ast.List, ast.Tuple)):
            names |= {e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
        elif isinstance(value, ast.Constant) and isinstance(value.value, str):
            names.add(value.value)
    return names


# -- what a name holds ------------------------------------------------------------------------------------------------
# A kind is a tuple: ("course", "tfperf.env"), ("guarded", "sys"), ("module", "tensorflow.keras"), ("owned", name), or
# ("value", origin) for a public value reached from a tainted module (a store into it is still a store into the module).
Kind = tuple[str, str]


def _module_kind(dotted: str) -> Kind | None:
    """What importing ``dotted`` binds, or None when the import itself is a finding."""
    top = dotted.split(".")[0]
    if top == "tfperf":
        return ("course", dotted) if dotted in course_api() else None
    if dotted in FREE_PARTS:
        return ("module", dotted)
    if top in GUARDED:
        return ("guarded", dotted) if dotted == top or dotted in GUARDED_PARTS else None
    if top in FREE:
        if "tf_inspect" in dotted.split(".") or any(part.startswith("_") and not part.startswith("__") for part in dotted.split(".")[1:]):
            return None
        return ("module", dotted)
    return None


def _allowed_link(kind: Kind, attribute: str) -> tuple[bool, Kind | None]:
    """Whether ``attribute`` may be read from a tainted module of ``kind``, and what it then holds."""
    family, where = kind
    if attribute in SAFE_DUNDERS:
        return True, ("value", f"{where}.{attribute}")
    if family == "course":
        api = course_api()
        if f"{where}.{attribute}" in api and attribute in api.get(where, ()):
            return True, ("course", f"{where}.{attribute}")
        if attribute in api.get(where, ()):
            return True, ("value", f"{where}.{attribute}")
        return False, None
    allowed = GUARDED_PARTS.get(where, GUARDED.get(where, set()))
    if attribute not in allowed:
        return False, None
    if f"{where}.{attribute}" in GUARDED_PARTS:
        return True, ("guarded", f"{where}.{attribute}")
    return True, ("value", f"{where}.{attribute}")


def _fold(node: ast.AST | None, constants: dict[str, object] | None = None) -> str | None:
    """The string an expression builds from constants (``'li' + 'nk'``, f-strings, ``''.join([...])``), or None."""
    constants = constants or {}
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and isinstance(constants.get(node.id), str):
        return constants[node.id]  # type: ignore[return-value]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _fold(node.left, constants), _fold(node.right, constants)
        return left + right if left is not None and right is not None else None
    if isinstance(node, ast.JoinedStr):
        parts = [_fold(v.value if isinstance(v, ast.FormattedValue) else v, constants) for v in node.values]
        return "".join(parts) if all(p is not None for p in parts) else None  # type: ignore[arg-type]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join" and len(node.args) == 1:
        glue, items = _fold(node.func.value, constants), node.args[0]
        if glue is not None and isinstance(items, (ast.List, ast.Tuple)):
            parts = [_fold(item, constants) for item in items.elts]
            return glue.join(parts) if all(p is not None for p in parts) else None  # type: ignore[arg-type]
    return None


def _is_reach_name(name: str) -> bool:
    return name in REACH_DUNDERS or name in REACH_ATTRIBUTES


@dataclasses.dataclass
class _Owned:
    """What the instructor's cells bind: module aliases (name -> dotted module) and names the tests rely on."""

    modules: dict[str, str]
    names: set[str]


def owned(release: dict) -> _Owned:
    """The modules the lesson's own cells import (and alias) and the names its cells bind that a test cell or a
    read-only cell reads: rebinding one of those, or storing into it, changes what a test sees."""
    modules: dict[str, str] = {}
    bound: set[str] = set()
    read_by_tests: set[str] = set()
    for cell in release["cells"]:
        if cell.get("cell_type") != "code" or notebook.nbgrader_meta(cell).get("solution"):
            continue
        tree = _python(notebook.source(cell))
        if tree is None:
            continue
        for node in tree.body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    modules[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.name != "*":
                        modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and isinstance(node.value, ast.Attribute):
                root, chain = _chain(node.value)
                if isinstance(root, ast.Name) and root.id in modules and chain is not None:
                    modules[node.targets[0].id] = ".".join([modules[root.id], *chain])  # v1 = tf.compat.v1
        bound |= set(notebook.bound_names(notebook.source(cell)))
        if notebook.is_protected(cell):
            read_by_tests |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
            if notebook.is_read_only(cell):
                read_by_tests |= set(notebook.bound_names(notebook.source(cell)))
    return _Owned(modules, (bound & read_by_tests) - set(modules))


def _chain(node: ast.AST) -> tuple[ast.AST, list[str] | None]:
    """``a.b.c`` -> (Name a, ["b", "c"]); the chain is None when a subscript or call sits in it."""
    links = []
    while isinstance(node, ast.Attribute):
        links.append(node.attr)
        node = node.value
    return node, links[::-1]


def _store_root(node: ast.AST) -> ast.AST:
    """What a store target hangs from, through attributes and subscripts (``a.b[0].c`` -> a)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node


class _Reader(ast.NodeVisitor):
    """Walks one cell with the names each scope binds, flagging every use of a tainted value that is not allowed."""

    def __init__(self, cell: str, lines: list[str], own: _Owned, env: dict[str, Kind | None], line_offset: int = 0):
        self.cell, self.lines, self.own, self.env, self.offset = cell, lines, own, env, line_offset
        self.scopes: list[dict[str, Kind | None]] = []
        self.constants: dict[str, object] = {}
        self.found: list[Finding] = []
        self.allowed_uses: set[int] = set()  # ids of Name/Attribute nodes already judged as part of a chain
        self.membership: set[int] = set()  # ids of globals()/locals() calls only tested with ``in``

    # -- helpers ------------------------------------------------------------------------------------------------------
    def flag(self, node: ast.AST, why: str) -> None:
        line = getattr(node, "lineno", 1) + self.offset
        code = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        self.found.append(Finding(self.cell, line, code[:160], why))

    def kind(self, name: str) -> Kind | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name in self.env:
            return self.env[name]
        if name in self.own.names:
            return ("owned", name)
        if name in STRONG_BUILTINS:
            return ("guarded", STRONG_BUILTINS[name])
        return None

    def is_builtin(self, name: str) -> bool:
        return all(name not in scope for scope in self.scopes) and name not in self.env

    def bind(self, name: str, kind: Kind | None) -> None:
        (self.scopes[-1] if self.scopes else self.env)[name] = kind

    def resolve(self, node: ast.AST) -> tuple[Kind | None, bool]:
        """What an attribute chain (or name) holds, flagging each link a tainted module does not allow; returns the kind
        and whether the chain ended on a tainted *module* (which may not be used as a value)."""
        root, links = _chain(node)
        if not isinstance(root, ast.Name):
            return None, False
        kind = self.kind(root.id)
        if kind is None or kind[0] == "owned":
            for link in links:
                if _is_reach_name(link):
                    self.flag(node, f"reaches {link}")
            return (kind, False)
        for index, link in enumerate(links):
            family, where = kind
            if _is_reach_name(link):
                self.flag(node, f"reaches {link}")
                return None, False
            if family in ("course", "guarded"):
                ok, following = _allowed_link(kind, link)
                if not ok:
                    shown = ".".join([root.id, *links[: index + 1]])
                    what = "the course's grading internals" if family == "course" else "the interpreter's machinery"
                    self.flag(node, f"reaches {shown}, {what}")
                    return None, False
                kind = following  # type: ignore[assignment]
            elif family == "module":
                if link in MACHINERY_NAMES or (link.startswith("_") and link not in SAFE_DUNDERS):
                    self.flag(node, f"reaches {'.'.join([root.id, *links[: index + 1]])} through {where}")
                    return None, False
                kind = ("module", f"{where}.{link}")
            else:  # a value reached from a tainted module: its attributes are read freely
                kind = ("value", where)
        return kind, kind is not None and kind[0] in ("course", "guarded")

    def use(self, node: ast.AST) -> Kind | None:
        """A chain or name used as a value: a tainted module itself may not be (an alias, an argument, an element)."""
        kind, is_module = self.resolve(node)
        if is_module:
            shown = ast.unparse(node)
            self.flag(node, f"uses {shown} as a value (an alias, an argument, an element or a return value of the "
                            f"{'course' if kind[0] == 'course' else 'interpreter'}'s module {kind[1]})")  # type: ignore[index]
        return kind

    def stored(self, target: ast.AST, node: ast.AST, attribute: str | None = None) -> None:
        """A store into ``target`` (an attribute, a subscript, a ``setattr``): into a module or anything reached from
        one, a tainted value, or an object the lesson's cells bind, it is a finding."""
        if attribute is None:  # the object stored into: ``a.b`` of ``a.b.c = v`` or ``a.b[k] = v``
            root = target.value if isinstance(target, (ast.Attribute, ast.Subscript)) else target
            while isinstance(root, (ast.Subscript, ast.Starred)):
                root = root.value
            if isinstance(root, ast.Attribute) and not isinstance(_chain(root)[0], ast.Name):
                root = _store_root(root)
        else:
            root = target
        what = ast.unparse(target)[:60]
        if attribute is not None and attribute.startswith("__") and attribute.endswith("__") and attribute not in ("__doc__",):
            self.flag(node, f"assigns {attribute}")
            return
        if isinstance(target, ast.Attribute) and target.attr.startswith("__") and target.attr.endswith("__") and target.attr != "__doc__":
            self.flag(node, f"assigns {target.attr}")
            return
        if not isinstance(root, (ast.Name, ast.Attribute)):
            return
        kind, _ = self.resolve(root)
        if kind is None:
            return
        family, where = kind
        if family == "owned":
            self.flag(node, f"assigns into {where}, which the lesson's own cells define")
        elif where.startswith("os.environ"):
            return  # an environment variable (a TFPERF_ name is flagged as a string)
        elif family == "module" and isinstance(target, ast.Subscript):
            return  # an item of a library's container (plt.rcParams["figure.figsize"]), not its namespace or a class
        else:
            label = {"course": "the course's module", "guarded": "the interpreter's module", "module": "the module"}.get(family, "a value of the module")
            self.flag(node, f"assigns into {what} ({label} {where})")

    # -- scopes -------------------------------------------------------------------------------------------------------
    def _function(self, node) -> None:
        for decorator in getattr(node, "decorator_list", []):
            self.visit(decorator)
        if not isinstance(node, ast.Lambda):
            self.bind(node.name, None)  # the learner's own function (a ``def exec`` is not the builtin)
        arguments = node.args
        for default in arguments.defaults + [d for d in arguments.kw_defaults if d is not None]:
            self.use(default)
            self.visit(default)
        for annotation in [a.annotation for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs if a.annotation]:
            self.visit(annotation)
        scope: dict[str, Kind | None] = {a.arg: None for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}
        scope |= {a.arg: None for a in (arguments.vararg, arguments.kwarg) if a is not None}
        body = node.body if isinstance(node.body, list) else [node.body]
        declared = {n for child in body for sub in ast.walk(child) if isinstance(sub, (ast.Global, ast.Nonlocal)) for n in sub.names}
        for child in body:
            for sub in ast.walk(child):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) and sub.id not in declared:
                    scope.setdefault(sub.id, None)
                elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    scope.setdefault(sub.name, None)
        self.scopes.append(scope)
        if isinstance(node, ast.Lambda):
            self.use(node.body)
        for child in body:
            self.visit(child)
        self.scopes.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expression in node.decorator_list + node.bases + [k.value for k in node.keywords]:
            self.use(expression)
            self.visit(expression)
        self.bind(node.name, None)
        self.scopes.append({})
        for child in node.body:
            self.visit(child)
        self.scopes.pop()

    def _comprehension(self, node) -> None:
        scope = {n.id: None for generator in node.generators for n in ast.walk(generator.target) if isinstance(n, ast.Name)}
        self.scopes.append(scope)
        for generator in node.generators:
            self.use(generator.iter)
            self.visit(generator.iter)
            for condition in generator.ifs:
                self.visit(condition)
        for part in (getattr(node, "elt", None), getattr(node, "key", None), getattr(node, "value", None)):
            if part is not None:
                self.use(part)
                self.visit(part)
        self.scopes.pop()

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    # -- imports ------------------------------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            kind = _module_kind(alias.name)
            if kind is None:
                self._refused_import(node, alias.name)
            bound = alias.asname or alias.name.split(".")[0]
            target = alias.name if alias.asname else alias.name.split(".")[0]
            self._rebinding(node, bound, target)
            self.bind(bound, _module_kind(target) if kind is not None else None)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            self.flag(node, "imports a file of the learner's (a relative import), which runs unread")
            return
        base = _module_kind(module)
        if base is None:
            self._refused_import(node, module)
        for alias in node.names:
            bound = alias.asname or alias.name
            if alias.name == "*":
                if base is not None and base[0] != "module":
                    self.flag(node, f"imports every name of {module}")
                continue
            kind: Kind | None = None
            if base is not None:
                if base[0] == "module":
                    kind = _module_kind(f"{module}.{alias.name}") if f"{module}.{alias.name}".split(".")[-1] not in MACHINERY_NAMES else None
                    if alias.name in MACHINERY_NAMES or (alias.name.startswith("_") and not alias.name.startswith("__")):
                        self.flag(node, f"imports {module}.{alias.name} through {module}")
                        kind = None
                    elif kind is None:
                        kind = ("module", f"{module}.{alias.name}")
                else:
                    ok, kind = _allowed_link(base, alias.name)
                    if not ok:
                        what = "the course's grading internals" if base[0] == "course" else "the interpreter's machinery"
                        self.flag(node, f"imports {module}.{alias.name}, {what}")
                        kind = None
            self._rebinding(node, bound, f"{module}.{alias.name}")
            self.bind(bound, kind)

    def _refused_import(self, node: ast.AST, module: str) -> None:
        top = module.split(".")[0]
        if top in COURSE_PACKAGES:
            self.flag(node, f"imports {module}, the course's grading internals")
        else:
            self.flag(node, f"imports {module}, which is neither TensorFlow, NumPy, Matplotlib nor a harmless standard "
                            f"library module (a module the learner wrote, or the interpreter's machinery)")

    def _rebinding(self, node: ast.AST, bound: str, target: str) -> None:
        if self.scopes:
            return
        owned_module = self.own.modules.get(bound)
        if owned_module is not None and owned_module != target:
            self.flag(node, f"rebinds {bound}, which the lesson's own cells import as {owned_module}")
        elif bound in self.own.names:
            self.flag(node, f"rebinds {bound}, which the lesson's own cells define")

    # -- expressions --------------------------------------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and id(node) not in self.allowed_uses:
            self.use(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self.stored(node, node)
            root = _store_root(node)
            if not isinstance(root, (ast.Name, ast.Attribute)):
                self.visit(root)
            return
        if id(node) in self.allowed_uses:
            return
        root, _ = _chain(node)
        if isinstance(root, ast.Name):
            self.use(node)  # the whole chain at once: mark its inner links as judged
            for inner in ast.walk(node):
                self.allowed_uses.add(id(inner))
        else:
            if _is_reach_name(node.attr):
                self.flag(node, f"reaches {node.attr}")
            self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self.stored(node, node)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.use(node.value)
        self.visit(node.value)
        for target in node.targets:
            self._target(target, node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.use(node.value)
            self.visit(node.value)
        self._target(node.target, node.value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.use(node.value)
        self.visit(node.value)
        if isinstance(node.target, ast.Name):
            self._target(node.target, None)
        else:
            self.stored(node.target, node)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.use(node.value)
        self.visit(node.value)
        self._target(node.target, node.value)

    def _target(self, target: ast.AST, value: ast.AST | None) -> None:
        if isinstance(target, ast.Name):
            if not self.scopes:
                folded = _fold(value, self.constants) if value is not None else None
                if folded is not None:
                    self.constants[target.id] = folded
            kind = None
            if isinstance(value, (ast.Attribute, ast.Name)):
                resolved, _ = self.resolve(value) if isinstance(value, ast.Attribute) else (self.kind(value.id), False)
                kind = resolved if resolved is not None and resolved[0] in ("module", "value", "owned") else None
            self.bind(target.id, kind)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._target(element, None)
        elif isinstance(target, ast.Starred):
            self._target(target.value, None)
        else:
            self.visit(target)

    def visit_For(self, node) -> None:
        self.use(node.iter)
        self.visit(node.iter)
        self._target(node.target, None)
        for child in node.body + node.orelse:
            self.visit(child)

    visit_AsyncFor = visit_For

    def visit_With(self, node) -> None:
        for item in node.items:
            self.use(item.context_expr)
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self._target(item.optional_vars, None)
        for child in node.body:
            self.visit(child)

    visit_AsyncWith = visit_With

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None:
            self.use(node.value)
            self.visit(node.value)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            if isinstance(target, ast.Name):
                if not self.scopes and (target.id in self.own.names or target.id in self.own.modules):
                    self.flag(target, f"deletes {target.id}, which the lesson's own cells define")
            else:
                self.visit(target)

    def visit_Global(self, node: ast.Global) -> None:
        for name in node.names:
            if name in self.own.names or name in self.own.modules:
                self.flag(node, f"rebinds {name}, which the lesson's own cells define")

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            self._string(node, node.value)

    def _string(self, node: ast.AST, text: str) -> None:
        if "TFPERF_" in text:
            self.flag(node, "names the grader's TFPERF_ variables")
        elif any(f"{package}.{internal}" in text for package in ("tfperf",) for internal in COURSE_INTERNAL) or "tfperf_lab" in text:
            self.flag(node, "names the course's grading internals in a string")
        elif any(name in text for name in REACH_DUNDERS):
            self.flag(node, f"names {next(n for n in REACH_DUNDERS if n in text)} in a string")

    def visit_BinOp(self, node: ast.BinOp) -> None:
        folded = _fold(node, self.constants)
        if folded is not None:
            self._string(node, folded)
        self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        folded = _fold(node, self.constants)
        if folded is not None:
            self._string(node, folded)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        function = node.func
        showing = isinstance(function, ast.Name) and function.id in SHOWING_CALLS and self.is_builtin(function.id) and not (
            function.id == "type" and len(node.args) > 1)
        for argument in node.args + [k.value for k in node.keywords]:
            argument = argument.value if isinstance(argument, ast.Starred) else argument
            if showing and isinstance(argument, (ast.Name, ast.Attribute)):
                self.resolve(argument)  # shown, not held: its links are still read
                self.allowed_uses |= {id(inner) for inner in ast.walk(argument)}
            else:
                self.use(argument)
        if isinstance(function, ast.Call) and isinstance(function.func, ast.Name) and function.func.id == "get_ipython" \
                and self.is_builtin("get_ipython"):
            self._ipython(node)
            return
        if isinstance(function, ast.Attribute) and isinstance(function.value, ast.Call) and isinstance(function.value.func, ast.Name) \
                and function.value.func.id == "get_ipython" and self.is_builtin("get_ipython"):
            self._ipython(node)
            return
        if isinstance(function, ast.Name) and self.is_builtin(function.id):
            self._builtin_call(node, function.id)
        elif isinstance(function, ast.Attribute) and function.attr in ("__setattr__", "__delattr__", "__getattribute__"):
            name = {"__setattr__": "setattr", "__delattr__": "delattr", "__getattribute__": "getattr"}[function.attr]
            if len(node.args) >= 2:
                self._attribute_call(node, name, node.args[0], node.args[1], node.args[2] if len(node.args) > 2 else None)
        elif isinstance(function, (ast.Name, ast.Attribute)):
            kind, _ = self.resolve(function)
            if kind is not None and kind[0] in ("value", "module"):
                self._library_call(node, kind[1])
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        """``"model" in globals()``: a membership test reads no value of the namespace."""
        for operator, right in zip(node.ops, node.comparators, strict=True):
            if isinstance(operator, (ast.In, ast.NotIn)) and isinstance(right, ast.Call) and isinstance(right.func, ast.Name) \
                    and right.func.id in ("globals", "locals", "vars", "dir") and not right.args and self.is_builtin(right.func.id):
                self.membership.add(id(right))
        self.generic_visit(node)

    def _builtin_call(self, node: ast.Call, name: str) -> None:
        if id(node) in self.membership:
            return
        if name in NAMESPACE_CALLS:
            self.flag(node, f"calls {name}(), which reaches namespaces or compiles code")
        elif name == "vars":
            if not node.args:
                self.flag(node, "calls vars() without an object: the namespace itself")
            else:
                kind, _ = self.resolve(node.args[0]) if isinstance(node.args[0], (ast.Name, ast.Attribute)) else (None, False)
                if kind is not None:
                    self.flag(node, f"calls vars() of {ast.unparse(node.args[0])}, a module's or the lesson's namespace")
        elif name in ATTRIBUTE_CALLS and len(node.args) >= 2:
            self._attribute_call(node, name, node.args[0], node.args[1], node.args[2] if len(node.args) > 2 else None)
        elif name == "type" and len(node.args) == 3:
            bases = node.args[1]
            if not isinstance(bases, ast.Tuple) or any(self._from_module(base) for base in bases.elts):
                self.flag(node, "builds a class with three-argument type() from a library's class")
        elif name == "open" and node.args:
            path = _fold(node.args[0], self.constants)
            if path is not None and path.endswith((".pth", "sitecustomize.py", "usercustomize.py")):
                self.flag(node, "writes a file the interpreter runs at start-up")

    def _from_module(self, node: ast.AST) -> bool:
        if not isinstance(node, (ast.Name, ast.Attribute)):
            return True
        kind, _ = self.resolve(node)
        return kind is not None and kind[0] in ("module", "value", "course", "guarded", "owned")

    def _attribute_call(self, node: ast.Call, name: str, target: ast.AST, attribute: ast.AST, value: ast.AST | None) -> None:
        folded = _fold(attribute, self.constants)
        if folded is not None and (_is_reach_name(folded)):
            self.flag(node, f"{name}() of {folded}")
            return
        kind, _ = self.resolve(target) if isinstance(target, (ast.Name, ast.Attribute)) else (None, False)
        if kind is not None and kind[0] in ("course", "guarded"):
            if folded is None or name in ("setattr", "delattr"):
                self.flag(node, f"{name}() on {ast.unparse(target)}, {'the course' if kind[0] == 'course' else 'the interpreter'}'s module")
            else:
                probe = ast.Attribute(value=target, attr=folded, ctx=ast.Load())
                ast.copy_location(probe, node)
                self.resolve(probe)
            return
        if name in ("setattr", "delattr"):
            if folded is not None and folded.startswith("__") and folded.endswith("__"):
                self.flag(node, f"{name}() of {folded}")
            elif isinstance(target, (ast.Name, ast.Attribute, ast.Subscript)):
                self.stored(target, node, attribute=folded or "")
        # getattr/hasattr with a name computed on anything else (getattr(tf.keras.optimizers, name)) is read freely

    def _library_call(self, node: ast.Call, qualified: str) -> None:
        """Calls of the machinery's allowed functions that still need a look at their arguments."""
        if qualified in PROGRAM_CALLS:
            self._program(node, node.args[0] if node.args else None)
        elif qualified in ("pickle.loads", "pickle.load") and node.args and isinstance(node.args[0], ast.Constant):
            self.flag(node, "unpickles a payload written in the code (unpickling runs what the payload names)")
        elif qualified in CODE_TEXT_CALLS and node.args:
            self._code_text(node, node.args[0])
        elif qualified in ("operator.attrgetter", "operator.methodcaller"):
            for argument in node.args[:1] if qualified.endswith("methodcaller") else node.args:
                text = _fold(argument, self.constants)
                if text is None or any(_is_reach_name(part) or part.startswith("__") and part.endswith("__") for part in text.split(".")):
                    self.flag(node, f"{qualified}() of a name the reading cannot follow")

    def _program(self, node: ast.AST, argument: ast.AST | None) -> None:
        words: list[str] = []
        if isinstance(argument, (ast.List, ast.Tuple)) and argument.elts:
            first = _fold(argument.elts[0], self.constants)
            words = [first] if first is not None else []
        elif argument is not None and _fold(argument, self.constants) is not None:
            words = (_fold(argument, self.constants) or "").split()
        program = words[0].rsplit("/", 1)[-1] if words else ""
        if program not in SAFE_PROGRAMS:
            self.flag(node, f"runs a program the reading cannot follow ({program or 'a command built at run time'})")

    def _code_text(self, node: ast.AST, argument: ast.AST) -> None:
        """Code given as text (a magic's argument, timeit's statement): read as code, or a finding when it is built."""
        if isinstance(argument, (ast.Lambda, ast.Name, ast.Attribute)) and not isinstance(argument, ast.Constant):
            return  # a callable
        text = _fold(argument, self.constants)
        if text is None:
            self.flag(node, "runs code given as text built at run time")
            return
        tree = _python(text)
        if tree is None:
            return
        inner = _Reader(self.cell, self.lines, self.own, self.env, getattr(node, "lineno", 1) - 1 + self.offset)
        inner.scopes, inner.constants = self.scopes, self.constants
        inner.visit(tree)
        for finding in inner.found:  # the lines of the text, shown at the line of the magic
            self.found.append(dataclasses.replace(finding, line=getattr(node, "lineno", 1) + self.offset,
                                                  code=self._line(node)))

    def _line(self, node: ast.AST) -> str:
        line = getattr(node, "lineno", 1) + self.offset
        return self.lines[line - 1].strip()[:160] if 0 < line <= len(self.lines) else ""

    def _ipython(self, node: ast.Call) -> None:
        """``get_ipython().X(...)``: the calls IPython's transform writes for magics and shell escapes."""
        function = node.func
        method = function.attr if isinstance(function, ast.Attribute) else ""
        arguments = node.args
        if method in ("run_line_magic", "run_cell_magic") and arguments:
            magic = _fold(arguments[0], self.constants) or ""
            if magic in CODE_MAGICS:
                code = arguments[-1] if method == "run_cell_magic" else (arguments[1] if len(arguments) > 1 else None)
                if code is not None:
                    self._code_text(node, code)
                line = _fold(arguments[1], self.constants) if method == "run_cell_magic" and len(arguments) > 2 else None
                if line and magic in ("time", "timeit"):
                    self._code_text(node, arguments[1])  # %%timeit's line holds set-up code after its options
                return
            if magic == "writefile" and method == "run_cell_magic" and len(arguments) > 2 \
                    and (_fold(arguments[1], self.constants) or "").strip().split(" ")[-1].endswith(".py"):
                self._code_text(node, arguments[2])  # a module the learner may import: its code is read as code
                return
            if magic in PLAIN_MAGICS:
                if magic == "env" and len(arguments) > 1 and "TFPERF" in (_fold(arguments[1], self.constants) or "TFPERF"):
                    self.flag(node, "sets the grader's TFPERF_ variables")
                return
            self.flag(node, f"runs IPython's %{magic or '(a magic named at run time)'}, which the reading cannot follow")
        elif method in ("system", "getoutput") and arguments:
            self._program(node, arguments[0])
        else:
            self.flag(node, "reaches IPython's shell (get_ipython())")


def _top_level_names(statement: ast.stmt) -> set[str]:
    """Names a top-level statement binds in the kernel's namespace (imports aside), not descending into the scopes of
    functions, classes, lambdas and comprehensions."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return set()
    names, stack = set(), [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        stack.extend(ast.iter_child_nodes(node))
    return names


def _environment(own: _Owned) -> dict[str, Kind | None]:
    """What the instructor's cells bind at the kernel's top level, as the reading's first scope."""
    env: dict[str, Kind | None] = {}
    for name, module in own.modules.items():
        env[name] = _module_kind(module) or ("module", module)  # the instructor's own imports: at least a module
    return env


def cell_findings(cell_id: str, source_text: str, own: _Owned, env: dict[str, Kind | None] | None = None) -> list[Finding]:
    """The findings of one cell's code (``env``: what the kernel's names hold after the cells before it)."""
    tree = _python(source_text)
    if tree is None:
        return []
    reader = _Reader(cell_id, source_text.splitlines(), own, env if env is not None else _environment(own))
    for statement in tree.body:
        for name in _top_level_names(statement):
            if name in own.names:
                reader.flag(statement, f"rebinds {name}, which the lesson's own cells define")
            elif name in own.modules:
                reader.flag(statement, f"rebinds {name}, which the lesson's own cells import as {own.modules[name]}")
        try:
            reader.visit(statement)
        except RecursionError:
            reader.flag(statement, "nests too deeply to be read")
    unique = {(f.line, f.why): f for f in reader.found}
    return sorted(unique.values(), key=lambda f: f.line)


def _ids(cell: dict) -> tuple[str | None, str | None]:
    return cell.get("id"), notebook.nbgrader_meta(cell).get("grade_id")


def identity_findings(nb: dict, release: dict) -> dict[int, Finding]:
    """Cells whose id and nbgrader ``grade_id`` do not name the same cell of the release, or that repeat another cell's
    id or grade_id: nbgrader restores a test cell by its grade_id (and strips a repeated one's), so such a cell could
    run code the reading would skip."""
    by_id = {cell.get("id"): cell for cell in release["cells"]}
    by_grade = {notebook.nbgrader_meta(cell).get("grade_id"): cell for cell in release["cells"] if notebook.nbgrader_meta(cell).get("grade_id")}
    seen_ids: dict[str, int] = {}
    seen_grades: dict[str, int] = {}
    found: dict[int, Finding] = {}
    for index, cell in enumerate(nb["cells"]):
        cell_id, grade_id = _ids(cell)
        label = str(cell_id or f"#{index + 1}")
        why = None
        if cell_id in seen_ids or (grade_id and grade_id in seen_grades):
            why = f"repeats the id or grade id of another cell ({cell_id}, {grade_id})"
        elif grade_id and grade_id in by_grade and by_grade[grade_id].get("id") != cell_id:
            why = f"carries grade id {grade_id} under the id {cell_id} (the release's cell {by_grade[grade_id].get('id')})"
        elif cell_id in by_id and _ids(by_id[cell_id])[1] != grade_id and (notebook.nbgrader_meta(by_id[cell_id]) or grade_id):
            why = f"carries the id of the release's cell {cell_id} with grade id {grade_id} (the release's is {_ids(by_id[cell_id])[1]})"
        elif grade_id and grade_id not in by_grade:
            why = f"carries grade id {grade_id}, which the release does not have"
        if cell_id:
            seen_ids.setdefault(cell_id, index)
        if grade_id:
            seen_grades.setdefault(grade_id, index)
        if why and cell.get("cell_type") == "code":
            found[index] = Finding(label, 1, notebook.source(cell).strip().splitlines()[0][:160] if notebook.source(cell).strip() else "",
                                   f"tampered cell identity: {why}")
    return found


def review(nb: dict, release: dict, source: dict | None = None) -> list[Finding]:
    """Every reach in the code cells of ``nb`` whose whole source differs from the release's (and the instructor's)
    copy of the cell they match by id and grade_id together, and every cell whose identity was tampered with. What the
    lesson's cells bind and its tests read comes from the instructor's ``source`` when there is one, else the release."""
    own = owned(source or release)
    shipped = {cell.get("id"): cell for cell in release["cells"]}
    instructor = {cell.get("id"): cell for cell in (source or release)["cells"]}
    tampered = identity_findings(nb, release)
    env = _environment(own)
    found: list[Finding] = []
    for index, cell in enumerate(nb["cells"]):
        if cell.get("cell_type") != "code":
            continue
        body = notebook.source(cell)
        if index in tampered:
            found.append(tampered[index])
        else:
            original = shipped.get(cell.get("id"))
            if original is not None and notebook.is_protected(original):
                continue  # its id and grade_id name this release cell, once: nbgrader restores it before it runs
            if original is not None and original.get("cell_type") == "code" and (
                    body == notebook.source(original) or body == notebook.source(instructor.get(cell.get("id"), original))):
                continue
        found += cell_findings(str(cell.get("id") or f"#{index + 1}"), body, own, env)
    return found


def note(found: list[Finding]) -> str:
    """The submission's one note about its findings (the report and the feedback)."""
    shown = "; ".join(str(finding) for finding in found[:3]) + (f"; and {len(found) - 3} more" if len(found) > 3 else "")
    return (f"on the review list: the code reaches into the course's or the interpreter's machinery ({shown}). The speed "
            f"points and the structure points that rest on the same evidence, of the exercise that holds it, are withheld "
            f"until your instructor has looked")


def summary(found: list[Finding]) -> str:
    """The CSV's review column: empty, or every finding on one line."""
    return " | ".join(str(finding) for finding in found)
