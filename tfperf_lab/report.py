"""The main job: run every lesson's reference solution here and report what it measured.

Each notebook runs in a fresh kernel, cell by cell under a progress bar, in a scratch copy of its
folder. The measurements the notebooks `record` (see `tfperf.report`) become a markdown table per
lesson (baseline, optimized, speedup with its interval, the article's claim), one log-scale plot
of every speedup, the environment fingerprint and the total time.
"""

from __future__ import annotations

import datetime
import json
import os
import pathlib
import shutil
import tempfile
import time

import nbformat
from nbclient import NotebookClient
from tqdm.auto import tqdm

import tfperf
from tfperf.report import RECORD_VARIABLE, load_records
from tfperf.timing import format_seconds

from . import course


def execute(lesson: course.Lesson, records: pathlib.Path, *, progress: bool = True, cell_timeout: int = 600) -> list[str]:
    """Run the lesson's source notebook; returns one line per cell that raised."""
    nb = nbformat.read(lesson.source, as_version=4)
    scratch = pathlib.Path(tempfile.mkdtemp(prefix=f"tfperf-{lesson.id}-"))
    shutil.copytree(lesson.source.parent, scratch, dirs_exist_ok=True)
    # the kernel records its measurements to RECORDS; its temporary files (TensorBoard logs...) go with the scratch copy
    kernel_env = dict(os.environ, **{RECORD_VARIABLE: str(records), "TMPDIR": str(scratch)})
    client = NotebookClient(nb, timeout=cell_timeout, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(scratch)}})
    errors = []
    try:
        with client.setup_kernel(env=kernel_env):
            for index, cell in enumerate(tqdm(nb.cells, desc=lesson.id, unit="cell", disable=not progress, leave=False)):
                if cell.cell_type != "code":
                    continue
                client.execute_cell(cell, index)
                for output in cell.get("outputs", []):
                    if output.get("output_type") == "error":
                        errors.append(f"{lesson.id} cell {index}: {output.get('ename')}: {output.get('evalue', '')[:300]}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return errors


def _claim(item: dict) -> str:
    return item.get("claim") or (f"(graded: needs at least {item['threshold']:g}x)" if item.get("threshold") else "")


def _row(lesson: course.Lesson, item: dict) -> str:
    base, cand = item["baseline"], item["candidate"]
    low, high = item["ci"]
    return (f"| {lesson.id} | {item['name']} | {base['label']}: {format_seconds(base['median'])} | "
            f"{cand['label']}: {format_seconds(cand['median'])} | **{item['speedup']:.2f}x** ({low:.2f}-{high:.2f}) | "
            f"{_claim(item)} |")


def stated_seconds(lesson: course.Lesson, profile: str) -> float:
    """The run time a lesson promises in its first cell for this profile: the full workload, or the graded (reduced) one."""
    return 60 * (lesson.minutes_full if profile == "full" else lesson.minutes_grading)


def render(results: list[tuple[course.Lesson, list[dict], list[str], float]], total: float, environment: dict, plot_name: str) -> str:
    """The markdown report."""
    lines = [
        "# TF Performance Lab: course report", "",
        f"Run {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}, profile **{environment['profile']}**, "
        f"total {total / 60:.1f} min.", "",
        "Speedups are medians of paired, interleaved rounds after warm-up, with 95% bootstrap intervals.", "",
    ]
    for lesson, records, errors, seconds in results:
        stated = stated_seconds(lesson, environment["profile"])
        verdict = f"within the {stated / 60:g} minutes it states" if seconds <= stated else f"**over the {stated / 60:g} minutes it states**"
        lines += [f"## {lesson.id}: {lesson.title}", "", f"Technique: {lesson.technique}. Source article {lesson.article}; "
                  f"it claims: {lesson.claim}. Ran in {seconds:.0f} s, {verdict}.", ""]
        lines += ["| lesson | measurement | baseline | optimized | speedup (95% CI) | article's claim |", "|---|---|---|---|---|---|"]
        lines += [_row(lesson, item) for item in records] or ["| (nothing recorded) | | | | | |"]
        lines += [""] + [f"- error: {error}" for error in errors] + ([""] if errors else [])
    lines += [f"![All speedups]({plot_name})", "", "## Environment", "", "| | |", "|---|---|"]
    lines += [f"| {key} | {value} |" for key, value in environment.items()]
    return "\n".join(lines) + "\n"


def run(lesson_ids: list[str] | None = None, *, out: pathlib.Path, progress: bool = True) -> tuple[pathlib.Path, bool]:
    """Run the lessons and write ``out/course-report.md``, ``.png`` and ``.json``; returns (report, all cells ran)."""
    import matplotlib

    matplotlib.use("Agg")
    chosen = [course.lesson(i) for i in lesson_ids] if lesson_ids else course.lessons()
    out.mkdir(parents=True, exist_ok=True)
    began, results = time.monotonic(), []
    for lesson in tqdm(chosen, desc="course", unit="lesson", disable=not progress):
        records = out / f"{lesson.id}.records.jsonl"
        records.unlink(missing_ok=True)
        started = time.monotonic()
        errors = execute(lesson, records, progress=progress)
        results.append((lesson, load_records(records), errors, time.monotonic() - started))
        records.unlink(missing_ok=True)  # kept in course-report.json
    total = time.monotonic() - began
    everything = [dict(item, label=f"{lesson.id[:2]} {item['name']}") for lesson, records, _, _ in results for item in records]
    if everything:
        axes = tfperf.plots.speedups(everything, title="Measured speedups (95% CI)")
        axes.figure.savefig(out / "course-report.png", dpi=120)
    environment = tfperf.env.fingerprint()
    if environment.get("gpus") is None:  # this process never imports TensorFlow: take what the kernels saw
        environment["gpus"] = next((item["environment"].get("gpus") for item in everything if item.get("environment")), None)
    report = out / "course-report.md"
    report.write_text(render(results, total, environment, "course-report.png"), encoding="utf-8")
    summary = {"date": datetime.datetime.now().strftime("%Y-%m-%d"), "total_seconds": round(total, 1), "environment": environment,
               "lessons": [{"id": lesson.id, "seconds": round(seconds, 1), "stated_seconds": stated_seconds(lesson, environment["profile"]),
                            "errors": errors, "records": records}
                           for lesson, records, errors, seconds in results]}
    (out / "course-report.json").write_text(json.dumps(summary, indent=1, default=str) + "\n", encoding="utf-8")
    return report, not any(errors for _, _, errors, _ in results)


EXAMPLE = course.ROOT / "docs" / "example-report"
README_MARKS = ("<!-- report:start (generated by `tfperf-lab run --example`; a test keeps it in sync) -->", "<!-- report:end -->")


def readme_block(folder: pathlib.Path = EXAMPLE) -> str:
    """The README's example: one row per headline measurement of a committed report, and its plot."""
    summary = json.loads((folder / "course-report.json").read_text(encoding="utf-8"))
    env = summary["environment"]
    relative = folder.resolve().relative_to(course.ROOT).as_posix() if folder.resolve().is_relative_to(course.ROOT) else folder.as_posix()
    lines = [f"From `{relative}/course-report.md`, run {summary['date']} in the **{env['profile']}** profile on "
             f"{env['cpu_count']} CPU cores, {'GPU ' + ', '.join(env['gpus']) if env.get('gpus') else 'no GPU'}, "
             f"TensorFlow {env['tensorflow']}: {len(summary['lessons'])} lesson{'s' if len(summary['lessons']) != 1 else ''} in {summary['total_seconds'] / 60:.1f} min.", "",
             "| lesson | measurement | speedup (95% CI) | article's claim |", "|---|---|---|---|"]
    for lesson in summary["lessons"]:
        for item in lesson["records"]:
            low, high = item["ci"]
            lines.append(f"| {lesson['id'][:2]} | {item['name']} | {item['speedup']:.2f}x ({low:.2f}-{high:.2f}) | {_claim(item)} |")
        lines += [f"| {lesson['id'][:2]} | error: {error} | | |" for error in lesson["errors"]]
    lines += ["", f"![Every measured speedup, log scale]({relative}/course-report.png)"]
    return "\n".join(lines)


def update_readme(folder: pathlib.Path = EXAMPLE, readme: pathlib.Path = course.ROOT / "README.md") -> None:
    """Replace the README's example block with ``readme_block(folder)``."""
    course.update_readme_block(*README_MARKS, readme_block(folder), readme)
