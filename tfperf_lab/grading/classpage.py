"""The class page: one HTML page per graded class, ``WORK/class/index.html``, with its PNG figures beside it.

`write` turns every row of a class (`tfperf_lab.grading.store.rows`: those graded now, those resumed from earlier runs,
a "not submitted" row for every roster student with nothing handed in) into the page an instructor with hundreds of
students reads at a glance. First the gradebook: every student's points per lesson (after any late penalty) with their
marks (not submitted, late, excused, not graded and why, on review), a relative link to each feedback page, totals per
student, and per lesson the distribution (one figure), the average and the median. Then the pass rate of every
autograded cell, failing cells first (a table and a bar chart per lesson); every speed check, the class's measured
speedups against its threshold, the reference's recorded range (``tfperf/ranges.json``, the profile grading runs in)
and the article's claim (a strip plot per lesson), a check counting as passed only where its speed cell scored its
points; the review list with each submission's findings and decision; the rows not graded and why, the grading
machine's faults apart and first; the slowest notebooks; and the machine's state. Cells withheld for a person (review,
rejected) stay out of every pass rate's denominator.

The page names no absolute path of the grading machine: links are relative to the page, and a path in a message is
shortened (``WORK/...`` inside the work folder, else its file name). ``anonymous`` draws it for a lecture
(``WORK/class-anonymous/``): each student id becomes a stable pseudonym (`pseudonyms`: an HMAC-SHA256 of the id under
the work folder's secret, ``WORK/class/.pseudonym-key``, made once), with no id, feedback link or CSV link. Every string
that comes from a submission is escaped (`html.escape`); the page holds no script, loads nothing from elsewhere and
forbids scripts with its content security policy. `tfperf_lab.grading.batch.grade` writes it right after the CSV, a
review decision writes it again, and ``tfperf-lab page`` draws it again from the stored rows without grading.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import hmac
import html
import json
import math
import os
import pathlib
import random
import re
import secrets
import statistics
import urllib.parse

from tfperf import env
from tfperf.report import RANGES_FILE

from ..course import Course, WorkFolder
from .results import MACHINE, SubmissionResult

FOLDER = "class"
ANONYMOUS_FOLDER = "class-anonymous"  # `tfperf-lab page --anonymous`'s default: a page for a lecture
PAGE = "index.html"
KEY = ".pseudonym-key"  # in WORK/class/: the work folder's secret for pseudonyms; never publish it
RECORD = ".grading.json"  # beside the page: the machine (and workers) of the grading that wrote it, for a page drawn again
GRADEBOOK_FIGURE = "gradebook.png"
PSEUDONYM = "student-"
PROFILE = "reduced"  # the profile every grading runs lessons in (tfperf.env.profile under nbgrader)
SLOWEST = 10
NAMES = {"cpu_count": "cores", "gpus": "GPUs", "tensorflow": "TensorFlow", "keras": "Keras", "numpy": "NumPy",
         "python": "Python", "hosted": "hosted notebook service",  # `tfperf.env.fingerprint`'s keys, as shown
         # and `tfperf.env.machine_state`'s: what the machine did while the class was graded
         "cpu_model": "CPU", "governor": "frequency governor", "cpu_max": "cgroup CPU quota (cpu.max)",
         "load1": "load average (1 min) at the end", "steal_share": "CPU time stolen by the hypervisor while grading",
         "throttled_share": "periods the cgroup was throttled while grading", "throttled_seconds": "seconds throttled"}
PASSED_COLOUR, FAILED_COLOUR, MIXED_COLOUR = "#2ca02c", "#d62728", "#ff7f0e"
WITHHELD_COLOUR, HISTOGRAM_COLOUR = "#7f7f7f", "#4c72b0"
WITHHELD = ("review", "rejected")  # a person looks (or looked) before these pay: neither passed nor failed
STOPPED = ("timeout", "not run", "missing", "not submitted")  # a cell stopped by a time limit or never run
# an absolute path in a message (not a fraction, a MIME type nor "and/or": it starts after a space, a quote or a bracket)
ABSOLUTE = re.compile(r"(?<![\w.~\-/<])/+(?:[^\s/'\"<>:;,()\[\]{}|`]+/+)+[^\s/'\"<>:;,()\[\]{}|`]*")

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
table.gradebook td { white-space: nowrap; } table.gradebook tr.stat td { background: #eef3f8; font-weight: 600; }
.mark { display: inline-block; font-size: .78em; padding: 0 .35em; margin-left: .3em; border-radius: 3px; }
.missing { background: #f8d7da; color: #721c24; } .late { background: #fff3cd; color: #6b4e00; }
.excused { background: #dbe7fb; color: #1d3f73; } .not-graded { background: #e2e3e5; color: #383d41; }
.on-review { background: #eadcf5; color: #4b2468; } .link { font-size: .78em; margin-left: .3em; }
"""
# no script may run, nothing may load from elsewhere: images from the page's own folder, the inline style only
POLICY = "default-src 'none'; img-src 'self' file:; style-src 'unsafe-inline'"


@dataclasses.dataclass
class CellRate:
    """One autograded cell of one lesson across the graded submissions of the class. A cell withheld for a person
    (review, rejected) is neither passed nor failed: it is counted apart and left out of the rate."""

    lesson: str
    id: str
    points: float
    passed: int = 0
    failed: int = 0
    withheld: int = 0

    @property
    def total(self) -> int:
        """The rate's denominator: passed and failed (the withheld are not in it)."""
        return self.passed + self.failed

    @property
    def rate(self) -> float:
        return self.passed / self.total if self.total else 0.0


@dataclasses.dataclass
class SpeedCheck:
    """One speed check of one lesson: the class's outcomes, its threshold, the recorded range, the article's claim.

    An outcome is the points' word, not the verdict's alone: "passed" where the check's speed cell scored its points,
    "withheld" where a person has yet to decide (or decided against) that cell, "failed" everywhere else (a failed
    verdict, a speed cell that timed out, was not run or lost its points to a failed output test)."""

    lesson: str
    name: str
    points: list[tuple[float, str]] = dataclasses.field(default_factory=list)  # (measured speedup, outcome), finite only
    outcomes: list[str] = dataclasses.field(default_factory=list)  # one per graded submission with a verdict
    thresholds: set[float] = dataclasses.field(default_factory=set)
    claim: str | None = None
    recorded: dict | None = None  # {"low", "high", "runs"} of tfperf/ranges.json, or None: not recorded

    @property
    def speedups(self) -> list[float]:
        return [value for value, _ in self.points]

    @property
    def passed(self) -> int:
        return self.outcomes.count("passed")

    @property
    def withheld(self) -> int:
        return self.outcomes.count("withheld")

    @property
    def counted(self) -> int:
        """The pass rate's denominator: every outcome but the withheld."""
        return len(self.outcomes) - self.withheld


@dataclasses.dataclass
class Grade:
    """One cell of the gradebook: a student's row of one lesson, as shown and as counted in the totals."""

    result: SubmissionResult
    out_of: float  # the lesson's autograded points (the row's own, or the lesson's for a row with no cells)
    counted: bool  # in the student's total and the lesson's statistics (not: excused and missing, the machine's fault)
    link: str | None = None  # the feedback page, relative to the class page

    @property
    def points(self) -> float:
        return self.result.score if self.result.submitted else 0.0


def folder(work: WorkFolder, *, anonymous: bool = False) -> pathlib.Path:
    """Where the class page and its figures go: ``WORK/class/`` (``WORK/class-anonymous/`` for a lecture's page)."""
    return work.root / (ANONYMOUS_FOLDER if anonymous else FOLDER)


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
    """The submissions that were graded: handed in, and neither a machine fault nor an error."""
    return [result for result in results if result.submitted and not result.machine and not result.error]


def pass_rates(results: list[SubmissionResult]) -> dict[str, list[CellRate]]:
    """lesson -> its autograded cells' pass rates over the graded submissions, the lowest rate first."""
    rates: dict[tuple[str, str], CellRate] = {}
    for result in graded(results):
        for cell in result.cells:
            if cell.kind != "auto":
                continue
            rate = rates.setdefault((result.lesson, cell.id), CellRate(result.lesson, cell.id, cell.max_score))
            if cell.status in WITHHELD:
                rate.withheld += 1
            elif cell.status == "passed" and (cell.score or 0.0) >= cell.max_score:
                rate.passed += 1
            else:
                rate.failed += 1
    lessons: dict[str, list[CellRate]] = {}
    for rate in sorted(rates.values(), key=lambda r: (r.lesson, r.rate, -r.failed, r.id)):
        lessons.setdefault(rate.lesson, []).append(rate)
    return lessons


def speed_cells(course: Course | None) -> dict[str, dict[str, list[str]]]:
    """lesson -> speed check name -> the test cells that run it (`Lesson.speed_checks`); empty without a course."""
    found: dict[str, dict[str, list[str]]] = {}
    for lesson in getattr(course, "lessons", None) or []:
        try:
            checks = lesson.speed_checks()
        except Exception:  # noqa: BLE001  (a lesson whose source cannot be read: its checks fall back, see `outcome`)
            continue
        for cell_id, names in (checks or {}).items():
            for name in names:
                found.setdefault(lesson.id, {}).setdefault(name, []).append(cell_id)
    return found


def outcome(result: SubmissionResult, record, cells: list[str] | None = None) -> str:
    """"passed", "failed" or "withheld": what the points say of one speed check (``record``, a verdict) of a graded
    submission. ``cells``: the test cells that run the check (`speed_cells`); the check passed where they all scored
    their points. Without them (no course), the speed cell is unknown: a row with any cell withheld is withheld, a row
    with any autograded cell that did not run to its end (`STOPPED`) failed, and otherwise the verdict decides."""
    mine = [cell for cell in result.cells if cell.id in (cells or ())]
    if not mine:
        if any(cell.status in WITHHELD for cell in result.cells):
            return "withheld"
        if any(cell.status in STOPPED for cell in result.cells if cell.kind == "auto"):
            return "failed"
        return "passed" if record.passed else "failed"
    if any(cell.status in WITHHELD for cell in mine):
        return "withheld"
    return "passed" if all(cell.status == "passed" and (cell.score or 0.0) >= cell.max_score for cell in mine) else "failed"


def speed_checks(results: list[SubmissionResult], ranges: dict | None = None, *,
                 course: Course | None = None) -> dict[str, list[SpeedCheck]]:
    """lesson -> its speed checks: every measurement with a threshold (the grader's verdicts) of every graded
    submission (`graded`: not a row the notebook or the machine left ungraded), each with its `outcome` (the course
    names each check's speed cell), and the recorded range of ``ranges`` (default: `recorded_ranges`)."""
    ranges = recorded_ranges() if ranges is None else ranges
    cells = speed_cells(course)
    checks: dict[tuple[str, str], SpeedCheck] = {}
    for result in graded(results):
        for record in result.measurements:
            if record.threshold is None:
                continue
            check = checks.setdefault((result.lesson, record.name), SpeedCheck(result.lesson, record.name))
            said = outcome(result, record, cells.get(result.lesson, {}).get(record.name))
            check.outcomes.append(said)
            if isinstance(record.speedup, (int, float)) and math.isfinite(record.speedup):
                check.points.append((float(record.speedup), said))
            check.thresholds.add(float(record.threshold))
            check.claim = check.claim or record.claim
    lessons: dict[str, list[SpeedCheck]] = {}
    for (lesson, name), check in sorted(checks.items()):
        entry = ranges.get(lesson, {}).get(name) if isinstance(ranges.get(lesson), dict) else None
        if isinstance(entry, dict) and {"low", "high"} <= set(entry):
            check.recorded = entry
        lessons.setdefault(lesson, []).append(check)
    return lessons


# ------------------------------------------------------------------------------------------------------- gradebook

def _lesson_order(results: list[SubmissionResult], course: Course | None) -> list[str]:
    present = {result.lesson for result in results}
    known = [lesson.id for lesson in getattr(course, "lessons", None) or [] if lesson.id in present]
    return known + sorted(present - set(known))


def _lesson_points(results: list[SubmissionResult], course: Course | None) -> dict[str, float]:
    """lesson -> its autograded points: the course's, else the most any of its rows is out of."""
    points: dict[str, float] = {}
    for result in results:
        points[result.lesson] = max(points.get(result.lesson, 0.0), result.max_score)
    for lesson in getattr(course, "lessons", None) or []:
        try:
            total = sum(cell["points"] for cell in lesson.grade_cells() if cell["kind"] == "auto")
        except Exception:  # noqa: BLE001  (a lesson whose source cannot be read: its rows say)
            continue
        if total and lesson.id in points:
            points[lesson.id] = float(total)
    return points


def _safe_part(name: str) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name and "\0" not in name


def feedback_file(result: SubmissionResult, home: pathlib.Path | None) -> pathlib.Path | None:
    """The row's feedback page when it exists: ``result.feedback``, else ``WORK/feedback/<student>/<lesson>/<lesson>.html``
    under ``home`` (the work folder)."""
    candidates = [pathlib.Path(result.feedback)] if result.feedback else []
    if home is not None and _safe_part(result.student) and _safe_part(result.lesson):
        candidates.append(WorkFolder(home).feedback(result.student, result.lesson))
    return next((path for path in candidates if path.is_file()), None)


def relative(path: pathlib.Path, start: pathlib.Path) -> str | None:
    """``path`` as a link relative to the folder ``start`` (URL-quoted), or None where there is none (another drive)."""
    try:
        text = os.path.relpath(pathlib.Path(path).resolve(), pathlib.Path(start).resolve())
    except ValueError:
        return None
    return urllib.parse.quote(pathlib.PurePath(text).as_posix(), safe="/")


def gradebook(results: list[SubmissionResult], *, course: Course | None = None, target: pathlib.Path | None = None,
              home: pathlib.Path | None = None) -> dict[str, dict[str, Grade]]:
    """student -> lesson -> `Grade`: the class's points as the totals count them. A row counts unless it is excused
    and missing (left out of the max) or the grading machine's fault (graded again by the next ``grade``); a "not
    submitted" row counts 0, a row the notebook left ungraded its points (0). With ``target`` (the page's folder), each
    grade links to its feedback page (`feedback_file`, under ``home``) relative to it."""
    points = _lesson_points(results, course)
    book: dict[str, dict[str, Grade]] = {}
    for result in results:
        out_of = result.max_score or points.get(result.lesson, 0.0)
        counted = not result.machine and not (result.excused and not result.submitted)
        found = feedback_file(result, home) if target is not None and result.submitted else None
        link = relative(found, target) if found is not None else None
        book.setdefault(result.student, {})[result.lesson] = Grade(result, out_of, counted, link)
    return book


def lesson_statistics(book: dict[str, dict[str, Grade]], lesson: str) -> list[float]:
    """The counted points of ``lesson`` across the class (the distribution the figure draws)."""
    return [row[lesson].points for row in book.values() if lesson in row and row[lesson].counted]


def _charted(book: dict[str, dict[str, Grade]], lesson: str) -> bool:
    """Whether ``lesson`` has a distribution to draw: counted rows, and points to score (not a file of no lesson)."""
    return bool(lesson_statistics(book, lesson)) and any(row[lesson].out_of > 0 for row in book.values() if lesson in row)


def total(row: dict[str, Grade]) -> tuple[float, float]:
    """A student's (points, out of) over their counted lessons."""
    counted = [grade for grade in row.values() if grade.counted]
    return sum(grade.points for grade in counted), sum(grade.out_of for grade in counted)


# ------------------------------------------------------------------------------------------------------ pseudonyms

def pseudonym_key(home: pathlib.Path) -> bytes:
    """The work folder's secret for pseudonyms, ``WORK/class/.pseudonym-key``: made once (readable by its owner only),
    read back on every later run, so a student's pseudonym stays the same from lecture to lecture."""
    path = pathlib.Path(home) / FOLDER / KEY
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(secrets.token_hex(32) + "\n")
    text = path.read_text(encoding="utf-8").strip()
    if not re.fullmatch(r"[0-9a-f]{32,}", text):
        raise ValueError(f"{path} is not a pseudonym key (hex digits): delete it to make a new one (every pseudonym changes)")
    return bytes.fromhex(text)


def pseudonyms(students, key: bytes, width: int = 6) -> dict[str, str]:
    """student id -> ``student-`` and the first ``width`` hex digits of HMAC-SHA256(key, id); students whose digits
    collide get two more digits each, until none does."""
    digests = {student: hmac.new(key, student.encode("utf-8"), hashlib.sha256).hexdigest() for student in set(students)}
    names: dict[str, str] = {}
    pending, size = dict(digests), width
    while pending:
        groups: dict[str, list[str]] = {}
        for student, digest in pending.items():
            groups.setdefault(digest[:size], []).append(student)
        pending = {}
        for prefix, members in groups.items():
            if len(members) == 1 or size >= 64:
                names.update({member: PSEUDONYM + digests[member][:size] for member in members})
            else:
                pending.update({member: digests[member] for member in members})
        size += 2
    return names


@dataclasses.dataclass
class View:
    """How the page shows what came from the class: every absolute path shortened (``roots``: prefix -> label, e.g.
    the work folder -> ``WORK``; any other path -> its file name), and on an anonymous page every student id, wherever
    it appears, replaced by its pseudonym (``names``)."""

    roots: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    names: dict[str, str] | None = None

    def __post_init__(self):
        self._roots = [(re.compile(re.escape(prefix) + r"(?![\w.-])"), label) for prefix, label in self.roots]
        ids = sorted(self.names or (), key=len, reverse=True)
        self._ids = re.compile(r"(?<![\w.@+-])(?:" + "|".join(map(re.escape, ids)) + r")(?![\w.@+-])") if ids else None

    @property
    def anonymous(self) -> bool:
        return self.names is not None

    def who(self, student: str) -> str:
        return self.names.get(student, PSEUDONYM + "?") if self.names is not None else student

    def plain(self, value) -> str:
        text = str(value)
        for prefix, label in self._roots:
            text = prefix.sub(lambda _, label=label: label, text)
        text = ABSOLUTE.sub(lambda m: "\u2026/" + m.group(0).rstrip("/").rsplit("/", 1)[-1], text)
        if self._ids is not None:
            text = self._ids.sub(lambda m: self.names[m.group(0)], text)
        return text

    def text(self, value) -> str:
        """``value`` shown: shortened, anonymised, escaped."""
        return _e(self.plain(value))

    def student(self, student: str) -> str:
        return _e(self.who(student))


def _roots(home: pathlib.Path | None, course: Course | None, target: pathlib.Path) -> list[tuple[str, str]]:
    """The prefixes `View` shortens, longest first: the work folder, the course, the home folder (and without a work
    folder, the page's own folder and its parent)."""
    try:
        user = pathlib.Path.home()
    except RuntimeError:  # no home folder known
        user = None
    found = []
    for path, label in ((home, "WORK"), (getattr(course, "root", None), "COURSE"), (user, "~")):
        if path is None:
            continue
        for form in {str(path), str(pathlib.Path(path).resolve())}:
            if len(form) > 1:
                found.append((form.rstrip("/"), label))
    if home is None:
        found += [(str(target.resolve()), "."), (str(target.resolve().parent), "..")]
    return sorted(set(found), key=lambda item: -len(item[0]))


def _recorded(path: pathlib.Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write(results: list[SubmissionResult], target: pathlib.Path, *, course: Course | None = None,
          workers: int | None = None, ranges: dict | None = None, machine: dict | None = None,
          csv: pathlib.Path | None = None, now: datetime.datetime | None = None, work: WorkFolder | None = None,
          anonymous: bool = False) -> pathlib.Path:
    """Write the class page of ``results`` (every row of the class, `tfperf_lab.grading.store.rows`) to
    ``target/index.html`` with its figures beside it, replacing an earlier page; returns the page's path.

    ``work`` is the work folder (default: ``target``'s parent when ``target`` is ``WORK/class/`` or
    ``WORK/class-anonymous/``): the feedback pages are found there and its path is shortened to ``WORK``. ``ranges``
    defaults to `recorded_ranges`, ``machine`` to the one the last grading recorded beside the page (``.grading.json``,
    kept whenever ``machine`` is given) or else `tfperf.env.fingerprint`, ``now`` to the local time; ``course`` (each
    lesson's title, points, speed cells and its article's claim), ``workers`` (how many gradings ran at once) and ``csv``
    (where the grades went: linked relative to the page) are shown when given. The grader's verdicts carry no claim of
    their own: a check shows its record's claim when it has one, and the lesson's claim (``course``) stands above its
    lesson's checks. ``anonymous``: stable pseudonyms (`pseudonyms`, keyed by `pseudonym_key`), no student id, no
    feedback or CSV link."""
    target = pathlib.Path(target)
    target.mkdir(parents=True, exist_ok=True)
    home = work.root if work is not None else (target.resolve().parent if target.name in (FOLDER, ANONYMOUS_FOLDER) else None)
    for old in target.glob("*.png"):
        if re.fullmatch(r"(cells|speed)-\d+\.png", old.name) or old.name == GRADEBOOK_FIGURE:
            old.unlink()
    now = now or datetime.datetime.now().astimezone()
    if machine is None:  # a page drawn again (a review decision, `tfperf-lab page`): the machine that graded, if known
        recorded = _recorded((home / FOLDER if home is not None else target) / RECORD)
        machine = recorded.get("machine") if isinstance(recorded.get("machine"), dict) else env.fingerprint()
        workers = workers if workers is not None else recorded.get("workers")
    else:
        _keep(target / RECORD, {"machine": machine, "workers": workers})
    if anonymous:
        if home is None:
            raise ValueError("an anonymous class page needs its work folder (work=...): the pseudonyms' key lives there")
        view = View(_roots(home, course, target), pseudonyms({r.student for r in results}, pseudonym_key(home)))
        csv = None  # the CSV holds every real id
    else:
        view = View(_roots(home, course, target))
    rates, checks = pass_rates(results), speed_checks(results, ranges, course=course)
    book = gradebook(results, course=course, target=None if anonymous else target, home=home)
    order = _lesson_order(results, course)
    images: dict[tuple[str, str], str] = {}
    if any(_charted(book, lesson) for lesson in order):
        images["gradebook", ""] = _gradebook_chart(book, order, target / GRADEBOOK_FIGURE)
    for number, (lesson, cells) in enumerate(rates.items(), start=1):
        images["cells", lesson] = _cells_chart(lesson, cells, target / f"cells-{number}.png")
    for number, (lesson, lesson_checks) in enumerate(checks.items(), start=1):
        if any(check.points for check in lesson_checks):
            images["speed", lesson] = _speed_chart(lesson, lesson_checks, target / f"speed-{number}.png")
    lessons = {lesson.id: lesson for lesson in course.lessons} if course is not None else {}
    csv_link = relative(csv, target) if csv is not None else None
    page = render(results, rates, checks, images, workers=workers, machine=machine,
                  csv=(csv_link, pathlib.Path(csv).name) if csv is not None else None, now=now, lessons=lessons,
                  book=book, order=order, view=view)
    path = target / PAGE
    partial = path.with_name(PAGE + ".partial")
    partial.write_text(page, encoding="utf-8")
    partial.replace(path)
    return path


def _keep(path: pathlib.Path, data: dict) -> None:
    partial = path.with_name(path.name + ".partial")
    try:
        partial.write_text(json.dumps(data, default=str), encoding="utf-8")
        partial.replace(path)
    except (OSError, TypeError, ValueError):
        partial.unlink(missing_ok=True)  # only a later redraw would miss it: it shows this machine then


# ---------------------------------------------------------------------------------------------------------- figures

def _figure(height: float, width: float = 9.0):
    from matplotlib.figure import Figure  # no pyplot: no global state, safe beside grading threads

    return Figure(figsize=(width, max(2.0, height)), dpi=100, layout="constrained")


def _gradebook_chart(book: dict[str, dict[str, Grade]], order: list[str], path: pathlib.Path) -> str:
    """One small histogram per lesson: the class's counted points, with the average and the median."""
    shown = [lesson for lesson in order if _charted(book, lesson)]
    columns = min(len(shown), 4)
    rows = math.ceil(len(shown) / columns)
    figure = _figure(2.5 * rows + 0.4)
    grid = figure.subplots(rows, columns, squeeze=False)
    for axes in grid.flat[len(shown):]:
        axes.set_visible(False)
    for axes, lesson in zip(grid.flat, shown):
        values = lesson_statistics(book, lesson)
        out_of = max((row[lesson].out_of for row in book.values() if lesson in row), default=0.0) or max(values) or 1.0
        bins = [out_of * i / 10 for i in range(11)] if out_of > 10 else [i - 0.5 for i in range(int(math.ceil(out_of)) + 2)]
        axes.hist(values, bins=bins, color=HISTOGRAM_COLOUR, edgecolor="white")
        mean, median = statistics.fmean(values), statistics.median(values)
        axes.axvline(mean, color="black", linestyle="--", linewidth=1.2, label="average")
        axes.axvline(median, color=MIXED_COLOUR, linestyle=":", linewidth=1.8, label="median")
        axes.set_xlim(bins[0], bins[-1])
        if out_of <= 10:
            axes.set_xticks(range(int(math.ceil(out_of)) + 1))
        axes.set_title(f"{lesson}\nn={len(values)}, average {mean:.3g}, median {median:.3g}", fontsize=8)
        axes.set_xlabel(f"points of {out_of:g}", fontsize=7)
        axes.tick_params(labelsize=7)
        axes.yaxis.get_major_locator().set_params(integer=True)
        axes.set_ylabel("students", fontsize=7)
    handles, labels = grid.flat[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside upper right", fontsize=7, ncols=2, frameon=False)
    figure.suptitle("points per lesson: the class's distribution", fontsize=10)
    figure.savefig(path)
    return path.name


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
        said = f"{cell.rate:.0%} of {cell.total}" + (f" ({cell.withheld} withheld)" if cell.withheld else "")
        axes.text(min(100 * cell.rate, 100) + 1, position, said, va="center", fontsize=8)
    axes.set_yticks(list(positions), labels, fontsize=8)
    axes.invert_yaxis()
    axes.set_xlim(0, 125)
    axes.set_xticks([0, 25, 50, 75, 100])
    axes.set_xlabel("submissions that passed the cell (%; cells withheld for review not counted)")
    axes.set_title(f"{lesson}: pass rate per autograded cell", fontsize=10)
    figure.savefig(path)
    return path.name


OUTCOME_COLOURS = {"passed": PASSED_COLOUR, "failed": FAILED_COLOUR, "withheld": WITHHELD_COLOUR}
OUTCOME_LABELS = {"passed": "passed (points paid)", "failed": "failed (no points)",
                  "withheld": "withheld for review (not counted)"}


def _speed_chart(lesson: str, checks: list[SpeedCheck], path: pathlib.Path) -> str:
    """A row per speed check, log x: one dot per submission (by its points: passed, failed, withheld), the threshold,
    the recorded range."""
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
        for value, said in check.points:
            if value > 0:
                axes.plot(value, row + jitter.uniform(-0.22, 0.22), "o", markersize=4, alpha=0.7,
                          color=OUTCOME_COLOURS[said], label=once(OUTCOME_LABELS[said]))
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
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)  # beside: it hides no dot
    figure.savefig(path)
    return path.name


# ------------------------------------------------------------------------------------------------------------- page

def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _table(head: list[str], rows: list[list[str]], numeric: set[int] = frozenset(), *, css: str = "",
           classes: list[str] | None = None) -> str:
    """A table; ``rows`` hold already escaped HTML; columns in ``numeric`` align right; ``classes``: one per row."""
    out = [f'<table class="{css}">' if css else "<table>"]
    out += ["<tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>"] if head else []
    for number, row in enumerate(rows):
        cells = (f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(row))
        kind = classes[number] if classes and classes[number] else ""
        out.append((f'<tr class="{kind}">' if kind else "<tr>") + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _x(value: float) -> str:
    return f"{value:.3g}x"


def _g(value: float) -> str:
    return f"{value:.3g}" if value != int(value) else f"{value:g}"


def _heading(lesson: str, lessons: dict, view: View | None = None) -> str:
    known = lessons.get(lesson)
    name = view.text(lesson) if view is not None else _e(lesson)
    return f"<h3>{name}" + (f": {_e(known.title)}" if known is not None and getattr(known, "title", "") else "") + "</h3>"


def _mark(kind: str, text: str, why: str | None = None) -> str:
    title = f' title="{why}"' if why else ""
    return f'<span class="mark {kind}"{title}>{text}</span>'


def _short(text: str, size: int = 60) -> str:
    return text if len(text) <= size else text[:size - 1].rstrip() + "\u2026"


def _grade_cell(grade: Grade | None, view: View) -> str:
    """One gradebook cell: the points (after any late penalty) and the row's marks, linked to its feedback page."""
    if grade is None:
        return '<span class="note" title="no row: nothing handed in, and no roster says it was due">&ndash;</span>'
    result, out = grade.result, []
    if result.machine:
        why = view.plain("; ".join(result.machine))
        out.append("&ndash; " + _mark("not-graded", "not graded (the grading machine&#x27;s fault)", _e(why)))
    elif not result.submitted:
        out.append(_mark("excused", "excused") if result.excused
                   else f"0 / {_g(grade.out_of)} " + _mark("missing", "not submitted"))
    else:
        out.append(f"{_g(result.score)} / {_g(grade.out_of)}")
        if result.error:
            why = view.plain(result.error)
            out.append(_mark("not-graded", f"not graded ({_e(_short(why))})", _e(why)))
        if result.late:
            late = result.late
            why = (f"handed in {late.get('submitted')}, due {late.get('due')}"
                   + (" (extended)" if late.get("extended") else "") + f": {late.get('days')} day(s) late, "
                   f"{late.get('policy')}; {_g(result.raw_score)} points before the penalty")
            out.append(_mark("late", f"late (-{_g(result.penalty)})", view.text(why)))
        if result.excused:
            out.append(_mark("excused", "excused"))
        waiting = sum(cell.max_score for cell in result.cells if cell.status == "review")
        if result.review and not result.decision:
            out.append(_mark("on-review", "on review" + (f" ({_g(waiting)} pts withheld)" if waiting else ""),
                             "a person decides: tfperf-lab review"))
        elif result.decision:
            out.append(_mark("on-review", f"review: {view.text(result.decision.get('decision', ''))}"))
    if grade.link:
        out.append(f'<a class="link" href="{_e(grade.link)}">feedback</a>')
    return " ".join(out)


def _gradebook_section(book: dict[str, dict[str, Grade]], order: list[str], images: dict, view: View,
                       lessons: dict) -> list[str]:
    out = ['<h2 id="gradebook">1. Gradebook</h2>',
           '<p class="note">Autograded points per student and lesson, after any late penalty (hand-graded answers are not '
           "in them). Marks: <em>not submitted</em> (a roster student with nothing handed in: 0), <em>late (-N)</em> "
           "(N points taken off), <em>excused</em>, <em>not graded (why)</em> (the notebook's: 0; the grading machine's: "
           "left out of the totals until graded again), <em>on review</em> (points withheld until a person decides). "
           "Totals leave out the lessons a student is excused from (and did not hand in), out of the max too. "
           "Averages and medians are over the students counted in each lesson."
           + ("" if view.anonymous else " Each grade links to the student's feedback page.") + "</p>"]
    if not book:
        return out + ["<p>No row to show.</p>"]
    if ("gradebook", "") in images:
        out.append(f'<img src="{_e(images["gradebook", ""])}" alt="the distribution of points per lesson">')
    students = sorted(book, key=lambda student: (view.who(student), student))
    head = ["student", *order, "total"]
    rows, classes = [], []
    totals = []
    for student in students:
        row = book[student]
        points, out_of = total(row)
        pending = sum(1 for grade in row.values() if grade.result.machine)
        totals.append((points, out_of))
        said = (f"{_g(points)} / {_g(out_of)}" + (f" ({points / out_of:.0%})" if out_of else "")
                + (f' <span class="note">+{pending} pending</span>' if pending else ""))
        rows.append([view.student(student), *(_grade_cell(row.get(lesson), view) for lesson in order), said])
        classes.append("")
    numbers = {}
    for lesson in order:
        numbers[lesson] = [row[lesson].points for row in book.values() if lesson in row and row[lesson].counted]
    shares = [points / out_of for points, out_of in totals if out_of]
    for name, measure in (("average", statistics.fmean), ("median", statistics.median)):
        rows.append([f"<em>{name}</em>", *(_g(round(measure(numbers[lesson]), 2)) if numbers[lesson] else "-"
                                            for lesson in order),
                     f"{measure(shares):.0%}" if shares else "-"])
        classes.append("stat")
    out.append(_table(head, rows, set(range(1, len(head))), css="gradebook", classes=classes))
    out.append("<h3>Per lesson</h3>")
    stats = []
    for lesson in order:
        grades = [row[lesson] for row in book.values() if lesson in row]
        values = numbers[lesson]
        out_of = max((grade.out_of for grade in grades), default=0.0)
        stats.append([
            view.text(lesson) + (f": {_e(lessons[lesson].title)}" if getattr(lessons.get(lesson), "title", "") else ""),
            _g(out_of), str(len(values)),
            _g(round(statistics.fmean(values), 2)) if values else "-",
            _g(round(statistics.median(values), 2)) if values else "-",
            f"{_g(min(values))} to {_g(max(values))}" if values else "-",
            str(sum(1 for g in grades if not g.result.submitted and not g.result.excused)),
            str(sum(1 for g in grades if g.result.late)),
            str(sum(1 for g in grades if g.result.excused)),
            str(sum(1 for g in grades if g.result.submitted and (g.result.error or g.result.machine))),
            str(sum(1 for g in grades if g.result.review and not g.result.decision))])
    out.append(_table(["lesson", "points", "students counted", "average", "median", "range", "not submitted", "late",
                       "excused", "not graded", "on review"], stats, set(range(1, 11))))
    return out


def _cells_section(rates: dict[str, list[CellRate]], images: dict, lessons: dict, view: View) -> list[str]:
    out = ['<h2 id="cells">2. Pass rate per autograded cell</h2>',
           '<p class="note">Over the graded submissions of each lesson (rows not graded are in section 5, rows not '
           "submitted in the gradebook). A cell withheld for review (or rejected on review) is neither passed nor "
           "failed: it is counted apart and left out of the pass rate's denominator. Lowest pass rate first.</p>"]
    if not rates:
        out.append("<p>No submission was graded.</p>")
    for lesson, cells in rates.items():
        out.append(_heading(lesson, lessons, view))
        if ("cells", lesson) in images:
            out.append(f'<img src="{_e(images["cells", lesson])}" alt="pass rate per cell of {view.text(lesson)}">')
        rows = [[f"<code>{view.text(c.id)}</code>", f"{c.points:g}", str(c.passed), str(c.failed), str(c.withheld),
                 f'<span class="{"low" if c.rate < 0.5 else "high" if c.rate >= 0.8 else ""}">{c.rate:.0%}</span>'
                 + f" of {c.total}"]
                for c in cells]
        head = ["cell", "points", "passed", "failed", "withheld for review (not counted)", "pass rate"]
        out.append(_table(head, rows, {1, 2, 3, 4, 5}))
    return out


def _speed_section(checks: dict[str, list[SpeedCheck]], images: dict, lessons: dict, view: View) -> list[str]:
    out = ['<h2 id="speed">3. Speed checks</h2>',
           "<p class=\"note\">The grader's measurements, one dot per graded submission, against the check's threshold "
           "and the range the reference solution's recorded runs measured (tfperf/ranges.json, profile "
           f"&quot;{PROFILE}&quot;, the one grading runs). A check counts as passed only where its speed cell scored its "
           "points (a speed cell that timed out, was not run or lost its points to a failed output test is failed, "
           "whatever was measured); a speed cell withheld for review is left out of the denominator. Rows not graded "
           "(section 5) are not counted.</p>"]
    if not checks:
        out.append("<p>No speed check was measured.</p>")
    for lesson, lesson_checks in checks.items():
        out.append(_heading(lesson, lessons, view))
        lesson_claim = getattr(lessons.get(lesson), "claim", "")
        if lesson_claim:
            out.append(f"<p>The article's claim: {_e(lesson_claim)}</p>")
        if ("speed", lesson) in images:
            out.append(f'<img src="{_e(images["speed", lesson])}" alt="speed checks of {view.text(lesson)}">')
        rows = []
        for check in lesson_checks:
            values = sorted(check.speedups)
            if check.recorded:
                runs = check.recorded.get("runs")
                recorded = f"{_x(float(check.recorded['low']))} to {_x(float(check.recorded['high']))}" + (
                    f" ({_e(runs)} runs)" if runs is not None else "")
            else:
                recorded = "not recorded"
            rows.append([f"<code>{view.text(check.name)}</code>", ", ".join(_x(t) for t in sorted(check.thresholds)),
                         f"{check.passed} of {check.counted}"
                         + (f" ({check.passed / check.counted:.0%})" if check.counted else ""),
                         str(check.withheld),
                         _x(statistics.median(values)) if values else "-",
                         f"{_x(values[0])} to {_x(values[-1])}" if values else "-", recorded,
                         view.text(check.claim) if check.claim else "the lesson's (above)" if lesson_claim else "-"])
        head = ["speed check", "threshold", "passed (points paid)", "withheld for review (not counted)", "class median",
                "class range", "reference's recorded range", "the article's claim"]
        out.append(_table(head, rows, {2, 3, 4}))
    return out


def _finding_text(finding: dict) -> str:
    return f"cell {finding.get('cell')}, line {finding.get('line')}: {finding.get('why')}: {finding.get('code')}"


def _review_section(results: list[SubmissionResult], view: View) -> list[str]:
    listed = sorted((r for r in results if r.review or r.findings or r.decision),
                    key=lambda r: (view.who(r.student), r.lesson))
    out = ['<h2 id="review">4. The review list</h2>',
           f"<p>{len(listed)} submission(s) whose code reaches into the course's or the interpreter's machinery: "
           "their review cells are withheld until a person decides (<code>tfperf-lab review</code>, which shows the "
           "code as written; paths are shortened here).</p>"]
    for result in listed:
        decision = result.decision
        said = (f"{view.text(decision.get('decision'))} by {view.text(decision.get('by'))} on "
                f"{view.text(decision.get('at'))}" if decision else "<span class=\"low\">awaiting a decision</span>")
        out.append(f"<h3>{view.student(result.student)}: {view.text(result.lesson)}</h3><p>Decision: {said}</p>")
        if result.findings:
            rows = [[view.text(f.get("cell", "")), view.text(f.get("line", "")),
                     f"<code>{view.text(f.get('code', ''))}</code>", view.text(f.get("why", ""))]
                    for f in result.findings if isinstance(f, dict)]
            out.append(_table(["cell", "line", "code", "why"], rows, {1}))
        known = {_finding_text(f) for f in result.findings if isinstance(f, dict)}
        extra = [reason for reason in result.review if reason not in known]
        if extra:
            out.append("<ul>" + "".join(f"<li>{view.text(reason)}</li>" for reason in extra) + "</ul>")
    return out


def _not_graded_section(results: list[SubmissionResult], view: View) -> list[str]:
    faults = sorted((r for r in results if r.machine), key=lambda r: (view.who(r.student), r.lesson))
    errors = sorted((r for r in results if r.error and not r.machine and r.submitted),
                    key=lambda r: (view.who(r.student), r.lesson))
    out = ['<h2 id="not-graded">5. Not graded</h2>',
           '<p class="note">Handed in but not graded. A roster student who handed in nothing is in the gradebook '
           "(not submitted), not here.</p>"]
    out.append('<div class="fault" id="machine-faults">')
    out.append(f"<h3>The grading machine's fault ({len(faults)})</h3>")
    if faults:
        out.append(f"<p>{_e(MACHINE[0].upper() + MACHINE[1:])}.</p>")
        out.append(_table(["student", "lesson", "what the machine lacked"],
                          [[view.student(r.student), view.text(r.lesson), "<br>".join(view.text(m) for m in r.machine)]
                           for r in faults]))
    else:
        out.append("<p>None.</p>")
    out.append("</div>")
    out.append(f'<h3 id="errors">The notebook\'s ({len(errors)})</h3>')
    if errors:
        out.append(_table(["student", "lesson", "why"],
                          [[view.student(r.student), view.text(r.lesson), view.text(r.error)] for r in errors]))
    else:
        out.append("<p>None.</p>")
    return out


def _slowest_section(results: list[SubmissionResult], view: View) -> list[str]:
    timed = sorted((r for r in results if r.seconds > 0), key=lambda r: -r.seconds)[:SLOWEST]
    out = [f'<h2 id="slowest">6. The slowest notebooks (top {SLOWEST})</h2>']
    if not timed:
        return out + ["<p>No notebook ran in this grading (every row resumed or not graded).</p>"]
    rows = [[view.student(r.student), view.text(r.lesson), f"{r.seconds:.1f}", f"{r.score:g} / {r.max_score:g}",
             view.text(r.status)] for r in timed]
    return out + [_table(["student", "lesson", "seconds", "points", "status"], rows, {2, 3})]


def _said(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) or "none"
    return str(value)


def _machine_section(results: list[SubmissionResult], machine: dict, workers: int | None, csv, now,
                     view: View) -> list[str]:
    rows = [["date", _e(now.strftime("%Y-%m-%d %H:%M %Z").strip())], ["rows (student and lesson)", str(len(results))],
            ["students", str(len({r.student for r in results}))], ["lessons", str(len({r.lesson for r in results}))]]
    if workers is not None:
        rows.append(["gradings at once (workers)", _e(workers)])
    if csv is not None:
        link, name = csv
        rows.append(["grades (CSV)", f'<a href="{_e(link)}"><code>{view.text(urllib.parse.unquote(link))}</code></a>'
                     if link else f"<code>{view.text(name)}</code>"])
    rows.append(["profile the lessons are graded in", PROFILE])
    rows += [[_e(NAMES.get(key, key)), view.text(_said(value))]
             for key, value in machine.items() if key not in ("profile", "machine")]  # this process's profile, not the gradings'
    state = machine.get("machine") or {}
    rows += [[_e(NAMES.get(key, key)),
              view.text(f"{value:.1%}" if key.endswith("_share") and isinstance(value, float) else _said(value))]
             for key, value in state.items() if key != "cores"]
    return ['<h2 id="machine">7. The grading machine</h2>', _table([], rows)]


def render(results: list[SubmissionResult], rates: dict[str, list[CellRate]], checks: dict[str, list[SpeedCheck]],
           images: dict, *, workers: int | None, machine: dict, csv, now: datetime.datetime,
           lessons: dict | None = None, book: dict | None = None, order: list[str] | None = None,
           view: View | None = None) -> str:
    """The page's HTML (figures named by ``images``: ("gradebook", "") | ("cells"|"speed", lesson) -> file name beside
    the page; ``csv``: (link relative to the page or None, file name) or None)."""
    view = view or View()
    book = gradebook(results) if book is None else book
    order = sorted({r.lesson for r in results}) if order is None else order
    ok = graded(results)
    faults = sum(1 for r in results if r.machine)
    errors = sum(1 for r in results if r.error and not r.machine and r.submitted)
    missing = sum(1 for r in results if not r.submitted and not r.excused and not r.machine)
    excused = sum(1 for r in results if not r.submitted and r.excused)
    late = sum(1 for r in results if r.late)
    listed = sum(1 for r in results if r.review or r.findings or r.decision)
    summary = (f"{len(results)} row(s) of {len({r.student for r in results})} student(s): {len(ok)} graded "
               f"({late} late), {missing} not submitted, {excused} excused, {errors} not graded (the notebook's), "
               f"{faults} not graded (the grading machine's fault), {listed} on the review list.")
    title = "The class" + (" (anonymous: pseudonyms for a lecture)" if view.anonymous else "")
    body = [f"<h1>{_e(title)}, graded {_e(now.strftime('%Y-%m-%d %H:%M'))}</h1>", f"<p>{_e(summary)}</p>",
            '<p class="note">1. <a href="#gradebook">gradebook</a> &middot; 2. <a href="#cells">pass rates</a> '
            '&middot; 3. <a href="#speed">speed checks</a> &middot; 4. <a href="#review">review list</a> &middot; '
            '5. <a href="#not-graded">not graded</a> &middot; 6. <a href="#slowest">slowest</a> &middot; '
            '7. <a href="#machine">machine</a></p>']
    if view.anonymous:
        body.append('<p class="note">Each student is shown by a pseudonym that stays the same on every anonymous page '
                    "of this work folder; no student id, feedback link or grades file is on this page.</p>")
    lessons = lessons or {}
    body += _gradebook_section(book, order, images, view, lessons)
    body += _cells_section(rates, images, lessons, view)
    body += _speed_section(checks, images, lessons, view)
    body += _review_section(results, view)
    body += _not_graded_section(results, view)
    body += _slowest_section(results, view)
    body += _machine_section(results, machine, workers, csv, now, view)
    return "\n".join(["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
                      f'<meta http-equiv="Content-Security-Policy" content="{_e(POLICY)}">',
                      f"<title>{_e(title)}: tfperf-lab</title>", f"<style>{CSS}</style>", "</head><body>",
                      *body, "</body></html>", ""])
