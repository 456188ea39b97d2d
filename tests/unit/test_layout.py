"""The house keeps its shape: folders on floors, imports only downward, no cycles, one job per module.

``tfperf_lab``'s folders are floors: a module imports its own folder and the floors below, never a floor above or a
folder beside it on the same floor. Only ``grading`` (and the command line above it) may import nbgrader. The learner
library (``tfperf``) imports nothing of the tool. The README's Layout section and each folder's docstring name the
same modules the folder holds.
"""

import ast
import pathlib
import re

import pytest

from pipeline import ROOT

# floor of each folder of tfperf_lab; "" is the package's own top (cli.py, __main__.py)
FLOORS = {"course": 0, "isolation": 1, "speed": 2, "publish": 3, "grading": 4, "": 5}
NBGRADER = ("nbgrader",)
ALLOWED_NBGRADER = {"grading", ""}


def _modules(package: str) -> dict[str, pathlib.Path]:
    """dotted module name (relative to the package) -> file, e.g. 'grading.batch', 'cli', 'course' (its __init__)."""
    found = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(ROOT / package).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _resolve(package: str, module: str, is_init: bool, node: ast.ImportFrom, modules) -> list[str]:
    """The package-relative modules an ImportFrom reads: ``from X import a`` is X.a when a is a submodule, else X."""
    if node.level:
        parts = module.split(".") if module else []
        base = parts if is_init else parts[:-1]  # the folder the importing module sits in
        base = base[: len(base) - (node.level - 1)]
        prefix = base + (node.module.split(".") if node.module else [])
    elif (node.module or "").split(".")[0] == package:
        prefix = node.module.split(".")[1:]
    else:
        return []
    return [".".join(prefix + [alias.name]) if ".".join(prefix + [alias.name]) in modules else ".".join(prefix) for alias in node.names]


def _graph(package: str) -> dict[str, set[str]]:
    """module -> modules of the same package it imports (at the top or inside a function)."""
    modules = _modules(package)
    graph = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                found |= {m for m in _resolve(package, name, path.name == "__init__.py", node, modules) if m in modules}
        graph[name] = found - {name, ""}
    return graph


def _folder(module: str) -> str:
    return module.split(".")[0] if "." in module or module in FLOORS else ""


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}

    def visit(node, path):
        state[node] = 1
        for child in sorted(graph.get(node, ())):
            if state.get(child) == 1:
                return path + [child]
            if child not in state:
                found = visit(child, path + [child])
                if found:
                    return found
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [node])
            if found:
                return found
    return None


@pytest.mark.parametrize("package", ["tfperf", "tfperf_lab"])
def test_no_import_cycles(package):
    graph = _graph(package)
    assert _cycle(graph) is None, f"import cycle: {' -> '.join(_cycle(graph))}"


def test_the_cycle_finder_finds_one():
    assert _cycle({"plots": {"timing"}, "timing": {"plots"}}) == ["plots", "timing", "plots"]


def test_the_graph_sees_relative_imports_across_folders():
    graph = _graph("tfperf_lab")
    assert "course.lessons" in graph["grading.batch"] or "course" in graph["grading.batch"], graph["grading.batch"]
    assert "speed.timer" in graph["speed.judge"], graph["speed.judge"]


def test_every_module_of_the_tool_sits_in_a_folder_with_a_floor():
    strays = [m for m in _modules("tfperf_lab") if _folder(m) not in FLOORS]
    assert not strays, f"modules outside the floors {sorted(FLOORS)}: {strays}"
    top = [m for m in _modules("tfperf_lab") if "." not in m and m not in FLOORS]
    assert sorted(top) == ["__main__", "cli"], f"only the command line sits at the top of tfperf_lab/: {top}"


def _upward(graph: dict[str, set[str]]) -> list[str]:
    """Imports that run up a floor or sideways to another folder of the same floor."""
    return sorted(f"{module} -> {other}" for module, imported in graph.items() for other in imported
                  if _folder(other) != _folder(module) and FLOORS[_folder(other)] >= FLOORS[_folder(module)])


def test_imports_only_go_down_a_floor_or_stay_in_the_folder():
    assert not _upward(_graph("tfperf_lab")), f"imports that run up or sideways ({FLOORS}): {_upward(_graph('tfperf_lab'))}"


def test_the_floor_rule_finds_an_import_up_and_one_sideways(monkeypatch):
    monkeypatch.setitem(FLOORS, "beside", FLOORS["speed"])  # a folder on speed's floor
    graph = {"publish.readme": {"grading.flake", "course.variants"}, "isolation.sandbox": {"speed.judge"},
             "speed.judge": {"isolation.contract", "beside.thing"}, "grading.batch": {"speed.judge"}}
    assert _upward(graph) == ["isolation.sandbox -> speed.judge", "publish.readme -> grading.flake", "speed.judge -> beside.thing"]


def _third_party(path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add((node.module or "").split(".")[0])
    return names


def test_only_grading_and_the_command_line_import_nbgrader():
    wrong = [module for module, path in _modules("tfperf_lab").items()
             if _folder(module) not in ALLOWED_NBGRADER and _third_party(path) & set(NBGRADER)]
    assert not wrong, f"import nbgrader but do not grade: {wrong}"


def test_the_learner_library_never_imports_the_tool_or_its_packages():
    for path in (ROOT / "tfperf").glob("*.py"):
        bad = _third_party(path) & {"tfperf_lab", "nbgrader", "nbconvert", "nbclient", "tqdm"}
        assert not bad, f"{path.name} imports {bad}: the learner library must install and import alone"


def test_every_module_says_its_one_job():
    for package in ("tfperf", "tfperf_lab"):
        for name, path in _modules(package).items():
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
            assert path.name == "__main__.py" or (doc and len(doc.split()) >= 5), f"{package}/{name} has no docstring saying its job"


def test_each_folders_docstring_and_the_readme_name_what_the_folder_holds():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    layout = readme[readme.index("## Layout"):]
    layout = layout[: layout.find("\n## ", 3)] if "\n## " in layout[3:] else layout
    modules = _modules("tfperf_lab")
    for folder in (f for f in FLOORS if f):
        doc = ast.get_docstring(ast.parse((ROOT / "tfperf_lab" / folder / "__init__.py").read_text(encoding="utf-8")))
        held = sorted(m.split(".")[1] for m in modules if m.startswith(f"{folder}."))
        missing = [m for m in held if not re.search(rf"`{m}`", doc)]
        assert not missing, f"tfperf_lab/{folder}/__init__.py's docstring does not name {missing}"
        assert f"{folder}/" in layout, f"the README's Layout section does not show tfperf_lab/{folder}/"
        unnamed = [m for m in held if not re.search(rf"\b{m}\b", layout)]
        assert not unnamed, f"the README's Layout section does not name {unnamed} of tfperf_lab/{folder}/"


def test_only_the_command_line_exits():
    programs = {"cli", "__main__", "isolation.runner", "isolation.sandbox", "speed.reference", "speed.timer",
                "speed.zygote", "grading.exports.gradescope_autograder", "grading.exports.prairielearn"}
    for name, path in _modules("tfperf_lab").items():
        if name in programs:
            continue  # the command line, and the programs that run as processes of their own
        text = path.read_text(encoding="utf-8")
        assert "SystemExit" not in text and "sys.exit(" not in text, f"{name}: library code raises; only cli.py exits"


def _marks(path: pathlib.Path) -> tuple[set[str], set[str]]:
    """The names of the module-level ``pytestmark`` and every decorator of a test file's test functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module, tests = set(), set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets):
            module.add(ast.unparse(node.value))
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            tests |= {ast.unparse(d) for d in node.decorator_list}
    return module, tests


def test_the_tests_are_mirrored_by_floor():
    """tests/unit holds no pipeline test (`pytest tests/unit` grades nothing through nbgrader), every file of
    tests/grading holds one, and every test of tests/root skips without root; helpers sit at the top, no test file does."""
    folders = {path.name for path in (ROOT / "tests").iterdir() if path.is_dir() and not path.name.startswith("__")}
    assert folders == {"unit", "grading", "root"}, folders
    assert not list((ROOT / "tests").glob("test_*.py")), "a test file outside its floor's folder"
    for path in (ROOT / "tests" / "unit").glob("test_*.py"):
        module, tests = _marks(path)
        assert not any("pipeline" in mark for mark in module | tests), f"{path.name}: a pipeline test in tests/unit"
    for path in (ROOT / "tests" / "grading").glob("test_*.py"):
        module, tests = _marks(path)
        assert any("pipeline" in mark for mark in module | tests), f"{path.name}: no pipeline test, so it belongs in tests/unit"
    text = (ROOT / "tests" / "root" / "test_cgroups_root.py").read_text(encoding="utf-8")
    tree = ast.parse(text)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            marks = {ast.unparse(d) for d in node.decorator_list}
            assert any("needs_root" in mark or "geteuid" in mark for mark in marks), f"{node.name} runs without root"
