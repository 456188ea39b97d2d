"""`tfperf-lab collect` (tfperf_lab/grading/intake.py): a platform's bulk download becomes
``submissions/<student>/<lesson>.ipynb`` with its time in the intake's record, and every file it could not place is named.

Each download is built here as the platform shapes it: Canvas's "Download Submissions" zip, Gradescope's "Export
Submissions" folder and zip, nbgrader's exchange inbound folder.
"""

import datetime
import json
import os
import pathlib
import struct
import zipfile

import pytest

from tfperf_lab import cli
from tfperf_lab.course import Course
from tfperf_lab.grading import batch, intake, roster, untrusted

ROOT = pathlib.Path(__file__).resolve().parents[2]
COURSE = Course.find(ROOT)
L01, L02, L03 = (COURSE.lesson(number).id for number in ("01", "02", "03"))
RECORD = "the intake's record"


def notebook(marker: str) -> bytes:
    return json.dumps({"cells": [{"cell_type": "markdown", "metadata": {}, "source": marker}], "metadata": {},
                       "nbformat": 4, "nbformat_minor": 5}).encode()


def local(*when) -> str:
    """A zip's DOS time, read as this machine's local time (what Canvas's zip gives)."""
    return datetime.datetime(*when).astimezone().isoformat(timespec="seconds")


def recorded(into: pathlib.Path, student: str, lesson: str) -> tuple[str, str]:
    return intake.submission_time(into / student / f"{lesson}.ipynb", into / student)


def snapshot(path: pathlib.Path) -> dict:
    """Every file under ``path`` (or the file itself): its bytes and modification time."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in files}


# --- Canvas -------------------------------------------------------------------------------------------------------


def canvas_roster(tmp_path: pathlib.Path) -> pathlib.Path:
    """Canvas's gradebook export (Grades > Export) as it comes: a points row, then the students."""
    path = tmp_path / "canvas-gradebook.csv"
    path.write_text("Student,ID,SIS User ID,SIS Login ID,Section,01_callable_handles (4401)\n"
                    "    Points Possible,,,,,10\n"
                    "\"Lima, Ana\",9001,S1,ana,Sec 1,\n"
                    "\"Ode, Ben\",9002,S2,ben,Sec 1,\n"
                    "\"Park, Cy\",9003,S3,cy,Sec 1,\n", encoding="utf-8")
    return path


def write_zip(path: pathlib.Path, entries: list[tuple[str, bytes, tuple]]) -> pathlib.Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data, when in entries:
            archive.writestr(zipfile.ZipInfo(name, date_time=when), data)
    return path


def canvas_zip(tmp_path: pathlib.Path) -> pathlib.Path:
    """Three students; Ana submitted twice (Canvas's "-1" on the later file, whose own name has underscores); one user
    id no roster knows; one PDF."""
    return write_zip(tmp_path / "submissions.zip", [
        (f"limaana_9001_5001_{L01}.ipynb", notebook("ana first"), (2027, 2, 8, 10, 0, 0)),
        (f"limaana_9001_5002_{L01}-1.ipynb", notebook("ana second"), (2027, 2, 8, 21, 30, 0)),
        ("odeben_LATE_9002_5003_Lesson 01 my work.ipynb", notebook("ben"), (2027, 2, 10, 9, 15, 0)),
        ("parkcy_9003_5004_callable_handles.ipynb", notebook("cy"), (2027, 2, 7, 18, 0, 0)),
        (f"strangerx_9999_5005_{L01}.ipynb", notebook("stranger"), (2027, 2, 8, 11, 0, 0)),
        ("odeben_9002_5006_notes.pdf", b"%PDF-1.4", (2027, 2, 8, 12, 0, 0)),
    ])


def test_a_canvas_zip_places_each_students_latest_notebook_with_the_zips_time(tmp_path):
    source = canvas_zip(tmp_path)
    before = snapshot(source)
    into = tmp_path / "submissions"
    done = intake.collect(COURSE, source, into, roster=roster.read(canvas_roster(tmp_path)))

    placed = {str(target.relative_to(into)) for _, target, _ in done.placed}
    assert placed == {f"ana/{L01}.ipynb", f"ben/{L01}.ipynb", f"cy/{L01}.ipynb"}
    assert (into / "ana" / f"{L01}.ipynb").read_bytes() == notebook("ana second")
    assert (into / "ben" / f"{L01}.ipynb").read_bytes() == notebook("ben")
    assert recorded(into, "ana", L01) == (local(2027, 2, 8, 21, 30, 0), RECORD)
    assert recorded(into, "ben", L01) == (local(2027, 2, 10, 9, 15, 0), RECORD)
    assert recorded(into, "cy", L01) == (local(2027, 2, 7, 18, 0, 0), RECORD)
    said = "\n".join(done.lines())
    assert "the zip's time" in said
    assert f"older: limaana_9001_5001_{L01}.ipynb" in said and f"kept limaana_9001_5002_{L01}-1.ipynb" in said
    unplaced = dict(done.unplaced)
    assert set(unplaced) == {f"strangerx_9999_5005_{L01}.ipynb", "odeben_9002_5006_notes.pdf"}
    assert "no roster match for Canvas user id 9999" in unplaced[f"strangerx_9999_5005_{L01}.ipynb"]
    assert "not a notebook" in unplaced["odeben_9002_5006_notes.pdf"]
    assert f"NOT PLACED: strangerx_9999_5005_{L01}.ipynb: no roster match" in said
    assert snapshot(source) == before  # the download is only read
    assert [(student, path.name) for student, path in batch.find_submissions(into)] == [
        ("ana", f"{L01}.ipynb"), ("ben", f"{L01}.ipynb"), ("cy", f"{L01}.ipynb")]  # what grading reads


def test_a_mapping_places_a_user_id_the_roster_lacks_and_without_a_roster(tmp_path):
    source = canvas_zip(tmp_path)
    mapping = tmp_path / "mapping.csv"
    mapping.write_text("folder,student\n9999,dee\n", encoding="utf-8")
    done = intake.collect(COURSE, source, tmp_path / "with", roster=roster.read(canvas_roster(tmp_path), mapping))
    assert "gives '9999' as 'dee', who is not on the roster" in dict(done.unplaced)[f"strangerx_9999_5005_{L01}.ipynb"]
    alone = intake.collect(COURSE, source, tmp_path / "alone", roster=intake.load_roster(None, None, mapping))
    assert [str(t.relative_to(tmp_path / "alone")) for _, t, _ in alone.placed] == [f"dee/{L01}.ipynb"]


def test_lesson_names_the_file_carries_or_lesson_given(tmp_path):
    assert intake.lesson_from_name(COURSE, f"{L03}-2.ipynb") == (L03, None)
    assert intake.lesson_from_name(COURSE, "Lesson 03 (final).ipynb") == (L03, None)
    assert intake.lesson_from_name(COURSE, "tf_function.ipynb") == (L03, None)
    assert intake.lesson_from_name(COURSE, "homework.ipynb")[0] is None
    assert "more than one lesson" in intake.lesson_from_name(COURSE, "01 and 02.ipynb")[1]
    source = write_zip(tmp_path / "s.zip", [("limaana_9001_5001_homework.ipynb", notebook("a"), (2027, 2, 8, 10, 0, 0))])
    done = intake.collect(COURSE, source, tmp_path / "a", roster=roster.read(canvas_roster(tmp_path)))
    assert done.unplaced and "names no lesson" in done.unplaced[0][1] and not done.placed
    done = intake.collect(COURSE, source, tmp_path / "b", roster=roster.read(canvas_roster(tmp_path)), lesson=L02)
    assert (tmp_path / "b" / "ana" / f"{L02}.ipynb").is_file() and not done.unplaced


def test_a_traversal_named_or_linked_zip_entry_is_refused_and_nothing_lands_outside(tmp_path):
    source = write_zip(tmp_path / "evil.zip", [
        (f"limaana_9001_5001_{L01}.ipynb", notebook("ana"), (2027, 2, 8, 10, 0, 0)),
        (f"../../odeben_9002_5002_{L01}.ipynb", notebook("climb"), (2027, 2, 8, 10, 0, 0)),
        (f"/abs/parkcy_9003_5003_{L01}.ipynb", notebook("abs"), (2027, 2, 8, 10, 0, 0)),
    ])
    with zipfile.ZipFile(source, "a") as archive:
        link = zipfile.ZipInfo(f"parkcy_9003_5004_{L02}.ipynb", date_time=(2027, 2, 8, 10, 0, 0))
        link.external_attr = (0o120777 << 16)
        archive.writestr(link, "/etc/passwd")
    into = tmp_path / "out" / "submissions"
    done = intake.collect(COURSE, source, into, roster=roster.read(canvas_roster(tmp_path)))
    assert [str(t.relative_to(into)) for _, t, _ in done.placed] == [f"ana/{L01}.ipynb"]
    reasons = dict(done.unplaced)
    assert "outside the folder" in reasons[f"../../odeben_9002_5002_{L01}.ipynb"]
    assert "outside the folder" in reasons[f"/abs/parkcy_9003_5003_{L01}.ipynb"]
    assert "a link" in reasons[f"parkcy_9003_5004_{L02}.ipynb"]
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert written == sorted(["canvas-gradebook.csv", "evil.zip", f"out/submissions/ana/{L01}.ipynb",
                              "out/submissions/ana/.submitted.json"])


def test_a_notebook_over_the_size_limit_is_not_read_whole_and_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(untrusted, "MAX_NOTEBOOK_BYTES", 100)
    source = write_zip(tmp_path / "big.zip", [(f"limaana_9001_5001_{L01}.ipynb", notebook("x" * 500), (2027, 2, 8, 10, 0, 0))])
    done = intake.collect(COURSE, source, tmp_path / "s", roster=roster.read(canvas_roster(tmp_path)))
    assert not done.placed and "MiB a lesson notebook can need" in done.unplaced[0][1]


def test_the_zips_extended_timestamp_is_read_as_utc(tmp_path):
    moment = datetime.datetime(2027, 2, 8, 22, 59, 30, tzinfo=datetime.timezone.utc)
    info = zipfile.ZipInfo(f"limaana_9001_5001_{L01}.ipynb", date_time=(2000, 1, 1, 0, 0, 0))
    info.extra = struct.pack("<HHBl", 0x5455, 5, 1, int(moment.timestamp()))
    with zipfile.ZipFile(tmp_path / "s.zip", "w") as archive:
        archive.writestr(info, notebook("a"))
    intake.collect(COURSE, tmp_path / "s.zip", tmp_path / "s", roster=roster.read(canvas_roster(tmp_path)))
    when, _ = recorded(tmp_path / "s", "ana", L01)
    assert datetime.datetime.fromisoformat(when) == moment


def test_an_older_copy_never_replaces_a_newer_one_already_placed(tmp_path):
    into = tmp_path / "submissions"
    the_roster = roster.read(canvas_roster(tmp_path))
    newer = write_zip(tmp_path / "newer.zip", [(f"limaana_9001_5002_{L01}.ipynb", notebook("new"), (2027, 2, 9, 10, 0, 0))])
    older = write_zip(tmp_path / "older.zip", [(f"limaana_9001_5001_{L01}.ipynb", notebook("old"), (2027, 2, 8, 10, 0, 0))])
    intake.collect(COURSE, newer, into, roster=the_roster)
    done = intake.collect(COURSE, older, into, roster=the_roster)
    assert (into / "ana" / f"{L01}.ipynb").read_bytes() == notebook("new")
    assert not done.placed and not done.unplaced
    assert "kept" in done.older[0] and "already there" in done.older[0]
    again = intake.collect(COURSE, newer, into, roster=the_roster)  # the same download again: nothing changes
    assert "unchanged" in again.lines()[0]
    later = write_zip(tmp_path / "later.zip", [(f"limaana_9001_5003_{L01}.ipynb", notebook("later"), (2027, 2, 10, 10, 0, 0))])
    done = intake.collect(COURSE, later, into, roster=the_roster)
    assert (into / "ana" / f"{L01}.ipynb").read_bytes() == notebook("later") and "replaced" in done.lines()[0]
    assert recorded(into, "ana", L01) == (local(2027, 2, 10, 10, 0, 0), RECORD)


def test_an_unzipped_canvas_folder_places_at_the_files_time_and_refuses_links(tmp_path):
    folder = tmp_path / "unzipped"
    folder.mkdir()
    (folder / f"limaana_9001_5001_{L01}.ipynb").write_bytes(notebook("ana"))
    os.utime(folder / f"limaana_9001_5001_{L01}.ipynb", (1_800_000_000, 1_800_000_000))
    (folder / f"odeben_9002_5002_{L01}.ipynb").symlink_to(folder / f"limaana_9001_5001_{L01}.ipynb")
    into = tmp_path / "submissions"
    done = intake.collect(COURSE, folder, into, roster=roster.read(canvas_roster(tmp_path)))
    assert [str(t.relative_to(into)) for _, t, _ in done.placed] == [f"ana/{L01}.ipynb"]
    assert "the file's time" in done.lines()[0]
    assert datetime.datetime.fromisoformat(recorded(into, "ana", L01)[0]).timestamp() == 1_800_000_000
    assert done.unplaced == [(f"odeben_9002_5002_{L01}.ipynb", "refused: a link")]


# --- Gradescope -----------------------------------------------------------------------------------------------------

METADATA = """\
submission_7001:
  :submitters:
  - :name: Ana Lima
    :sid: 'S1'
    :email: ana@uni.edu
  :created_at: 2027-02-08 10:22:33.123456000 +01:00
  :score: !ruby/object:BigDecimal 18:0.1e2
  :history:
  - :id: 6999
    :created_at: 2027-02-01 09:00:00.000000000 +01:00
    :score: 1.0
submission_7002:
  :submitters:
  - :name: Ben Ode
    :sid: 'S2'
    :email: ben@uni.edu
  - :name: Cy Park
    :sid: 'S3'
    :email: CY@uni.edu
  :created_at: 2027-02-09 23:59:59.000000000 -08:00
  :score: 7.0
submission_7003:
  :submitters:
  - :name: Dee Unknown
    :sid: 'S9'
    :email: dee@elsewhere.edu
  :created_at: 2027-02-08 08:00:00.000000000 +01:00
"""


def course_roster(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "roster.csv"
    path.write_text("student,name,email,sis_id,section\nana,Ana Lima,ana@uni.edu,S1,1\nben,Ben Ode,ben@uni.edu,S2,1\n"
                    "cy,Cy Park,cy@uni.edu,S3,1\n", encoding="utf-8")
    return path


def gradescope_folder(tmp_path: pathlib.Path) -> pathlib.Path:
    export = tmp_path / "assignment_42_export"
    for folder, name, marker in [("submission_7001", f"{L02}.ipynb", "ana"), ("submission_7002", "lesson02.ipynb", "group"),
                                 ("submission_7003", f"{L02}.ipynb", "dee")]:
        (export / folder).mkdir(parents=True)
        (export / folder / name).write_bytes(notebook(marker))
    (export / "submission_7001" / "scratch.py").write_text("x = 1\n", encoding="utf-8")
    (export / "submission_metadata.yml").write_text(METADATA, encoding="utf-8")
    return export


def test_a_gradescope_export_places_every_submitter_by_email_or_sid_at_created_at(tmp_path):
    source = gradescope_folder(tmp_path)
    before = snapshot(source)
    into = tmp_path / "submissions"
    done = intake.collect(COURSE, source, into, roster=roster.read(course_roster(tmp_path)))
    assert sorted(str(t.relative_to(into)) for _, t, _ in done.placed) == [f"ana/{L02}.ipynb", f"ben/{L02}.ipynb", f"cy/{L02}.ipynb"]
    assert (into / "cy" / f"{L02}.ipynb").read_bytes() == notebook("group")  # a group's file goes to every member
    assert recorded(into, "ana", L02) == ("2027-02-08T10:22:33+01:00", RECORD)
    assert recorded(into, "ben", L02) == ("2027-02-09T23:59:59-08:00", RECORD)
    assert "Gradescope's created_at" in "\n".join(done.lines())
    reasons = dict(done.unplaced)
    assert set(reasons) == {"submission_7001/scratch.py", "submission_7003/" + f"{L02}.ipynb"}
    assert "not a notebook" in reasons["submission_7001/scratch.py"]
    assert "no roster match for Dee Unknown" in reasons[f"submission_7003/{L02}.ipynb"]
    assert snapshot(source) == before


def test_a_gradescope_zip_with_its_top_folder_reads_the_same(tmp_path):
    folder = gradescope_folder(tmp_path)
    with zipfile.ZipFile(tmp_path / "export.zip", "w") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, str(path.relative_to(tmp_path)))
    assert intake.detect(tmp_path / "export.zip") == "gradescope"
    done = intake.collect(COURSE, tmp_path / "export.zip", tmp_path / "submissions", roster=roster.read(course_roster(tmp_path)))
    assert len(done.placed) == 3 and len(done.unplaced) == 2
    assert recorded(tmp_path / "submissions", "ana", L02) == ("2027-02-08T10:22:33+01:00", RECORD)


def test_the_tolerant_metadata_reader_agrees_with_pyyaml():
    pytest.importorskip("yaml")
    with_yaml = intake.parse_gradescope_metadata(METADATA)
    by_hand = intake._tolerant_metadata(METADATA)
    assert set(with_yaml) == set(by_hand) == {"submission_7001", "submission_7002", "submission_7003"}
    for key in with_yaml:
        assert intake._gradescope_time(with_yaml[key][":created_at"]) == intake._gradescope_time(by_hand[key][":created_at"])
        assert [{k: str(v) for k, v in s.items()} for s in with_yaml[key][":submitters"]] == by_hand[key][":submitters"]


def test_without_pyyaml_the_export_reads_the_same(tmp_path, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "yaml", None)  # import yaml now raises ImportError
    done = intake.collect(COURSE, gradescope_folder(tmp_path), tmp_path / "submissions", roster=roster.read(course_roster(tmp_path)))
    assert len(done.placed) == 3 and recorded(tmp_path / "submissions", "ben", L02) == ("2027-02-09T23:59:59-08:00", RECORD)


# --- nbgrader's exchange ----------------------------------------------------------------------------------------------


def submit(inbound: pathlib.Path, student: str, lesson: str, stamp: str, marker: str, random: str = "r4nd") -> pathlib.Path:
    folder = inbound / f"{student}+{lesson}+{stamp}+{random}"
    folder.mkdir(parents=True)
    (folder / f"{lesson}.ipynb").write_bytes(notebook(marker))
    (folder / "timestamp.txt").write_text(stamp, encoding="utf-8")
    return folder


def test_the_exchange_inbound_keeps_each_students_latest_submission_at_its_timestamp(tmp_path):
    exchange = tmp_path / "exchange"
    inbound = exchange / COURSE.id / "inbound"
    submit(inbound, "ana", L01, "2027-02-08 10:00:00.000000 UTC", "ana first", "aaa")
    submit(inbound, "ana", L01, "2027-02-08 20:00:00.000000 UTC", "ana second", "bbb")
    bob = submit(inbound, "ben", L03, "2027-02-09 09:00:00.500000 UTC", "ben")
    (bob / "notes.txt").write_text("mine", encoding="utf-8")
    (bob / f"{L03}.ipynb.link").symlink_to(bob / f"{L03}.ipynb")
    before = snapshot(exchange)
    into = tmp_path / "submissions"
    assert intake.detect(exchange, COURSE.id) == "exchange"
    done = intake.collect(COURSE, exchange, into)
    assert (into / "ana" / f"{L01}.ipynb").read_bytes() == notebook("ana second")
    assert recorded(into, "ana", L01) == ("2027-02-08T20:00:00+00:00", RECORD)
    assert recorded(into, "ben", L03) == ("2027-02-09T09:00:00+00:00", RECORD)
    said = "\n".join(done.lines())
    assert f"older: ana+{L01}+2027-02-08 10:00:00.000000 UTC+aaa" in said
    assert f"kept ana+{L01}+2027-02-08 20:00:00.000000 UTC+bbb" in said
    assert "nbgrader's timestamp" in said
    reasons = dict(done.unplaced)
    assert set(reasons) == {f"{bob.name}/notes.txt", f"{bob.name}/{L03}.ipynb.link"}
    assert "a link" in reasons[f"{bob.name}/{L03}.ipynb.link"]
    assert snapshot(exchange) == before
    only = intake.collect(COURSE, inbound, tmp_path / "only", lesson=L01)  # the inbound folder itself, one lesson
    assert [str(t.relative_to(tmp_path / "only")) for _, t, _ in only.placed] == [f"ana/{L01}.ipynb"] and not only.unplaced


def test_an_unknown_source_and_an_overlap_are_refused(tmp_path):
    (tmp_path / "stuff").mkdir()
    (tmp_path / "stuff" / "a.txt").write_text("a", encoding="utf-8")
    with pytest.raises(intake.IntakeError, match="none of"):
        intake.collect(COURSE, tmp_path / "stuff", tmp_path / "submissions")
    with pytest.raises(intake.IntakeError, match="no such file"):
        intake.collect(COURSE, tmp_path / "missing.zip", tmp_path / "submissions")
    submit(tmp_path / "ex" / "inbound", "ana", L01, "2027-02-08 10:00:00.000000 UTC", "a")
    with pytest.raises(intake.IntakeError, match="overlap"):
        intake.collect(COURSE, tmp_path / "ex", tmp_path / "ex" / "submissions")


# --- the command line ---------------------------------------------------------------------------------------------------


def test_tfperf_lab_collect_prints_each_file_and_exits_1_when_one_was_not_placed(tmp_path, capsys):
    into = tmp_path / "submissions"
    code = cli.main(["--course", str(ROOT), "collect", str(canvas_zip(tmp_path)), "--into", str(into),
                     "--roster", str(canvas_roster(tmp_path))])
    printed = capsys.readouterr().out
    assert code == 1
    assert printed.count("placed ") >= 3 and f"ana/{L01}.ipynb" in printed
    assert f"NOT PLACED: strangerx_9999_5005_{L01}.ipynb" in printed and "NOT PLACED: odeben_9002_5006_notes.pdf" in printed
    assert recorded(into, "ben", L01)[1] == RECORD

    clean = write_zip(tmp_path / "clean.zip", [(f"limaana_9001_5009_whatever.ipynb", notebook("a"), (2027, 3, 1, 9, 0, 0))])
    code = cli.main(["--course", str(ROOT), "collect", str(clean), "--into", str(tmp_path / "s2"),
                     "--roster", str(canvas_roster(tmp_path)), "--lesson", "02"])
    assert code == 0, capsys.readouterr()
    assert (tmp_path / "s2" / "ana" / f"{L02}.ipynb").is_file()
    code = cli.main(["--course", str(ROOT), "collect", str(tmp_path / "nothing.zip"), "--into", str(tmp_path / "s3")])
    assert code == 2 and "no such file" in capsys.readouterr().err


def test_submissions_are_ignored_by_git():
    assert "/submissions/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
