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
from tqdm.auto import tqdm

import tfperf
from tfperf import stats
from tfperf.report import Record, load_records
from tfperf.units import format_seconds, interval

from ..course import Course, Lesson
from ..course.config import DEFAULTS, PROFILE_VARIABLE, RECORD_VARIABLE
from ..course import notebook
from ..isolation import runner
from ..isolation.contract import Limits

PROFILES = ("reduced", "full")


def claim(item: dict) -> str:
    """The article's claim beside a measurement, or the threshold of a graded one."""
    return item.get("claim") or (f"(graded: needs at least {item['threshold']:g}x)" if item.get("threshold") else "")


def execute(lesson: Lesson, records: pathlib.Path, *, profile: str = "reduced", progress: bool = True,
            cell_seconds: int = DEFAULTS.course_cell_seconds) -> list[str]:
    """Run the lesson's source notebook in a kernel of its own; returns one line per cell that raised.

    The kernel runs in a scratch copy of the lesson's folder, so ``records`` is made absolute before it starts.
    """
    records = pathlib.Path(records).resolve()
    nb = nbformat.read(lesson.source, as_version=4)
    scratch = pathlib.Path(tempfile.mkdtemp(prefix=f"tfperf-{lesson.id}-"))
    shutil.copytree(lesson.source.parent, scratch, dirs_exist_ok=True)
    # the kernel records its measurements to RECORDS; its temporary files (TensorBoard logs...) go with the scratch copy
    kernel_env = dict(os.environ, **{RECORD_VARIABLE: str(records), "TMPDIR": str(scratch), PROFILE_VARIABLE: profile})
    errors = []
    bar = tqdm(total=len(nb.cells), desc=lesson.id, unit="cell", disable=not progress, leave=False)

    def done(index: int, cell) -> None:
        bar.update(index + 1 - bar.n)
        errors.extend(f"{lesson.id} cell {index}: {output.get('ename')}: {output.get('evalue', '')[:300]}"
                      for output in cell.get("outputs", []) if output.get("output_type") == "error")

    try:
        status = runner.execute(nb, limits=Limits(cell_seconds=cell_seconds), cwd=str(scratch),
                                env=kernel_env, on_end=done)
    finally:
        bar.close()
        shutil.rmtree(scratch, ignore_errors=True)
    if status:
        errors.append(f"{lesson.id}: the kernel died")
    return errors


def _row(lesson: Lesson, item: Record) -> str:
    base, cand = item.baseline, item.candidate
    return (f"| {lesson.id} | {item.name} | {base['label']}: {format_seconds(base['median'])} | "
            f"{cand['label']}: {format_seconds(cand['median'])} | **{item.speedup:.2f}x** "
            f"({interval(*item.ci, unit='') if stats.bounded(item.ci) else 'too few rounds for an interval'}) | "
            f"{claim(item.to_dict())} |")


def stated_seconds(lesson: Lesson, profile: str) -> float:
    """The run time a lesson promises in its first cell for this profile: the full workload, or the graded (reduced) one."""
    return 60 * (lesson.minutes_full if profile == "full" else lesson.minutes_grading)


def render(results: list[tuple[Lesson, list[Record], list[str], float]], total: float, environment: dict, plot_name: str) -> str:
    """The markdown report."""
    lines = [
        "# TF Performance Lab: course report", "",
        f"Run {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}, profile **{environment['profile']}**, "
        f"total {total / 60:.1f} min.", "",
        "Speedups are medians of paired, interleaved rounds after warm-up, with 95% confidence sequences (tfperf.stats).", "",
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


def run(course: Course, lesson_ids: list[str] | None = None, *, out: pathlib.Path, profile: str = "reduced",
        progress: bool = True) -> tuple[pathlib.Path, bool]:
    """Run the lessons and write ``out/course-report.md``, ``.png`` and ``.json``; returns (report, every lesson ran and recorded).

    A lesson that ran without an error but recorded nothing counts as a failure: every lesson records its headline
    measurements, so an empty table means the records never reached this process.
    """
    import matplotlib

    matplotlib.use("Agg")
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}; got {profile!r}")
    chosen = course.select(lesson_ids)
    out = pathlib.Path(out).resolve()  # the kernels run elsewhere: a relative path would point into their scratch folders
    out.mkdir(parents=True, exist_ok=True)
    began, results, fingerprints = time.monotonic(), [], {}
    for lesson in tqdm(chosen, desc="course", unit="lesson", disable=not progress):
        records = out / f"{lesson.id}.records.jsonl"
        records.unlink(missing_ok=True)
        started = time.monotonic()
        code = notebook.code_fingerprint(notebook.read(lesson.source))  # of the code that runs, read before it runs
        errors = execute(lesson, records, profile=profile, progress=progress)
        try:
            measured = load_records(records)
        except ValueError as error:
            measured, errors = [], errors + [str(error)]
        if not measured and not errors:
            errors.append(f"{lesson.id} recorded no measurements (no {records.name} was written)")
        results.append((lesson, measured, errors, time.monotonic() - started))
        fingerprints[lesson.id] = code
        records.unlink(missing_ok=True)  # kept in course-report.json
    total = time.monotonic() - began
    everything = [item.to_dict() | {"label": f"{lesson.id[:2]} {item.name}"} for lesson, records, _, _ in results for item in records]
    if everything:
        axes = tfperf.plots.speedups(everything, title="Measured speedups (95% CI)")
        axes.figure.savefig(out / "course-report.png", dpi=120)
    environment = tfperf.env.fingerprint() | {"profile": profile}
    if environment.get("gpus") is None:  # this process never imports TensorFlow: take what the kernels saw
        environment["gpus"] = next((item["environment"].get("gpus") for item in everything if item.get("environment")), None)
    report = out / "course-report.md"
    report.write_text(render(results, total, environment, "course-report.png"), encoding="utf-8")
    summary = {"date": datetime.datetime.now().strftime("%Y-%m-%d"), "total_seconds": round(total, 1), "environment": environment,
               "lessons": [{"id": lesson.id, "code": fingerprints[lesson.id], "seconds": round(seconds, 1),
                            "stated_seconds": stated_seconds(lesson, environment["profile"]),
                            "errors": errors, "records": [item.to_dict() for item in records]}
                           for lesson, records, errors, seconds in results]}
    (out / "course-report.json").write_text(json.dumps(summary, indent=1, default=str) + "\n", encoding="utf-8")
    return report, not any(errors for _, _, errors, _ in results)
