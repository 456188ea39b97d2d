"""The class page (`tfperf_lab.grading.classpage`): a class built in memory, its page read as text and opened in a real
headless browser (Chromium), and `batch.grade` writing it for a graded tiny class (tests/tiny_course.py)."""

from __future__ import annotations

import datetime
import html
import re
import shutil
import subprocess
import types

import pytest

from tfperf.report import Record
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
    order = [r.id for r in classpage.pass_rates(_class())["01_first"]]
    assert order == ["faster", "correct", "written"], "lowest first"


def test_speed_checks_take_the_verdicts_the_recorded_range_and_the_claim():
    checks = {(c.lesson, c.name): c for cells in classpage.speed_checks(_class(), RANGES).values() for c in cells}
    assert set(checks) == {("01_first", "fast_vs_slow"), ("02_second", "cached_vs_not")}, "only verdicts count"
    first = checks["01_first", "fast_vs_slow"]
    assert sorted(first.speedups) == [1.4, 5.2, 7.9] and sum(first.passed) == 2 and first.thresholds == {3.0}
    assert first.recorded["runs"] == 3 and first.claim == "about 5x"
    assert checks["02_second", "cached_vs_not"].recorded is None


def test_the_page_shows_every_section(page):
    path, text = page
    cells = _section(text, "cells")
    assert "67%" in cells and "33%" in cells and "<h3>01_first</h3>" in cells and "<h3>02_second</h3>" in cells
    order = [cells.index(f"<code>{cell}</code>") for cell in ("faster", "correct", "written")]
    assert order == sorted(order), "the failing cells first"
    speed = _section(text, "speed")
    assert "4x to 6x (3 runs)" in speed and "not recorded" in speed and "about 5x" in speed and "2 of 3" in speed
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
    assert len(re.findall(r"<img ", text)) == 4, "a bar chart and a strip plot per lesson"


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
    assert sorted(p.name for p in target.glob("*.png")) == ["cells-1.png", "speed-1.png"]
    assert "cleo" not in (target / "index.html").read_text(encoding="utf-8")


def test_an_empty_or_unrecorded_class_still_gets_a_page(tmp_path):
    refused = [SubmissionResult("zoe", "notes", error="not a notebook")]
    path = classpage.write(refused, tmp_path, ranges={}, machine={}, now=NOW)
    text = path.read_text(encoding="utf-8")
    assert "No submission was graded" in text and "not a notebook" in text and "<img" not in text


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
    assert dom.stdout.count("<table") >= 8 and dom.stdout.count("<img") == 4, dom.stdout[:2000]
    assert "<script" not in dom.stdout and html.escape(SCRIPT) in dom.stdout
    shot = tmp_path / "out.png"
    done = _browser(f"--screenshot={shot}", "--window-size=1200,2000", "--hide-scrollbars", path.as_uri(),
                    profile=tmp_path / "profile-shot")
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    pixels = matplotlib.image.imread(shot)[..., :3]
    assert pixels.shape[:2] == (2000, 1200)
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50, "the screenshot is blank"
    # the bar chart, drawn with matplotlib, shows: pixels of its bar colours (the page's CSS uses none of them)
    bars = [tuple(int(classpage.PASSED_COLOUR[i:i + 2], 16) / 255 for i in (1, 3, 5)),
            tuple(int(classpage.FAILED_COLOUR[i:i + 2], 16) / 255 for i in (1, 3, 5))]
    for colour in bars:
        near = np.abs(pixels - np.array(colour)).max(axis=-1) < 0.02
        assert near.sum() > 200, f"no bar of {colour}: the browser did not show the figures"


@pytest.mark.pipeline
def test_grade_writes_the_class_page(tiny, tmp_path):
    import tiny_course
    from pipeline import write_submission

    folder = tmp_path / "submissions"
    lesson = tiny.lesson(tiny_course.LESSON_ID)
    write_submission(folder, "ana", lesson, lesson.source_notebook())
    write_submission(folder, "ben", lesson, tiny_course.with_code(tiny, tiny_course.LOOPING))
    work = WorkFolder(tmp_path / "work")
    results = batch.grade(tiny, folder, work=work, with_feedback=False, progress=False)
    assert {r.student for r in results} == {"ana", "ben"}
    page = work.root / "class" / "index.html"
    assert page.exists()
    text = page.read_text(encoding="utf-8")
    assert "ana" in text and "ben" in text and tiny_course.SPEED_CHECK in text
    assert list((work.root / "class").glob("*.png")), "its figures beside it"




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
