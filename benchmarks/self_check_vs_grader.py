"""How close the learner's self-check comes to the grader's verdict, on the honest reference answers.

A benchmark, not a test. For each lesson, its reference solution runs ROUNDS times each way, the two ways alternating
(paired, interleaved), on the same machine:

* **self-check**: the notebook executed as a learner runs it (``jupyter nbconvert --execute``, the graded workload),
  where `tfperf.assert_speedup` times both sides in the kernel; its records are read from ``TFPERF_RECORD``;
* **grader**: ``tfperf-lab check`` of the same notebook, where the grader times the learner's kernel against a clean
  reference process (`tfperf_lab.speed.judge`); its measurements come from the `SubmissionResult`.

It prints one row per graded speed check (medians of each way, their ratio, how often each passed) and writes
``docs/benchmarks/self-check-vs-grader.json`` (``--out`` to change).

    .venv/bin/python benchmarks/self_check_vs_grader.py 01 03 --rounds 3
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

from tfperf import report
from tfperf_lab.grading import batch
from tfperf_lab.course import Course
from tfperf_lab.speed import TECHNIQUE

BIN = pathlib.Path(sys.executable).parent


def _self_check(notebook: pathlib.Path, records: pathlib.Path, scratch: pathlib.Path) -> list[report.Record]:
    env = dict(os.environ, NBGRADER_EXECUTION="autograde", TFPERF_RECORD=str(records),
               PATH=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))
    env.pop("TFPERF_GRADER", None)
    done = subprocess.run([str(BIN / "jupyter"), "nbconvert", "--to", "notebook", "--execute", "--output", str(scratch / "ran.ipynb"),
                           "--ExecutePreprocessor.timeout=600", str(notebook)], cwd=scratch, env=env, capture_output=True, text=True)
    if done.returncode != 0:  # the reference must run cleanly, or its numbers mean nothing
        raise RuntimeError(f"{notebook.name} failed in its own kernel:\n{done.stderr[-2000:]}")
    return report.load_records(records) if records.exists() else []


def measure(course: Course, lesson_id: str, rounds: int) -> list[dict]:
    """One row per speed check: both ways' speedups, round by round."""
    lesson = course.lesson(lesson_id)
    names = [name for names in lesson.speed_checks().values() for name in names]
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="tfperf-selfcheck-"))
    mine = {name: [] for name in names}
    graders = {name: [] for name in names}
    try:
        notebook = scratch / "mine" / f"{lesson.id}.ipynb"
        notebook.parent.mkdir()
        shutil.copy(lesson.source, notebook)
        for round_ in range(rounds):
            for way in (("self", "grader") if round_ % 2 == 0 else ("grader", "self")):
                if way == "self":
                    for record in _self_check(notebook, scratch / f"records-{round_}.jsonl", scratch):
                        if record.name in mine:
                            mine[record.name].append({"speedup": record.speedup, "ci": list(record.ci), "passed": record.passed})
                else:
                    result = batch.check(course, notebook)
                    if result.error:
                        raise RuntimeError(f"{lesson.id} could not be graded: {result.error}")
                    for measured in result.measurements:
                        if measured.name in graders and measured.technique == TECHNIQUE:
                            graders[measured.name].append({"speedup": measured.speedup, "ci": list(measured.ci), "passed": measured.passed})
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    rows = []
    for name in names:
        row = {"lesson": lesson.id, "check": name, "self_check": mine[name], "grader": graders[name]}
        for way in ("self_check", "grader"):
            speedups = [m["speedup"] for m in row[way]]
            row[f"{way}_median"] = statistics.median(speedups) if speedups else None
            row[f"{way}_passed"] = sum(bool(m["passed"]) for m in row[way])
        row["ratio"] = row["grader_median"] / row["self_check_median"] if row["grader_median"] and row["self_check_median"] else None
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", help="lesson ids (default: every lesson with speed checks)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", help="JSON file for the figures (default docs/benchmarks/self-check-vs-grader.json)")
    args = parser.parse_args(argv)
    course = Course.find(pathlib.Path(__file__).resolve().parents[1])
    rows = [row for lesson in course.select(args.lessons or None) if lesson.speed_checks() for row in measure(course, lesson.id, args.rounds)]
    out = pathlib.Path(args.out) if args.out else course.docs / "benchmarks" / "self-check-vs-grader.json"
    out.write_text(json.dumps({"date": datetime.date.today().isoformat(), "cpu_count": os.cpu_count(), "rounds": args.rounds,
                               "rows": rows}, indent=1) + "\n", encoding="utf-8")
    fmt = lambda v: "-" if v is None else f"{v:.2f}x"  # noqa: E731
    print(f"| lesson | speed check | self-check, median of {args.rounds} | grader, median of {args.rounds} | grader / self-check | "
          "passed (self-check, grader) |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        ratio = "-" if row["ratio"] is None else f"{row['ratio']:.2f}"
        print(f"| {row['lesson'][:2]} | `{row['check']}` | {fmt(row['self_check_median'])} | {fmt(row['grader_median'])} | {ratio} | "
              f"{row['self_check_passed']}/{len(row['self_check'])}, {row['grader_passed']}/{len(row['grader'])} |")
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
