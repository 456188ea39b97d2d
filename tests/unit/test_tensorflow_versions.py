"""Issue 51, item 7: the lessons' figures come from the course's own TensorFlow; a run kept on another one (Colab's or
Kaggle's) is read beside them, never quoted, and the README and docs/benchmarks.md say what ran where."""

import json
import shutil

from tfperf_lab.course import Course
from tfperf_lab.publish import ranges, readme
from pipeline import COURSE


def test_the_blocks_on_what_ran_where_are_generated_from_the_kept_runs():
    for name in ("versions", "hosted"):
        assert readme.current(COURSE, name) == readme.generate(COURSE, name), f"block {name!r} is stale: run `tfperf-lab ranges`"


def test_every_hosted_run_ran_every_lesson_clean_on_todays_code_or_the_readme_says_which_not():
    """The README's sentence is the promise: today it names each version's lessons that did not run clean or ran an
    earlier version; this holds the runs kept today to all ten, current."""
    runs = ranges.hosted(COURSE)
    assert runs, "no run kept on the TensorFlow Colab and Kaggle ship (docs/runs/hosted/)"
    for run in runs:
        not_current = [lesson for lesson, got in run["lessons"].items() if not (got["ran"] and got["current"])]
        assert not not_current, f"TensorFlow {run['environment']['tensorflow']}: {not_current} not run clean on today's code: run them again on TensorFlow " \
                                f"{run['environment']['tensorflow']}"
        assert ranges.minor(run["environment"]["tensorflow"]) != ranges.COURSE_TENSORFLOW


def _course_copy(tmp_path) -> Course:
    for name in ("solutions", "docs/runs", "autograder"):
        shutil.copytree(COURSE.root / name, tmp_path / name)
    shutil.copy(COURSE.root / "pyproject.toml", tmp_path / "pyproject.toml")
    return Course.find(tmp_path)


def _report(course: Course, tensorflow: str) -> dict:
    """A course report as `tfperf-lab run` writes it, from one kept run of the course's own."""
    kept = json.loads(ranges.in_order((course.root / "docs" / "runs" / "full").glob("*.json"))[-1].read_text(encoding="utf-8"))
    return {"date": "2099-01-01", "environment": {**kept["environment"], "tensorflow": tensorflow, "profile": "full"},
            "lessons": [{"id": lesson, "errors": [], "code": kept["code"][lesson], "seconds": kept["seconds"][lesson],
                         "records": [{"name": name, "speedup": item["speedup"], "ci": item["ci"]} for name, item in records.items()]}
                        for lesson, records in kept["lessons"].items()]}


def test_a_run_on_another_tensorflow_is_kept_apart_and_never_changes_a_quoted_figure(tmp_path):
    course = _course_copy(tmp_path)
    before = ranges.build(course)["profiles"]
    report = tmp_path / "course-report.json"
    report.write_text(json.dumps(_report(course, "2.99.1")), encoding="utf-8")
    kept = ranges.keep(course, report)
    assert kept.parent == course.root / "docs" / "runs" / "hosted" / "tf-2.99" / "full"
    assert ranges.build(course)["profiles"] == before
    assert [run["environment"]["tensorflow"] for run in ranges.hosted(course)][:1] == ["2.99.1"]
    # the same run on the course's TensorFlow goes where the lessons read it
    report.write_text(json.dumps(_report(course, f"{ranges.COURSE_TENSORFLOW}.0")), encoding="utf-8")
    assert ranges.keep(course, report).parent == course.root / "docs" / "runs" / "full"


def test_a_run_on_another_tensorflow_put_among_the_courses_runs_by_hand_is_not_read(tmp_path):
    course = _course_copy(tmp_path)
    before = ranges.build(course)["profiles"]
    stray = json.loads(sorted((course.root / "docs" / "runs" / "full").glob("*.json"))[-1].read_text(encoding="utf-8"))
    stray["environment"]["tensorflow"] = "2.99.1"
    for records in stray["lessons"].values():
        for item in records.values():
            item["speedup"] *= 100
    for number in range(5):
        (course.root / "docs" / "runs" / "full" / f"2099-01-01-{number}.json").write_text(json.dumps(stray), encoding="utf-8")
    assert ranges.build(course)["profiles"] == before


def test_the_hosted_block_places_each_speedup_against_the_range_of_one_run(tmp_path):
    course = _course_copy(tmp_path)
    report = _report(course, "2.99.1")
    first = report["lessons"][0]
    recorded = ranges.build(course)["profiles"]["full"][first["id"]][first["records"][0]["name"]]["one_run"]
    first["records"][0]["speedup"] = recorded[1] * 10
    (tmp_path / "course-report.json").write_text(json.dumps(report), encoding="utf-8")
    ranges.keep(course, tmp_path / "course-report.json")
    block = readme.hosted_block(course)
    row = next(line for line in block.splitlines() if line.startswith(f"| {first['id'][:2]} | {first['records'][0]['name']} |"))
    assert row.endswith("| above |"), row
    ran = f"{len(report['lessons'])} of {len(course.lessons)} lessons ran clean on today's code"
    assert "TensorFlow 2.99.1" in block and ran in block, block.splitlines()[0]


def test_a_kept_run_never_overwrites_an_earlier_one_and_the_tenth_sorts_after_the_ninth(tmp_path):
    course = _course_copy(tmp_path)
    folder = course.root / "docs" / "runs" / "full"
    template = _report(course, "")
    for path in folder.glob("*.json"):
        path.unlink()
    report = tmp_path / "course-report.json"
    for patch in [*range(11), None, 99]:  # eleven runs told apart by TensorFlow's patch number; None: one removed by hand
        if patch is None:
            (folder / "2099-01-01-3.json").unlink()  # the next run must not take the last one's name
            continue
        template["environment"]["tensorflow"] = f"{ranges.COURSE_TENSORFLOW}.{patch}"
        report.write_text(json.dumps(template), encoding="utf-8")
        kept = ranges.keep(course, report)
    assert kept.name == "2099-01-01-12.json"
    names = [path.name for path in ranges.in_order(folder.glob("*.json"))]
    assert names.index("2099-01-01-9.json") < names.index("2099-01-01-10.json") < names.index("2099-01-01-12.json")
    newest = json.loads(ranges.in_order(folder.glob("*.json"))[-1].read_text(encoding="utf-8"))
    assert newest["environment"]["tensorflow"].endswith(".99")
