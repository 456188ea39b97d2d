"""What grading costs beyond running the notebook: `tfperf-lab check` and `grade` against plain execution.

A benchmark, not a test. For each lesson, its reference solution is run ROUNDS times three ways, the order rotating
each round (paired, interleaved): plain execution (``jupyter nbconvert --to notebook --execute`` with
``NBGRADER_EXECUTION`` set, so the same reduced workload), ``tfperf-lab check NOTEBOOK`` and ``tfperf-lab grade FOLDER
--workers 1 --force``. It prints the median wall time of each, the ratios to plain execution and the extra seconds,
then where the time of one `check` goes (per stage, from `SubmissionResult.stages`), and writes the figures to
``docs/benchmarks/grading-overhead.json`` (``--out``), from which the block in ``docs/benchmarks.md`` is generated
(nobody writes these numbers by hand: ``python benchmarks/grading_overhead.py --docs``).

    .venv/bin/python benchmarks/grading_overhead.py 01 09 --rounds 3
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
import time

from tfperf_lab.grading import batch
from tfperf_lab.publish import readme
from tfperf_lab.course import Course

BIN = pathlib.Path(sys.executable).parent


def _timed(command: list[str], cwd: pathlib.Path, env: dict) -> float:
    began = time.monotonic()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:  # reference solutions: every way must run cleanly, or its time means nothing
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return time.monotonic() - began


def measure(course: Course, lesson_id: str, rounds: int) -> dict:
    """Median seconds of plain execution, check and grade (paired rounds, rotating order), and one check's stages."""
    lesson = course.lesson(lesson_id)
    env = dict(os.environ, NBGRADER_EXECUTION="autograde", PATH=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="tfperf-overhead-"))
    try:
        notebook = scratch / "mine" / f"{lesson.id}.ipynb"
        notebook.parent.mkdir()
        shutil.copy(lesson.source, notebook)
        (scratch / "class" / "student").mkdir(parents=True)
        shutil.copy(lesson.source, scratch / "class" / "student" / notebook.name)
        ways = {
            "plain": [str(BIN / "jupyter"), "nbconvert", "--to", "notebook", "--execute", "--output", str(scratch / "plain.ipynb"),
                      "--ExecutePreprocessor.timeout=600", str(notebook)],
            "check": [str(BIN / "tfperf-lab"), "--course", str(course.root), "check", str(notebook), "--feedback", str(scratch / "f.html")],
            "grade": [str(BIN / "tfperf-lab"), "--course", str(course.root), "grade", str(scratch / "class"), "--workers", "1", "--force",
                      "--work", str(scratch / "work")],
        }
        seconds: dict[str, list[float]] = {name: [] for name in ways}
        order = list(ways)
        for round_ in range(rounds):
            for name in order[round_ % 3:] + order[:round_ % 3]:
                seconds[name].append(_timed(ways[name], scratch, env))
        stages = batch.check(course, notebook, feedback_to=scratch / "g.html").stages
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    return {"lesson": lesson.id, "rounds": rounds, "seconds": seconds, "median": medians,
            "ratio": {name: medians[name] / medians["plain"] for name in ("check", "grade")},
            "extra": {name: medians[name] - medians["plain"] for name in ("check", "grade")},
            "stages": {name: round(value, 2) for name, value in stages.items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", help="lesson ids (default: all)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", help="JSON file for the figures (docs/benchmarks.md's block reads docs/benchmarks/grading-overhead.json)")
    parser.add_argument("--docs", "--readme", dest="docs", action="store_true",
                        help="measure nothing: regenerate docs/benchmarks.md's block from the JSON")
    args = parser.parse_args(argv)
    course = Course.find()
    if args.docs:
        print(readme.update(course, "overhead"))
        return 0
    rows = []
    for lesson in course.select(args.lessons):
        row = measure(course, lesson.id, args.rounds)
        rows.append(row)
        m = row["median"]
        print(f"{lesson.id}: plain {m['plain']:.1f} s, check {m['check']:.1f} s ({row['ratio']['check']:.2f}x, "
              f"+{row['extra']['check']:.1f} s), grade {m['grade']:.1f} s ({row['ratio']['grade']:.2f}x, +{row['extra']['grade']:.1f} s)")
        print("   one check, by stage: " + ", ".join(f"{name} {value:.1f} s" for name, value in row["stages"].items()))
    if args.out:  # the lessons measured now replace their rows; the others keep theirs, each row with its own date
        out = pathlib.Path(args.out)
        earlier = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {"rows": []}
        today = datetime.date.today().isoformat()
        for row in earlier["rows"]:
            row.setdefault("date", earlier.get("date"))
        measured = {row["lesson"] for row in rows}
        merged = [row for row in earlier["rows"] if row["lesson"] not in measured] + [row | {"date": today} for row in rows]
        summary = {"cpu_count": os.cpu_count(), "rows": sorted(merged, key=lambda row: row["lesson"])}
        out.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
