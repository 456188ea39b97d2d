"""The class page: one HTML page per graded class, ``WORK/class/index.html``, with its PNG figures beside it.

`write` turns every result of a class (those graded now and those resumed from earlier runs) into the page an
instructor with hundreds of students reads at a glance: the pass rate of every autograded cell, failing cells first (a table
and a bar chart per lesson); every speed check, the class's measured speedups (the grader's verdicts, one dot per
submission) against its threshold, the reference's recorded range (``tfperf/ranges.json``, the profile grading runs
in) and the article's claim (a strip plot per lesson); the review list with each submission's findings and decision;
the rows not graded and why, the grading machine's faults apart and first; the slowest notebooks; and the machine's
state. Every string that comes from a submission is escaped (`html.escape`); the page holds no script, loads nothing
from elsewhere and forbids scripts with its content security policy. `tfperf_lab.grading.batch.grade` writes it right
after the CSV.
"""

from __future__ import annotations

import dataclasses
import datetime
import html
import json
import math
import pathlib
import random
import re
import statistics

from tfperf import env
from tfperf.report import RANGES_FILE

from ..course import Course, WorkFolder
from .results import MACHINE, SubmissionResult

FOLDER = "class"
PAGE = "index.html"
PROFILE = "reduced"  # the profile every grading runs lessons in (tfperf.env.profile under nbgrader)
SLOWEST = 10
NAMES = {"cpu_count": "cores", "gpus": "GPUs", "tensorflow": "TensorFlow", "keras": "Keras", "numpy": "NumPy",
         "python": "Python", "hosted": "hosted notebook service",  # `tfperf.env.fingerprint`'s keys, as shown
         # and `tfperf.env.machine_state`'s: what the machine did while the class was graded
         "cpu_model": "CPU", "governor": "frequency governor", "cpu_max": "cgroup CPU quota (cpu.max)",
         "load1": "load average (1 min) at the end", "steal_share": "CPU time stolen by the hypervisor while grading",
         "throttled_share": "periods the cgroup was throttled while grading", "throttled_seconds": "seconds throttled"}
PASSED_COLOUR, FAILED_COLOUR, MIXED_COLOUR = "#2ca02c", "#d62728", "#ff7f0e"
WITHHELD = ("review", "rejected")  # a person looks (or looked) before these pay: neither passed nor failed

CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 70em; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { border-bottom: 2px solid #ccc; margin-top: 2em; } h3 { margin-bottom: .3em; }
table { border-collapse: collapse; margin: .5em 0 1em; font-size: .92em; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: left; vertical-align: top; }
th { background: #eee; } tr:nth-child(even) td { background: #fafafa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.low { color: #a00; font-weight: bold; } .high { color: #060; } .note { color: #555; font-size: .92em; }
.fault { border-left: 4px solid #a00; padding-left: .8em; }
code { background: #f2f2f2; padding: 0 .2em; white-space: pre-wrap; word-break: break-all; }
img { max-width: 100%; border: 1px solid #ddd; }
"""
# no script may run, nothing may load from elsewhere: images from the page's own folder, the inline style only
POLICY = "default-src 'none'; img-src 'self' file:; style-src 'unsafe-inline'"


@dataclasses.dataclass
class CellRate:
    """One autograded cell of one lesson across the graded submissions of the class."""

    lesson: str
    id: str
    points: float
    passed: int = 0
    failed: int = 0
    withheld: int = 0

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.withheld

    @property
    def rate(self) -> float:
        return self.passed / self.total if self.total else 0.0


@dataclasses.dataclass
class SpeedCheck:
    """One speed check of one lesson: the class's verdicts, its threshold, the recorded range, the article's claim."""

    lesson: str
    name: str
    speedups: list[float] = dataclasses.field(default_factory=list)
    passed: list[bool] = dataclasses.field(default_factory=list)
    thresholds: set[float] = dataclasses.field(default_factory=set)
    claim: str | None = None
    recorded: dict | None = None  # {"low", "high", "runs"} of tfperf/ranges.json, or None: not recorded


def folder(work: WorkFolder) -> pathlib.Path:
    """Where the class page and its figures go: ``WORK/class/``."""
    return work.root / FOLDER


def recorded_ranges(profile: str = PROFILE) -> dict:
    """lesson -> record name -> {"low", "high", "runs", ...}: the reference's recorded ranges (`tfperf.report.seen`'s
    source) in ``profile``; empty when the file or the profile is missing or unreadable."""
    try:
        profiles = json.loads(RANGES_FILE.read_text(encoding="utf-8")).get("profiles", {})
    except (OSError, ValueError, AttributeError):
        return {}
    found = profiles.get(profile, {}) if isinstance(profiles, dict) else {}
    return found if isinstance(found, dict) else {}


def graded(results: list[SubmissionResult]) -> list[SubmissionResult]:
    """The submissions that were graded: neither a machine fault nor an error."""
    return [result for result in results if not result.machine and not result.error]


def pass_rates(results: list[SubmissionResult]) -> dict[str, list[CellRate]]:
    """lesson -> its autograded cells' pass rates over the graded submissions, the lowest rate first."""
    rates: dict[tuple[str, str], CellRate] = {}
    for result in graded(results):
        for cell in result.cells:
            if cell.kind != "auto":
                continue
            rate = rates.setdefault((result.lesson, cell.id), CellRate(result.lesson, cell.id, cell.max_score))
            if cell.status == "passed":
                rate.passed += 1
            elif cell.status in WITHHELD:
                rate.withheld += 1
            else:
                rate.failed += 1
    lessons: dict[str, list[CellRate]] = {}
    for rate in sorted(rates.values(), key=lambda r: (r.lesson, r.rate, -r.failed, r.id)):
        lessons.setdefault(rate.lesson, []).append(rate)
    return lessons


def speed_checks(results: list[SubmissionResult], ranges: dict | None = None) -> dict[str, list[SpeedCheck]]:
    """lesson -> its speed checks: every measurement with a threshold (the grader's verdicts) of every submission not
    lost to a machine fault, with the recorded range of ``ranges`` (default: `recorded_ranges`)."""
    ranges = recorded_ranges() if ranges is None else ranges
    checks: dict[tuple[str, str], SpeedCheck] = {}
    for result in results:
        if result.machine:
            continue
        for record in result.measurements:
            if record.threshold is None:
                continue
            check = checks.setdefault((result.lesson, record.name), SpeedCheck(result.lesson, record.name))
            if isinstance(record.speedup, (int, float)) and math.isfinite(record.speedup):
                check.speedups.append(float(record.speedup))
                check.passed.append(bool(record.passed))
            check.thresholds.add(float(record.threshold))
            check.claim = check.claim or record.claim
    lessons: dict[str, list[SpeedCheck]] = {}
    for (lesson, name), check in sorted(checks.items()):
        entry = ranges.get(lesson, {}).get(name) if isinstance(ranges.get(lesson), dict) else None
        if isinstance(entry, dict) and {"low", "high"} <= set(entry):
            check.recorded = entry
        lessons.setdefault(lesson, []).append(check)
    return lessons


def write(results: list[SubmissionResult], target: pathlib.Path, *, course: Course | None = None,
          workers: int | None = None, ranges: dict | None = None, machine: dict | None = None,
          csv: pathlib.Path | None = None, now: datetime.datetime | None = None) -> pathlib.Path:
    """Write the class page of ``results`` (every submission of the class) to ``target/index.html`` with its figures
    beside it, replacing an earlier page; returns the page's path.

    ``ranges`` defaults to `recorded_ranges`, ``machine`` to `tfperf.env.fingerprint`, ``now`` to the local time;
    ``course`` (each lesson's title and its article's claim), ``workers`` (how many gradings ran at once) and ``csv``
    (where the grades went) are shown when given. The grader's verdicts carry no claim of their own: a check shows its
    record's claim when it has one, and the lesson's claim (``course``) stands above its lesson's checks."""
    target = pathlib.Path(target)
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob("*.png"):
        if re.fullmatch(r"(cells|speed)-\d+\.png", old.name):
            old.unlink()
    now = now or datetime.datetime.now().astimezone()
    machine = env.fingerprint() if machine is None else machine
    rates, checks = pass_rates(results), speed_checks(results, ranges)
    images: dict[tuple[str, str], str] = {}
    for number, (lesson, cells) in enumerate(rates.items(), start=1):
        images["cells", lesson] = _cells_chart(lesson, cells, target / f"cells-{number}.png")
    for number, (lesson, lesson_checks) in enumerate(checks.items(), start=1):
        if any(check.speedups for check in lesson_checks):
            images["speed", lesson] = _speed_chart(lesson, lesson_checks, target / f"speed-{number}.png")
    lessons = {lesson.id: lesson for lesson in course.lessons} if course is not None else {}
    page = render(results, rates, checks, images, workers=workers, machine=machine, csv=csv, now=now, lessons=lessons)
    path = target / PAGE
    partial = path.with_name(PAGE + ".partial")
    partial.write_text(page, encoding="utf-8")
    partial.replace(path)
    return path


# ---------------------------------------------------------------------------------------------------------- figures

def _figure(height: float):
    from matplotlib.figure import Figure  # no pyplot: no global state, safe beside grading threads

    return Figure(figsize=(9.0, max(2.0, height)), dpi=100, layout="constrained")


def _cells_chart(lesson: str, cells: list[CellRate], path: pathlib.Path) -> str:
    """A horizontal bar per cell: its pass rate, the lowest at the top."""
    figure = _figure(0.32 * len(cells) + 1.2)
    axes = figure.subplots()
    labels = [cell.id for cell in cells]
    values = [100 * cell.rate for cell in cells]
    colours = [PASSED_COLOUR if cell.rate >= 0.8 else MIXED_COLOUR if cell.rate >= 0.5 else FAILED_COLOUR
               for cell in cells]
    positions = range(len(cells))
    axes.barh(positions, values, color=colours, height=0.7)
    for position, cell in zip(positions, cells):
        axes.text(min(100 * cell.rate, 100) + 1, position, f"{cell.rate:.0%} of {cell.total}", va="center", fontsize=8)
    axes.set_yticks(list(positions), labels, fontsize=8)
    axes.invert_yaxis()
    axes.set_xlim(0, 118)
    axes.set_xticks([0, 25, 50, 75, 100])
    axes.set_xlabel("submissions that passed the cell (%)")
    axes.set_title(f"{lesson}: pass rate per autograded cell", fontsize=10)
    figure.savefig(path)
    return path.name


def _speed_chart(lesson: str, checks: list[SpeedCheck], path: pathlib.Path) -> str:
    """A row per speed check, log x: one dot per submission (passed or not), the threshold, the recorded range."""
    figure = _figure(0.6 * len(checks) + 1.4)
    axes = figure.subplots()
    jitter = random.Random(0)
    shown = [value for check in checks for value in check.speedups if value > 0]
    shown += [t for check in checks for t in check.thresholds if t > 0]
    shown += [float(check.recorded[k]) for check in checks if check.recorded for k in ("low", "high")]
    labelled = set()

    def once(label):
        if label in labelled:
            return None
        labelled.add(label)
        return label

    for row, check in enumerate(checks):
        if check.recorded:
            low, high = float(check.recorded["low"]), float(check.recorded["high"])
            axes.barh(row, max(high - low, low * 0.01), left=low, height=0.6, color="#bbbbbb", alpha=0.6,
                      label=once(f"reference's recorded range ({PROFILE})"))
        for threshold in check.thresholds:
            axes.plot([threshold, threshold], [row - 0.4, row + 0.4], color="black", linewidth=2,
                      label=once("threshold"))
        for value, passed in zip(check.speedups, check.passed):
            if value > 0:
                axes.plot(value, row + jitter.uniform(-0.22, 0.22), "o", markersize=4, alpha=0.7,
                          color=PASSED_COLOUR if passed else FAILED_COLOUR,
                          label=once("passed" if passed else "failed"))
    axes.set_xscale("log")
    if shown:
        axes.set_xlim(min(shown) / 1.5, max(shown) * 1.5)
    from matplotlib.ticker import FuncFormatter

    times = FuncFormatter(lambda value, _: f"{value:g}x")
    axes.xaxis.set_major_formatter(times)
    narrow = bool(shown) and max(shown) / min(shown) < 30  # less than a decade and a half: label the minor ticks too
    axes.xaxis.set_minor_formatter(times if narrow else FuncFormatter(lambda value, _: ""))
    axes.tick_params(axis="x", which="both", labelsize=8)
    axes.set_yticks(range(len(checks)), [check.name for check in checks], fontsize=8)
    axes.set_ylim(len(checks) - 0.5, -0.5)
    axes.set_xlabel("speedup measured by the grader (x, log scale)")
    axes.set_title(f"{lesson}: the class's speed checks", fontsize=10)
    axes.legend(fontsize=7, loc="best")
    figure.savefig(path)
    return path.name


# ------------------------------------------------------------------------------------------------------------- page

def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _table(head: list[str], rows: list[list[str]], numeric: set[int] = frozenset()) -> str:
    """A table; ``rows`` hold already escaped HTML; columns in ``numeric`` align right."""
    out = ["<table>"] + (["<tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>"] if head else [])
    for row in rows:
        cells = (f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(row))
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _x(value: float) -> str:
    return f"{value:.3g}x"


def _heading(lesson: str, lessons: dict) -> str:
    known = lessons.get(lesson)
    return f"<h3>{_e(lesson)}" + (f": {_e(known.title)}" if known is not None and known.title else "") + "</h3>"


def _cells_section(rates: dict[str, list[CellRate]], images: dict, lessons: dict) -> list[str]:
    out = ['<h2 id="cells">1. Pass rate per autograded cell</h2>',
           '<p class="note">Over the graded submissions of each lesson (rows not graded are in section 4). A cell '
           "withheld for review is neither passed nor failed until a person decides. Lowest pass rate first.</p>"]
    if not rates:
        out.append("<p>No submission was graded.</p>")
    for lesson, cells in rates.items():
        out.append(_heading(lesson, lessons))
        if ("cells", lesson) in images:
            out.append(f'<img src="{_e(images["cells", lesson])}" alt="pass rate per cell of {_e(lesson)}">')
        rows = [[f"<code>{_e(c.id)}</code>", f"{c.points:g}", str(c.passed), str(c.failed), str(c.withheld),
                 f'<span class="{"low" if c.rate < 0.5 else "high" if c.rate >= 0.8 else ""}">{c.rate:.0%}</span>']
                for c in cells]
        head = ["cell", "points", "passed", "failed", "withheld for review", "pass rate"]
        out.append(_table(head, rows, {1, 2, 3, 4, 5}))
    return out


def _speed_section(checks: dict[str, list[SpeedCheck]], images: dict, lessons: dict) -> list[str]:
    out = ['<h2 id="speed">2. Speed checks</h2>',
           "<p class=\"note\">The grader's verdicts: one dot per submission, against the check's threshold and the "
           "range the reference solution's recorded runs measured (tfperf/ranges.json, profile "
           f"&quot;{PROFILE}&quot;, the one grading runs).</p>"]
    if not checks:
        out.append("<p>No speed check was measured.</p>")
    for lesson, lesson_checks in checks.items():
        out.append(_heading(lesson, lessons))
        lesson_claim = getattr(lessons.get(lesson), "claim", "")
        if lesson_claim:
            out.append(f"<p>The article's claim: {_e(lesson_claim)}</p>")
        if ("speed", lesson) in images:
            out.append(f'<img src="{_e(images["speed", lesson])}" alt="speed checks of {_e(lesson)}">')
        rows = []
        for check in lesson_checks:
            values = sorted(check.speedups)
            passed = sum(check.passed)
            if check.recorded:
                runs = check.recorded.get("runs")
                recorded = f"{_x(float(check.recorded['low']))} to {_x(float(check.recorded['high']))}" + (
                    f" ({_e(runs)} runs)" if runs is not None else "")
            else:
                recorded = "not recorded"
            rows.append([f"<code>{_e(check.name)}</code>", ", ".join(_x(t) for t in sorted(check.thresholds)),
                         f"{passed} of {len(values)}" + (f" ({passed / len(values):.0%})" if values else ""),
                         _x(statistics.median(values)) if values else "-",
                         f"{_x(values[0])} to {_x(values[-1])}" if values else "-", recorded,
                         _e(check.claim) if check.claim else "the lesson's (above)" if lesson_claim else "-"])
        head = ["speed check", "threshold", "passed", "class median", "class range", "reference's recorded range",
                "the article's claim"]
        out.append(_table(head, rows, {2, 3}))
    return out


def _finding_text(finding: dict) -> str:
    return f"cell {finding.get('cell')}, line {finding.get('line')}: {finding.get('why')}: {finding.get('code')}"


def _review_section(results: list[SubmissionResult]) -> list[str]:
    listed = [r for r in results if r.review or r.findings or r.decision]
    out = ['<h2 id="review">3. The review list</h2>',
           f"<p>{len(listed)} submission(s) whose code reaches into the course's or the interpreter's machinery: "
           "their review cells are withheld until a person decides (<code>tfperf-lab review</code>).</p>"]
    for result in listed:
        decision = result.decision
        said = (f"{_e(decision.get('decision'))} by {_e(decision.get('by'))} on {_e(decision.get('at'))}" if decision
                else "<span class=\"low\">awaiting a decision</span>")
        out.append(f"<h3>{_e(result.student)}: {_e(result.lesson)}</h3><p>Decision: {said}</p>")
        if result.findings:
            rows = [[_e(f.get("cell", "")), _e(f.get("line", "")), f"<code>{_e(f.get('code', ''))}</code>",
                     _e(f.get("why", ""))] for f in result.findings if isinstance(f, dict)]
            out.append(_table(["cell", "line", "code", "why"], rows, {1}))
        known = {_finding_text(f) for f in result.findings if isinstance(f, dict)}
        extra = [reason for reason in result.review if reason not in known]
        if extra:
            out.append("<ul>" + "".join(f"<li>{_e(reason)}</li>" for reason in extra) + "</ul>")
    return out


def _not_graded_section(results: list[SubmissionResult]) -> list[str]:
    faults = [r for r in results if r.machine]
    errors = [r for r in results if r.error and not r.machine]
    out = ['<h2 id="not-graded">4. Not graded</h2>']
    out.append('<div class="fault" id="machine-faults">')
    out.append(f"<h3>The grading machine's fault ({len(faults)})</h3>")
    if faults:
        out.append(f"<p>{_e(MACHINE[0].upper() + MACHINE[1:])}.</p>")
        out.append(_table(["student", "lesson", "what the machine lacked"],
                          [[_e(r.student), _e(r.lesson), "<br>".join(_e(m) for m in r.machine)] for r in faults]))
    else:
        out.append("<p>None.</p>")
    out.append("</div>")
    out.append(f'<h3 id="errors">The notebook\'s ({len(errors)})</h3>')
    if errors:
        out.append(_table(["student", "lesson", "why"], [[_e(r.student), _e(r.lesson), _e(r.error)] for r in errors]))
    else:
        out.append("<p>None.</p>")
    return out


def _slowest_section(results: list[SubmissionResult]) -> list[str]:
    timed = sorted((r for r in results if r.seconds > 0), key=lambda r: -r.seconds)[:SLOWEST]
    out = [f'<h2 id="slowest">5. The slowest notebooks (top {SLOWEST})</h2>']
    if not timed:
        return out + ["<p>No notebook ran in this grading (every row resumed or not graded).</p>"]
    rows = [[_e(r.student), _e(r.lesson), f"{r.seconds:.1f}", f"{r.score:g} / {r.max_score:g}", _e(r.status)]
            for r in timed]
    return out + [_table(["student", "lesson", "seconds", "points", "status"], rows, {2, 3})]


def _said(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) or "none"
    return str(value)


def _machine_section(results: list[SubmissionResult], machine: dict, workers: int | None, csv, now) -> list[str]:
    rows = [["date", _e(now.strftime("%Y-%m-%d %H:%M %Z").strip())], ["submissions", str(len(results))],
            ["students", str(len({r.student for r in results}))], ["lessons", str(len({r.lesson for r in results}))]]
    if workers is not None:
        rows.append(["gradings at once (workers)", _e(workers)])
    if csv is not None:
        rows.append(["grades (CSV)", f"<code>{_e(csv)}</code>"])
    rows.append(["profile the lessons are graded in", PROFILE])
    rows += [[_e(NAMES.get(key, key)), _e(_said(value))]
             for key, value in machine.items() if key not in ("profile", "machine")]  # this process's profile, not the gradings'
    state = machine.get("machine") or {}
    rows += [[_e(NAMES.get(key, key)), _e(f"{value:.1%}" if key.endswith("_share") and isinstance(value, float) else _said(value))]
             for key, value in state.items() if key != "cores"]
    return ['<h2 id="machine">6. The grading machine</h2>', _table([], rows)]


def render(results: list[SubmissionResult], rates: dict[str, list[CellRate]], checks: dict[str, list[SpeedCheck]],
           images: dict, *, workers: int | None, machine: dict, csv, now: datetime.datetime,
           lessons: dict | None = None) -> str:
    """The page's HTML (figures named by ``images``: ("cells"|"speed", lesson) -> file name beside the page)."""
    ok = graded(results)
    faults = sum(1 for r in results if r.machine)
    errors = sum(1 for r in results if r.error and not r.machine)
    listed = sum(1 for r in results if r.review or r.findings or r.decision)
    summary = (f"{len(results)} submission(s) of {len({r.student for r in results})} student(s): {len(ok)} graded, "
               f"{errors} not graded (the notebook's), {faults} not graded (the grading machine's fault), "
               f"{listed} on the review list.")
    body = [f"<h1>The class, graded {_e(now.strftime('%Y-%m-%d %H:%M'))}</h1>", f"<p>{_e(summary)}</p>",
            '<p class="note">1. <a href="#cells">pass rates</a> &middot; 2. <a href="#speed">speed checks</a> '
            '&middot; 3. <a href="#review">review list</a> &middot; 4. <a href="#not-graded">not graded</a> '
            '&middot; 5. <a href="#slowest">slowest</a> &middot; 6. <a href="#machine">machine</a></p>']
    lessons = lessons or {}
    body += _cells_section(rates, images, lessons)
    body += _speed_section(checks, images, lessons)
    body += _review_section(results)
    body += _not_graded_section(results)
    body += _slowest_section(results)
    body += _machine_section(results, machine, workers, csv, now)
    return "\n".join(["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
                      f'<meta http-equiv="Content-Security-Policy" content="{_e(POLICY)}">',
                      "<title>The class: tfperf-lab grade</title>", f"<style>{CSS}</style>", "</head><body>",
                      *body, "</body></html>", ""])
