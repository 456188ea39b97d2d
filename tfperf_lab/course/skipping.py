"""Demonstrations a graded run may skip: code cells that neither define what the answers and tests use nor test them.

A lesson's demonstrations (timing the article's step, plotting it, printing what to notice) are most of what grading
runs and nothing the grade reads. `skippable` finds them by reading the cells, before anything runs:

- never skipped: a graded or answer cell (nbgrader's), a locked cell, a cell tagged ``speed-fixture``, the stamped
  setup and self-check cells, a cell the learner changed or added, a cell Python cannot parse (magics, shell), and a
  cell that changes state no name shows: TensorFlow's global switches (check numerics, seeds, devices, eager mode),
  files (writers, ``open``, ``savefig``), the interpreter (``global``, ``del``, ``exec``);
- then, until nothing changes, a cell runs when a cell that runs after it reads a name it binds, or a name it
  changes in place (an attribute or item stored, an augmented assignment, a method called on it: ``history.append``);
  a method called on an imported module (``tf.constant``) changes nothing.

Whether that is enough is not assumed: ``tests/unit/test_skipping.py`` grades every lesson's reference with its
demonstrations skipped and asks for the same points, cell by cell, as a run of every cell. A skipped cell's output in
the graded copy says it was not run and why; `SKIPPED_NOTE` is its text.
"""

from __future__ import annotations

import ast
import re

from . import notebook

FIXTURE_TAG = "speed-fixture"
ALWAYS = {"setup", "self-check"}
SKIPPED_NOTE = ("not run when graded: a demonstration that no answer or test needs, left out to save time; run the "
                "notebook yourself to see its output")
# calls that change state no name carries: TensorFlow's and NumPy's global switches, files, the interpreter
GLOBAL_STATE = re.compile(r"^(enable_|disable_|set_|experimental_set|reset_default_graph$|clear_session$|seed$|"
                          r"run_functions_eagerly$|config$|create_file_writer|savefig$|save$|save_weights$|write|open$|"
                          r"dump$|exec$|eval$|setattr$|delattr$|chdir$|putenv$|environ$|system$|start$|stop$|trace_on$|"
                          r"trace_export$|trace_off$|set_default$|as_default$)")

# methods that change their object even when their value is kept (``losses = model.fit(...)``)
MUTATING = {"append", "extend", "insert", "pop", "popitem", "remove", "clear", "update", "setdefault", "sort", "reverse",
            "add", "discard", "fit", "train_on_batch", "apply_gradients", "minimize", "assign", "assign_add", "assign_sub",
            "scatter_update", "update_state", "reset_state", "reset_states", "run", "shuffle", "fill", "resize", "put",
            "write", "close", "flush", "finalize", "__setitem__", "__call__"}


class _Cell:
    """What one cell binds, reads and changes in place, and whether it touches state no name carries."""

    def __init__(self, text: str):
        self.binds: set[str] = set()
        self.reads: set[str] = set()
        self.changes: set[str] = set()
        self.modules: set[str] = set()
        self.opaque = False
        try:
            tree = notebook.parse(text)
        except SyntaxError:
            self.opaque = True
            return
        for node in tree.body:
            self._bind_top(node)
        # a method called for its effect (its value dropped) changes its object; a chained or kept call changes it
        # only when its name says so (MUTATING): ``base.take(8).map(f)`` builds, ``history.append(x)`` changes
        statements = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                self.reads.add(node.id)
            elif isinstance(node, (ast.Global, ast.Nonlocal, ast.Delete)):
                self.opaque = True
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    self.modules.add((alias.asname or alias.name).split(".")[0])
            elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, (ast.Store, ast.Del)):
                self.changes |= _base_names(node)
            elif isinstance(node, ast.AugAssign):
                self.changes |= _base_names(node.target)
            elif isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id if isinstance(node.func, ast.Name) else ""
                if GLOBAL_STATE.match(name):
                    self.opaque = True
                if isinstance(node.func, ast.Attribute) and (node.func.attr in MUTATING or id(node) in statements):
                    self.changes |= _base_names(node.func.value)

    def _bind_top(self, node: ast.stmt) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.binds.add(node.name)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            self.binds |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
            return
        for child in ast.walk(node):  # assignments, for/with targets, walrus: any Name stored outside a def or class
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                self.binds.add(child.id)


def _base_names(node: ast.AST) -> set[str]:
    """The name an attribute or item chain starts from: ``history["a"].append`` -> {"history"}."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.value if not isinstance(node, ast.Call) else node.func
    return {node.id} if isinstance(node, ast.Name) else set()


def _pinned(cell: dict) -> bool:
    meta = notebook.nbgrader_meta(cell)
    tags = cell.get("metadata", {}).get("tags", [])
    return bool(meta.get("grade") or meta.get("solution") or meta.get("locked")) or FIXTURE_TAG in tags or cell.get("id") in ALWAYS


def skippable(source_nb: dict, submitted: dict | None = None) -> set[str]:
    """Ids of the code cells of ``submitted`` (default: the instructor's ``source_nb``) that grading need not run.

    A cell whose id is not in the source, or whose text differs from the source's cell of that id, is the learner's
    and always runs (its reads count like a test's).
    """
    submitted = source_nb if submitted is None else submitted
    original = {cell.get("id"): notebook.source(cell) for cell in source_nb["cells"] if cell.get("cell_type") == "code"}
    cells = [cell for cell in submitted["cells"] if cell.get("cell_type") == "code"]
    read = [_Cell(notebook.source(cell)) for cell in cells]
    ids = [cell.get("id") for cell in cells]
    if len(set(ids)) != len(ids):
        return set()  # cells that share an id: nothing is skipped
    runs = [_pinned(cell) or original.get(cell.get("id")) != notebook.source(cell) or info.opaque
            for cell, info in zip(cells, read)]
    changed = True
    while changed:
        changed = False
        for later in range(len(cells)):
            if not runs[later]:
                continue
            needed = read[later].reads
            for earlier in range(later):
                if runs[earlier]:
                    continue
                info = read[earlier]
                if needed & (info.binds | (info.changes - info.modules - _imported(read, earlier))):
                    runs[earlier] = changed = True
    return {cell_id for cell_id, run in zip(ids, runs) if not run}


def _imported(read: list[_Cell], upto: int) -> set[str]:
    """Names bound by an import in the cells before ``upto`` (calling a module's function changes nothing)."""
    return {name for info in read[:upto] for name in info.modules}
