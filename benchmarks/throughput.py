"""How many notebooks a minute grading gets through, here and on a local Dask cluster, and what a class of 300 x 10 costs.

A benchmark, not a test. A class of COPIES reference solutions of every lesson with speed checks (plus the rest) is
graded three ways, one after the other on the same machine: ``--workers 1``, ``--workers 2`` and ``--cluster`` with two
local worker processes (a scheduler and two ``dask worker`` processes on loopback). For each it records the wall time,
notebooks a minute, the false failures (a reference that lost a point) and every submission's per-stage seconds
(`SubmissionResult.stages`). From the per-stage costs it models a class of 300 students x 10 lessons on one machine of
16 cores and on four such machines: each grading job takes two cores while its notebook runs (the sandbox's kernel
and the reference process, which measures alternately with it), and the host's own stages (staging, nbgrader around the
sandbox, scoring, feedback) run in the host's threads. It writes ``docs/benchmarks/throughput.json``.

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

from tfperf_lab.grading import batch
from tfperf_lab.course import Course, WorkFolder

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
        began = time.monotonic()
        results = batch.grade(course, scratch / "class", work=WorkFolder(scratch / "work"), with_feedback=True, progress=False, **options)
        seconds = time.monotonic() - began
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    false_failures = sum(1 for r in results if r.error or r.score < r.max_score)
    stages: dict[str, list[float]] = {}
    for result in results:
        for name, value in result.stages.items():
            stages.setdefault(name, []).append(value)
    return {"notebooks": count, "seconds": seconds, "per_minute": 60 * count / seconds, "false_failures": false_failures,
            "stage_medians": {name: statistics.median(values) for name, values in stages.items()},
            "notebook_seconds_median": statistics.median(r.seconds for r in results)}


def model(stages: dict[str, float], notebooks: int = 3000, machines: int = 1, cores: int = 16) -> dict:
    """Hours for ``notebooks`` on ``machines`` of ``cores``: jobs run cores/2 at a time per machine while their notebook
    runs (sandbox and reference on two cores); the host's own stages run in its threads, in parallel, on its cores."""
    sandbox = stages["sandbox set-up and runner imports"] + stages["kernel start and cells"]
    host = sum(stages.get(name, 0.0) for name in HOST_STAGES)
    slots = machines * max(1, cores // CORES_PER_JOB)
    running = notebooks * sandbox / slots
    host_bound = notebooks * host / cores  # host stages on the host's 16 cores (a cluster's host is one machine)
    hours = max(running, host_bound) / 3600
    return {"machines": machines, "cores": cores, "slots": slots, "hours": round(hours, 2),
            "bound": "the workers' cores (notebooks running)" if running >= host_bound else "the host (nbgrader, scoring, feedback)",
            "sandbox_seconds": round(sandbox, 2), "host_seconds": round(host, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=2, help="copies of every lesson's reference solution (default 2)")
    parser.add_argument("--out", default=None, help="where to write the figures (default: docs/benchmarks/throughput.json)")
    args = parser.parse_args(argv)
    course = Course.find(None)
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
    stages = runs["workers 1"]["stage_medians"]
    figures = {"date": datetime.date.today().isoformat(), "cpu_count": os.cpu_count(), "copies": args.copies, "runs": runs,
               "model_300x10": [model(stages, machines=1), model(stages, machines=4)]}
    out = pathlib.Path(args.out) if args.out else course.root / "docs" / "benchmarks" / "throughput.json"
    out.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(figures["model_300x10"], indent=1))
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
