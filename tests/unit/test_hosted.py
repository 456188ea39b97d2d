"""Learners on Colab, Kaggle or a plain Jupyter: badges, the setup cell, and the self-check summary.

The shared cells come from `autograder.stamp`, configured in pyproject's ``[tool.tfperf]``; the
self-check is `tfperf.selfcheck`. The kernel test runs a small notebook in a real Jupyter kernel.
"""

import importlib.util
import inspect
import json
import re
import subprocess
import sys
import tomllib
import types

import nbformat
import pytest
from nbclient import NotebookClient

from tfperf_lab.course import lint, notebook, stamp
from pipeline import COURSE

WHERE = stamp.location(COURSE)
import tfperf
from tfperf import selfcheck

CONFIG = tomllib.loads((COURSE.root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["tfperf"]
LESSONS = COURSE.lessons


def _cell(nb: dict, cell_id: str) -> str:
    (cell,) = [c for c in nb["cells"] if c.get("id") == cell_id]
    return "".join(cell["source"])


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.id)
def test_every_lesson_opens_its_own_student_version_on_colab_and_kaggle(lesson):
    for path in (lesson.source, lesson.release):
        badge = _cell(notebook.read(path), "colab-badge")
        targets = re.findall(r"\]\((https://[^)]+)\)", badge)
        colab = [t for t in targets if t.startswith("https://colab.research.google.com/github/")]
        kaggle = [t for t in targets if t.startswith("https://kaggle.com/kernels/welcome?src=https://github.com/")]
        assert len(colab) == 1 and len(kaggle) == 1, badge
        for url in colab + kaggle:
            owner_name, branch, relative = re.search(r"github(?:\.com)?/([^/]+/[^/]+)/blob/([^/]+)/(.+)$", url).groups()
            assert (owner_name, branch) == (CONFIG["repository"], CONFIG["branch"]), url
            assert relative == f"lessons/{lesson.id}/{lesson.id}.ipynb" and (COURSE.root / relative).is_file(), url


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.id)
def test_every_setup_cell_installs_from_the_configured_repository_and_summary_lists_every_test(lesson):
    nb = notebook.read(lesson.release)
    setup = _cell(nb, "setup")
    assert f"git+https://github.com/{CONFIG['repository']}@{CONFIG['branch']}" in setup
    assert setup.rstrip().endswith("ENV = tfperf.env.setup()")
    first_code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    assert first_code.get("id") == "setup", "the setup cell must be the first code cell"
    assert nb["cells"][-1].get("id") == "self-check"
    tests = [selfcheck.check_name("".join(c["source"])) for c in nb["cells"]
             if c.get("metadata", {}).get("nbgrader", {}).get("grade") and c["cell_type"] == "code"]
    summary = _cell(nb, "self-check")
    assert tests and all(json.dumps(name, ensure_ascii=False) in summary for name in tests), summary


def _preamble() -> str:
    return stamp.setup_source(WHERE).split("\nimport tfperf\n")[0]


def _clear_hosts(monkeypatch):
    for name in ("KAGGLE_KERNEL_RUN_TYPE", "COLAB_RELEASE_TAG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)


HOSTS = {
    "local": ({}, False),
    "colab_tag_only": ({"COLAB_RELEASE_TAG": "release-colab_20260101"}, False),
    "colab_module_only": ({}, True),
    "kaggle": ({"KAGGLE_KERNEL_RUN_TYPE": "Interactive"}, False),
}


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_setup_cell_and_library_detect_the_host_with_one_predicate(monkeypatch, host):
    variables, colab_module = HOSTS[host]
    _clear_hosts(monkeypatch)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    if colab_module:
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    cell = {}
    exec(_preamble().split("\nif importlib.util.find_spec")[0], cell)  # the imports and the predicate only
    assert cell["hosted"]() == tfperf.env.hosted() == {"local": None, "kaggle": "kaggle"}.get(host, "colab")
    assert inspect.getsource(tfperf.env.hosted).rstrip() in _preamble()


def _fake_pip(monkeypatch, returncode=0, stderr=""):
    calls = []

    def run(command, **options):
        calls.append(command)
        return subprocess.CompletedProcess(command, returncode, "", stderr)

    monkeypatch.setattr(subprocess, "run", run)
    return calls


def test_setup_preamble_installs_only_on_a_hosted_notebook_that_lacks_the_helpers(monkeypatch):
    calls, present = _fake_pip(monkeypatch), {"tfperf": None}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: present.get(name, object()))
    _clear_hosts(monkeypatch)
    preamble = _preamble()

    exec(preamble, {})  # local machine without tfperf: the later `import tfperf` explains; no pip
    assert calls == []
    monkeypatch.setenv("KAGGLE_KERNEL_RUN_TYPE", "Interactive")
    exec(preamble, {})
    monkeypatch.delenv("KAGGLE_KERNEL_RUN_TYPE")
    monkeypatch.setenv("COLAB_RELEASE_TAG", "release-colab")  # what tfperf.env calls Colab, the cell installs on
    exec(preamble, {})
    present["tfperf"] = object()  # already installed (second run of the cell): nothing to do
    exec(preamble, {})
    wanted = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", f"git+https://github.com/{CONFIG['repository']}@{CONFIG['branch']}"]
    assert calls == [wanted, wanted]


GIT_FAILED = """  error: subprocess-exited-with-error
  × git clone --filter=blob:none --quiet https://github.com/o/r /tmp/pip-req-build-x did not run successfully.
      fatal: unable to access 'https://github.com/o/r/': Could not resolve host: github.com
note: This error originates from a subprocess, and is likely not a problem with pip."""


@pytest.mark.parametrize("host, advice", [("kaggle", "switch Internet on"), ("colab", "repository opens in a browser")])
def test_a_failed_hosted_install_ends_in_one_message_saying_what_to_do(monkeypatch, host, advice):
    _fake_pip(monkeypatch, returncode=1, stderr=GIT_FAILED)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tfperf" else object())
    _clear_hosts(monkeypatch)
    monkeypatch.setenv({"kaggle": "KAGGLE_KERNEL_RUN_TYPE", "colab": "COLAB_RELEASE_TAG"}[host], "1")
    with pytest.raises(RuntimeError) as raised:
        exec(_preamble(), {})
    message = str(raised.value)
    assert message.startswith(f"Could not install the course helpers from https://github.com/{CONFIG['repository']} (fatal: unable")
    assert advice in message and "\n" not in message
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.id)
def test_every_setup_says_what_to_do_locally_and_on_kaggle_and_nothing_else(lesson):
    for path in (lesson.source, lesson.release):
        cells = notebook.read(path)["cells"]
        ids = [c.get("id") for c in cells]
        assert ids.index("setup-help") == ids.index("setup") - 1, path
        assert _cell({"cells": cells}, "setup-help") == stamp.SETUP_HELP and "Internet" in stamp.SETUP_HELP
        assert not any(stamp.LEGACY_SETUP_HELP.search("".join(c["source"])) for c in cells), f"{path}: the old pip-only sentence"


def test_stamping_is_idempotent_and_lint_flags_stale_shared_cells():
    nb = notebook.read(LESSONS[0].source)
    assert stamp.stamped(nb, WHERE) == nb and stamp.problems(nb, WHERE) == []
    stale = json.loads(json.dumps(nb))
    stale["metadata"]["tfperf"]["lesson"] = "99_elsewhere"  # badge now points at the wrong lesson
    assert any("colab-badge" in p for p in lint.shared_cells(stale, WHERE))
    moved = json.loads(json.dumps(nb))
    moved["cells"].append(nbformat.v4.new_markdown_cell("a cell added after the summary"))
    assert any("self-check" in p for p in lint.shared_cells(moved, WHERE))
    assert stamp.problems(stamp.stamped(moved, WHERE), WHERE) == []


def test_exercise_table_groups_checks_under_their_exercise_heading_with_points():
    nb = {"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "## 3. Exercise 1: a wrapper (3 points)"},
        {"cell_type": "code", "metadata": {"nbgrader": {"grade": True, "solution": False, "points": 2}}, "source": '"""Check that A."""\nassert 1'},
        {"cell_type": "markdown", "metadata": {}, "source": "### Exercise B: another (1 point)\n\ntext"},
        {"cell_type": "code", "metadata": {"nbgrader": {"grade": True, "solution": False, "points": 1}}, "source": '"""Check that B."""\nassert 1'},
        {"cell_type": "markdown", "metadata": {"nbgrader": {"grade": True, "solution": True, "points": 2}}, "source": "answer"},
        {"cell_type": "markdown", "metadata": {}, "source": "## 5. All together: the whole trainer (5 points)\n\nNothing to write."},
        {"cell_type": "code", "metadata": {"nbgrader": {"grade": True, "solution": False, "points": 5}}, "source": '"""Check that C."""\nassert 1'},
        {"cell_type": "markdown", "metadata": {}, "source": "## 6. Why it failed (2 points, graded by hand)"},
        {"cell_type": "code", "metadata": {"nbgrader": {"grade": True, "solution": False, "points": 1}}, "source": '"""Check that D."""\nassert 1'},
    ]}
    assert stamp.exercises(nb) == ({"Exercise 1: a wrapper": [("Check that A.", 2)], "Exercise B: another": [("Check that B.", 1)],
                                    "All together: the whole trainer": [("Check that C.", 5), ("Check that D.", 1)]}, 2)


@pytest.fixture
def fresh_outcomes(monkeypatch):
    monkeypatch.setattr(selfcheck, "_OUTCOMES", {})
    monkeypatch.setattr(selfcheck, "_PENDING", [])


def test_summary_counts_passed_failed_and_not_run_checks(fresh_outcomes):
    assert selfcheck.record_cell("x = 1", None) is None
    selfcheck.note("measured 1.10x (CI 0.90-1.30x), needs at least 2x")
    failed = selfcheck.record_cell('"""Check that it is fast."""\nassert False', AssertionError("too slow\nmore"))
    assert failed == selfcheck.Outcome("Check that it is fast.", False, "AssertionError: too slow",
                                       ("measured 1.10x (CI 0.90-1.30x), needs at least 2x",))
    selfcheck.record_cell('"""Check   that it\n  works."""', None)
    text = selfcheck.summary_text({"Exercise 1": [("Check that it works.", 2), ("Check that it is fast.", 1)],
                                   "Exercise 2": [("Check that it is new.", 3)]}, hand_graded=1)
    lines = text.splitlines()
    assert lines[0] == "Self-check: 1 of 3 test cells pass (2 of 6 autograded points)"
    assert lines[1] == "Exercise 1: 2 of 3 points from the visible tests"
    assert lines[2] == "  ✔ 2 pt  Check that it works."
    assert lines[3].startswith("  ✘ 1 pt  Check that it is fast.  [AssertionError: too slow; measured 1.10x")
    assert lines[5] == "  · 3 pt  not run yet: Check that it is new."
    assert "Written answers (1 point)" in text and "tfperf-lab check" in text


def test_unanswered_exercise_is_named_as_such(fresh_outcomes):
    outcome = selfcheck.record_cell('"""Check that x."""', NotImplementedError())
    assert "not written yet" in outcome.error


def test_test_cells_report_themselves_in_a_real_kernel(tmp_path):
    cells = [
        "import tfperf\nassert tfperf.selfcheck.install() and tfperf.selfcheck.install()",
        '"""Check that this passes."""\nassert 1 + 1 == 2',
        '"""Check that this fails."""\nassert 1 + 1 == 3, "arithmetic"',
        "tfperf.selfcheck.summary({'Exercise 1': [('Check that this passes.', 1), ('Check that this fails.', 2)]})",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}).execute()

    def stdout(cell):
        return "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout")

    assert not any(o.get("name") == "stderr" for c in nb.cells for o in c.outputs), "the hook must never write to stderr"
    assert stdout(nb.cells[0]) == "", "an ordinary cell gets no self-check line"
    assert stdout(nb.cells[1]) == "self-check: ✔ Check that this passes.\n"
    assert stdout(nb.cells[2]) == "self-check: ✘ Check that this fails.  [AssertionError: arithmetic]\n"
    assert stdout(nb.cells[3]).startswith("Self-check: 1 of 2 test cells pass (1 of 3 autograded points)\n")
    assert "outputs" not in nb.cells[3] or not any(o.get("output_type") == "execute_result" for o in nb.cells[3].outputs)


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.id)
def test_read_only_cells_say_what_the_grader_does_with_them(lesson):
    for path in (lesson.source, lesson.release):
        for cell in notebook.read(path)["cells"]:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if cell["cell_type"] == "code" and meta.get("locked") and not meta.get("grade"):
                assert "".join(cell["source"]).startswith(stamp.READ_ONLY_NOTE), f"{path.name}: {cell.get('id')}"
