"""Recorded runs and the figures lessons quote from them: ``docs/runs/<profile>/*.json`` -> ``tfperf/ranges.json``.

A lesson's "What to notice" cell compares the learner's speedup with what the course measured
(`tfperf.report.seen`), and its prose quotes the same runs through figure marks that `tfperf-lab release` renders
(`tfperf_lab.course.figures`). Those figures must belong to a profile and come from runs of the lesson's current code,
not from prose: ``tfperf-lab run --profile full --keep-run --runs 5`` keeps each run's records, condensed, in
``docs/runs/full/`` with a fingerprint of every lesson's code cells, and ``tfperf-lab ranges`` (run by ``--keep-run``
too) rebuilds ``tfperf/ranges.json`` from the kept runs whose fingerprint matches the lesson's code today. A test
keeps the two in sync, and another asks for at least `RUNS_NEEDED` current runs of every lesson in both profiles.
"""

from __future__ import annotations

import json
import pathlib

from tfperf import present, stats
from tfperf.report import RANGES_FILE

from ..course import Course, notebook

RUNS_NEEDED = 5  # current runs per lesson and profile before a lesson's figures count as recorded
# The TensorFlow the lessons' figures are recorded on (major.minor). A run kept on another one (Colab's or Kaggle's, in a
# venv of its own) goes to docs/runs/hosted/tf-<major.minor>/<profile>/: the lessons never quote it; `hosted` reads it
# back beside the course's own figures (docs/benchmarks.md and the README say what ran where).
COURSE_TENSORFLOW = "2.21"


def runs_folder(course: Course) -> pathlib.Path:
    return course.root / "docs" / "runs"


def condense(report: dict) -> dict:
    """What a kept run holds: date, profile, machine, and per lesson its code's fingerprint, its seconds, and each
    record's speedup, interval and both sides' median seconds per call."""
    environment = report["environment"]
    return {
        "date": report["date"], "profile": environment["profile"],
        "environment": {key: environment.get(key) for key in ("tensorflow", "keras", "python", "cpu_count", "gpus", "platform")
                        if key in environment},
        "code": {lesson["id"]: lesson.get("code") for lesson in report["lessons"] if not lesson["errors"]},
        "seconds": {lesson["id"]: lesson["seconds"] for lesson in report["lessons"] if not lesson["errors"]},
        "lessons": {lesson["id"]: {item["name"]: {"speedup": round(item["speedup"], 4), "ci": [round(v, 4) for v in item["ci"]],
                                                  "baseline": _median(item, "baseline"), "candidate": _median(item, "candidate")}
                                   for item in lesson["records"]}
                    for lesson in report["lessons"] if not lesson["errors"]},
    }


def _median(item: dict, side: str) -> float | None:
    value = (item.get(side) or {}).get("median")
    return None if value is None else float(f"{value:.4g}")


def keep(course: Course, report_json: pathlib.Path) -> pathlib.Path:
    """Condense a ``course-report.json`` into ``docs/runs/<profile>/<date>-<n>.json``; returns its path."""
    run = condense(json.loads(pathlib.Path(report_json).read_text(encoding="utf-8")))
    version = minor(run["environment"].get("tensorflow"))
    folder = runs_folder(course) / run["profile"] if version == COURSE_TENSORFLOW else hosted_folder(course, version) / run["profile"]
    folder.mkdir(parents=True, exist_ok=True)
    number = 1 + max((_number(path) for path in folder.glob(f"{run['date']}-*.json")), default=0)
    path = folder / f"{run['date']}-{number}.json"
    path.write_text(json.dumps(run, indent=1) + "\n", encoding="utf-8")
    return path


def _number(path: pathlib.Path) -> int:
    """The run's number within its date: ``2026-12-07-20.json`` -> 20 (0 when the name has none)."""
    tail = path.stem.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def in_order(paths) -> list[pathlib.Path]:
    """Kept run files oldest first: by date, then by number (``-9`` before ``-10``, which a plain sort puts after)."""
    return sorted(paths, key=lambda path: (path.stem.rsplit("-", 1)[0], _number(path)))


def minor(version: str | None) -> str:
    """``"2.20.0"`` -> ``"2.20"``."""
    return ".".join(str(version).split(".")[:2])


def hosted_folder(course: Course, version: str) -> pathlib.Path:
    return runs_folder(course) / "hosted" / f"tf-{version}"


def fingerprints(course: Course) -> dict[str, set[str]]:
    """Each lesson's code fingerprints today (`tfperf_lab.course.notebook.code_fingerprints`: its code, at today's
    thresholds or earlier ones)."""
    return {lesson.id: notebook.code_fingerprints(notebook.read(lesson.source)) for lesson in course.lessons}


def course_runs(course: Course) -> list[dict]:
    """Every run kept on the course's TensorFlow (docs/runs/<profile>/), in file order; a run of another version kept
    there by hand is left out: the lessons quote the course's TensorFlow only."""
    runs = (json.loads(path.read_text(encoding="utf-8")) for path in sorted(runs_folder(course).glob("*/*.json")))
    return [run for run in runs if minor(run["environment"].get("tensorflow")) == COURSE_TENSORFLOW]


def current_runs(course: Course) -> dict[str, dict[str, list[dict]]]:
    """Profile -> lesson -> the kept runs' records of that lesson, from runs of the lesson's code as it is today."""
    today = fingerprints(course)
    found: dict[str, dict[str, list[dict]]] = {}
    for run in course_runs(course):
        for lesson, records in run["lessons"].items():
            if run.get("code", {}).get(lesson) in today.get(lesson, set()):
                found.setdefault(run["profile"], {}).setdefault(lesson, []).append(records)
    return found


def summarise(runs: list[dict]) -> dict:
    """One record over its runs: the range of medians, how many runs, how many the rule (`tfperf.present.verdict`)
    calls faster, slower or neither ("none"), each side's range of median seconds per call (when every run kept them),
    and, from 3 runs on, where one more run lands (`tfperf.stats.one_run_range`): ``one_run`` for the speedup,
    ``baseline_one_run`` and ``candidate_one_run`` for each side's seconds. The lessons quote the ``one_run`` ranges."""
    speedups = [r["speedup"] for r in runs]
    entry = {"low": round(min(speedups), 3), "high": round(max(speedups), 3), "runs": len(runs)}
    if len(runs) >= stats.ONE_RUN_RUNS:
        entry["one_run"] = _rounded(stats.one_run_range(speedups))
    for word in present.VERDICTS:
        entry[word] = sum(present.verdict(r["ci"]) == word for r in runs)
    for side in ("baseline", "candidate"):
        values = [r.get(side) for r in runs]
        if all(value is not None for value in values):
            entry[side] = [min(values), max(values)]
            if len(values) >= stats.ONE_RUN_RUNS and all(value > 0 for value in values):
                entry[f"{side}_one_run"] = _rounded(stats.one_run_range(values))
    return entry


def _rounded(pair: tuple[float, float]) -> list[float]:
    return [float(f"{value:.4g}") for value in pair]


def build(course: Course) -> dict:
    """Per profile, lesson and record: `summarise` over the kept runs of the lesson's current code; and ``graded``, per
    lesson and speed check, where one graded run of the reference lands (`graded`)."""
    profiles: dict = {}
    for profile, lessons in current_runs(course).items():
        for lesson, runs in lessons.items():
            for records in runs:
                for name, item in records.items():
                    profiles.setdefault(profile, {}).setdefault(lesson, {}).setdefault(name, []).append(item)
    return {
        "generated_by": "tfperf-lab ranges, from docs/runs/<profile>/*.json and docs/flake/*.json: do not edit by hand",
        "profiles": {profile: {lesson: {name: summarise(runs) for name, runs in sorted(records.items())}
                               for lesson, records in sorted(lessons.items())}
                     for profile, lessons in sorted(profiles.items())},
        "graded": graded(course),
    }


def graded(course: Course) -> dict:
    """Lesson -> speed check -> where one graded run of the reference solution lands on the course's machine with other
    work on it: `tfperf.stats.one_run_range` over the speedups of every grading the grader timed in the committed flake
    campaigns with a core busy, both, or bursty neighbours (docs/flake/, today's check only), each grading's speedup the
    median of its kept rounds' paired ratios; with how many gradings and under which loads."""
    from . import campaigns as flake_campaigns

    sources = {lesson.id: lesson.source_notebook() for lesson in course.lessons}
    found: dict = {}
    for campaign in flake_campaigns.load_campaigns(flake_campaigns.flake_folder(course)):
        if not (campaign.get("hogs") or campaign.get("bursts")):
            continue
        load = f"{campaign['hogs']} busy core{'s' if campaign['hogs'] > 1 else ''}" if campaign.get("hogs") else "bursty neighbours"
        for row in campaign["rows"]:
            if row["answer"] != "reference" or row.get("measured_by") != "grader" or not flake_campaigns.measures_today(row, sources, any_threshold=True, any_rule=True):
                continue
            entry = found.setdefault(row["lesson"], {}).setdefault(row["cell"], {"speedups": [], "loads": set()})
            for grading in row.get("gradings") or []:
                ratios = sorted(b / c for b, c in zip(grading.get("baseline") or [], grading.get("candidate") or []) if b > 0 and c > 0)
                if ratios:
                    entry["speedups"].append(_middle(ratios))
                    entry["loads"].add(load)
    return {lesson: {cell: {"one_run": _rounded(stats.one_run_range(entry["speedups"])), "gradings": len(entry["speedups"]),
                            "loads": sorted(entry["loads"])}
                     for cell, entry in sorted(cells.items()) if len(entry["speedups"]) >= stats.ONE_RUN_RUNS}
            for lesson, cells in sorted(found.items())}


def _middle(values: list[float]) -> float:
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def hosted(course: Course) -> list[dict]:
    """The runs kept on other TensorFlow versions (docs/runs/hosted/), one entry per version and profile, newest version
    first: its machine, the files and dates it comes from and, per lesson, the newest run of the lesson's code of today
    (else the newest run of it at all): whether it ran clean on today's code, its seconds, each record's speedup and
    interval. A lesson run again alone (after its code changed) so replaces its earlier run."""
    today = fingerprints(course)
    groups: dict[tuple[str, str], list[tuple[pathlib.Path, dict]]] = {}
    for path in runs_folder(course).glob("hosted/tf-*/*/*.json"):
        run = json.loads(path.read_text(encoding="utf-8"))
        groups.setdefault((run["environment"].get("tensorflow") or "", run["profile"]), []).append((path, run))
    found = []
    for (version, profile), runs in sorted(groups.items(), key=lambda item: (_version_key(item[0][0]), item[0][1]), reverse=True):
        runs.sort(key=lambda pair: (pair[1]["date"], _number(pair[0])))
        lessons, used = {}, []
        for lesson in course.lessons:
            ran = [(path, run) for path, run in reversed(runs) if lesson.id in run["lessons"]]
            current = [(path, run) for path, run in ran if run.get("code", {}).get(lesson.id) in today[lesson.id]]
            path, run = (current or ran or [(None, None)])[0]
            lessons[lesson.id] = {"ran": run is not None, "current": bool(current), "date": run["date"] if run else None,
                                  "seconds": run.get("seconds", {}).get(lesson.id) if run else None,
                                  "records": run["lessons"][lesson.id] if run else {}}
            if path is not None and path not in used:
                used.append(path)
        found.append({"files": [path.relative_to(course.root).as_posix() for path in used],
                      "dates": sorted({run["date"] for path, run in runs if path in used}), "profile": profile,
                      "environment": runs[-1][1]["environment"], "lessons": lessons})
    return found


def _version_key(version: str) -> tuple:
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("."))


def text(course: Course) -> str:
    return json.dumps(build(course), indent=1) + "\n"


def write(course: Course) -> pathlib.Path:
    """Rebuild ``tfperf/ranges.json`` from the kept runs; returns its path."""
    RANGES_FILE.write_text(text(course), encoding="utf-8")
    return RANGES_FILE
