"""The class page (`tfperf_lab.grading.classpage`): a class built in memory, its page read as text and opened in a real
headless browser (Chromium), and `batch.grade` writing it for a graded tiny class (tests/tiny_course.py), which
``tfperf-lab page`` then draws again, anonymous too."""

from __future__ import annotations

import datetime
import html
import os
import pathlib
import re
import shutil
import subprocess
import types

import pytest

from tfperf.report import Record
from tfperf_lab import cli
from tfperf_lab.course import WorkFolder
from tfperf_lab.grading import batch, classpage
from tfperf_lab.grading.results import CellResult, SubmissionResult

SCRIPT = "<script>alert(1)</script>"
BROWSER = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
RANGES = {"01_first": {"fast_vs_slow": {"low": 4.0, "high": 6.0, "runs": 3}}}
MACHINE = {"tensorflow": "2.99.0", "python": "3.11.2", "platform": "Linux x86_64", "cpu_count": 2, "gpus": [],
           "profile": "full", "machine": {"cpu_model": "AMD EPYC 7B13", "governor": None, "cpu_max": "max 100000", "load1": 2.5,
                                          "cores": 2, "steal_share": 0.031, "throttled_share": 0.0}}
NOW = datetime.datetime(2026, 12, 3, 17, 30, tzinfo=datetime.timezone.utc)


def _cells(*outcomes: tuple[str, str]) -> list[CellResult]:
    return [CellResult(cell_id, 1.0 if status == "passed" else 0.0, 1.0, "auto", status)
            for cell_id, status in outcomes]


def _verdict(speedup: float, *, threshold: float = 3.0, name: str = "fast_vs_slow",
             claim: str | None = "about 5x") -> Record:
    """A grader's verdict: a record with its threshold set."""
    return Record(name, speedup, (speedup * 0.9, speedup * 1.1), passed=speedup >= threshold, threshold=threshold,
                  claim=claim)


def _class() -> list[SubmissionResult]:
    """Full marks; a failed cell; speed checks passed and failed; the review list (a finding holding a script); an
    error; a machine fault; a second lesson."""
    return [
        SubmissionResult("ana", "01_first", _cells(("correct", "passed"), ("faster", "passed"), ("written", "passed")),
                         measurements=[_verdict(5.2), Record("notebook_only", 2.0, (1.8, 2.2))], seconds=41.0),
        SubmissionResult("ben", "01_first", _cells(("correct", "passed"), ("faster", "failed"), ("written", "failed")),
                         measurements=[_verdict(1.4)], seconds=95.5),
        SubmissionResult("cleo", "01_first",
                         _cells(("correct", "failed"), ("faster", "review"), ("written", "passed")),
                         measurements=[_verdict(7.9)], seconds=12.0,
                         review=[f"cell answer, line 3: reaches the grader: {SCRIPT}"],
                         findings=[{"cell": "answer", "line": 3, "code": SCRIPT, "why": "reaches the grader"}]),
        SubmissionResult("dan", "01_first", _cells(("correct", "not run")), seconds=300.0,
                         error="the notebook did not finish (timeout)"),
        SubmissionResult("eve", "01_first", machine=["no sandbox: bubblewrap is not installed"]),
        SubmissionResult("ana", "02_second", _cells(("shapes", "passed"), ("dtype", "passed")),
                         measurements=[_verdict(2.5, threshold=1.5, name="cached_vs_not", claim=None)], seconds=20.0),
        SubmissionResult(f"{SCRIPT}mallory", "02_second", _cells(("shapes", "passed"), ("dtype", "failed")),
                         seconds=22.0, measurements=[_verdict(1.2, threshold=1.5, name="cached_vs_not", claim=None)],
                         review=["cell 4, line 1: opens the records file"],
                         decision={"decision": "rejected", "by": "prof", "at": "2026-12-02T10:00:00+00:00"}),
    ]


def _semester_class(work: pathlib.Path | None = None) -> list[SubmissionResult]:
    """`_class` and a semester's rows: fay handed in nothing (a roster row), hal is excused from 01 and handed in
    nothing, gus was a day late (-1 point), ivy's speed cell timed out although the grader's verdict passed, and dan's
    (not graded) row holds a passing verdict; with ``work``, messages hold the grading machine's absolute paths."""
    def missing(student, *, excused=False):
        row = SubmissionResult(student, "01_first", [CellResult(c, 0.0, 1.0, "auto", "not submitted")
                                                     for c in ("correct", "faster", "written")], submitted=False)
        row.excused = excused
        return row

    rows = _class()
    dan = next(r for r in rows if r.student == "dan")
    dan.measurements = [_verdict(15.0)]
    gus = SubmissionResult("gus", "01_first", _cells(("correct", "passed"), ("faster", "passed"), ("written", "passed")),
                           measurements=[_verdict(5.0)], seconds=30.0,
                           late={"submitted": "2026-11-02T10:00:00+00:00", "due": "2026-11-01T23:59:00+00:00",
                                 "extended": False, "hours": 10.0, "days": 1, "penalty": 1.0, "policy": "1 point a day",
                                 "how": "the intake's record"})
    ivy = SubmissionResult("ivy", "01_first", _cells(("correct", "passed"), ("faster", "timeout"), ("written", "passed")),
                           measurements=[_verdict(6.0)], seconds=270.0)
    rows += [missing("fay"), missing("hal", excused=True), gus, ivy]
    if work is not None:
        dan.error = f"the notebook did not finish (timeout): {work / 'submitted' / 'dan' / '01_first' / '01_first.ipynb'}"
        eve = next(r for r in rows if r.student == "eve")
        eve.machine = [f"no sandbox: {pathlib.Path('/usr/lib/tfperf/bwrap-helper')} is missing",
                       "no cache in /root/.cache/tfperf/ either"]
    return rows


class _Lesson:
    """A lesson as the page reads it from a course: its title, claim, graded cells and which cell runs which check."""

    def __init__(self, lesson_id, cells, checks, title=""):
        self.id, self.title, self.claim, self._cells, self._checks = lesson_id, title, "", cells, checks

    def grade_cells(self):
        return [{"id": cell, "points": 1, "kind": "auto"} for cell in self._cells]

    def speed_checks(self):
        return self._checks


COURSE_LIKE = types.SimpleNamespace(lessons=[
    _Lesson("01_first", ["correct", "faster", "written"], {"faster": ["fast_vs_slow"]}, "First things"),
    _Lesson("02_second", ["shapes", "dtype"], {"dtype": ["cached_vs_not"]})])


@pytest.fixture
def page(tmp_path):
    path = classpage.write(_class(), tmp_path / "class", workers=2, ranges=RANGES, machine=MACHINE, now=NOW)
    return path, path.read_text(encoding="utf-8")


def _section(text: str, anchor: str) -> str:
    start = text.index(f'id="{anchor}"')
    end = text.find("<h2", start)
    return text[start:end if end != -1 else None]


def test_pass_rates_count_the_graded_submissions_only():
    rates = {(r.lesson, r.id): r for cells in classpage.pass_rates(_class()).values() for r in cells}
    correct = rates["01_first", "correct"]
    assert (correct.passed, correct.failed, correct.total) == (2, 1, 3), correct  # not dan (error) nor eve (machine)
    assert f"{correct.rate:.0%}" == "67%"
    faster = rates["01_first", "faster"]
    assert (faster.passed, faster.failed, faster.withheld) == (1, 1, 1), faster
    assert (faster.total, f"{faster.rate:.0%}") == (2, "50%"), "withheld for review: left out of the denominator"
    order = [r.id for r in classpage.pass_rates(_class())["01_first"]]
    assert order == ["faster", "correct", "written"], "lowest first"


def test_speed_checks_take_the_verdicts_the_recorded_range_and_the_claim():
    checks = {(c.lesson, c.name): c for cells in classpage.speed_checks(_class(), RANGES).values() for c in cells}
    assert set(checks) == {("01_first", "fast_vs_slow"), ("02_second", "cached_vs_not")}, "only verdicts count"
    first = checks["01_first", "fast_vs_slow"]
    assert sorted(first.speedups) == [1.4, 5.2, 7.9] and first.thresholds == {3.0}
    assert (first.passed, first.counted, first.withheld) == (1, 2, 1), "cleo's speed cell is withheld: not in the denominator"
    assert first.recorded["runs"] == 3 and first.claim == "about 5x"
    assert checks["02_second", "cached_vs_not"].recorded is None


def test_the_page_shows_every_section(page):
    path, text = page
    cells = _section(text, "cells")
    assert "67%" in cells and "50%" in cells and "<h3>01_first</h3>" in cells and "<h3>02_second</h3>" in cells
    assert "left out of the pass rate's denominator" in cells
    order = [cells.index(f"<code>{cell}</code>") for cell in ("faster", "correct", "written")]
    assert order == sorted(order), "the failing cells first"
    speed = _section(text, "speed")
    assert "4x to 6x (3 runs)" in speed and "not recorded" in speed and "about 5x" in speed and "1 of 2 (50%)" in speed
    assert "withheld for review (not counted)" in speed
    assert "notebook_only" not in speed, "a measurement without a threshold is not a verdict"
    review = _section(text, "review")
    assert "cleo" in review and "awaiting a decision" in review and "rejected by prof" in review
    assert "opens the records file" in review
    not_graded = _section(text, "not-graded")
    order = [not_graded.index(word) for word in ("machine-faults", "eve", "errors", "dan")]
    assert order == sorted(order), "the machine's faults apart, and first"
    assert "bubblewrap is not installed" in not_graded and "the notebook did not finish (timeout)" in not_graded
    assert "eve" not in _section(text, "cells") and "grading machine&#x27;s fault" in not_graded
    slowest = _section(text, "slowest")
    assert slowest.index("dan") < slowest.index("ben") < slowest.index(">ana<"), "slowest first"
    machine = _section(text, "machine")
    assert "2.99.0" in machine and "Linux x86_64" in machine and "2026-12-03 17:30" in machine and ">7<" in machine
    assert "reduced" in machine and "full" not in machine, "the profile gradings run in, not this process's"
    assert "AMD EPYC 7B13" in machine and "3.1%" in machine and "stolen by the hypervisor" in machine, "the machine's state while grading"
    for image in re.findall(r'<img src="([^"]+)"', text):
        assert (path.parent / image).stat().st_size > 1000, image
    assert len(re.findall(r"<img ", text)) == 5, "the gradebook's histograms, a bar chart and a strip plot per lesson"
    assert _headings(text)[0] == "gradebook", "the gradebook comes first"


def test_every_string_from_a_submission_is_escaped(page):
    _, text = page
    assert SCRIPT not in text and "<script" not in text.lower()
    assert html.escape(SCRIPT) in text
    assert "http://" not in text and "https://" not in text, "nothing loads from elsewhere"


def test_the_course_gives_each_lesson_its_title_and_its_article_s_claim(tmp_path):
    lesson = types.SimpleNamespace(id="02_second", title="Caching <b>bold</b>", claim="caching saves half")
    path = classpage.write(_class(), tmp_path, course=types.SimpleNamespace(lessons=[lesson]), ranges=RANGES,
                           machine=MACHINE, now=NOW)
    speed = _section(path.read_text(encoding="utf-8"), "speed")
    assert "02_second: Caching &lt;b&gt;bold&lt;/b&gt;" in speed and "The article's claim: caching saves half" in speed
    assert "the lesson's (above)" in speed and "about 5x" in speed, "a record's own claim first"


def test_a_second_page_replaces_the_first(tmp_path):
    target = tmp_path / "class"
    classpage.write(_class(), target, ranges=RANGES, machine=MACHINE, now=NOW)
    classpage.write(_class()[-2:], target, ranges=RANGES, machine=MACHINE, now=NOW)
    assert sorted(p.name for p in target.glob("*.png")) == ["cells-1.png", "gradebook.png", "speed-1.png"]
    assert "cleo" not in (target / "index.html").read_text(encoding="utf-8")


def test_an_empty_or_unrecorded_class_still_gets_a_page(tmp_path):
    refused = [SubmissionResult("zoe", "notes", error="not a notebook")]
    path = classpage.write(refused, tmp_path, ranges={}, machine={}, now=NOW)
    text = path.read_text(encoding="utf-8")
    assert "No submission was graded" in text and "not a notebook" in text and "<img" not in text


def _row(section: str, student: str) -> str:
    """The gradebook row of ``student`` (its first cell is the student)."""
    return next(row for row in re.findall(r"<tr>(.*?)</tr>", section, re.S) if row.startswith(f"<td>{student}</td>"))


def test_the_gradebook_totals_marks_and_statistics(tmp_path):
    rows = _semester_class()
    book = classpage.gradebook(rows, course=COURSE_LIKE)
    totals = {student: classpage.total(row) for student, row in book.items()}
    assert totals["ana"] == (5.0, 5.0) and totals["ben"] == (1.0, 3.0) and totals["fay"] == (0.0, 3.0)
    assert totals["gus"] == (2.0, 3.0), "the late penalty is taken off"
    assert totals["hal"] == (0.0, 0.0), "an excused lesson not handed in: out of the points and of the max"
    assert totals["eve"] == (0.0, 0.0), "the grading machine's fault: out of the totals until graded again"
    assert totals["dan"] == (0.0, 1.0), "the notebook's: 0 of its points"
    # 01_first counts ana 3, ben 1, cleo 1, dan 0, fay 0, gus 2, ivy 2 (not eve, not hal)
    assert sorted(classpage.lesson_statistics(book, "01_first")) == [0, 0, 1, 1, 2, 2, 3]
    path = classpage.write(rows, tmp_path / "class", course=COURSE_LIKE, ranges=RANGES, machine=MACHINE, now=NOW)
    text = path.read_text(encoding="utf-8")
    gradebook = _section(text, "gradebook")
    assert _headings(text)[0] == "gradebook" and '<img src="gradebook.png"' in gradebook
    assert (path.parent / "gradebook.png").stat().st_size > 1000
    assert "0 / 3 " in _row(gradebook, "fay") and ">not submitted<" in _row(gradebook, "fay")
    assert "2 / 3 " in _row(gradebook, "gus") and ">late (-1)<" in _row(gradebook, "gus")
    assert ">excused<" in _row(gradebook, "hal") and "0 / 0" in _row(gradebook, "hal")
    assert "not graded (the notebook did not finish (timeout))" in _row(gradebook, "dan")
    assert "not graded (the grading machine&#x27;s fault)" in _row(gradebook, "eve") and "+1 pending" in _row(gradebook, "eve")
    assert ">on review (1 pts withheld)<" in _row(gradebook, "cleo")
    assert "5 / 5 (100%)" in _row(gradebook, "ana") and "3 / 3" in _row(gradebook, "ana")
    average = next(row for row in re.findall(r'<tr class="stat">(.*?)</tr>', gradebook, re.S) if "average" in row)
    median = next(row for row in re.findall(r'<tr class="stat">(.*?)</tr>', gradebook, re.S) if "median" in row)
    assert ">1.29<" in average and ">1.5<" in average, "9 points over 7 students; 02_second: 2 and 1"
    assert ">1<" in median, median
    per_lesson = gradebook[gradebook.index("Per lesson"):]
    first = next(row for row in re.findall(r"<tr>(.*?)</tr>", per_lesson, re.S) if row.startswith("<td>01_first"))
    cells = re.findall(r"<td[^>]*>(.*?)</td>", first)
    assert cells[0] == "01_first: First things" and cells[1:] == ["3", "7", "1.29", "1", "0 to 3", "1", "1", "1", "2", "1"]
    not_graded = _section(text, "not-graded")
    assert "fay" not in not_graded and "hal" not in not_graded, "not submitted: in the gradebook, not under not graded"
    assert "7 not graded" not in text and "1 not submitted, 1 excused" in text


def test_a_timed_out_student_is_not_counted_as_passed_and_withheld_cells_stay_out():
    rows = _semester_class()
    for course in (COURSE_LIKE, None):  # the course names the speed cell; without it, a stopped cell fails the check
        check = classpage.speed_checks(rows, RANGES, course=course)["01_first"][0]
        # ana and gus scored their speed points; ben failed; ivy's speed cell timed out (her verdict passed: 6.0x);
        # cleo's is withheld for review; dan (not graded, a passing 15x verdict) is not counted
        assert (check.passed, check.counted, check.withheld) == (2, 4, 1), (course, check.outcomes)
        assert 15.0 not in check.speedups and 6.0 in check.speedups
    ivy = next(r for r in rows if r.student == "ivy")
    assert classpage.outcome(ivy, ivy.measurements[0], ["faster"]) == "failed"
    faster = {r.id: r for r in classpage.pass_rates(rows)["01_first"]}["faster"]
    assert (faster.passed, faster.failed, faster.withheld, faster.total) == (2, 2, 1, 4), "withheld: not in the denominator"
    speed = _section(classpage.render(rows, classpage.pass_rates(rows), classpage.speed_checks(rows, RANGES, course=COURSE_LIKE),
                                      {}, workers=None, machine={}, csv=None, now=NOW), "speed")
    assert "2 of 4 (50%)" in speed and "only where its speed cell scored its" in speed


def _links(text: str) -> list[str]:
    return [html.unescape(link) for link in re.findall(r'href="([^"#][^"]*)"', text)]


def _no_machine_path(text: str, work: pathlib.Path) -> None:
    for path in {str(work), str(work.resolve()), str(work.parent)}:
        assert path not in text, path
    assert "/tmp/" not in text and "/root/" not in text and "/usr/" not in text and "file:///" not in text


def test_links_are_relative_and_no_path_of_the_grading_machine_is_on_the_page(tmp_path):
    work = WorkFolder(tmp_path / "work")
    rows = _semester_class(work.root)
    for row in rows:
        if row.student in ("ana", "ben", "gus"):
            page = work.feedback(row.student, row.lesson)
            page.parent.mkdir(parents=True, exist_ok=True)
            page.write_text("<html>feedback</html>", encoding="utf-8")
            row.feedback = page if row.student == "ana" else None  # ben and gus: found in the work folder
    grades = work.grades_csv
    grades.write_text("student\n", encoding="utf-8")
    path = classpage.write(rows, classpage.folder(work), course=COURSE_LIKE, csv=grades, ranges=RANGES, machine=MACHINE, now=NOW)
    text = path.read_text(encoding="utf-8")
    links = _links(text)
    assert "../feedback/ana/01_first/01_first.html" in links and "../feedback/gus/01_first/01_first.html" in links
    assert "../grades.csv" in links
    assert len([link for link in links if "/feedback/" in link]) == 4, "ana (two lessons), ben, gus: where a page exists"
    for link in links:
        assert not link.startswith(("/", "file:")) and (path.parent / link).resolve().is_file(), link
    _no_machine_path(text, work.root)
    assert "WORK/submitted/dan/01_first/01_first.ipynb" in text, "a path in the work folder: shortened to WORK/..."
    assert "\u2026/bwrap-helper" in text, "any other: its last name (a path in the home folder: ~/...)"


def test_an_anonymous_page_names_no_student_and_keeps_its_pseudonyms(tmp_path):
    work = WorkFolder(tmp_path / "work")
    rows = _semester_class(work.root)
    page = work.feedback("ana", "01_first")
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text("<html>feedback</html>", encoding="utf-8")
    next(r for r in rows if r.student == "ana").feedback = page
    target = classpage.folder(work, anonymous=True)
    first = classpage.write(rows, target, course=COURSE_LIKE, work=work, csv=work.grades_csv, anonymous=True,
                            ranges=RANGES, machine=MACHINE, now=NOW).read_text(encoding="utf-8")
    key = (work.root / "class" / ".pseudonym-key").read_text(encoding="utf-8")
    second = classpage.write(rows, target, course=COURSE_LIKE, work=work, anonymous=True, ranges=RANGES, machine=MACHINE,
                             now=NOW).read_text(encoding="utf-8")
    assert first == second and (work.root / "class" / ".pseudonym-key").read_text(encoding="utf-8") == key, "stable"
    assert oct(os.stat(work.root / "class" / ".pseudonym-key").st_mode & 0o777) == "0o600"
    names = classpage.pseudonyms({r.student for r in rows}, bytes.fromhex(key.strip()))
    assert all(re.fullmatch(r"student-[0-9a-f]{6}", name) for name in names.values())
    assert len(set(names.values())) == len(names) == 10
    for name in names.values():
        assert name in first
    for student in {r.student for r in rows}:
        assert not re.search(rf"(?<![\w-]){re.escape(html.escape(student))}(?![\w-])", first), student
    assert "mallory" not in first
    assert "feedback/" not in first and "grades.csv" not in first and 'href="../' not in first, "no link to a student's file"
    _no_machine_path(first, work.root)
    elsewhere = classpage.pseudonyms({"ana"}, bytes.fromhex("00" * 32))
    assert elsewhere["ana"] != names["ana"], "another work folder's key: other pseudonyms"
    with pytest.raises(ValueError, match="work folder"):
        classpage.write(rows, tmp_path / "anywhere", anonymous=True, machine=MACHINE, now=NOW)


def test_colliding_pseudonyms_grow_until_they_differ():
    ids = [f"s{i}" for i in range(300)]
    names = classpage.pseudonyms(ids, b"k" * 32, width=2)  # 300 ids in 256 two-digit names: many collide
    assert len(set(names.values())) == 300
    assert {len(name) - len("student-") for name in names.values()} >= {2, 4}, "only the colliding ones grow"
    assert names == classpage.pseudonyms(reversed(ids), b"k" * 32, width=2), "whatever the order"
    assert classpage.pseudonyms(ids[:1], b"k" * 32)["s0"] == classpage.pseudonyms(ids, b"k" * 32)["s0"][:len("student-") + 6]


def _browser(*args: str, profile) -> subprocess.CompletedProcess:
    command = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)


@pytest.mark.skipif(BROWSER is None, reason="no chromium, chromium-browser or google-chrome on PATH (.ci/run installs "
                                            "Debian's chromium)")
def test_a_real_browser_renders_the_page(page, tmp_path):
    import matplotlib.image
    import numpy as np

    path, _ = page
    dom = _browser("--dump-dom", path.as_uri(), profile=tmp_path / "profile-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count("<table") >= 10 and dom.stdout.count("<img") == 5, dom.stdout[:2000]
    assert "<script" not in dom.stdout and html.escape(SCRIPT) in dom.stdout
    shot = tmp_path / "out.png"
    done = _browser(f"--screenshot={shot}", "--window-size=1200,3200", "--hide-scrollbars", path.as_uri(),
                    profile=tmp_path / "profile-shot")
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    pixels = matplotlib.image.imread(shot)[..., :3]
    assert pixels.shape[:2] == (3200, 1200)
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50, "the screenshot is blank"
    # the figures, drawn with matplotlib, show: pixels of the gradebook's histogram bars and of the pass-rate bars (the
    # page's CSS uses neither colour)
    bars = [tuple(int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
            for colour in (classpage.HISTOGRAM_COLOUR, classpage.PASSED_COLOUR, classpage.MIXED_COLOUR)]
    for colour in bars:
        near = np.abs(pixels - np.array(colour)).max(axis=-1) < 0.02
        assert near.sum() > 200, f"no bar of {colour}: the browser did not show the figures"


@pytest.mark.pipeline
def test_grade_writes_the_class_page_and_page_draws_it_again(tiny, tmp_path, capsys):
    import tiny_course
    from pipeline import write_submission

    from tfperf_lab.grading import roster

    folder = tmp_path / "submissions"
    lesson = tiny.lesson(tiny_course.LESSON_ID)
    write_submission(folder, "ana", lesson, lesson.source_notebook())
    write_submission(folder, "ben", lesson, tiny_course.with_code(tiny, tiny_course.LOOPING))
    (tmp_path / "roster.csv").write_text("student,name\nana,Ana A\nben,Ben B\ncara,Cara C\n", encoding="utf-8")
    work = WorkFolder(tmp_path / "work")
    results = batch.grade(tiny, folder, work=work, progress=False, roster=roster.read(tmp_path / "roster.csv"))
    assert {r.student for r in results} == {"ana", "ben", "cara"}
    page = work.root / "class" / "index.html"
    assert page.exists()
    text = page.read_text(encoding="utf-8")
    assert "ana" in text and "ben" in text and tiny_course.SPEED_CHECK in text
    assert list((work.root / "class").glob("*.png")), "its figures beside it"
    gradebook = _section(text, "gradebook")
    assert ">not submitted<" in _row(gradebook, "cara") and "cara" not in _section(text, "not-graded")
    links = [link for link in _links(text) if "/feedback/" in link]
    assert sorted(links) == [f"../feedback/{s}/{lesson.id}/{lesson.id}.html" for s in ("ana", "ben")], links
    for link in _links(text):
        assert (page.parent / link).resolve().is_file(), link
    _no_machine_path(text, work.root)

    # drawn again from the store, grading nothing (the course's own roster: none here), then anonymous, twice
    before = {path.name: path.stat().st_mtime_ns for path in work.root.glob("state/*/*.json")}
    assert cli.main(["--course", str(tiny.root), "page", str(work.root)]) == 0
    again = page.read_text(encoding="utf-8")
    assert _row(_section(again, "gradebook"), "ana") == _row(gradebook, "ana") and "../grades.csv" in _links(again)
    machine = _section(text, "machine")
    mark = "gradings at once"  # and below: the machine the grading recorded (.grading.json), not this one now
    assert mark in machine and _section(again, "machine").split(mark)[1] == machine.split(mark)[1]
    assert {path.name: path.stat().st_mtime_ns for path in work.root.glob("state/*/*.json")} == before, "nothing graded"
    anonymous = []
    for _ in range(2):
        assert cli.main(["--course", str(tiny.root), "page", str(work.root), "--anonymous"]) == 0
        anonymous.append((work.root / "class-anonymous" / "index.html").read_text(encoding="utf-8"))
    assert "class-anonymous" in capsys.readouterr().out
    assert anonymous[0] == anonymous[1] and len(set(re.findall(r"student-[0-9a-f]{6}", anonymous[0]))) == 2, "stable"
    for student in ("ana", "ben"):
        assert not re.search(rf"\b{student}\b", anonymous[0]), student
    assert "feedback/" not in anonymous[0] and "grades.csv" not in anonymous[0]
    _no_machine_path(anonymous[0], work.root)
    out = tmp_path / "lecture"
    assert cli.main(["--course", str(tiny.root), "page", str(work.root), "--anonymous", "--out", str(out)]) == 0
    assert (out / "index.html").read_text(encoding="utf-8") == anonymous[0], "the same pseudonyms wherever it is drawn"
    assert cli.main(["--course", str(tiny.root), "page", str(tmp_path / "nothing")]) == 2


def _headings(text: str) -> list[str]:
    return re.findall(r'<h2 id="([a-z-]+)">', text)


def test_the_committed_example_is_a_page_of_the_test_runs_class_as_the_code_writes_it_today(tmp_path):
    """docs/example-class/ is the class page `tfperf-lab grade` wrote for the test run's class (every lesson, the honest
    and reaching corpora, the unoptimized answers): the sections the code writes today, every lesson, every figure
    it links. Made again by copying ``<the class's work folder>/class/`` after a full test run (docs/instructor-guide.md)."""
    from pipeline import COURSE

    example = COURSE.docs / "example-class"
    text = (example / "index.html").read_text(encoding="utf-8")
    today = classpage.write(_class(), tmp_path / "page", ranges=RANGES, machine=MACHINE, now=NOW).read_text(encoding="utf-8")
    assert _headings(text) == _headings(today) and _headings(today)
    assert all(lesson.id in text for lesson in COURSE.lessons)
    linked = re.findall(r'src="([^"]+\.png)"', text)
    assert linked and all((example / name).is_file() for name in linked), linked
    assert "honest-" in text and "reach-" in text  # the corpora's rows are in it
