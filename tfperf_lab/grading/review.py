"""The review list: a static reading (Python's `ast`) of every cell a learner wrote, for reaches into the course's
machinery or the interpreter's.

Code in a learner's kernel can patch that kernel (the function that serves the grader, the clock, a trace counter), so
no check that runs there can prove it was not patched. What such a patch has to do is visible in the source, though:
assign into a module or into an object the instructor's cells own, reach `tfperf`'s internals, walk frames, the garbage
collector or the import machinery, write a function's ``__code__`` or a module's ``__dict__``, or build an attribute
name from strings. `review` reads every code cell of a submission that differs from the release (answers, and cells the
learner added or edited), without running anything, and returns one `Finding` per reach. The score stage withholds the
speed points and the structural cells that share their evidence (``metadata.tfperf.review_with``) of a submission with
findings, also when the grader judged its speed, and puts it on the review list (the CSV's ``review`` column, the
report, the formgrader's "needs manual grade"), where a person decides. It must flag no correct answer: every reference
solution and every variant in `tfperf_lab.course.variants` is checked against it (tests/test_review.py).
"""

from __future__ import annotations

import ast
import dataclasses

from ..course import notebook

# Modules whose only use in an answer would be to reach the interpreter's or the grader's machinery.
MACHINERY_MODULES = frozenset({"ctypes", "gc", "inspect", "importlib", "builtins", "_thread", "socket", "marshal", "dis",
                               "code", "codeop", "types", "sysconfig", "faulthandler", "tracemalloc", "pickle", "copyreg"})
# Attributes of the interpreter's objects that lead to code, frames, namespaces and classes.
REACH_ATTRIBUTES = frozenset({"__code__", "__globals__", "__closure__", "__dict__", "__defaults__", "__kwdefaults__",
                              "__builtins__", "__subclasses__", "__bases__", "__mro__", "__getattribute__", "__setattr__",
                              "__func__", "__wrapped__", "__loader__", "__spec__", "__import__", "__reduce__", "__reduce_ex__",
                              "f_back", "f_globals", "f_locals", "f_code", "f_builtins", "gi_frame", "tb_frame", "cr_frame",
                              "co_code", "co_consts"})
SYS_REACHES = frozenset({"modules", "_getframe", "settrace", "setprofile", "meta_path", "path_hooks", "path_importer_cache",
                         "addaudithook", "monitoring", "_current_frames", "setswitchinterval"})
OTHER_REACHES = {"threading": {"settrace", "setprofile", "settrace_all_threads", "setprofile_all_threads"},
                 "os": {"fork", "forkpty", "kill", "killpg", "setsid", "execv", "execve", "execvp", "_exit"}}
NAMESPACE_CALLS = frozenset({"globals", "vars", "locals", "eval", "exec", "compile", "__import__", "breakpoint"})
ATTRIBUTE_CALLS = frozenset({"getattr", "setattr", "delattr", "hasattr"})
# What structural tests read as evidence from TensorFlow's own objects (trace counts, a graph's ops and seal): an answer
# has no reason to define or assign them, on any object, its own classes included.
EVIDENCE = frozenset({"experimental_get_tracing_count", "_get_tracing_count", "get_concrete_function", "function_spec",
                      "pretty_printed_concrete_signatures", "get_operations", "finalized", "_finalized", "finalize",
                      "_make_callable_from_options", "make_callable", "trainable_variables"})
COURSE_PACKAGES = frozenset({"tfperf", "tfperf_lab"})
SERVING = frozenset({"link", "checks", "timing", "report", "selfcheck"})  # tfperf's modules behind assert_speedup


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
        return ast.parse(source_text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _root(node: ast.AST) -> tuple[str | None, list[str]]:
    """``a.b.c`` -> ("a", ["b", "c"]); the root is None when the chain does not start at a plain name."""
    chain = []
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        if isinstance(node, ast.Attribute):
            chain.append(node.attr)
        node = node.func if isinstance(node, ast.Call) else node.value
    return (node.id if isinstance(node, ast.Name) else None), chain[::-1]


@dataclasses.dataclass
class _Owned:
    """What the instructor's cells bind: module aliases (name -> module) and other global names."""

    modules: dict[str, str]
    names: set[str]
    read_attributes: set[str]


def owned(release: dict) -> _Owned:
    """The names the release's protected cells bind (imports, functions, classes, assignments) and the attribute names
    its test cells read."""
    modules: dict[str, str] = {}
    names: set[str] = set()
    read: set[str] = set()
    for cell in release["cells"]:
        if cell.get("cell_type") != "code":
            continue
        tree = _python(notebook.source(cell))
        if tree is None:
            continue
        for node in tree.body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    modules[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                root, chain = _root(node.value)  # an alias of a module's part: v1 = tf.compat.v1
                if root in modules and chain and isinstance(node.value, ast.Attribute):
                    modules[node.targets[0].id] = ".".join([modules[root], *chain])
        if not notebook.is_protected(cell):
            continue
        meta = notebook.nbgrader_meta(cell)
        if notebook.is_read_only(cell):
            names |= set(notebook.bound_names(notebook.source(cell)))
        else:  # a test cell: its helper functions and classes (its scratch variables are its own)
            names |= {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        if meta.get("grade") and not meta.get("solution"):
            read |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    return _Owned(modules, names - set(modules), read)


class _Reader(ast.NodeVisitor):
    """Walks one cell, keeping the names each enclosing function binds (a parameter named ``sess`` is not the global)."""

    def __init__(self, cell: str, lines: list[str], own: _Owned, local_modules: dict[str, str]):
        self.cell, self.lines, self.own = cell, lines, own
        self.modules = dict(own.modules) | local_modules
        self.scopes: list[set[str]] = []
        self.found: list[Finding] = []

    # -- helpers ------------------------------------------------------------------------------------------------------
    def flag(self, node: ast.AST, why: str) -> None:
        line = getattr(node, "lineno", 1)
        code = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        self.found.append(Finding(self.cell, line, code[:160], why))

    def is_global(self, name: str | None) -> bool:
        return name is not None and not any(name in scope for scope in self.scopes)

    def module_of(self, name: str | None) -> str | None:
        return self.modules.get(name) if self.is_global(name) else None

    def course_chain(self, node: ast.AST) -> list[str] | None:
        """The attribute chain after a name bound to the course's package (``tfperf.x.y`` -> [x, y]), or None."""
        root, chain = _root(node)
        module = self.module_of(root)
        if module is None or module.split(".")[0] not in COURSE_PACKAGES:
            return None
        return module.split(".")[1:] + chain

    # -- scopes -------------------------------------------------------------------------------------------------------
    def _function(self, node) -> None:
        for decorator in getattr(node, "decorator_list", []):
            self.visit(decorator)
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(default)
        arguments = node.args
        bound = {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}
        bound |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None}
        body = node.body if isinstance(node.body, list) else [node.body]
        declared_global = {name for child in body for sub in ast.walk(child) if isinstance(sub, ast.Global) for name in sub.names}
        for child in body:
            for sub in ast.walk(child):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    bound.add(sub.id)
                elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    bound.add(sub.name)
                elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                    bound |= {(alias.asname or alias.name).split(".")[0] for alias in sub.names}
        self.scopes.append(bound - declared_global)
        for child in body:
            self.visit(child)
        self.scopes.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    # -- what is flagged ----------------------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._imported(node, alias.name, alias.asname or alias.name.split(".")[0],
                           alias.name if alias.asname else alias.name.split(".")[0])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        for alias in node.names:
            self._imported(node, f"{module}.{alias.name}", alias.asname or alias.name, f"{module}.{alias.name}")

    def _imported(self, node, full: str, bound: str, target: str) -> None:
        parts = full.split(".")
        if parts[0] in MACHINERY_MODULES:
            self.flag(node, f"imports {parts[0]}, the interpreter's machinery")
        elif parts[0] in COURSE_PACKAGES and (len(parts) > 1 and (parts[1] in SERVING or parts[1].startswith("_")) or parts[0] == "tfperf_lab"):
            self.flag(node, "imports the course's grading internals")
        elif parts[0] == "sys" and len(parts) > 1 and parts[1] in SYS_REACHES:
            self.flag(node, f"imports sys.{parts[1]}")
        owned_module = self.own.modules.get(bound)
        if self.is_global(bound) and owned_module is not None and owned_module != target:
            self.flag(node, f"rebinds {bound}, which the lesson's own cells import as {owned_module}")
        elif self.is_global(bound) and bound in self.own.names:
            self.flag(node, f"rebinds {bound}, which the lesson's own cells define")
        if self.is_global(bound):
            self.modules[bound] = target

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in REACH_ATTRIBUTES and node.attr != "__dict__" or node.attr == "__dict__" and not self._self_dict(node):
            self.flag(node, f"reaches {node.attr}")
        root, chain = _root(node)
        module = self.module_of(root)
        if module == "sys" and chain and chain[0] in SYS_REACHES:
            self.flag(node, f"reaches sys.{chain[0]}")
        elif module in OTHER_REACHES and chain and chain[0] in OTHER_REACHES[module]:
            self.flag(node, f"reaches {module}.{chain[0]}")
        course = self.course_chain(node)
        if course and not getattr(node, "_inner", False) and (course[0] in SERVING or any(p.startswith("_") for p in course)):
            self.flag(node, f"reaches tfperf.{'.'.join(course)}, the course's grading internals")
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self._stored(node, root, node.attr)
        self.generic_visit(node)

    def _self_dict(self, node: ast.Attribute) -> bool:
        return isinstance(node.value, ast.Name) and node.value.id in ("self", "cls") and not self.is_global(node.value.id)

    def _stored(self, node: ast.AST, root: str | None, attribute: str) -> None:
        """An attribute assigned or deleted: into a module, an object the lesson's cells own, tfperf, a dunder, or an
        attribute the tests read, on anything but the learner's own ``self``."""
        if attribute.startswith("__") and attribute.endswith("__"):
            self.flag(node, f"assigns {attribute}")
        elif attribute in EVIDENCE:
            self.flag(node, f"assigns {attribute}, which a structural test reads from TensorFlow's own objects")
        elif self.module_of(root) is not None:
            self.flag(node, f"assigns into the module {self.module_of(root)}")
        elif self.is_global(root) and root in self.own.names:
            self.flag(node, f"assigns into {root}, which the lesson's own cells define")
        elif root not in ("self", "cls") and (attribute in self.own.read_attributes or attribute.startswith("_")):
            self.flag(node, f"assigns {attribute}, which the tests read")

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            root, chain = _root(node.value)
            module = self.module_of(root)
            if module == "os" and chain == ["environ"]:
                pass  # setting an environment variable (a TFPERF_ name is flagged as a string anyway)
            elif module is not None and (chain or module.split(".")[0] in COURSE_PACKAGES):
                self.flag(node, f"assigns into the module {self.module_of(root)}")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        function = node.func
        if isinstance(function, ast.Name) and self.is_global(function.id):
            if function.id in NAMESPACE_CALLS and function.id not in self.own.names:
                self.flag(node, f"calls {function.id}(), which reaches namespaces or compiles code")
            elif function.id in ATTRIBUTE_CALLS:
                self._attribute_call(node, function.id)
        self.generic_visit(node)

    def _attribute_call(self, node: ast.Call, name: str) -> None:
        if len(node.args) < 2:
            return
        target, attribute = node.args[0], node.args[1]
        if not (isinstance(attribute, ast.Constant) and isinstance(attribute.value, str)):
            self.flag(node, f"{name}() with an attribute name built at run time")
            return
        if attribute.value in REACH_ATTRIBUTES:
            self.flag(node, f"{name}() of {attribute.value}")
        root, _ = _root(target)
        course = self.course_chain(target)
        if course is not None and (attribute.value in SERVING or attribute.value.startswith("_") or name != "getattr" and name != "hasattr"):
            self.flag(node, f"{name}() on the course's package")
        elif name in ("setattr", "delattr"):
            self._stored(node, root, attribute.value)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for statement in node.body:  # a class of the learner's that answers what a structural test asks TensorFlow
            names = {statement.name} if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) else _top_level_names(statement)
            for name in sorted(names & EVIDENCE):
                self.flag(statement, f"defines {name}, which a structural test reads from TensorFlow's own objects")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and node.value.startswith("TFPERF_"):
            self.flag(node, f"names the grader's variable {node.value}")

    def visit_Global(self, node: ast.Global) -> None:
        for name in node.names:
            if name in self.own.names or name in self.own.modules:
                self.flag(node, f"rebinds {name}, which the lesson's own cells define")

    def visit_Module(self, node: ast.Module) -> None:
        for statement in node.body:  # top-level bindings (imports aside: see _imported) of what the instructor's cells own
            for name in _top_level_names(statement):
                if name in self.own.names:
                    self.flag(statement, f"rebinds {name}, which the lesson's own cells define")
                elif name in self.own.modules:
                    self.flag(statement, f"rebinds {name}, which the lesson's own cells import as {self.own.modules[name]}")
            self.visit(statement)


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
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        stack.extend(ast.iter_child_nodes(node))
    return names


def cell_findings(cell_id: str, source_text: str, own: _Owned, local_modules: dict[str, str] | None = None) -> list[Finding]:
    """The findings of one cell's code (``local_modules``: aliases the learner's earlier cells imported)."""
    tree = _python(source_text)
    if tree is None:
        return []
    reader = _Reader(cell_id, source_text.splitlines(), own, local_modules or {})
    _mark_outermost(tree)
    reader.visit(tree)
    if local_modules is not None:
        local_modules.update({k: v for k, v in reader.modules.items() if k not in own.modules})
    unique = {(f.line, f.why): f for f in reader.found}
    return sorted(unique.values(), key=lambda f: f.line)


def _mark_outermost(tree: ast.AST) -> None:
    """Mark attribute chains so that ``tfperf.link.serve`` is one finding, not one per link of the chain."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
            node.value._inner = True  # type: ignore[attr-defined]


def review(nb: dict, release: dict, source: dict | None = None) -> list[Finding]:
    """Every reach in the code cells of ``nb`` that differ from ``release`` (the release's unchanged cells, and cells
    nbgrader restores from the instructor's copy, are the course's own). What the lesson's cells own and its tests read
    comes from the instructor's ``source`` when there is one (its hidden tests read more), else from the release."""
    own = owned(source or release)
    shipped = {cell.get("id"): cell for cell in release["cells"]}
    local_modules: dict[str, str] = {}
    found: list[Finding] = []
    for index, cell in enumerate(nb["cells"]):
        if cell.get("cell_type") != "code":
            continue
        body = notebook.source(cell)
        original = shipped.get(cell.get("id"))
        if original is not None and notebook.is_protected(original):
            continue  # restored from the instructor's copy before it runs (edits are noted when staging)
        if original is not None and notebook.source(original) == body:
            continue
        found += cell_findings(str(cell.get("id") or f"#{index + 1}"), body, own, local_modules)
    return found


def note(found: list[Finding]) -> str:
    """The submission's one note about its findings (the report and the feedback)."""
    shown = "; ".join(str(finding) for finding in found[:3]) + (f"; and {len(found) - 3} more" if len(found) > 3 else "")
    return (f"on the review list: the code reaches into the course's or the interpreter's machinery ({shown}). Its speed points "
            f"and the structure points that rest on the same evidence are withheld until your instructor has looked")


def summary(found: list[Finding]) -> str:
    """The CSV's review column: empty, or every finding on one line."""
    return " | ".join(str(finding) for finding in found)
