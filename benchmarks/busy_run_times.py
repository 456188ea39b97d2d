"""Each lesson run in full, as a learner runs it, beside other work that keeps the machine's cores busy.

A benchmark, not a test. Every lesson's first cell promises a run time ("under 3 minutes on a 2-core CPU"): this runs
each lesson's reference solution in the learner's profile (``TFPERF_PROFILE=full``, a fresh Jupyter kernel, start-up
included) while ``--hogs`` processes spin on the cores, and records its wall time beside the promise, the machine's load,
and how many of the lesson's "your run" sentences (`tfperf.report.Comparison.describe`: "On the course's 2-core VM one
run lands in ...") found the run inside the range the lesson quotes. The figures go to
``docs/benchmarks/busy-run-times.json`` (``--out``); ``--docs`` regenerates the block in ``docs/benchmarks.md`` from
it, and a test holds every lesson's promise against the recorded time of its current code.

    TFPERF_DATA=../shared/data/mnist .venv/bin/python benchmarks/busy_run_times.py --hogs 2 --out docs/benchmarks/busy-run-times.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import re
import subprocess
import sys
import time

from tfperf import env as tfenv
from tfperf_lab.course import Course, notebook
from tfperf_lab.publish import readme

SENTENCE = re.compile(r"one run lands in [^\n]*")
OUTSIDE = "landed outside that range"


def run_one(course: Course, lesson_id: str) -> dict:
    """One lesson's reference, full profile, in a fresh kernel: wall seconds and its "your run" sentences."""
    import nbformat
    from nbclient import NotebookClient

    lesson = course.lesson(lesson_id)
    nb = nbformat.read(lesson.source, as_version=4)
    before = tfenv.cpu_times()
    began = time.monotonic()
    NotebookClient(nb, timeout=1800, kernel_name="python3", resources={"metadata": {"path": str(lesson.source.parent)}}).execute()
    seconds = time.monotonic() - began
    printed = "\n".join(output.get("text", "") for cell in nb.cells if cell.cell_type == "code"
                        for output in cell.get("outputs", []) if output.get("output_type") == "stream")
    sentences = SENTENCE.findall(printed)
    return {"seconds": round(seconds, 1), "promised": 60 * lesson.minutes_full, "code": notebook.code_fingerprint(notebook.read(lesson.source)),
            "sentences": len(sentences), "inside": sum(OUTSIDE not in sentence for sentence in sentences),
            "outside": [sentence[:240] for sentence in sentences if OUTSIDE in sentence], "machine": tfenv.machine_state(before)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", help="lesson ids or numbers (default: all)")
    parser.add_argument("--hogs", type=int, default=2, help="processes spinning on the cores meanwhile (default: 2, both cores busy)")
    parser.add_argument("--out", help="JSON file for the figures (docs/benchmarks.md's block reads docs/benchmarks/busy-run-times.json); "
                                      "a run with --out replaces the lessons it ran and keeps the others")
    parser.add_argument("--docs", action="store_true", help="regenerate the block in docs/benchmarks.md from the JSON and stop")
    args = parser.parse_args(argv)
    course = Course.find(pathlib.Path.cwd())
    if args.docs:
        print(readme.update(course, "busy"))
        return 0
    if not os.environ.get("TFPERF_DATA"):
        print("warning: TFPERF_DATA is not set: the lessons run on generated digits, not what a learner runs", file=sys.stderr)
    lessons = [lesson.id for lesson in course.lessons if not args.lessons or any(lesson.id.startswith(a) for a in args.lessons)]
    os.environ["TFPERF_PROFILE"] = "full"
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hogs)]
    found = {}
    try:
        for lesson_id in lessons:
            found[lesson_id] = run_one(course, lesson_id)
            got = found[lesson_id]
            print(f"{lesson_id}: {got['seconds']:.0f} s (promised under {got['promised']:.0f} s) beside {args.hogs} busy cores; "
                  f"'your run' sentences: {got['inside']} of {got['sentences']} inside the quoted range", flush=True)
            for sentence in got["outside"]:
                print(f"   outside: {sentence}")
    finally:
        for hog in hogs:
            hog.kill()
    if args.out:
        path = pathlib.Path(args.out)
        kept = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"lessons": {}}
        for lesson_id, got in found.items():
            kept["lessons"][lesson_id] = {**got, "date": datetime.date.today().isoformat(), "hogs": args.hogs,
                                          "cpu_count": tfenv.fingerprint()["cpu_count"], "data": "mnist" if os.environ.get("TFPERF_DATA") else "generated"}
        kept["lessons"] = dict(sorted(kept["lessons"].items()))
        path.write_text(json.dumps(kept, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
