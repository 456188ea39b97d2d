"""docs/instructor-guide.md's "A semester, in order", followed literally on a course of one tiny lesson (issue 50).

The test writes the section's roster and semester files as shown, builds a Canvas "Download Submissions" zip of the
class the section describes (a reference, a blank, a wrong answer, a file that is not a notebook, an endless loop in
the last cell, a reach on the review list, a late hand-in, one late within an extension; ivy hands in nothing), then
runs every ``tfperf-lab`` line of the section in order, from the course folder, and checks what each step wrote: every
roster student has a row in the CSV, on the class page and in each export; every handed-in file has a feedback page; the
endless loop keeps the points earned before it; the penalty, the extension and the review decision hold; the rows a
fixed test made stale are graded again. The guide's lesson (01_callable_handles) is the tiny lesson here (00_tiny), and
the notebook limit is 30 s instead of the tiny lesson's 120 s floor, so the endless loop costs less of CI's time.
"""

from __future__ import annotations

import contextlib
import csv
import datetime
import io
import json
import pathlib
import re
import shlex
import shutil
import zipfile

import pytest

from tfperf_lab import cli
from tfperf_lab.course import WorkFolder, config, notebook
from tfperf_lab.isolation import backends
import tiny_course

pytestmark = [pytest.mark.pipeline, pytest.mark.skipif(backends.Bubblewrap().problem() is not None,
                                                       reason=f"no bubblewrap here: {backends.Bubblewrap().problem()}")]
ROOT = pathlib.Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "instructor-guide.md"
LESSON = tiny_course.LESSON_ID
ROSTER = ["ana", "ben", "cal", "dan", "eve", "fay", "gus", "hal", "ivy"]
DUE = datetime.datetime(2027, 2, 8, 23, 59)


def _section() -> str:
    text = GUIDE.read_text(encoding="utf-8")
    return text[text.index("## A semester, in order"):text.index("## Each step in detail")]


def _ours(text: str) -> str:
    """The guide's lesson as the tiny course's."""
    return text.replace("01_callable_handles", LESSON).replace("release 01", "release 00").replace("--lesson 01", "--lesson 00")


def _blocks(kind: str) -> list[str]:
    return [_ours(block) for block in re.findall(rf"```{kind}\n(.*?)```", _section(), flags=re.S)]


def _class(lesson) -> dict[str, tuple[bytes, datetime.datetime]]:
    """student -> (the file handed in, when)."""
    reference = lesson.source_notebook()
    looping = lesson.source_notebook()
    looping["cells"].append({"cell_type": "code", "id": "my-last-experiment", "metadata": {}, "execution_count": None,
                             "outputs": [], "source": "while True:  # an endless loop in the last cell\n    pass\n"})
    wrong = tiny_course.append_to_answer(lesson.source_notebook(), "def fast_scale(values):\n    return 3.0 * np.asarray(values)\n")
    reach = tiny_course.append_to_answer(lesson.source_notebook(), "import ctypes  # a reach the review lists")
    on_time, late = DUE - datetime.timedelta(hours=3), DUE + datetime.timedelta(days=1, hours=12)
    dump = lambda nb: json.dumps(nb).encode()  # noqa: E731
    return {"ana": (dump(reference), on_time), "ben": (dump(lesson.release_notebook()), on_time), "cal": (dump(wrong), on_time),
            "dan": (b'{"cells": [{"cell_type": "code", "source": "x = 1"', on_time), "eve": (dump(looping), on_time),
            "fay": (dump(reach), on_time), "gus": (dump(reference), late), "hal": (dump(reference), late)}


def _canvas_zip(path: pathlib.Path, handed: dict[str, tuple[bytes, datetime.datetime]], roster_csv: str) -> None:
    """Canvas's Download Submissions zip: <lastfirst>[_LATE]_<user id>_<submission id>_<file name>."""
    users = {row["SIS Login ID"]: row for row in csv.DictReader(io.StringIO(roster_csv)) if row.get("SIS Login ID")}
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for number, (student, (data, when)) in enumerate(sorted(handed.items()), start=1):
            row = users[student]
            last, first = [part.strip().lower() for part in row["Student"].split(",")]
            late = "_LATE" if when > DUE else ""
            info = zipfile.ZipInfo(f"{last}{first}{late}_{row['ID']}_{5000 + number}_{LESSON}.ipynb", date_time=when.timetuple()[:6])
            archive.writestr(info, data)


def _run(line: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = cli.main(shlex.split(line)[1:])
    return code, out.getvalue()


def _rows(work: pathlib.Path) -> dict[str, dict]:
    with (work / "grades.csv").open(encoding="utf-8") as handle:
        return {row["student"]: row for row in csv.DictReader(handle) if row["lesson"] == LESSON}


def test_the_guides_semester_runs_as_written(tmp_path, monkeypatch):
    course = tiny_course.build(tmp_path / "course", released=True)
    for name in ("pyproject.toml", "README.md"):  # an instructor's clone: release reads them, the autograder zip ships them
        shutil.copy(ROOT / name, course.root / name)
    for package in ("tfperf", "tfperf_lab"):
        shutil.copytree(ROOT / package, course.root / package, ignore=shutil.ignore_patterns("__pycache__"))
    roster_csv, = _blocks("csv")
    semester_toml, = _blocks("toml")
    (course.autograder / "roster.csv").write_text(roster_csv, encoding="utf-8")
    (course.autograder / "semester.toml").write_text(semester_toml, encoding="utf-8")
    lines = [line.strip() for block in _blocks("bash") for line in block.splitlines() if line.strip().startswith("tfperf-lab ")]
    assert len(lines) >= 12, lines
    monkeypatch.chdir(course.root)
    monkeypatch.setattr(config.GradingConfig, "notebook_limit", lambda self, minutes=None: 30.0)
    handed = _class(course.lesson(LESSON))
    _canvas_zip(course.root / "downloads" / "submissions.zip", handed, roster_csv)
    work = course.root / ".work"
    grades_seen = 0
    for line in lines:
        if "release" in line and grades_seen == 1:  # step 7: the instructor fixes a hidden test before releasing
            _fix_hidden_test(course)
        code, printed = _run(line)
        step = line.split()[1]
        if step == "grade":
            grades_seen += 1
            assert code == 0, printed
            _check_graded(course, work, handed, printed, again=grades_seen > 1)
        elif step == "collect":
            assert code == 0, printed
            placed = sorted(p.parent.name for p in (course.root / "submissions").glob(f"*/{LESSON}.ipynb"))
            assert placed == sorted(handed), printed
        elif step == "review" and "--accept" in line:
            assert code == 0, printed
            assert float(_rows(work)["fay"]["score"]) == float(_rows(work)["fay"]["max_score"]), _rows(work)["fay"]
        elif step == "review":
            assert code == 0 and "fay" in printed and "ctypes" in printed, printed
        elif step == "page":
            assert code == 0, printed
            page = (work / "class-anonymous" / "index.html").read_text(encoding="utf-8")
            assert not any(re.search(rf"\b{name}\b", page) for name in ROSTER), "a name on the anonymous page"
        elif step == "export":
            assert code == 0, printed
            _check_export(work, line.split("--to ")[1].split()[0])
        elif step == "regrade":
            assert code == 0, printed
            assert (work / "appeals" / "gus" / LESSON / "appeal.md").exists()
        else:
            assert code == 0, f"{line}: {printed}"
    assert grades_seen == 2


def _fix_hidden_test(course) -> None:
    path = course.lesson(LESSON).source
    nb = notebook.read(path)
    cell = next(c for c in nb["cells"] if c.get("id") == tiny_course.CORRECT[0])
    cell["source"] = notebook.source(cell).replace("default_rng(3)", "default_rng(4)")
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")


def _check_graded(course, work: pathlib.Path, handed: dict, printed: str, *, again: bool) -> None:
    rows = _rows(work)
    assert sorted(rows) == ROSTER, sorted(rows)
    full = float(rows["ana"]["max_score"])
    assert float(rows["ana"]["score"]) == full, rows["ana"]
    assert rows["ivy"]["status"] == "not submitted" and float(rows["ivy"]["score"]) == 0 and float(rows["ivy"]["max_score"]) == full
    for student in ("ben", "cal"):  # the blank and the wrong answer: no correctness point, no speed point
        row = rows[student]
        assert float(row[f"{LESSON}:scale_matches"]) == 0 and float(row[f"{LESSON}:scale_is_faster"]) == 0, row
    assert "not valid notebook JSON" in rows["dan"]["status"], rows["dan"]
    assert float(rows["eve"]["score"]) == full, f"the endless loop took points earned before it: {rows['eve']}"
    assert float(rows["gus"]["late_penalty"]) == pytest.approx(0.2 * full) and float(rows["gus"]["score"]) == pytest.approx(0.8 * full)
    assert rows["hal"]["late_penalty"] == "" and float(rows["hal"]["score"]) == full, rows["hal"]
    if again:
        assert "graded again against the lesson's current tests" in printed and "eve/00_tiny" in printed, printed
        assert float(rows["fay"]["score"]) == full, f"the review decision did not survive the fixed test: {rows['fay']}"
    else:
        assert "review" in rows["fay"]["status"] or rows["fay"]["review"], rows["fay"]
    folder = WorkFolder(work)
    for student in handed:
        assert folder.feedback(student, LESSON).exists(), f"{student} has no feedback page"
    gus = folder.feedback("gus", LESSON).read_text(encoding="utf-8")
    assert "Handed in late" in gus and "2 day" in gus, "the late penalty is not on the student's page"
    eve = folder.feedback("eve", LESSON).read_text(encoding="utf-8")
    assert "keeps its points" in eve or "time limit" in eve, "eve's page does not say the loop was stopped"
    page = (work / "class" / "index.html").read_text(encoding="utf-8")
    assert all(name in page for name in ROSTER) and "not submitted" in page
    assert str(work) not in page and str(course.root) not in page


def _check_export(work: pathlib.Path, platform: str) -> None:
    out = work / "exports"
    if platform == "canvas":
        with (out / "canvas" / "grades.csv").open(encoding="utf-8") as handle:
            table = list(csv.DictReader(handle))
        students = {row["SIS Login ID"]: row for row in table if row.get("SIS Login ID")}
        assert sorted(students) == ROSTER, sorted(students)
        column = next(name for name in table[0] if name.startswith(LESSON))
        assert column == f"{LESSON} (4411)" and float(students["ivy"][column]) == 0, students["ivy"]
    elif platform in ("gradescope", "prairielearn"):
        found = sorted(p.parent.parent.name for p in (out / platform).glob(f"*/{LESSON}/results.json"))
        assert sorted(set(found) | {"ivy"}) == ROSTER or found == ROSTER, found
    else:
        zips = list((out / platform).glob("*.zip")) + list(out.glob("*.zip"))
        assert zips, f"no autograder zip in {out}"
        names = zipfile.ZipFile(zips[0]).namelist()
        assert "run_autograder" in names and "setup.sh" in names, names[:10]
