"""Issue 50 item 9: every parse of code the grader does goes through `notebook.parse`, under one lock.

CPython 3.11 fails two ``ast.parse`` calls that run at once in threads ("SystemError: AST constructor recursion depth
mismatch", python/cpython#106905); a class is graded by several threads, and one such failure gave an honest student 0.
Two witnesses: no module of the grader calls the parser any other way (read from the sources), and staging, reviewing
and leaving out the demonstrations of real lessons parse only while the lock is held (seen at run time)."""

import ast
import pathlib
import threading

import pytest

import tfperf_lab
from tfperf_lab.course import Course, notebook, skipping
from tfperf_lab.grading import review, stage

PACKAGE = pathlib.Path(tfperf_lab.__file__).parent
ROOT = PACKAGE.parent


def _parses_outside_the_lock(path: pathlib.Path, root: pathlib.Path = ROOT) -> list[str]:
    """Calls that parse code without `notebook.parse`: ``ast.parse``, ``ast.literal_eval`` of a string, ``compile``,
    and ``from ast import parse``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    allowed = set()
    if path.name == "notebook.py" and path.parent.name == "course":
        parse_def = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "parse")
        allowed = {id(node) for node in ast.walk(parse_def)}
    found = []
    for node in ast.walk(tree):
        if id(node) in allowed:
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "ast" and any(a.name in ("parse", "literal_eval") for a in node.names):
            found.append(f"{path.relative_to(root)}:{node.lineno}: from ast import {', '.join(a.name for a in node.names)}")
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "ast" and func.attr == "parse":
            found.append(f"{path.relative_to(root)}:{node.lineno}: ast.parse")
        elif isinstance(func, ast.Attribute) and func.attr == "literal_eval" and node.args and isinstance(node.args[0], ast.Constant):
            found.append(f"{path.relative_to(root)}:{node.lineno}: ast.literal_eval of a string")
        elif isinstance(func, ast.Name) and func.id == "compile":
            found.append(f"{path.relative_to(root)}:{node.lineno}: compile")
    return found


def test_the_grader_parses_code_only_through_the_one_lock():
    found = [line for path in sorted(PACKAGE.rglob("*.py")) for line in _parses_outside_the_lock(path)]
    assert not found, "parses outside notebook.parse (CPython 3.11 races them across grading threads):\n" + "\n".join(found)


def test_the_source_check_sees_a_parse_outside_the_lock(tmp_path):
    sneaky = tmp_path / "sneaky.py"
    sneaky.write_text("import ast\nfrom ast import parse\n\ndef f(text):\n    return ast.parse(text), compile(text, 'x', 'exec')\n")
    found = [line.split(": ", 1)[1] for line in _parses_outside_the_lock(sneaky, tmp_path)]
    assert found == ["from ast import parse", "ast.parse", "compile"], found


@pytest.fixture
def watched(monkeypatch):
    """Every ``ast.parse`` call from now on, with whether the course's parse lock was held."""
    calls = []
    original = ast.parse

    def parse(*args, **kwargs):
        calls.append(notebook._PARSING.locked())
        return original(*args, **kwargs)

    monkeypatch.setattr(ast, "parse", parse)
    return calls


def test_staging_reviewing_and_skipping_real_lessons_parse_under_the_lock(watched, tmp_path):
    course = Course.find(ROOT)
    for lesson in course.lessons[:3]:
        folder = tmp_path / "class" / "ana"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{lesson.id}.ipynb"
        notebook.write(lesson.source_notebook(), path)
        staged = stage.stage(course, path, "ana", within=tmp_path / "class")
        review.review(staged.notebook, lesson.release_notebook(), lesson.source_notebook())
        skipping.skippable(lesson.source_notebook(), staged.notebook)
    assert watched, "nothing was parsed: the watch saw nothing"
    assert all(watched), f"{watched.count(False)} of {len(watched)} parses ran outside the lock"


def test_threads_parse_every_lesson_cell_at_once_without_error():
    course = Course.find(ROOT)
    texts = [notebook.source(cell) for lesson in course.lessons for cell in lesson.source_notebook()["cells"]
             if cell.get("cell_type") == "code"]
    errors = []

    def work():
        for _ in range(3):
            for text in texts:
                try:
                    notebook.parse(text)
                except SyntaxError:
                    pass
                except Exception as error:  # noqa: BLE001
                    errors.append(repr(error))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[:3]
