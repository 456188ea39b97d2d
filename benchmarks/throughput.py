"""How many notebooks a minute grading gets through, here and on a local Dask cluster, and what a class of 300 x 10 costs.

A benchmark, not a test. A class of COPIES reference solutions of every lesson with speed checks (plus the rest) is
graded three ways, one after the other on the same machine: ``--workers 1``, ``--workers 2`` and ``--cluster`` with two
local worker processes (a scheduler and two ``dask worker`` processes on loopback). For each it records the wall time,
notebooks a minute, the false failures (a reference that lost a point), the machine's busy CPU seconds, the seconds the
speed checks spent measuring, the host's own stages and every stage's mean (`SubmissionResult.stages`).

The model (`predict`) takes the one-at-a-time run and predicts the others; the two-worker and cluster runs check it
(``model_checked``: predicted against measured), and the same model, scaled, gives a class of 300 students x 10 lessons
on one machine of 16 cores and on four. It writes ``docs/benchmarks/throughput.json``; docs/benchmarks.md's throughput
block is generated from it (``tfperf-lab`` keeps it in sync: a test).

    .venv/bin/python benchmarks/throughput.py --copies 2
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from tfperf import env as tfenv
from tfperf_lab.grading import batch
from tfperf_lab.course import Course, WorkFolder
from tfperf_lab.publish import readme

BIN = pathlib.Path(sys.executable).parent
CORES_PER_JOB = 2
HOST_STAGES = ("autograde (nbgrader around the sandbox)", "score", "feedback and state")


def _class(course: Course, copies: int, folder: pathlib.Path) -> int:
    count = 0
    for lesson in course.lessons:
        for copy in range(copies):
            target = folder / f"s{copy:02d}" / f"{lesson.id}.ipynb"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(lesson.source, target)
            count += 1
    return count


class LocalCluster:
    """A Dask scheduler and ``workers`` worker processes on loopback, as separate processes (not in this one)."""

    def __init__(self, workers: int, folder: pathlib.Path):
        self.processes: list[subprocess.Popen] = []
        scheduler_file = folder / "scheduler.json"
        dask = str(BIN / "dask")
        self._start([dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(scheduler_file)])
        for _ in range(300):
            if scheduler_file.exists() and "address" in scheduler_file.read_text():
                break
            time.sleep(0.1)
        self.address = json.loads(scheduler_file.read_text())["address"]
        for _ in range(workers):
            self._start([dask, "worker", self.address, "--nworkers", "1", "--nthreads", "1", "--no-dashboard", "--host", "127.0.0.1"])
        from distributed import Client

        with Client(self.address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=120)

    def _start(self, command: list[str]) -> None:
        self.processes.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True))

    def close(self) -> None:
        for process in self.processes:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()


def grade_once(course: Course, copies: int, **options) -> dict:
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="tfperf-throughput-"))
    try:
        count = _class(course, copies, scratch / "class")
        began, cpu = time.monotonic(), tfenv.busy_seconds()
        results = batch.grade(course, scratch / "class", work=WorkFolder(scratch / "work"), with_feedback=True, progress=False, **options)
        seconds, cpu = time.monotonic() - began, tfenv.busy_seconds() - cpu
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    failed = [r for r in results if r.error or r.score < r.max_score]
    false_failures = len(failed)
    stages: dict[str, list[float]] = {}
    for result in results:
        for name, value in result.stages.items():
            stages.setdefault(name, []).append(value)
    return {"notebooks": count, "seconds": seconds, "per_minute": 60 * count / seconds, "false_failures": false_failures,
            "busy_cpu_seconds": cpu, "measuring_seconds": sum(m.elapsed for r in results for m in r.measurements),
            "host_seconds": sum(sum(values) for name, values in stages.items() if name in HOST_STAGES),
            "stage_means": {name: statistics.fmean(values) for name, values in stages.items()},
            "notebook_seconds_mean": statistics.fmean(r.seconds for r in results),
            "failed": {f"{r.student}/{r.lesson}": [line for line in r.lines() if "failed" in line or "error" in line.lower()][:5]
                       for r in failed}}  # a false failure, diagnosable from the record


def predict(alone: dict, *, workers: int, cores: int, machines: int = 1, notebooks: int | None = None) -> dict:
    """Seconds a class takes, from one run graded a notebook at a time (``alone``: its wall seconds, the machine's busy
    CPU seconds, the seconds the speed checks spent measuring and the host's own stages), scaled to ``notebooks``.

    Where jobs get cores of their own (4 cores or more a machine: `tfperf_lab.isolation.cores`), each runs as it ran
    alone on two cores, ``cores // 2`` at once a machine. Where they share the cores (fewer than 4), the measurements
    run one at a time with everyone else paused, and the rest is bound by the workers or by the CPU, whichever is
    slower. Either way the host's stages (nbgrader around the sandbox, scoring, feedback) run in one process, one at a
    time under Python's lock: a class can never take less than their sum.
    """
    scale = (notebooks or alone["notebooks"]) / alone["notebooks"]
    wall, cpu, measuring, host = (alone[key] * scale for key in ("seconds", "busy_cpu_seconds", "measuring_seconds", "host_seconds"))
    slots = machines * (cores // CORES_PER_JOB) if cores >= 2 * CORES_PER_JOB else 0
    if slots:
        running, how = wall / slots, f"{slots} jobs at once on cores of their own"
    else:
        rest = max((wall - measuring) / workers, (cpu - measuring) / (cores * machines))
        running, how = measuring + rest, f"{workers} workers sharing {cores} cores, measurements one at a time"
    seconds = max(running, host)
    return {"machines": machines, "cores": cores, "workers": workers, "seconds": round(seconds, 1), "hours": round(seconds / 3600, 2),
            "bound": "the host process (nbgrader, scoring, feedback)" if host > running else how}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=2, help="copies of every lesson's reference solution (default 2)")
    parser.add_argument("--out", default=None, help="where to write the figures (default: docs/benchmarks/throughput.json)")
    parser.add_argument("--docs", action="store_true", help="measure nothing: regenerate docs/benchmarks.md's block from the JSON")
    args = parser.parse_args(argv)
    course = Course.find(None)
    if args.docs:
        print(readme.update(course, "throughput"))
        return 0
    runs = {}
    for name, options in (("workers 1", {"workers": 1}), ("workers 2", {"workers": 2})):
        runs[name] = grade_once(course, args.copies, **options)
        print(name, json.dumps(runs[name]), flush=True)
    folder = pathlib.Path(tempfile.mkdtemp(prefix="tfperf-dask-"))
    cluster = LocalCluster(2, folder)
    try:
        runs["cluster, 2 local workers"] = grade_once(course, args.copies, cluster=cluster.address)
        print("cluster", json.dumps(runs["cluster, 2 local workers"]), flush=True)
    finally:
        cluster.close()
        shutil.rmtree(folder, ignore_errors=True)
    alone, cores = runs["workers 1"], os.cpu_count() or 1
    checked = {}
    for name in ("workers 2", "cluster, 2 local workers"):
        predicted = predict(alone, workers=2, cores=cores)["seconds"]
        checked[name] = {"measured": round(runs[name]["seconds"], 1), "predicted": predicted,
                         "error": round(predicted / runs[name]["seconds"] - 1, 3)}
    figures = {"date": datetime.date.today().isoformat(), "cpu_count": cores, "copies": args.copies, "runs": runs,
               "model_checked": checked,
               "model_class": [predict(alone, workers=8, cores=16, notebooks=3000),
                                predict(alone, workers=32, cores=16, machines=4, notebooks=3000)]}
    out = pathlib.Path(args.out) if args.out else course.root / "docs" / "benchmarks" / "throughput.json"
    out.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({"model_checked": checked, "model_300x10": figures["model_class"]}, indent=1))
    print(f"written: {out}" + ("; regenerate the docs with --docs" if args.out is None else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
