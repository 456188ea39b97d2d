"""The checklists of docs/layout.md hold for the course as it is: every place "Adding a lesson" names exists for every
lesson, and the page names exactly the places this test checks (a new place is added to both, or the test fails).

Each item of the checklist starts with its place in backticks, ``<lesson>`` standing for a lesson's id (``04_tf_data``)
and ``<nn>`` for its number (``04``).
"""

import json
import re

import pytest

from tfperf_lab.course import variants
from tfperf_lab.publish import ranges, readme
from corpus_honest import HONEST
from pipeline import COURSE, ROOT

LESSONS = COURSE.lessons


def _section(title: str) -> str:
    text = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    assert f"## {title}\n" in text, f"docs/layout.md has no section '{title}'"
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def _places(title: str) -> list[str]:
    """The place each numbered item of the section starts with."""
    return re.findall(r"^\d+\. `([^`]+)`", _section(title), flags=re.M)


def _speed_cells(lesson) -> set[str]:
    return set(lesson.speed_checks())


def _lesson_checks(lesson) -> dict:
    nn, speed = lesson.id[:2], bool(lesson.speed_checks())
    runs = ranges.current_runs(COURSE)
    return {
        "solutions/<lesson>/<lesson>.ipynb": lesson.source.exists(),
        "lessons/<lesson>/<lesson>.ipynb": lesson.release.exists(),
        "tfperf_lab/course/variants.py": not speed or _speed_cells(lesson) <= {cell for v in variants.for_lesson(lesson.id) for cell in v.loses},
        "tests/grading/test_lesson<nn>.py": (ROOT / "tests" / "grading" / f"test_lesson{nn}.py").exists()
        and "def class_submissions" in (ROOT / "tests" / "grading" / f"test_lesson{nn}.py").read_text(encoding="utf-8"),
        "tests/corpus_honest.py": sum(answer.lesson == lesson.id for answer in HONEST) >= 2,
        "docs/runs/<profile>/": all(len(runs.get(profile, {}).get(lesson.id, [])) >= ranges.RUNS_NEEDED for profile in ("full", "reduced")),
        "tfperf/ranges.json": all(lesson.id in profile for profile in
                                  json.loads((ROOT / "tfperf" / "ranges.json").read_text(encoding="utf-8"))["profiles"].values()),
        "docs/flake/<lesson>.json": not speed or all((ROOT / "docs" / "flake" / f"{lesson.id}{suffix}.json").exists()
                                                     for suffix in ("", ".hog2", ".burst")),
        "README.md": f"[{lesson.id}](lessons/{lesson.id}/{lesson.id}.ipynb)" in readme.generate(COURSE, "lessons"),
    }


def test_adding_a_lesson_names_exactly_the_places_checked_here():
    assert sorted(_places("Adding a lesson")) == sorted(_lesson_checks(LESSONS[0]))


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.id)
def test_every_lesson_has_every_place_the_checklist_names(lesson):
    missing = [place for place, holds in _lesson_checks(lesson).items() if not holds]
    assert not missing, f"{lesson.id} lacks {missing}: see docs/layout.md, 'Adding a lesson'"


def test_adding_a_sandbox_backend_names_what_the_code_has():
    """Every class, constant and helper the checklist names exists under that name, it names every method a backend
    implements and every call `sandbox.run` makes on a judge, and every registered backend keeps the contract."""
    import inspect

    from tfperf_lab.isolation import backends, cgroups, contract, sandbox

    section = _section("Adding a sandbox backend")
    modules = (backends, cgroups, contract, sandbox)
    named = set(re.findall(r"`([A-Z][A-Za-z]+(?:\.[a-z_]+)?|[A-Z][A-Z_]{2,}|_[a-z_]+)(?:\(\))?`", section))
    assert {"Backend", "BACKENDS", "Cgroup.remove", "Freezer", "INSIDE", "_python_paths"} <= named, named

    def exists(name: str) -> bool:
        head, _, attribute = name.partition(".")
        owner = next((getattr(m, head) for m in modules if hasattr(m, head)), None)
        return owner is not None and (not attribute or hasattr(owner, attribute))

    from tfperf_lab.course import config

    variables = {name for name in named if name.startswith("TFPERF_")}
    assert variables <= set(config.ENVIRONMENT)
    assert [name for name in sorted(named - variables) if not exists(name)] == []
    methods = [name for name, _ in inspect.getmembers(contract.Watcher, inspect.isfunction) if not name.startswith("_")]
    assert methods and [m for m in methods if f"{m}(" not in section] == []
    wanted = inspect.signature(backends.Backend.command)
    for name, kind in backends.BACKENDS.items():
        assert issubclass(kind, backends.Backend) and kind.name == name and f"`{kind.__name__}" in section or kind is backends.NoSandbox
        assert inspect.signature(kind.command).parameters.keys() == wanted.parameters.keys(), kind
        assert callable(kind.problem) and isinstance(kind.isolated, bool)
    assert [m for m in ("problem()", "command(job, inner, env, data, binds)") if m not in section] == []
