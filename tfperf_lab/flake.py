"""How often speed checks give the wrong answer: the reference graded N times, unoptimized answers N times.

A correct answer must pass every speed check on every run, also with a CPU hog beside it; a correct
but unoptimized answer (see `autograder.variants`) must fail every speed check on every run.
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

from tqdm.auto import tqdm

from . import course, grading, variants

HOG = "while True:\n    pass\n"


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
def cpu_hogs(count: int):
    """Keep ``count`` cores busy with spinning processes for the duration of the block."""
    processes = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(count)]
    try:
        yield
    finally:
        for process in processes:
            process.kill()
            process.wait()


def _submissions(lesson: course.Lesson, runs: int, with_variants: bool, folder: pathlib.Path) -> list[tuple[str, str, pathlib.Path]]:
    """(kind, student, path): kind is "reference" or a variant name."""
    entries = []
    sources = [("reference", course.read_notebook(lesson.source))]
    if with_variants:
        sources += [(variant.name, variant.notebook()) for variant in variants.for_lesson(lesson.id)]
    for kind, notebook in sources:
        for run in range(runs):
            path = folder / f"{kind}-{run:02d}" / f"{lesson.id}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(notebook), encoding="utf-8")
            entries.append((kind, f"{kind}-{run:02d}", path))
    return entries


def measure(lesson_ids: list[str] | None, *, runs: int, hogs: int = 0, workers: int = 1, with_variants: bool = False,
            progress: bool = True) -> list[dict]:
    """Grade and summarise: one row per (lesson, speed check, kind of answer)."""
    chosen = [course.lesson(i) for i in lesson_ids] if lesson_ids else course.lessons()
    rows = []
    with tempfile.TemporaryDirectory(prefix="tfperf-flake-") as scratch:
        work, folder = pathlib.Path(scratch) / "work", pathlib.Path(scratch) / "in"
        grading.prepare(work, [lesson.id for lesson in chosen])
        for lesson in chosen:
            checks = grading.speed_checks(lesson)
            if not checks:
                continue
            entries = _submissions(lesson, runs, with_variants, folder)
            for _, student, path in entries:
                grading.submit(path, work, student, lesson.id)
            began = time.monotonic()
            with load_sampler() as load, cpu_hogs(hogs), concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
                futures = {pool.submit(grading.autograde, work, lesson.id, student): kind for kind, student, _ in entries}
                results = [(futures[f], f.result()) for f in tqdm(concurrent.futures.as_completed(futures), total=len(futures),
                                                                  desc=f"{lesson.id} x{runs}", disable=not progress)]
            elapsed = time.monotonic() - began
            targets = {variant.name: set(variant.loses) for variant in variants.for_lesson(lesson.id)}
            for kind in sorted({kind for kind, _ in results}):
                graded = [result for k, result in results if k == kind]
                for cell_id, names in checks.items():
                    if kind != "reference" and cell_id not in targets[kind]:
                        continue  # this unoptimized answer leaves that exercise as the reference has it
                    rows.append(_row(lesson.id, cell_id, names, kind, graded, elapsed / len(results)) |
                                {"load_median": statistics.median(load) if load else None})
    return rows


def _row(lesson_id: str, cell_id: str, names: list[str], kind: str, graded: list, seconds: float) -> dict:
    scores = [next((c.score for c in result.cells if c.id == cell_id), 0) or 0 for result in graded]
    points = next(c.max_score for c in graded[0].cells if c.id == cell_id)
    measured = [m for result in graded for m in result.measurements if m["name"] in names]
    return {
        "lesson": lesson_id, "cell": cell_id, "answer": kind, "runs": len(graded),
        "passed": sum(score == points for score in scores),
        "speedup_median": statistics.median(m["speedup"] for m in measured) if measured else None,
        "ci_low_min": min(m["ci"][0] for m in measured) if measured else None,
        "ci_high_max": max(m["ci"][1] for m in measured) if measured else None,
        "threshold": measured[0]["threshold"] if measured else None,
        # how hard the decision was: a check stops as soon as its interval clears the threshold (or falls below it),
        # so a run near its time budget or round limit is a near miss even when it passed
        "rounds_max": max(m["rounds"] for m in measured) if measured else None,
        "elapsed_max": max(m["elapsed"] for m in measured) if measured else None,
        "seconds_per_notebook": seconds,
    }


def render(rows: list[dict], *, hogs: int, workers: int) -> str:
    lines = [f"speed checks: {hogs} busy core(s) beside grading, {workers} worker(s)",
             "| lesson | cell | answer | passed / runs | median speedup | lowest CI low | highest CI high | threshold | load |",
             "|---|---|---|---|---|---|---|---|---|"]
    fmt = lambda v: "-" if v is None else f"{v:.2f}"
    for r in rows:
        lines.append(f"| {r['lesson']} | {r['cell']} | {r['answer']} | {r['passed']} / {r['runs']} | {fmt(r['speedup_median'])} | "
                     f"{fmt(r['ci_low_min'])} | {fmt(r['ci_high_max'])} | {fmt(r['threshold'])} | {fmt(r.get('load_median'))} |")
    return "\n".join(lines)


def wrong(rows: list[dict]) -> int:
    """False failures of the reference plus false passes of unoptimized answers."""
    return sum(r["runs"] - r["passed"] if r["answer"] == "reference" else r["passed"] for r in rows)


RECORDS = course.ROOT / "docs" / "flake"
README_MARKS = ("<!-- flake:start (generated by `tfperf-lab flake --readme` from docs/flake/; a test keeps it in sync) -->",
                "<!-- flake:end -->")


def record(rows: list[dict], *, hogs: int, workers: int, runs: int, path: pathlib.Path) -> None:
    """Write one campaign's rows with its conditions, as committed under docs/flake/."""
    import datetime

    summary = {"date": datetime.date.today().isoformat(), "cpu_count": os.cpu_count(), "hogs": hogs, "workers": workers,
               "runs": runs, "rows": rows}
    path.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")


def load_records(folder: pathlib.Path = RECORDS) -> list[dict]:
    """Every campaign under FOLDER; an unoptimized answer's rows only for the speed checks its exercise has."""
    targets = {(variant.lesson, variant.name): set(variant.loses) for variant in variants.VARIANTS}
    campaigns = []
    for path in sorted(folder.glob("*.json")):
        campaign = json.loads(path.read_text(encoding="utf-8"))
        campaign["rows"] = [r for r in campaign["rows"]
                            if r["answer"] == "reference" or r["cell"] in targets.get((r["lesson"], r["answer"]), ())]
        campaigns.append(campaign | {"file": path.name})
    return campaigns


def readme_block(folder: pathlib.Path = RECORDS) -> str:
    """The README's flake figures: every speed check with one core busy, then the false failures and throughput per worker count."""
    campaigns = load_records(folder)
    busy = [c for c in campaigns if c["workers"] == 1]
    rows = sorted(((c, r) for c in busy for r in c["rows"]),
                  key=lambda item: (item[1]["lesson"], item[1]["cell"], item[1]["answer"] != "reference", item[1]["answer"]))
    fmt = lambda v: "-" if v is None else f"{v:.2f}"
    lines = ["| lesson | speed check | answer | passed / runs | median speedup | lowest CI low | highest CI high | threshold | "
             "slowest decision | busy cores | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for campaign, r in rows:
        slowest = f"{r['rounds_max']} rounds, {r['elapsed_max']:.1f} s" if r.get("rounds_max") else "-"
        lines.append(f"| {r['lesson'][:2]} | `{r['cell']}` | {r['answer'].replace('_', ' ')} | {r['passed']} / {r['runs']} | "
                     f"{fmt(r['speedup_median'])}x | {fmt(r['ci_low_min'])} | {fmt(r['ci_high_max'])} | {fmt(r['threshold'])}x | "
                     f"{slowest} | {campaign['hogs']} | {fmt(r.get('load_median'))} |")
    reference = [r for _, r in rows if r["answer"] == "reference"]
    unoptimized = [r for _, r in rows if r["answer"] != "reference"]
    lines += ["", f"One worker: {sum(r['runs'] - r['passed'] for r in reference)} false failures in {sum(r['runs'] for r in reference)} "
                  f"reference runs of {len(reference)} speed checks; {sum(r['passed'] for r in unoptimized)} false passes in "
                  f"{sum(r['runs'] for r in unoptimized)} runs of {len(unoptimized)} unoptimized answers."]
    lines += ["", "| workers | busy cores beside | lessons | reference runs | false failures | smallest margin (lowest bound / threshold) | "
                  "slowest decision | notebooks a minute | per core |",
              "|---|---|---|---|---|---|---|---|---|"]
    by_conditions: dict[tuple[int, int], list[dict]] = {}
    for campaign in campaigns:
        by_conditions.setdefault((campaign["workers"], campaign["hogs"]), []).append(campaign)
    for (workers, hogs), group in sorted(by_conditions.items()):
        reference = [r for c in group for r in c["rows"] if r["answer"] == "reference"]
        lessons = sorted({r["lesson"][:2] for r in reference})
        every = len(lessons) == len([lesson for lesson in course.lessons() if grading.speed_checks(lesson)])
        margin = min(reference, key=lambda r: r["ci_low_min"] / r["threshold"])
        slowest = max(reference, key=lambda r: r.get("elapsed_max") or 0)
        # seconds per notebook is wall-clock time over notebooks graded, for each lesson once
        seconds = {r["lesson"]: r["seconds_per_notebook"] for c in group for r in c["rows"]}
        per_minute = 60 / statistics.median(seconds.values())
        cores = (group[0].get("cpu_count") or 2) - hogs
        decision = f"{slowest['elapsed_max']:.1f} s ({slowest['lesson'][:2]})" if slowest.get("elapsed_max") else "-"
        lines.append(f"| {workers} | {hogs} | {'all ' + str(len(lessons)) if every else ', '.join(lessons)} | {sum(r['runs'] for r in reference)} | "
                     f"{sum(r['runs'] - r['passed'] for r in reference)} | {margin['ci_low_min'] / margin['threshold']:.2f} ({margin['lesson'][:2]}) | "
                     f"{decision} | {per_minute:.1f} | {per_minute / max(cores, 1):.1f} |")
    return "\n".join(lines)


def update_readme(folder: pathlib.Path = RECORDS, readme: pathlib.Path | None = None) -> None:
    course.update_readme_block(*README_MARKS, readme_block(folder), readme)
