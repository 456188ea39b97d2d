"""How close the learner's self-check comes to the grader's verdict, on the honest reference answers.

The self-check is `tfperf.assert_speedup` measuring in the learner's kernel (what `tfperf-lab run` records in the
example course report); the grader's numbers are the reference rows of the newest committed flake campaign the grader
timed (`tfperf_lab.judge`). Prints one row per graded speed check and writes docs/benchmarks/self-check-vs-grader.json.

    .venv/bin/python benchmarks/self_check_vs_grader.py
"""

from __future__ import annotations

import datetime
import json
import pathlib

from tfperf_lab import flake, readme
from tfperf_lab.course import Course


def main() -> None:
    course = Course.find(pathlib.Path(__file__).resolve().parents[1])
    report = json.loads((course.docs / "example-report" / "course-report.json").read_text(encoding="utf-8"))
    kernel = {(lesson["id"], record["name"]): record for lesson in report["lessons"] for record in lesson["records"]}
    campaigns = sorted((c for c in flake.load_campaigns(readme.flake_folder(course)) if c.get("verdicts") == "grader"),
                       key=lambda c: (c.get("date", ""), c["file"]))
    grader = {}
    for campaign in campaigns:  # the newest grader-timed campaign per check
        for row in campaign["rows"]:
            if row["answer"] == "reference":
                grader[(row["lesson"], row["cell"])] = row | {"campaign": campaign["file"]}
    rows = []
    for lesson in course.lessons:
        for cell, names in lesson.speed_checks().items():
            for name in names:
                mine, theirs = kernel.get((lesson.id, name)), grader.get((lesson.id, cell))
                rows.append({"lesson": lesson.id, "check": name, "self_check": mine["speedup"] if mine else None,
                             "self_check_ci": mine["ci"] if mine else None, "grader_median": theirs["speedup_median"] if theirs else None,
                             "grader_lowest_ci_low": theirs["ci_low_min"] if theirs else None,
                             "threshold": theirs["threshold"] if theirs else (mine or {}).get("threshold"),
                             "campaign": theirs["campaign"] if theirs else None})
    out = course.docs / "benchmarks" / "self-check-vs-grader.json"
    out.write_text(json.dumps({"date": datetime.date.today().isoformat(), "report_date": report["date"], "rows": rows}, indent=1) + "\n",
                   encoding="utf-8")
    fmt = lambda v: "-" if v is None else f"{v:.2f}x"  # noqa: E731
    print("| lesson | speed check | self-check (learner's kernel) | grader, median of 20 | grader / self-check | threshold |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        ratio = f"{row['grader_median'] / row['self_check']:.2f}" if row["grader_median"] and row["self_check"] else "-"
        print(f"| {row['lesson'][:2]} | `{row['check']}` | {fmt(row['self_check'])} | {fmt(row['grader_median'])} | {ratio} | {fmt(row['threshold'])} |")


if __name__ == "__main__":
    main()
