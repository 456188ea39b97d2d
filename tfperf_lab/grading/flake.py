"""A flake campaign: how often speed checks give the wrong answer, the reference graded N times, unoptimized answers N times.

A correct answer must pass every speed check on every run, also with CPU hogs or bursty neighbours beside it; a correct
but unoptimized answer (see `tfperf_lab.course.variants`) must fail every speed check on every run. This module grades
(`measure`); its rows are written, read back and printed by `tfperf_lab.publish.campaigns`.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from ..course import Course, Lesson, WorkFolder, notebook, variants
from ..course.config import DEFAULTS, GradingConfig
from ..speed import TECHNIQUE
from . import batch, stage

HOG = "while True:\n    pass\n"
# A neighbour that comes in bursts, as another grading job or a notebook beside does: spin 10-200 ms, rest 10-200 ms.
BURST = ("import random, time\nwhile True:\n    end = time.monotonic() + random.uniform(0.01, 0.2)\n"
         "    while time.monotonic() < end:\n        pass\n    time.sleep(random.uniform(0.01, 0.2))\n")


@contextlib.contextmanager
def load_sampler(every: float = 5.0):
    """Sample the 1-minute load average while the block runs; yields the list the samples go into."""
    samples: list[float] = []
    stop = threading.Event()

    def sample():
        while not stop.wait(every):
            samples.append(os.getloadavg()[0])

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield samples
    finally:
        stop.set()
        thread.join()


@contextlib.contextmanager
def cpu_hogs(count: int, *, bursts: int = 0):
    """Keep ``count`` cores busy with spinning processes, and ``bursts`` more processes spinning in bursts, for the
    duration of the block."""
    processes = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(count)]
    processes += [subprocess.Popen([sys.executable, "-c", BURST]) for _ in range(bursts)]
    try:
        yield
    finally:
        for process in processes:
            process.kill()
            process.wait()


def _submissions(lesson: Lesson, runs: int, with_variants: bool, folder: pathlib.Path) -> list[tuple[str, str, pathlib.Path]]:
    """(kind, student, path): kind is "reference" or a variant name."""
    entries = []
    sources = [("reference", lesson.source_notebook())]
    if with_variants:
        sources += [(variant.name, variant.notebook(lesson)) for variant in variants.for_lesson(lesson.id)]
    for kind, notebook in sources:
        for run in range(runs):
            path = folder / f"{kind}-{run:02d}" / f"{lesson.id}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(notebook), encoding="utf-8")
            entries.append((kind, f"{kind}-{run:02d}", path))
    return entries


def measure(course: Course, lesson_ids: list[str] | None, *, runs: int, hogs: int = 0, workers: int = 1, with_variants: bool = False,
            progress: bool = True, config: GradingConfig = DEFAULTS, bursts: int = 0) -> list[dict]:
    """Grade and summarise: one row per (lesson, speed check, kind of answer)."""
    from tqdm.auto import tqdm

    chosen = course.select(lesson_ids)
    rows = []
    with tempfile.TemporaryDirectory(prefix="tfperf-flake-") as scratch:
        work, folder = WorkFolder(pathlib.Path(scratch) / "work"), pathlib.Path(scratch) / "in"
        batch.prepare(course, work, [lesson.id for lesson in chosen])
        for lesson in chosen:
            checks = lesson.speed_checks()
            if not checks:
                continue
            entries = _submissions(lesson, runs, with_variants, folder)
            staged = {student: stage.stage(course, path, student, lesson.id) for _, student, path in entries}
            batch.register_students(course, work, set(staged))
            began = time.monotonic()
            with load_sampler() as load, cpu_hogs(hogs, bursts=bursts), concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
                futures = {pool.submit(batch.grade_staged, course, work, staged[student], config=config, with_feedback=False): kind
                           for kind, student, _ in entries}
                results = [(futures[f], f.result()) for f in tqdm(concurrent.futures.as_completed(futures), total=len(futures),
                                                                  desc=f"{lesson.id} x{runs}", disable=not progress)]
            elapsed = time.monotonic() - began
            source_nb = notebook.read(lesson.source)
            targets = {variant.name: set(variant.loses) for variant in variants.for_lesson(lesson.id)}
            for kind in sorted({kind for kind, _ in results}):
                graded = [result for k, result in results if k == kind]
                for cell_id, names in checks.items():
                    if kind != "reference" and cell_id not in targets[kind]:
                        continue  # this unoptimized answer leaves that exercise as the reference has it
                    rows.append(_row(lesson.id, cell_id, names, kind, graded, elapsed / len(results)) |
                                {"load_median": statistics.median(load) if load else None,
                                 "check_source": notebook.check_fingerprint(source_nb, cell_id)})
    return rows


def _row(lesson_id: str, cell_id: str, names: list[str], kind: str, graded: list, seconds: float) -> dict:
    scores = [next((c.score for c in result.cells if c.id == cell_id), 0) or 0 for result in graded]
    points = next(c.max_score for c in graded[0].cells if c.id == cell_id)
    measured = [m for result in graded for m in result.measurements if m.name in names]
    return {
        "lesson": lesson_id, "cell": cell_id, "answer": kind, "runs": len(graded),
        "passed": sum(score == points for score in scores),
        "speedup_median": statistics.median(m.speedup for m in measured) if measured else None,
        "ci_low_min": min(m.ci[0] for m in measured) if measured else None,
        "ci_high_max": max(m.ci[1] for m in measured) if measured else None,
        "threshold": measured[0].threshold if measured else None,
        # how hard the decision was: a check stops as soon as its interval clears the threshold (or falls below it),
        # so a run near its time budget or round limit is a near miss even when it passed
        "rounds_max": max(m.rounds for m in measured) if measured else None,
        "elapsed_max": max(m.elapsed for m in measured) if measured else None,
        "seconds_per_notebook": seconds,
        # who timed it: the grader (tfperf_lab.speed.judge, outside the learner's kernel) or the kernel itself (before the judge);
        # a judged grading decides a check even when it measured nothing (a check never served scores no speed points)
        "measured_by": "grader" if all(result.judged for result in graded) and all(m.technique == TECHNIQUE for m in measured) else "kernel",
        # the decision rule, and every grading's rounds as measured, for a replay under another rule or threshold
        # (`tfperf_lab.speed.replay`): kept rounds' seconds per call of each side, dropped ones with their positions
        "rule": measured[0].rule if measured else None,
        "gradings": [_rounds(m) for m in measured],
        # why each grading that did not earn the cell's points lost them (the cell's message, the grading's notes and
        # machine faults): a wrong outcome in a campaign is diagnosable from its record, not only counted
        "lost": [{"message": next((c.message for c in result.cells if c.id == cell_id), ""), "notes": list(result.notes),
                  "machine": list(result.machine), "judged": result.judged}
                 for result, score in zip(graded, scores) if score != points],
    }


def _rounds(record) -> dict:
    """One grading's rounds, compactly: seconds per call to 4 significant figures."""
    def short(values):
        return [float(f"{v:.4g}") for v in values]

    return {"name": record.name, "baseline": short(record.baseline.get("samples", [])), "candidate": short(record.candidate.get("samples", [])),
            "dropped": [[int(i), *short([b, c])] for i, b, c in record.dropped], "calls": record.baseline.get("number", 1),
            "elapsed": round(record.elapsed, 3), "passed": record.passed}
