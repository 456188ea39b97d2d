"""Grading on a Dask cluster (`tfperf-lab grade --cluster`): a scheduler and two workers as separate processes on
loopback. The same class gives the same CSV through the cluster as graded here; a worker killed while it grades loses
nothing (the job runs again on the other worker, and the row says so). The classes are of the tiny lesson
(tests/tiny_course.py: a real lesson's machinery, seconds to grade)."""

from __future__ import annotations

import csv
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tfperf_lab.grading import batch
from tfperf_lab.course import WorkFolder
from pipeline import COURSE, write_submission
import tiny_course

distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.pipeline
DASK = shutil.which("dask", path=os.path.dirname(sys.executable)) or shutil.which("dask")


LONG = "time.sleep(10)  # a slow honest answer: still grading when a worker is killed\n"


def _class(tiny) -> dict[str, dict]:
    return {"ana": tiny.lesson(tiny_course.LESSON_ID).source_notebook(), "ben": tiny_course.with_code(tiny, tiny_course.LOOPING),
            "cleo": tiny_course.with_code(tiny, "raise RuntimeError('half-finished answer')\n")}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if DASK is None:
        pytest.skip("the dask command is not installed (pip install distributed)")
    folder = tmp_path_factory.mktemp("dask")
    scheduler_file = folder / "scheduler.json"
    started = []

    def start(*args) -> subprocess.Popen:
        process = subprocess.Popen([DASK, *args], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True,
                                   cwd=folder)
        started.append(process)
        return process

    start("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(scheduler_file))
    for _ in range(300):
        if scheduler_file.exists() and "address" in scheduler_file.read_text() or time.sleep(0.1):
            break
    address = json.loads(scheduler_file.read_text())["address"]
    workers = [start("worker", address, "--nworkers", "1", "--nthreads", "1", "--no-dashboard", "--host", "127.0.0.1")
               for _ in range(2)]
    with distributed.Client(address, timeout=60) as client:
        client.wait_for_workers(2, timeout=120)
    yield address, workers
    for process in started:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


def _grade(tiny, tmp_path_factory, students, **options) -> tuple[dict, list[dict]]:
    folder = tmp_path_factory.mktemp("class")
    for student, nb in students.items():
        write_submission(folder, student, tiny.lesson(tiny_course.LESSON_ID), nb)
    work = WorkFolder(tmp_path_factory.mktemp("work"))
    results = batch.grade(tiny, folder, work=work, with_feedback=False, progress=False, **options)
    with work.grades_csv.open(encoding="utf-8") as handle:  # when each file was handed in (its time here) aside
        return {r.student: r for r in results}, [{k: v for k, v in row.items() if k != "submitted"} for row in csv.DictReader(handle)]


def test_a_class_graded_on_the_cluster_gives_the_same_csv_as_graded_here(cluster, tiny, tmp_path_factory):
    address, _ = cluster
    here, here_rows = _grade(tiny, tmp_path_factory, _class(tiny), workers=2)
    there, there_rows = _grade(tiny, tmp_path_factory, _class(tiny), cluster=address)
    assert there_rows == here_rows, ("\n".join(line for r in here.values() for line in r.lines()),
                                     "\n".join(line for r in there.values() for line in r.lines()))
    assert float(there_rows[0]["score"]) == float(there_rows[0]["max_score"]) and there_rows[0]["status"] == "graded", there_rows[0]


def test_a_worker_that_dies_while_grading_loses_nothing(cluster, tiny, tmp_path_factory):
    address, workers = cluster
    students = {"dana": tiny_course.with_code(tiny, LONG), "eli": tiny_course.with_code(tiny, LONG)}
    killed = {}

    def kill_a_busy_worker():
        with distributed.Client(address, timeout=60) as client:
            for _ in range(600):
                busy = [worker for worker, tasks in client.processing().items() if tasks]
                if busy:
                    time.sleep(3.0)  # inside its job: the sandbox has started
                    pid = client.run(os.getppid, workers=[busy[0]])[busy[0]]  # the nanny, whose group holds the worker
                    process = next((p for p in workers if p.pid == pid or os.getpgid(pid) == p.pid), None)
                    os.killpg(process.pid if process else pid, signal.SIGKILL)
                    killed["worker"] = busy[0]
                    return
                time.sleep(0.1)

    import threading

    killer = threading.Thread(target=kill_a_busy_worker, daemon=True)
    killer.start()
    results, rows = _grade(tiny, tmp_path_factory, students, cluster=address)
    killer.join(timeout=60)
    assert killed, "no worker was busy to kill"
    assert all(r.error is None and r.score == r.max_score for r in results.values()), [r.lines() for r in results.values()]
    assert any("again" in row["status"] for row in rows), rows


PRELOAD = str(pathlib.Path(__file__).resolve().parents[1] / "worker_without_course.py")


def _start_worker(address: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([DASK, "worker", address, "--nworkers", "1", "--nthreads", "1", "--no-dashboard", "--host", "127.0.0.1",
                             *extra], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)


def _stop(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def test_a_worker_that_cannot_see_the_course_is_refused_by_name_and_the_others_grade_the_class(cluster, tiny, tmp_path_factory, capsys):
    address, _ = cluster
    with distributed.Client(address, timeout=60) as client:
        before = len(client.scheduler_info()["workers"])  # a worker killed by the test above is gone for good
    broken = _start_worker(address, "--preload", PRELOAD)
    try:
        with distributed.Client(address, timeout=60) as client:
            client.wait_for_workers(before + 1, timeout=120)
        results, rows = _grade(tiny, tmp_path_factory, {"ana": tiny.lesson(tiny_course.LESSON_ID).source_notebook()}, cluster=address)
    finally:
        _stop(broken)
    said = capsys.readouterr().err
    assert "refused grading worker" in said and "course: no TF Performance Lab course" in said, said
    assert rows[0]["status"] == "graded" and float(rows[0]["score"]) == float(rows[0]["max_score"]), rows[0]


def test_a_cluster_with_no_worker_that_passes_its_check_grades_nothing_as_the_student_s(tiny, tmp_path, capsys):
    """Every worker refused: the rows are the grading machine's, nothing is saved as finished, the command exits 3."""
    from tfperf_lab import cli
    from tfperf_lab.grading.results import MACHINE

    if DASK is None:
        pytest.skip("the dask command is not installed (pip install distributed)")
    scheduler_file = tmp_path / "scheduler.json"
    scheduler = subprocess.Popen([DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file",
                                  str(scheduler_file)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
    worker = None
    try:
        for _ in range(300):
            if scheduler_file.exists() and "address" in scheduler_file.read_text() or time.sleep(0.1):
                break
        address = json.loads(scheduler_file.read_text())["address"]
        worker = _start_worker(address, "--preload", PRELOAD)
        with distributed.Client(address, timeout=60) as client:
            client.wait_for_workers(1, timeout=120)
        lesson = tiny.lesson(tiny_course.LESSON_ID)
        write_submission(tmp_path / "class", "ana", lesson, lesson.source_notebook())
        code = cli.main(["--course", str(tiny.root), "grade", str(tmp_path / "class"), "--work", str(tmp_path / "work"),
                         "--cluster", address])
    finally:
        for process in (worker, scheduler):
            if process is not None:
                _stop(process)
    printed = capsys.readouterr()
    assert code == 3, printed.out + printed.err
    with (tmp_path / "work" / "grades.csv").open(encoding="utf-8") as handle:
        (row,) = list(csv.DictReader(handle))
    assert row["status"].startswith(MACHINE) and "no worker of the cluster" in row["status"], row
    assert not WorkFolder(tmp_path / "work").state("ana", tiny_course.LESSON_ID).exists()


def test_a_killed_worker_s_scratch_folder_is_swept_by_the_next_job(tmp_path, monkeypatch):
    from tfperf_lab.grading import cluster as cluster_module

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    stale = tmp_path / f"{cluster_module.SCRATCH_PREFIX}{gone.pid}-abc"
    live = tmp_path / f"{cluster_module.SCRATCH_PREFIX}{os.getppid()}-def"
    for folder in (stale, live):
        folder.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    seen = {}

    def job_that_notes_its_folder(job):
        seen["scratch"] = job.scratch
        raise RuntimeError("stop here")

    monkeypatch.setattr(cluster_module, "run_job", job_that_notes_its_folder)
    import dataclasses

    from tfperf_lab.grading.job import Job
    from tfperf_lab.isolation.contract import Limits

    job = Job(course_root=str(COURSE.root), lesson_id="x", student="s", notebook={}, limits=Limits(), backend="auto", scratch="")
    with pytest.raises(RuntimeError):
        cluster_module._on_worker(dataclasses.replace(job))
    assert not stale.exists() and live.exists()
    assert pathlib.Path(seen["scratch"]).name.startswith(f"{cluster_module.SCRATCH_PREFIX}{os.getpid()}-")
    assert not pathlib.Path(seen["scratch"]).exists(), "the job's own folder is removed even when the job fails"


def test_a_cluster_that_does_not_answer_is_a_clear_message_and_grades_nothing(tmp_path, capsys):
    from tfperf_lab import cli

    lesson = COURSE.lesson("01_callable_handles")
    write_submission(tmp_path / "class", "ana", lesson, lesson.source_notebook())
    code = cli.main(["--course", str(COURSE.root), "grade", str(tmp_path / "class"), "--work", str(tmp_path / "work"),
                     "--cluster", "tcp://127.0.0.1:9", "--cluster-timeout", "3"])
    assert code == 2 and "no Dask scheduler answered at tcp://127.0.0.1:9 within 3 s" in capsys.readouterr().err
    assert not (tmp_path / "work" / "grades.csv").exists()
