"""Answers that replace what serves the grader, graded as an instructor grades a class: ``tfperf-lab grade FOLDER``.

An answer that is correct but slow, plus code that swaps the function the grader times for the slow handle run once
on a whole batch's inputs stacked (eight more routes that serve a fast function, from the corpus of reaches, are graded
in tests/grading/test_corpus_graded.py). Before the review list, it earned the speed point and the structural cell that shared
its evidence. Now it is on the review list: its speed cell and that structural cell are withheld and marked for a person, its correctness cells
kept, the CSV's ``review`` column says why; honest classmates in the same class keep every point, and are not on it.
A kernel that sends the grader a deeply nested message is refused without stopping the grader. A structure check
counts what TensorFlow ran, not what a Python name saw: lesson 07's answer with a second writer, opened through an
alias of ``tf.summary.create_file_writer`` and logging every step where no check looks, loses its structure cell.
"""

from __future__ import annotations

import pytest

from tfperf_lab.course import variants
from pipeline import COURSE, with_solution

pytestmark = pytest.mark.pipeline
L01, L05, L07 = COURSE.lesson("01_callable_handles"), COURSE.lesson("05_metrics"), COURSE.lesson("07_tensorboard")
SLOW_01 = next(v for v in variants.for_lesson(L01.id) if v.name == "calls_sess_run")

STACKED = """
from tfperf import link as _wire


def _stacked(fn, draw, observe, wait, seed, calls):  # the slow handle once, on a whole batch's inputs stacked
    rng = np.random.default_rng(seed)
    inputs = [draw(rng) for _ in range(calls)]
    out = np.asarray(fn(np.concatenate(inputs))[0])
    return [_wire.digest([part]) for part in np.split(out, calls)]


_wire._batch = _stacked
"""
NESTED_HELLO = """
import os as _os
import socket as _socket

_probe = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
if _os.environ.get("TFPERF_GRADER"):
    _probe.connect(_os.environ["TFPERF_GRADER"])
    _probe.sendall(b"[" * 200000 + b"\\n")
_probe.close()
"""


# Histograms every step after all, into a second writer opened through an alias that a Python-level counter of
# tf.summary.create_file_writer never sees; logdir itself gets exactly what the exercise asks for.
SHADOW_WRITER_07 = {
    "def train_logged(": "_open_writer = tf.summary.create_file_writer\n\n\ndef train_logged(",
    "    writer = tf.summary.create_file_writer(str(logdir))\n":
        "    writer = tf.summary.create_file_writer(str(logdir))\n    shadow = _open_writer(tempfile.mkdtemp())\n",
    "            history[\"loss\"].append(float(loss))\n":
        "            with shadow.as_default():\n"
        "                for variable in model.trainable_variables:\n"
        "                    tf.summary.histogram(f\"weights/{variable.path}\", variable, step=step)\n"
        "            history[\"loss\"].append(float(loss))\n",
}


def _appended(nb: dict, cell_id: str, code: str) -> dict:
    cell = next(c for c in nb["cells"] if c.get("id") == cell_id)
    cell["source"] = "".join(cell["source"]) + "\n" + code
    return nb


def _lesson01_class() -> dict[str, dict]:
    slow = lambda: SLOW_01.notebook(L01)  # noqa: E731
    return {
        "honest": L01.source_notebook(),
        "sleepy": with_solution(L01, "make_callable_solution", {
            "        return handle(*[": "        time.sleep(0.0005)\n        return handle(*[",
            "def make_callable(": "import time\n\n\ndef make_callable("}),
        "stacked": _appended(slow(), "make_callable_solution", STACKED),
        "nested_hello": _appended(L01.source_notebook(), "make_callable_solution", NESTED_HELLO),
    }


def class_submissions():
    """In the test run's class, graded by `tfperf-lab grade` with every other module's submissions."""
    submissions = {(L01.id, student): nb for student, nb in _lesson01_class().items()}
    submissions[(L05.id, "honest_05")] = L05.source_notebook()
    submissions[(L07.id, "shadow_writer_07")] = with_solution(L07, "train_logged_solution", SHADOW_WRITER_07)
    return submissions


@pytest.fixture(scope="module")
def graded(graded_class):
    """The command's exit code, this module's CSV rows by (student, lesson id), and what it printed for each."""
    return graded_class.code, graded_class.rows_of(__name__), graded_class.printed_of(__name__)


def _report(printed: dict, student: str, lesson) -> str:
    """The lines `tfperf-lab grade` printed for one submission: its head line and the indented lines under it."""
    return printed[(student, lesson.id)]


def _points(row: dict, lesson, cell: str) -> float:
    return float(row[f"{lesson.id}:{cell}"])


def _full(lesson, cell: str) -> float:
    return next(c["points"] for c in lesson.grade_cells() if c["id"] == cell)


@pytest.mark.parametrize("student", ["stacked"])  # eight more routes: tests/grading/test_corpus_graded.py
def test_a_replaced_server_is_on_the_review_list_and_earns_no_speed_or_shared_structure_point(graded, student):
    code, rows, _ = graded
    row = rows[(student, L01.id)]
    assert code == 0 and row["status"] == "graded", row
    assert row["review"], row
    assert _points(row, L01, "handle_is_faster") == 0 and _points(row, L01, "handle_built_once") == 0, row
    for cell in ("handle_matches_sess_run", "handle_rejects_bad_elements"):
        assert _points(row, L01, cell) == _full(L01, cell), row


@pytest.mark.parametrize(("student", "lesson"), [("honest", L01), ("honest_05", L05)])
def test_honest_classmates_keep_every_point_and_are_not_on_the_review_list(graded, student, lesson):
    row = graded[1][(student, lesson.id)]
    assert not row["review"] and float(row["score"]) == float(row["max_score"]), row


def test_a_slow_handle_with_the_right_structure_keeps_its_structure_point(graded):
    row = graded[1][("sleepy", L01.id)]
    assert not row["review"], row
    assert _points(row, L01, "handle_built_once") == _full(L01, "handle_built_once"), row


def test_a_deeply_nested_message_to_the_grader_is_refused_and_the_check_still_measured(graded):
    row, printed = graded[1][("nested_hello", L01.id)], _report(graded[2], "nested_hello", L01)
    assert row["status"] == "graded" and row["review"], row  # it opened the grader's socket: a person looks
    assert _points(row, L01, "handle_matches_sess_run") == _full(L01, "handle_matches_sess_run"), row
    assert "did not speak its protocol" in printed and "course problem" not in printed, printed
    assert "speed check exercise_handle_vs_sess_run:" in printed, printed  # the timer went on and measured the real serve


def test_a_second_writer_opened_through_an_alias_loses_the_structure_cell_on_what_tensorflow_ran(graded):
    row, printed = graded[1][("shadow_writer_07", L07.id)], _report(graded[2], "shadow_writer_07", L07)
    assert row["status"] == "graded" and not row["review"], row  # nothing reached into the machinery: no person needed
    assert _points(row, L07, "histograms_every_n_steps") == 0, row
    assert "made 2 writers" in printed, printed
    for cell in ("scalars_every_step", "scalar_values_match", "weight_histograms_match"):
        assert _points(row, L07, cell) == _full(L07, cell), row
