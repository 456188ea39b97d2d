"""Appeals: judge one graded submission's speed checks again, N times, and write what each time measured.

A speed verdict is a measurement, random to a degree; a student who contests one deserves more than the word of one
run. ``tfperf-lab regrade STUDENT LESSON --runs N`` grades the copy the class was graded from (``WORK/submitted/``)
N more times exactly as `tfperf-lab check` does (its own sandbox, the grader timing every speed check from outside the
kernel), changes no grade, and writes an appeal bundle to ``WORK/appeals/<student>/<lesson>/``:

- ``appeal.json``, for machines: for the original grading and every new run, per speed check, the verdict (speedup,
  interval, threshold, pass), both timed sides (labels, medians and each kept round's seconds per call, calls per
  round, the rounds kept and those dropped), the machine's state around that very check (as the grader's timer recorded
  it in the verdict's `tfperf.report.Record`), and the test cells beside the check with their status and message: the
  speed test cell itself, the structural tests that share its evidence (``review_with``) and the output tests its
  points are paid with (``paid_with``); each check's hint (what `tfperf.assert_speedup` tells a learner when it
  fails, read from the instructor's test cell); the machine's state before and after each new run; and the profile
  the lessons ran in under grading (`graded_profile`: what `tfperf.env.profile` answers in the environment the
  sandbox gives every kernel, the reduced profile, never this process's own);
- ``appeal.md``, for a student and an instructor to read together: one paragraph first (per check: how many of the N
  new runs passed, why the original grading failed it, what the structural test says, and a suggested verdict), then
  one table per check (original and every run: verdict, both sides' medians, rounds, the tests beside it, the machine
  during the check) and one of the machine's state per grading.

The instructor decides; a changed grade goes through the formgrader (a manual score) as any other.
"""

from __future__ import annotations

import ast
import datetime
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

from tfperf.units import format_seconds, interval, lower

from ..course import Course, WorkFolder, notebook
from ..course.config import DEFAULTS, GradingConfig
from ..course.lessons import Lesson
from . import batch, store
from .results import SubmissionResult

NOT_RECORDED = "not recorded for the original grading (graded before the grader recorded the machine's state with each verdict)"
NOT_MEASURED = ("not recorded for the original grading: it measured no speed check, and the grader records the machine's "
                "state with each verdict")


class AppealError(ValueError):
    """The appeal cannot run: no graded submission of that student and lesson in the work folder, or a bad option."""


# ------------------------------------------------------------------------------------------------ what is recorded

def graded_profile() -> str:
    """The profile the lessons run in under grading: `tfperf.env.profile` asked in the environment the grader's sandbox
    gives every kernel and reference process (`tfperf_lab.isolation.sandbox.reference_environment`: ``NBGRADER_EXECUTION``
    set, no ``TFPERF_PROFILE`` inherited from whoever grades), in a process of its own so this one's environment
    (a learner's ``full``, an instructor's own ``TFPERF_PROFILE``) plays no part."""
    from ..isolation import sandbox

    try:
        done = subprocess.run([sys.executable, "-I", "-c", "from tfperf import env; print(env.profile())"],
                              env=sandbox.reference_environment(None), capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"unknown (tfperf.env.profile could not be asked: {type(error).__name__})"
    said = done.stdout.strip()
    return said if done.returncode == 0 and said else f"unknown (tfperf.env.profile failed: {done.stderr.strip()[-200:]})"


def _machine(before: dict | None = None) -> dict:
    """This machine now: `tfperf.env.fingerprint` (software, cores and `tfperf.env.machine_state`: with ``before``, a
    `tfperf.env.cpu_times` reading, the CPU time stolen and throttled since), the load averages and the date. Without
    the fingerprint's ``profile``: this process's, not the grading's (the bundle's ``profile`` is)."""
    import tfperf

    state = tfperf.env.fingerprint(before)
    state.pop("profile", None)
    state["load_average"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    state["at"] = datetime.datetime.now().isoformat(timespec="seconds")
    return state


def hints(lesson: Lesson) -> dict[str, str]:
    """Speed check name -> the hint its ``tfperf.assert_speedup(..., hint=...)`` gives a learner when it fails, read from
    the instructor's test cell (the grader never hears it: the learner's kernel adds it to the failure's message)."""
    speed = lesson.speed_checks()
    found: dict[str, str] = {}
    for cell in lesson.source_notebook()["cells"]:
        if notebook.nbgrader_meta(cell).get("grade_id") not in speed:
            continue
        try:
            tree = notebook.parse(notebook.source(cell))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            called = getattr(node, "func", None)
            if not isinstance(node, ast.Call) or getattr(called, "attr", getattr(called, "id", None)) != "assert_speedup":
                continue
            words = {keyword.arg: keyword.value for keyword in node.keywords if keyword.arg}
            name, hint = words.get("name"), words.get("hint")
            if isinstance(name, ast.Constant) and isinstance(name.value, str) and hint is not None:
                found[name.value] = hint.value if isinstance(hint, ast.Constant) and isinstance(hint.value, str) else ast.unparse(hint)
    return found


def links(lesson: Lesson) -> dict[str, dict]:
    """Speed check name -> the test cells beside it in the lesson (`Lesson.speed_checks`, `Lesson.review_cells`,
    `Lesson.speed_outputs`): ``cell`` (its own speed test cell), ``structural`` (the structural tests that share its
    evidence, ``review_with`` it), ``outputs`` (the output tests its speed is paid with), and its ``hint`` ("" if none)."""
    speed, review, outputs, said = lesson.speed_checks(), lesson.review_cells(), lesson.speed_outputs(), hints(lesson)
    found = {}
    for cell_id, names in speed.items():
        for name in names:
            found[name] = {"cell": cell_id, "hint": said.get(name, ""),
                           "structural": sorted(other for other, linked in review.items() if name in linked and other not in speed),
                           "outputs": list(outputs.get(cell_id, []))}
    return found


def _side(data: dict) -> dict:
    samples = list(data.get("samples", []))
    median = data.get("median", statistics.median(samples) if samples else None)
    return {"label": data.get("label"), "median": median, "calls_per_round": data.get("number"),
            "fastest": min(samples) if samples else None, "slowest": max(samples) if samples else None}


def _verdicts(result: SubmissionResult, check: str | None) -> list[dict]:
    """The grader's speed verdicts of one grading (records with a threshold): each with both timed sides, the rounds
    kept (their raw seconds per call) and dropped, and the machine's state around that check as the timer recorded it
    (None in a record written before it did)."""
    found = []
    for record in result.measurements:
        if record.threshold is None or (check and record.name != check):
            continue
        if record.rule:  # a record of a versioned rule keeps every dropped round
            dropped = len(record.dropped)
        else:  # older: the timer's count, if it kept one
            dropped = record.baseline.get("metadata", {}).get("disturbed_rounds")
        found.append({"check": record.name, "speedup": record.speedup, "ci": list(record.ci), "threshold": record.threshold,
                      "passed": bool(record.passed), "rounds": record.rounds, "rounds_dropped": dropped,
                      "baseline": _side(record.baseline), "candidate": _side(record.candidate),
                      "baseline_seconds": list(record.baseline.get("samples", [])),
                      "candidate_seconds": list(record.candidate.get("samples", [])),
                      "dropped_rounds": [list(item) for item in record.dropped], "rule": record.rule,
                      "machine": record.environment.get("machine") or None,
                      "software": {key: record.environment.get(key) for key in ("tensorflow", "python", "cpu_count")
                                   if key in record.environment} or None,
                      "measured_at": (datetime.datetime.fromtimestamp(record.time).isoformat(timespec="seconds")
                                      if record.time else None)})
    return found


def _tests(result: SubmissionResult, linked: dict[str, dict]) -> dict[str, list[dict]]:
    """Per speed check, the status and message of its test cells in this grading: the speed test, then the structural
    tests, then the output tests."""
    cells = {cell.id: cell for cell in result.cells}
    found = {}
    for name, link in linked.items():
        rows = []
        for role, ids in (("speed test", [link["cell"]]), ("structural test", link["structural"]), ("output test", link["outputs"])):
            for cell_id in ids:
                cell = cells.get(cell_id)
                rows.append({"cell": cell_id, "role": role, "status": cell.status if cell else "missing",
                             "message": cell.message if cell else "not in this grading's result",
                             "score": cell.score if cell else None, "max_score": cell.max_score if cell else None})
        found[name] = rows
    return found


def _grading(result: SubmissionResult, linked: dict[str, dict], check: str | None) -> dict:
    """One grading as the bundle keeps it: its status, verdicts, the test cells beside each check, and the notes that
    name a check (why one was not measured)."""
    return {"status": result.status, "verdicts": _verdicts(result, check), "tests": _tests(result, linked),
            "notes": [note for note in result.notes if any(name in note for name in linked)]}


def original(course: Course, work: WorkFolder, student: str, lesson_id: str, *, check: str | None = None,
             profile: str | None = None) -> dict:
    """The original grading of the stored result (`store.entry`) as the bundle keeps it, with the machine's state the
    grader recorded with its verdicts (``machine``; None and ``machine_note`` `NOT_RECORDED` when its records hold none)."""
    kept = store.entry(work, student, lesson_id)
    if kept is None:
        raise AppealError(f"no stored result of {lesson_id} by {student} in {work.root}")
    lesson = course.lesson(lesson_id)
    linked = {name: link for name, link in links(lesson).items() if not check or name == check}
    found = _grading(kept.result, linked, check)
    measured = next((v for v in found["verdicts"] if v["machine"]), None)
    found["machine"] = (dict(measured["software"] or {}, machine=measured["machine"], at=measured["measured_at"])
                        if measured else None)
    found["machine_note"] = None if measured else NOT_RECORDED if found["verdicts"] else NOT_MEASURED
    found["profile"] = profile or graded_profile()
    found["release_changed"] = bool(kept.release) and kept.release != lesson.fingerprint()
    return found


def regrade(course: Course, work: WorkFolder, student: str, lesson_id: str, *, runs: int, check: str | None = None,
            config: GradingConfig = DEFAULTS, progress=print) -> pathlib.Path:
    """Grade ``student``'s graded copy of ``lesson_id`` ``runs`` more times and write the appeal bundle; returns the
    folder. Raises `AppealError` when there is nothing to regrade."""
    import tfperf

    if runs < 1:
        raise AppealError(f"--runs must be at least 1, not {runs}")
    submitted = work.submitted(student, lesson_id)
    kept = store.entry(work, student, lesson_id)
    if not submitted.exists() or kept is None or kept.outcome != "graded":
        raise AppealError(f"no graded submission of {lesson_id} by {student} in {work.root}: grade the class first "
                          "(an appeal regrades the copy the class was graded from)")
    lesson = course.lesson(lesson_id)
    linked = links(lesson)
    if check and check not in linked:
        raise AppealError(f"{lesson_id} has no speed check {check!r} (its checks: {', '.join(sorted(linked)) or 'none'})")
    linked = {name: link for name, link in linked.items() if not check or name == check}
    profile = graded_profile()
    bundle = {"student": student, "lesson": lesson_id, "runs": runs, "check": check, "profile": profile,
              "checks": {name: {"hint": link["hint"], "cell": link["cell"], "structural": link["structural"],
                                "outputs": link["outputs"]} for name, link in linked.items()},
              "original": original(course, work, student, lesson_id, check=check, profile=profile), "regraded": []}
    with tempfile.TemporaryDirectory(prefix="tfperf-appeal-") as scratch:
        for number in range(1, runs + 1):
            times, before = tfperf.env.cpu_times(), _machine()
            result = batch.check(course, submitted, lesson_id=lesson_id, feedback_to=pathlib.Path(scratch) / "feedback.html",
                                 config=config)
            bundle["regraded"].append({"run": number, "profile": profile, **_grading(result, linked, check),
                                       "machine_before": before, "machine_after": _machine(times)})
            if progress:
                said = ", ".join(f"{v['check']} {v['speedup']:.2f}x ({'pass' if v['passed'] else 'fail'})"
                                 for v in bundle["regraded"][-1]["verdicts"]) or result.status
                progress(f"run {number} of {runs}: {said}")
    folder = work.root / "appeals" / student / lesson_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "appeal.json").write_text(json.dumps(bundle, indent=1) + "\n", encoding="utf-8")
    (folder / "appeal.md").write_text(summary(bundle), encoding="utf-8")
    return folder


# ------------------------------------------------------------------------------------------------------ the page

def _cell(text) -> str:
    """A value fit for one cell of a Markdown table: one line, no pipe, not too long."""
    said = " ".join(str(text).split()).replace("|", "/")
    return said if len(said) <= 140 else said[:137] + "..."


def _ratio(verdict: dict) -> str:
    low, high = verdict["ci"]
    shown = f"95% CI {interval(low, high)}" if low > 0 and high != float("inf") else "no interval: too few rounds"
    return f"{verdict['speedup']:.2f}x ({shown})"


def _seconds(value) -> str:
    return format_seconds(value) if isinstance(value, (int, float)) and value > 0 else "?"


def _rounds(verdict: dict) -> str:
    dropped = verdict.get("rounds_dropped")
    return f"{verdict['rounds']} kept, " + ("dropped: not recorded" if dropped is None else f"{dropped} dropped")


def _percent(value) -> str:
    return f"{value:.1%}" if isinstance(value, (int, float)) else "?"


def _during(state: dict | None) -> str:
    """The machine during one check, in a few words."""
    if not state:
        return "not recorded"
    said = f"load {state.get('load1', '?')} on {state.get('cores', '?')} cores"
    if "steal_share" in state:
        said += f", {_percent(state['steal_share'])} stolen"
    if "throttled_share" in state:
        said += f", {_percent(state['throttled_share'])} throttled"
    return said


def _message(row: dict) -> str:
    """A test cell's message without the words every failure repeats ("AssertionError: ", "speed check NAME (measured
    by the grader): ")."""
    message = row["message"] or ""
    message = message[len("AssertionError: "):] if message.startswith("AssertionError: ") else message
    if message.startswith("speed check ") and " (measured by the grader): " in message:
        message = message.split(" (measured by the grader): ", 1)[1]
    return message


def _test_said(row: dict | None) -> str:
    """A test cell's status and, unless it passed, its message."""
    if row is None:
        return "?"
    message = _message(row)
    return row["status"] + (f": {message}" if message and row["status"] != "passed" else "")


def _failed_because(verdict: dict | None, tests: list[dict], notes: list[str], name: str) -> str:
    """Why a grading did not pay a check, in one clause."""
    speed = next((row for row in tests if row["role"] == "speed test"), None)
    if verdict is None:
        why = next((note.split(f"speed check {name}: ", 1)[-1] for note in notes if name in note), None)
        return "it was not measured (" + (why or _test_said(speed)) + ")"
    base, answer = verdict["baseline"], verdict["candidate"]
    dropped = verdict.get("rounds_dropped")
    sides = (f"the baseline ({base['label']}) took {_seconds(base['median'])} per call and the answer ({answer['label']}) "
             f"{_seconds(answer['median'])} (medians of the {verdict['rounds']} rounds kept"
             + (f"; {dropped} more were dropped, disturbed by other work)" if dropped else ")"))
    if not verdict["passed"]:
        return (f"its measured speedup, {_ratio(verdict)}, did not clear the {verdict['threshold']:g}x threshold (the "
                f"interval's lower end, {lower(verdict['ci'][0])}x, must reach it): {sides}")
    withheld = [row["cell"] for row in tests if row["role"] == "output test" and row["status"] != "passed"]
    if withheld:
        return (f"its measurement passed ({_ratio(verdict)}), but speed is paid only for correct outputs and "
                f"{', '.join(withheld)} did not pass")
    if speed is not None and speed["status"] != "passed":
        return f"its measurement passed ({_ratio(verdict)}), but its test cell was {_test_said(speed)}"
    return f"it passed ({_ratio(verdict)}, threshold {verdict['threshold']:g}x): {sides}"


def _check_paragraph(bundle: dict, name: str) -> str:
    info = bundle.get("checks", {}).get(name, {})
    first_grading, runs = bundle["original"], bundle["regraded"]
    first = next((v for v in first_grading["verdicts"] if v["check"] == name), None)
    tests = first_grading.get("tests", {}).get(name, [])
    new = [next((v for v in run["verdicts"] if v["check"] == name), None) for run in runs]
    passed = sum(1 for v in new if v and v["passed"])
    speed = next((row for row in tests if row["role"] == "speed test"), None)
    paid_before = speed is not None and speed["status"] == "passed"
    measured = ", ".join(f"{v['speedup']:.2f}x" if v else "not measured" for v in new)
    said = [f"**{name}**: the check passed in {passed} of {len(runs)} new run(s)" + (f" ({measured})" if runs else "")]
    because = _failed_because(first, tests, first_grading.get("notes", []), name)
    said.append(f"originally {because}" if paid_before else f"originally it failed because {because}")
    if info.get("hint"):
        said.append(f"the hint it gives when it fails: \"{info['hint']}\"")
    structural = [row for row in tests if row["role"] == "structural test"]
    broken = []
    for row in structural:
        later = [next((r for r in run.get("tests", {}).get(name, []) if r["cell"] == row["cell"]), None) for run in runs]
        failing = sum(1 for r in later if r is None or r["status"] != "passed")
        if row["status"] == "passed":
            said.append(f"the structural test {row['cell']} passed originally"
                        + (" and in every new run" if not failing else f" but failed in {failing} of {len(runs)} new run(s)"))
        else:
            broken.append(row["cell"])
            said.append(f"the structural test {row['cell']} {row['status']} originally ({_cell(_message(row)) or 'no message'})"
                        f" and failed in {failing} of {len(runs)} new run(s)")
    if not structural:
        said.append("no structural test shares this check's evidence")
    said.append("verdict: " + _suggest(paid_before, first, passed, len(runs), broken, tests))
    return "; ".join(said) + "."


def _suggest(paid_before: bool, first: dict | None, passed: int, runs: int, broken: list[str], tests: list[dict]) -> str:
    """A suggested reading of the evidence; the instructor decides."""
    if paid_before:
        return "the check was paid originally: nothing to appeal on speed" + (
            "" if passed == runs else f" (the new runs passed {passed} of {runs}; an appeal takes no points away)")
    speed = next((row for row in tests if row["role"] == "speed test"), None)
    if speed is not None and speed["status"] in ("review", "rejected"):
        return ("the speed cell is withheld for a person's review of the code, not for its speed: settle that with "
                "`tfperf-lab review`")
    wrong = [row["cell"] for row in tests if row["role"] == "output test" and row["status"] != "passed"]
    if wrong:
        return (f"the speed points stay withheld whatever is measured, since {', '.join(wrong)} did not pass "
                "(speed is paid only for correct outputs)")
    if broken and passed < runs:
        return (f"the failure stands: the answer fails the structural test ({', '.join(broken)}) that explains a slow "
                f"measurement, and {runs - passed} of {runs} new run(s) failed too")
    if passed == 0:
        return "the failure reproduces in every new run: it is the answer's speed, not one run's chance; the grade stands"
    if passed == runs:
        return ("every new run passed: the original " + ("measurement" if first else "grading")
                + " looks like a disturbed run rather than a slow answer"
                + (f", though the structural test ({', '.join(broken)}) fails" if broken else "")
                + "; consider a manual score for the speed cell")
    return (f"the answer sits near the threshold (passed {passed} of {runs}): the evidence is mixed, and the "
            "instructor decides")


def _machine_sentence(bundle: dict) -> str:
    """The machine during the original grading's checks against the new runs', in one sentence."""
    first = bundle["original"]
    states = [v["machine"] for v in first["verdicts"] if v.get("machine")]
    said = (f"The machine during the original grading's check: {_during(states[0])}" if states else
            f"The machine's state is {first.get('machine_note') or NOT_RECORDED}")
    loads = [v["machine"].get("load1") for run in bundle["regraded"] for v in run["verdicts"] if v.get("machine")]
    loads = [load for load in loads if isinstance(load, (int, float))]
    if loads:
        said += (f"; during the new runs' checks, load {min(loads):g}" + (f" to {max(loads):g}" if max(loads) != min(loads) else "")
                 + " (both in the tables below).")
    return said if said.endswith(".") else said + "."


def _check_table(bundle: dict, name: str) -> list[str]:
    info = bundle.get("checks", {}).get(name, {})
    gradings = [("original", bundle["original"])] + [(f"run {run['run']}", run) for run in bundle["regraded"]]
    sample = next((v for _, g in gradings for v in g["verdicts"] if v["check"] == name), None)
    base = (sample or {}).get("baseline", {}).get("label") or "baseline"
    answer = (sample or {}).get("candidate", {}).get("label") or "answer"
    beside = [(row["cell"], row["role"]) for row in bundle["original"].get("tests", {}).get(name, [])]
    head = ["grading", "verdict", "speedup", "threshold", f"{base} (baseline), median per call",
            f"{answer} (answer), median per call", "rounds", *(f"{cell} ({role})" for cell, role in beside),
            "machine during the check"]
    lines = [f"## {name}", ""]
    about = [f"Speed test cell: `{info.get('cell', '?')}`."]
    about.append(f"Hint it gives a learner when it fails: \"{info['hint']}\"." if info.get("hint") else
                 "It gives no hint when it fails.")
    if info.get("structural"):
        about.append(f"Structural test(s) sharing its evidence: {', '.join(f'`{c}`' for c in info['structural'])}.")
    if info.get("outputs"):
        about.append(f"Its speed is paid only when {', '.join(f'`{c}`' for c in info['outputs'])} pass.")
    lines += [" ".join(about), "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, grading in gradings:
        verdict = next((v for v in grading["verdicts"] if v["check"] == name), None)
        tests = {row["cell"]: row for row in grading.get("tests", {}).get(name, [])}
        if verdict is None:
            why = next((note for note in grading.get("notes", []) if name in note), grading["status"])
            row = [label, "not measured", _cell(why), "", "", "", ""]
        else:
            row = [label, "pass" if verdict["passed"] else "fail", _ratio(verdict), f"{verdict['threshold']:g}x",
                   _seconds(verdict["baseline"]["median"]), _seconds(verdict["candidate"]["median"]), _rounds(verdict)]
        row += [_cell(_test_said(tests.get(cell))) for cell, _ in beside]
        row.append(_during(verdict.get("machine")) if verdict else "")
        lines.append("| " + " | ".join(row) + " |")
    return lines + [""]


def _machine_rows(bundle: dict) -> list[str]:
    head = ["grading", "profile", "when", "load (1 min)", "cores", "cgroup CPU quota", "CPU time stolen", "throttled",
            "CPU", "TensorFlow", "Python"]
    lines = ["## The machine", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    first = bundle["original"]
    state = first.get("machine")
    if state:
        inside = state.get("machine") or {}
        lines.append("| " + " | ".join(_cell(value) for value in [
            "original (during its speed check)", first.get("profile", "?"), state.get("at") or "?", inside.get("load1", "?"),
            inside.get("cores", state.get("cpu_count", "?")), inside.get("cpu_max") or "?", _percent(inside.get("steal_share")),
            _percent(inside.get("throttled_share")), inside.get("cpu_model") or "?", state.get("tensorflow") or "?",
            state.get("python") or "?"]) + " |")
    else:
        lines.append(f"| original | {first.get('profile', '?')} | {first.get('machine_note') or NOT_RECORDED} |" + " |" * 8)
    for run in bundle["regraded"]:
        before, after = run.get("machine_before") or {}, run.get("machine_after") or {}
        was, now = before.get("machine") or {}, after.get("machine") or {}
        lines.append("| " + " | ".join(_cell(value) for value in [
            f"run {run['run']}", run.get("profile", bundle.get("profile", "?")), before.get("at", "?"),
            f"{was.get('load1', '?')} before, {now.get('load1', '?')} after", now.get("cores", after.get("cpu_count", "?")),
            now.get("cpu_max") or "?", _percent(now.get("steal_share")), _percent(now.get("throttled_share")),
            now.get("cpu_model") or "?", after.get("tensorflow") or "?", after.get("python") or "?"]) + " |")
    return lines + [""]


def summary(bundle: dict) -> str:
    """The bundle as a page for a student and an instructor to read together: one paragraph (per check: the new runs,
    why the original grading failed it, the structural test, a suggested verdict), then a table per check, then the
    machine's state per grading."""
    names = sorted({v["check"] for run in bundle["regraded"] for v in run["verdicts"]} |
                   {v["check"] for v in bundle["original"]["verdicts"]} | set(bundle.get("checks", {})))
    runs = len(bundle["regraded"])
    profile = bundle.get("profile", "?")
    first = bundle["original"]
    paragraph = [_check_paragraph(bundle, name) for name in names] or ["This lesson has no speed check."]
    paragraph.append(_machine_sentence(bundle))
    paragraph.append(f"Every grading here ran the {profile} profile (what `tfperf.env.profile` gives a lesson under "
                     "grading), the original and the new runs alike.")
    if first.get("release_changed"):
        paragraph.append("The lesson's tests changed since the original grading: the new runs use today's.")
    paragraph.append(f"The {runs} new run(s) graded the copy the class was graded from, each in its own sandbox with the "
                     "grader timing every speed check from outside the kernel; nothing was changed by this appeal, and the "
                     "instructor decides (a changed grade is a manual score in the formgrader).")
    lines = [f"# Appeal: {bundle['lesson']}, {bundle['student']}", "", " ".join(paragraph), ""]
    for name in names:
        lines += _check_table(bundle, name)
    lines += _machine_rows(bundle)
    lines.append("Every verdict's rounds (the raw seconds per call of both sides, kept and dropped), every test cell's "
                 "status and message, and the machine's whole state before and after each run are in `appeal.json`.")
    return "\n".join(lines) + "\n"
