"""The house keeps its shape: no import cycles, the learner library never imports the tool, one job per module."""

import ast
import pathlib

import pytest

from pipeline import ROOT

PACKAGES = ("tfperf", "tfperf_lab")


def _imports(package: str) -> dict[str, set[str]]:
    """module -> modules of the same package it imports (at the top or inside a function)."""
    graph = {}
    for path in sorted((ROOT / package).glob("*.py")):
        name = path.stem
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                found |= {node.module.split(".")[0]} if node.module else {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(f"{package}."):
                found.add(node.module.split(".")[1])
        graph[name] = found - {name, "__init__"}
    return graph


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


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycles(package):
    assert _cycle(_imports(package)) is None, f"import cycle: {' -> '.join(_cycle(_imports(package)))}"


def test_the_cycle_finder_finds_one():
    assert _cycle({"plots": {"timing"}, "timing": {"plots"}}) == ["plots", "timing", "plots"]


def test_the_learner_library_never_imports_the_tool_or_its_packages():
    for path in (ROOT / "tfperf").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            bad = [n for n in names if n.split(".")[0] in ("tfperf_lab", "nbgrader", "nbconvert", "nbclient", "tqdm")]
            assert not bad, f"{path.name} imports {bad}: the learner library must install and import alone"


def test_every_module_says_its_one_job():
    for package in PACKAGES:
        for path in (ROOT / package).glob("*.py"):
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
            assert path.name == "__main__.py" or (doc and len(doc.split()) >= 5), f"{package}/{path.name} has no docstring saying its job"


def test_only_the_command_line_exits():
    for path in (ROOT / "tfperf_lab").glob("*.py"):
        if path.name in ("cli.py", "__main__.py", "runner.py", "sandbox.py", "reference.py"):
            continue  # the command line, and the three programs that run as processes of their own
        text = path.read_text(encoding="utf-8")
        assert "SystemExit" not in text and "sys.exit(" not in text, f"{path.name}: library code raises; only cli.py exits"
