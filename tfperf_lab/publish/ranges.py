"""Recorded runs and the ranges lessons quote from them: ``docs/runs/<profile>/*.json`` -> ``tfperf/ranges.json``.

A lesson's "What to notice" cell compares the learner's speedup with what the course measured
(`tfperf.report.seen`). Those ranges must belong to the learner's profile and come from runs, not from
prose: ``tfperf-lab run --profile full --keep-run`` keeps the run's records, condensed, in
``docs/runs/full/``, and ``tfperf-lab ranges`` (run by ``--keep-run`` too) rebuilds ``tfperf/ranges.json``
from every kept run. A test keeps the two in sync.
"""

from __future__ import annotations

import json
import pathlib

from tfperf.report import RANGES_FILE

from ..course import Course


def runs_folder(course: Course) -> pathlib.Path:
    return course.root / "docs" / "runs"


def condense(report: dict) -> dict:
    """What a kept run holds: date, profile, machine, and per lesson each record's speedup and interval."""
    environment = report["environment"]
    return {
        "date": report["date"], "profile": environment["profile"],
        "environment": {key: environment.get(key) for key in ("tensorflow", "cpu_count", "gpus", "platform")},
        "lessons": {lesson["id"]: {item["name"]: {"speedup": round(item["speedup"], 4), "ci": [round(v, 4) for v in item["ci"]]}
                                   for item in lesson["records"]}
                    for lesson in report["lessons"] if not lesson["errors"]},
    }


def keep(course: Course, report_json: pathlib.Path) -> pathlib.Path:
    """Condense a ``course-report.json`` into ``docs/runs/<profile>/<date>-<n>.json``; returns its path."""
    run = condense(json.loads(pathlib.Path(report_json).read_text(encoding="utf-8")))
    folder = runs_folder(course) / run["profile"]
    folder.mkdir(parents=True, exist_ok=True)
    number = 1 + len(list(folder.glob(f"{run['date']}-*.json")))
    path = folder / f"{run['date']}-{number}.json"
    path.write_text(json.dumps(run, indent=1) + "\n", encoding="utf-8")
    return path


def build(course: Course) -> dict:
    """Per profile, lesson and record: the lowest and highest median speedup over the kept runs, and how many runs."""
    profiles: dict = {}
    for path in sorted(runs_folder(course).glob("*/*.json")):
        run = json.loads(path.read_text(encoding="utf-8"))
        for lesson, records in run["lessons"].items():
            for name, item in records.items():
                profiles.setdefault(run["profile"], {}).setdefault(lesson, {}).setdefault(name, []).append(item["speedup"])
    return {
        "generated_by": "tfperf-lab ranges, from docs/runs/<profile>/*.json: do not edit by hand",
        "profiles": {profile: {lesson: {name: {"low": round(min(values), 3), "high": round(max(values), 3), "runs": len(values)}
                                        for name, values in sorted(records.items())}
                               for lesson, records in sorted(lessons.items())}
                     for profile, lessons in sorted(profiles.items())},
    }


def text(course: Course) -> str:
    return json.dumps(build(course), indent=1) + "\n"


def write(course: Course) -> pathlib.Path:
    """Rebuild ``tfperf/ranges.json`` from the kept runs; returns its path."""
    RANGES_FILE.write_text(text(course), encoding="utf-8")
    return RANGES_FILE
