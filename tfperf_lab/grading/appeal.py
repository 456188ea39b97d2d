"""Appeals: judge one graded submission's speed checks again, N times, and write what each time measured.

A speed verdict is a measurement, random to a degree; a student who contests one deserves more than the word of one
run. ``tfperf-lab regrade STUDENT LESSON --runs N`` grades the copy the class was graded from (``WORK/submitted/``)
N more times exactly as `tfperf-lab check` does (its own sandbox, the grader timing every speed check from outside the
kernel), changes no grade, and writes an appeal bundle to ``WORK/appeals/<student>/<lesson>/``:

- ``appeal.json``: the original grading's verdicts, then every run's verdict per speed check (speedup, interval,
  threshold, pass, rounds, and each round's raw seconds on both sides), and the machine's state around each run
  (load, cores, TensorFlow, the date);
- ``appeal.md``: the same in a table an instructor can send back: per check, how many of the N runs passed and the
  range of speedups, beside the original verdict.

The instructor decides; a changed grade goes through the formgrader (a manual score) as any other.
"""

from __future__ import annotations

import datetime
import json
import os
import pathlib
import tempfile

from ..course import Course, WorkFolder
from ..course.config import DEFAULTS, GradingConfig
from . import batch, store
from .results import SubmissionResult


class AppealError(ValueError):
    """The appeal cannot run: no graded submission of that student and lesson in the work folder, or a bad option."""


def _machine() -> dict:
    import tfperf

    state = tfperf.env.fingerprint()
    state["load_average"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    state["at"] = datetime.datetime.now().isoformat(timespec="seconds")
    return state


def _verdicts(result: SubmissionResult, check: str | None) -> list[dict]:
    """The grader's speed verdicts of one grading (records with a threshold), with each round's raw seconds."""
    found = []
    for record in result.measurements:
        if record.threshold is None or (check and record.name != check):
            continue
        found.append({"check": record.name, "speedup": record.speedup, "ci": list(record.ci), "threshold": record.threshold,
                      "passed": bool(record.passed), "rounds": record.rounds,
                      "baseline_seconds": list(record.baseline.get("samples", [])),
                      "candidate_seconds": list(record.candidate.get("samples", []))})
    return found


def regrade(course: Course, work: WorkFolder, student: str, lesson_id: str, *, runs: int, check: str | None = None,
            config: GradingConfig = DEFAULTS, progress=print) -> pathlib.Path:
    """Grade ``student``'s graded copy of ``lesson_id`` ``runs`` more times and write the appeal bundle; returns the
    folder. Raises `AppealError` when there is nothing to regrade."""
    if runs < 1:
        raise AppealError(f"--runs must be at least 1, not {runs}")
    submitted = work.submitted(student, lesson_id)
    kept = store.entry(work, student, lesson_id)
    if not submitted.exists() or kept is None or kept.outcome != "graded":
        raise AppealError(f"no graded submission of {lesson_id} by {student} in {work.root}: grade the class first "
                          "(an appeal regrades the copy the class was graded from)")
    original = kept.result
    checks = {name for names in course.lesson(lesson_id).speed_checks().values() for name in names}
    if check and check not in checks:
        raise AppealError(f"{lesson_id} has no speed check {check!r} (its checks: {', '.join(sorted(checks)) or 'none'})")
    bundle = {"student": student, "lesson": lesson_id, "runs": runs, "check": check,
              "original": {"verdicts": _verdicts(original, check), "status": original.status, "machine": None},
              "regraded": []}
    with tempfile.TemporaryDirectory(prefix="tfperf-appeal-") as scratch:
        for number in range(1, runs + 1):
            before = _machine()
            result = batch.check(course, submitted, lesson_id=lesson_id, feedback_to=pathlib.Path(scratch) / "feedback.html",
                                 config=config)
            bundle["regraded"].append({"run": number, "status": result.status, "verdicts": _verdicts(result, check),
                                       "machine_before": before, "machine_after": _machine()})
            if progress:
                said = ", ".join(f"{v['check']} {v['speedup']:.2f}x ({'pass' if v['passed'] else 'fail'})"
                                 for v in bundle["regraded"][-1]["verdicts"]) or result.status
                progress(f"run {number} of {runs}: {said}")
    folder = work.root / "appeals" / student / lesson_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "appeal.json").write_text(json.dumps(bundle, indent=1) + "\n", encoding="utf-8")
    (folder / "appeal.md").write_text(summary(bundle), encoding="utf-8")
    return folder


def summary(bundle: dict) -> str:
    """The bundle as a page: per speed check, the original verdict and what the N new runs measured."""
    lines = [f"# Appeal: {bundle['lesson']}, {bundle['student']}", "",
             f"The submission the class was graded from, graded {bundle['runs']} more time(s) in its own sandbox, the grader "
             "timing every speed check from outside the kernel. Nothing was changed by this; the instructor decides.", "",
             "| speed check | original verdict | passed in the new runs | speedups measured (median of each run) | threshold |",
             "|---|---|---|---|---|"]
    names = sorted({v["check"] for run in bundle["regraded"] for v in run["verdicts"]} |
                   {v["check"] for v in bundle["original"]["verdicts"]})
    for name in names:
        first = next((v for v in bundle["original"]["verdicts"] if v["check"] == name), None)
        new = [v for run in bundle["regraded"] for v in run["verdicts"] if v["check"] == name]
        said = (f"{first['speedup']:.2f}x ({first['ci'][0]:.2f}-{first['ci'][1]:.2f}), {'pass' if first['passed'] else 'fail'}"
                if first else "not measured")
        speedups = ", ".join(f"{v['speedup']:.2f}x" for v in new) or "none"
        threshold = f"{(first or (new[0] if new else {})).get('threshold', 0):g}x"
        lines.append(f"| {name} | {said} | {sum(v['passed'] for v in new)} of {len(new)} | {speedups} | {threshold} |")
    loads = [run["machine_before"].get("load_average") for run in bundle["regraded"]]
    lines += ["", "Each run's verdicts with every round's raw seconds, and the machine's state before and after it (load "
                  f"averages before each run: {', '.join(str([round(x, 2) for x in load]) if load else '?' for load in loads)}), "
                  "are in `appeal.json`."]
    return "\n".join(lines) + "\n"
