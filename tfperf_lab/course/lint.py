"""Rules every lesson notebook follows; each rule returns a list of problems (empty when fine).

Used by the test suite on every source and student notebook, and by ``tfperf-lab lint``.
"""

from __future__ import annotations

import ast
import pathlib
import re

from . import notebook
from .lessons import Course, run_time_text

GRADE_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
REQUIRED_META = ("lesson", "title", "technique", "article", "measures", "claim", "minutes")


def _nbgrader(cell: dict) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def no_outputs(nb: dict) -> list[str]:
    return [f"cell {i} ({c.get('id')}) has outputs or an execution count: strip it before committing"
            for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code" and (c.get("outputs") or c.get("execution_count"))]


def grade_metadata(nb: dict) -> list[str]:
    problems, seen = [], set()
    for i, cell in enumerate(nb["cells"]):
        meta = _nbgrader(cell)
        if not meta:
            continue
        where = f"cell {i} ({meta.get('grade_id')})"
        if meta.get("schema_version") != 3:
            problems.append(f"{where}: nbgrader schema_version must be 3")
        grade_id = meta.get("grade_id", "")
        if not GRADE_ID.match(grade_id):
            problems.append(f"{where}: grade_id {grade_id!r} must match {GRADE_ID.pattern}")
        if grade_id in seen:
            problems.append(f"{where}: grade_id {grade_id!r} is used twice")
        seen.add(grade_id)
        if cell.get("id") != grade_id:
            problems.append(f"{where}: the cell id should equal the grade_id so cells can be matched if metadata is lost")
        if meta.get("grade") and not (isinstance(meta.get("points"), (int, float)) and meta["points"] > 0):
            problems.append(f"{where}: a graded cell needs points > 0")
        if meta.get("grade") and cell["cell_type"] == "markdown" and not meta.get("solution"):
            problems.append(f"{where}: a graded markdown cell must also be a solution cell")
    return problems


def _parse(source: str) -> list:
    try:
        return notebook.parse(source).body
    except SyntaxError:
        return []


def _value_expression(statement) -> bool:
    """An expression statement that may display a value (tfperf's assert_* helpers return None)."""
    if not isinstance(statement, ast.Expr) or isinstance(statement.value, ast.Constant):
        return False
    call = statement.value
    name = getattr(getattr(call, "func", None), "attr", None) or getattr(getattr(call, "func", None), "id", None)
    return not (isinstance(call, ast.Call) and name and name.startswith("assert_"))


def test_cells(nb: dict) -> list[str]:
    """Test cells end in a statement, open with a docstring and keep a visible assert."""
    problems = []
    for i, cell in enumerate(nb["cells"]):
        meta = _nbgrader(cell)
        if cell["cell_type"] != "code" or not meta.get("grade") or meta.get("solution"):
            continue
        where = f"test cell {i} ({meta.get('grade_id')})"
        source = notebook.source(cell)
        try:
            body = notebook.parse(source).body
        except SyntaxError as error:
            problems.append(f"{where}: syntax error {error}")
            continue
        if not body or not (isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant)
                            and str(body[0].value.value).startswith("Check that")):
            problems.append(f"{where}: should open with a \"Check that ...\" docstring")
        visible = notebook.visible(source)
        for version, tree in (("", body), (" (student version)", _parse(visible))):
            if tree and _value_expression(tree[-1]):
                problems.append(f"{where}{version}: ends in an expression, whose value nbgrader would take as the score")
        if not re.search(r"\bassert\b|tfperf\.assert_", visible):
            problems.append(f"{where}: has no visible assert")
    return problems


def structure(nb: dict) -> list[str]:
    """One H1, an Overview before any code, a Setup section, and the tfperf metadata."""
    problems = []
    markdown = [notebook.source(c) for c in nb["cells"] if c["cell_type"] == "markdown"]
    h1 = [line for text in markdown for line in text.splitlines() if line.startswith("# ")]
    if len(h1) != 1:
        problems.append(f"needs exactly one H1 title; found {len(h1)}")
    first_code = next((i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"), len(nb["cells"]))
    before = " ".join(notebook.source(c) for c in nb["cells"][:first_code] if c["cell_type"] == "markdown")
    if "## Overview" not in before:
        problems.append("needs an '## Overview' section before the first code cell")
    if not any(text.lstrip().startswith("## Setup") for text in markdown):
        problems.append("needs a '## Setup' section")
    meta = nb.get("metadata", {}).get("tfperf", {})
    missing = [key for key in REQUIRED_META if key not in meta]
    if missing:
        problems.append(f"metadata.tfperf lacks {missing}")
    elif "study" not in meta["minutes"]:
        problems.append("metadata.tfperf.minutes needs 'study': the minutes a learner needs to work through the lesson")
    elif markdown and "full" in meta["minutes"] and "grading" in meta["minutes"]:
        promise = run_time_text(meta["minutes"]["full"], meta["minutes"]["grading"], meta["minutes"].get("study", 0))
        if promise not in " ".join(markdown[0].split()):
            problems.append(f"the first cell must state the run time of metadata.tfperf.minutes: '{promise}'")
    return problems


def baselines_read_only(nb: dict) -> list[str]:
    """Functions and classes that a speed test times are defined in read-only (locked) cells, so no answer can slow them."""
    defined = {}
    for cell in nb["cells"]:
        meta = _nbgrader(cell)
        if cell["cell_type"] != "code" or meta.get("grade") or meta.get("solution") or notebook.is_read_only(cell):
            continue
        for node in _parse(notebook.source(cell)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined[node.name] = cell.get("id")
    problems = []
    for cell in nb["cells"]:
        source = notebook.source(cell)
        if cell["cell_type"] != "code" or not _nbgrader(cell).get("grade") or "assert_speedup(" not in source:
            continue
        tree = ast.Module(body=_parse(source), type_ignores=[])
        local = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - local
        problems += [f"speed test {_nbgrader(cell).get('grade_id')} uses {name}, defined in cell {defined[name]}, which is not read-only "
                     f"(lock it: nbgrader grade=false, solution=false, locked=true)" for name in sorted(used & defined.keys())]
    return problems


def speed_fixtures(nb: dict) -> list[str]:
    """Every graded speed test can run in the grader's reference process (`tfperf_lab.speed.reference`): it draws fresh inputs
    (``draw=``, never a fixed ``inputs=`` pool), and every name it reads is bound by an earlier ``speed-fixture`` cell."""
    import builtins


    bound: set[str] = set(dir(builtins))
    problems = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = notebook.source(cell)
        meta = _nbgrader(cell)
        if meta.get("grade") and "assert_speedup(" in source:
            grade_id = meta.get("grade_id")
            calls = [n for n in ast.walk(ast.Module(body=_parse(source), type_ignores=[]))
                     if isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", None)) == "assert_speedup"]
            for call in calls:
                keywords = {k.arg for k in call.keywords}
                if "inputs" in keywords or "draw" not in keywords:
                    problems.append(f"speed test {grade_id} must give draw= (fresh inputs the grader can seed), not inputs=")
            tree = ast.Module(body=_parse(source), type_ignores=[])
            local = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            local |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
            local |= {a.arg for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.Lambda)) for a in n.args.args + n.args.kwonlyargs}
            local |= {(a.asname or a.name).split(".")[0] for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
            used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
            missing = sorted(used - local - bound)
            if missing:
                problems.append(f"speed test {grade_id} reads {', '.join(missing)}, which no earlier '{notebook.FIXTURE_TAG}' cell binds: "
                                f"the grader's reference process could not run it (tag the cells that define them)")
            bound |= local
        elif notebook.FIXTURE_TAG in cell.get("metadata", {}).get("tags", []):
            bound |= set(notebook.bound_names(source))
    return problems


def shared_cells(nb: dict, where: tuple[str, str]) -> list[str]:
    """The Colab/Kaggle badges, the setup cell and the self-check summary match `tfperf_lab.course.stamp` for ``where`` (repository, branch)."""
    from . import stamp

    return stamp.problems(nb, where)


RULES = (no_outputs, grade_metadata, test_cells, structure, baselines_read_only, speed_fixtures)


def lint(course: Course, path: pathlib.Path) -> list[str]:
    """Every problem of one notebook, each prefixed with its path."""
    from . import figures, prose, stamp

    nb = notebook.read(path)
    found = [problem for rule in RULES for problem in rule(nb)] + shared_cells(nb, stamp.location(course))
    lesson_id = nb.get("metadata", {}).get("tfperf", {}).get("lesson")
    if lesson_id in {lesson.id for lesson in course.lessons}:
        found += figures.problems(nb, lesson_id, figures.recorded(), generated=(course.lesson(lesson_id).run_time_text,))
        found += prose.problems(nb)
    return [f"{path}: {problem}" for problem in found]
