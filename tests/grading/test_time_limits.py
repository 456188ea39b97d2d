"""Issue 50 item 4: a time limit never takes points already earned. The sandbox's runner holds the notebook's limit
itself (`tfperf_lab.isolation.runner.Budget`, a reserve before the host's hard kill): the cell that uses it up is
stopped and named, the cells after it are not run, and every cell before it keeps its points. A kernel that dies in a
late cell likewise costs only that cell and the ones after it. A pause of the whole job (the judge freezes it while
other jobs are timed) does not eat the notebook's time. Graded on the tiny lesson (tests/tiny_course.py)."""

import contextlib
import csv
import io
import json
import os
import signal
import subprocess
import sys
import time

import nbformat
import pytest

from tfperf_lab import cli
from tfperf_lab.course import WorkFolder
from tfperf_lab.grading.results import SubmissionResult
from tfperf_lab.isolation import backends, runner
from tfperf_lab.isolation.contract import Limits
from pipeline import write_submission
import tiny_course

pytestmark = pytest.mark.pipeline
needs_bwrap = pytest.mark.skipif(backends.Bubblewrap().problem() is not None, reason="bubblewrap cannot run here")
EARNED = {"scale_matches": 2.0, "scale_rejects_matrices": 1.0, "scale_has_no_loop": 1.0, "scale_is_faster": 2.0}


def _code(cell_id: str, source: str) -> dict:
    return {"cell_type": "code", "id": cell_id, "metadata": {}, "source": source, "outputs": [], "execution_count": None}


def _answer_that(nb: dict, does: str) -> dict:
    """``nb`` whose answer does ``does`` when given a matrix: in the test cell scale_rejects_matrices, after
    scale_matches passed (test cells are locked: nbgrader puts the release's back, so the answer carries it)."""
    cell = next(c for c in nb["cells"] if c.get("id") == tiny_course.ANSWER)
    text = "".join(cell["source"])
    assert "    if values.ndim != 1:\n" in text
    cell["source"] = text.replace("    if values.ndim != 1:\n", f"    if values.ndim != 1:\n        {does}\n", 1)
    return nb


def _class(tiny) -> dict[str, dict]:
    """The three notebooks a limit stops, graded together (two workers, as a class is)."""
    def source():
        return tiny.lesson(tiny_course.LESSON_ID).source_notebook()

    last = source()
    last["cells"].append(_code("endless", "while True:\n    pass\n"))
    return {"ana": last,  # an endless loop in the last cell, after every test
            "ben": _answer_that(source(), "while True:\n            pass"),  # one in a correctness test
            # a segmentation fault in a correctness test (a read far outside an array, not ``os._exit``: the review
            # list holds a submission that reaches ``os``, whatever it does)
            "cal": _answer_that(source(), "float(np.lib.stride_tricks.as_strided(np.zeros(1), shape=(2,), strides=(2**40,))[1])")}


NOTEBOOK_SECONDS = 25


@pytest.fixture(scope="module")
def graded(tiny, tmp_path_factory):
    """student -> (exit code, CSV row, result, seconds the whole grading took, what it printed)."""
    if backends.Bubblewrap().problem() is not None:
        pytest.skip("bubblewrap cannot run here")
    root = tmp_path_factory.mktemp("limits")
    folder, work = root / "class", root / "work"
    for student, nb in _class(tiny).items():
        write_submission(folder, student, tiny.lesson(tiny_course.LESSON_ID), nb)
    printed = io.StringIO()
    began = time.monotonic()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        code = cli.main(["--course", str(tiny.root), "grade", str(folder), "--work", str(work), "--workers", "2",
                         "--notebook-seconds", str(NOTEBOOK_SECONDS)])
    seconds = time.monotonic() - began
    with (work / "grades.csv").open(encoding="utf-8") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    found = {}
    for student in _class(tiny):
        state = json.loads(WorkFolder(work).state(student, tiny_course.LESSON_ID).read_text(encoding="utf-8"))
        found[student] = (code, rows[student], SubmissionResult.from_dict(state["result"]), seconds, printed.getvalue())
    return found


@needs_bwrap
def test_an_endless_loop_in_the_last_cell_costs_only_that_cell(graded):
    """The notebook's limit (25 s) hits long before the cell's (300 s): the loop is stopped and named, and every test
    that ran before it keeps its points (before, the host killed the sandbox and every cell scored 0 "not run")."""
    code, row, result, seconds, printed = graded["ana"]
    report = "\n".join(result.lines()) + "\n" + printed
    assert code == 0 and row["status"].startswith("graded") and not result.error, report
    assert {cell.id: cell.score for cell in result.cells if cell.id in EARNED} == EARNED, report
    assert all(cell.status == "passed" for cell in result.cells if cell.id in EARNED), report
    assert any("time limit ran out in cell endless" in note for note in result.notes), report
    assert seconds < NOTEBOOK_SECONDS + 20, f"the run took {seconds:.0f} s: stopped by the host's hard kill, not by the runner"


@needs_bwrap
def test_an_endless_loop_in_a_graded_cell_is_stopped_and_the_cells_after_it_are_not_run(graded):
    """The loop in a correctness test: the test before it keeps its points, it is a "timeout" named in the notes, and
    the cells after it are "not run" (never run: their points are lost, not measured)."""
    code, row, result, seconds, printed = graded["ben"]
    report = "\n".join(result.lines()) + "\n" + printed
    cells = {cell.id: cell for cell in result.cells}
    assert code == 0 and not result.error, report
    assert cells["scale_matches"].score == 2.0 and cells["scale_matches"].status == "passed", report
    assert cells["scale_rejects_matrices"].status == "timeout" and cells["scale_rejects_matrices"].score == 0, report
    assert "notebook's time limit" in cells["scale_rejects_matrices"].message, report
    for later in ("scale_has_no_loop", "scale_is_faster"):
        assert cells[later].status == "not run" and cells[later].score == 0, report
        assert "used up in cell scale_rejects_matrices" in cells[later].message, report
    assert any("time limit ran out in cell scale_rejects_matrices" in note for note in result.notes), report


@needs_bwrap
def test_a_kernel_that_dies_late_costs_only_the_cells_from_there_on(graded):
    """A segmentation fault in a correctness test: the test before it keeps its points, it scores 0 saying the kernel
    died, the cells after it are "not run", and the row is graded (before: "NOT GRADED", every cell 0)."""
    code, row, result, seconds, printed = graded["cal"]
    report = "\n".join(result.lines()) + "\n" + printed
    cells = {cell.id: cell for cell in result.cells}
    assert code == 0 and row["status"].startswith("graded") and not result.error, report
    assert cells["scale_matches"].score == 2.0 and cells["scale_matches"].status == "passed", report
    assert cells["scale_rejects_matrices"].score == 0 and "kernel died" in cells["scale_rejects_matrices"].message, report
    for later in ("scale_has_no_loop", "scale_is_faster"):
        assert cells[later].status == "not run" and cells[later].score == 0, report
        assert "kernel died in cell scale_rejects_matrices" in cells[later].message, report
    assert any("kernel died while cell scale_rejects_matrices ran" in note for note in result.notes), report


class Clock:
    """A clock the test moves: a frozen process sees time jump between two ticks."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_pause_does_not_eat_the_notebooks_time():
    clock = Clock()
    budget = runner.Budget(30.0, clock=clock)
    for _ in range(50):  # 5 s of ticks
        clock.now += runner.Budget.TICK
        budget.tick()
    assert budget.left() == pytest.approx(25.0)
    clock.now += 12.0  # frozen 12 s: no tick meanwhile
    assert budget.left() == pytest.approx(25.0 - runner.Budget.TICK), "a pause ate the notebook's time"
    for _ in range(10):  # ticks late by under a second (a busy machine) are not pauses
        clock.now += 0.6
        budget.tick()
    assert budget.left() == pytest.approx(19.0 - runner.Budget.TICK)
    clock.now += 20.0 + runner.Budget.TICK  # frozen again: the next look counts it first
    assert budget.left() == pytest.approx(19.0 - 2 * runner.Budget.TICK)


def test_the_runners_budget_is_the_notebooks_limit_less_its_reserve():
    assert runner.reserve(40) == 5.0 and runner.reserve(270) == pytest.approx(13.5)
    assert runner.Budget.of(270, started=0.0).seconds == pytest.approx(256.5)


def test_a_runner_frozen_mid_cell_keeps_its_time(tmp_path):
    """The runner frozen (SIGSTOP, as the cgroup freezer stops it) for 10 s while a cell runs: with 11 s of cells (a
    limit of 16 s less the 5 s reserve), the second cell still runs: the pause did not count."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import time\ntime.sleep(3)"),
                                         nbformat.v4.new_code_cell("print('after the pause')")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    source, out = tmp_path / "in.ipynb", tmp_path / "out.ipynb"
    source.write_text(nbformat.writes(nb), encoding="utf-8")
    process = subprocess.Popen([sys.executable, "-m", runner.__name__, str(source), str(out), "--limits",
                                Limits(wall_seconds=16, startup_seconds=30).to_json(), "--cwd", str(tmp_path)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        time.sleep(3.0)  # the kernel started, the first cell runs
        os.kill(process.pid, signal.SIGSTOP)
        time.sleep(10.0)
        os.kill(process.pid, signal.SIGCONT)
        log, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    executed = json.loads(out.read_text(encoding="utf-8"))
    outputs = executed["cells"][1]["outputs"]
    assert process.returncode == 0 and any("after the pause" in o.get("text", "") for o in outputs), (outputs, log.decode()[-2000:])


def _run_runner(tmp_path, *sources: str, wall_seconds: float = 12) -> tuple[int, list, float, str]:
    """The sandbox's runner on its own (no sandbox): its exit status, the executed cells, its seconds, its log."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    source, out = tmp_path / "in.ipynb", tmp_path / "out.ipynb"
    source.write_text(nbformat.writes(nb), encoding="utf-8")
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", runner.__name__, str(source), str(out), "--limits",
                           Limits(wall_seconds=wall_seconds, startup_seconds=30).to_json(), "--cwd", str(tmp_path)],
                          capture_output=True, timeout=60)
    return done.returncode, json.loads(out.read_text(encoding="utf-8"))["cells"], time.monotonic() - began, done.stderr.decode()[-2000:]


def _errors(cells: list) -> list[list[str]]:
    return [[o.get("ename") for o in cell["outputs"] if o["output_type"] == "error"] for cell in cells]


def test_a_cell_that_ignores_the_interrupt_has_its_kernel_ended_before_the_hosts_kill(tmp_path):
    """A loop that ignores SIGINT: its kernel is ended a few seconds after the interrupt, still inside the limit."""
    status, cells, seconds, log = _run_runner(tmp_path, "print('first')",
                                              "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass",
                                              "print('never')")
    assert status == 0 and _errors(cells) == [[], [runner.NOTEBOOK_LIMIT], [runner.NOT_RUN]], (_errors(cells), log)
    assert "did not stop when interrupted" in cells[1]["outputs"][-1]["evalue"] and seconds < 12, seconds


def test_a_kernel_that_dies_keeps_the_cells_before_it(tmp_path):
    status, cells, seconds, log = _run_runner(tmp_path, "print('first')", "import os\nos._exit(1)", "print('never')")
    assert status == 3 and _errors(cells) == [[], [runner.KERNEL_DIED], [runner.NOT_RUN]], (_errors(cells), log)
    assert "first" in cells[0]["outputs"][0]["text"] and "kernel died in cell" in cells[2]["outputs"][0]["evalue"]


def test_a_runner_without_pauses_stops_the_cell_its_time_runs_out_in(tmp_path):
    """The same runner, no pause, a cell that sleeps past the 7 s of cells: it is stopped and named, the next not run."""
    status, cells, seconds, log = _run_runner(tmp_path, "print('first')", "import time\ntime.sleep(60)", "print('never')")
    assert status == 0 and _errors(cells) == [[], [runner.NOTEBOOK_LIMIT], [runner.NOT_RUN]], (_errors(cells), log)
    assert "first" in cells[0]["outputs"][0]["text"] and seconds < 12, seconds


@needs_bwrap
def test_the_hosts_hard_kill_stays_the_backstop(tmp_path):
    """A kernel that stops its own runner (SIGSTOP to its parent): the runner cannot hold the limit, so the host kills
    the sandbox at the notebook's limit, and nothing comes back (every cell "not run", as before)."""
    from tfperf_lab.isolation import sandbox

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import os, signal, time\nos.kill(os.getppid(), signal.SIGSTOP)\ntime.sleep(60)")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    began = time.monotonic()
    outcome = sandbox.run(json.loads(nbformat.writes(nb)), limits=Limits(wall_seconds=10), chosen=backends.Bubblewrap(),
                          scratch=tmp_path / "scratch")
    assert outcome.timed_out and outcome.notebook is None and "did not finish within 10 s" in outcome.problem, outcome
    assert time.monotonic() - began < 20


@needs_bwrap
def test_the_sandbox_gives_back_a_notebook_whose_kernel_died_and_says_where(tmp_path):
    from tfperf_lab.isolation import sandbox

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('first')"), nbformat.v4.new_code_cell("import os\nos._exit(1)"),
                                         nbformat.v4.new_code_cell("print('never')")])
    nb.cells[1].id = "crash"
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    outcome = sandbox.run(json.loads(nbformat.writes(nb)), limits=Limits(wall_seconds=30), chosen=backends.Bubblewrap(),
                          scratch=tmp_path / "scratch")
    assert outcome.returncode == 3 and outcome.problem is None and outcome.notebook is not None, (outcome.problem, outcome.log)
    assert outcome.stopped and "kernel died while cell crash ran" in outcome.stopped, outcome.stopped
    assert _errors(outcome.notebook["cells"]) == [[], [runner.KERNEL_DIED], [runner.NOT_RUN]]
