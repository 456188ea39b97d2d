"""The README's main job from a fresh clone, a non-editable install of the tool, and the learner library alone.

The install itself is what CI runs (`.ci/run`); these tests take what the README promises after it: the main
command, run as the README prints it from a clean clone in another folder; the tool installed as a wheel (no
editable finder pointing back at this checkout) working from a course folder; and a learner's
``pip install --no-deps``, which brings the tfperf library without nbgrader, nbconvert, nbclient or tqdm.
"""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from pipeline import COURSE, ROOT

BIN = pathlib.Path(sys.executable).parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
TOOL_ONLY = ("nbgrader", "nbconvert", "nbclient", "tqdm")


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A clean clone of this checkout's HEAD in a temporary folder (as a newcomer or CI has it)."""
    target = tmp_path_factory.mktemp("newcomer") / "course"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(target)], check=True)
    return target


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The distribution built and installed as a wheel into a folder of its own (what `pip install .` installs)."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run([str(BIN / "pip"), "install", "--quiet", "--no-deps", "--target", str(target), str(ROOT)],
                   check=True, capture_output=True)
    return target


def _main_command() -> str:
    install_and_run = re.findall(r"```bash\n(.*?)\n```", README.split("## Quick start", 1)[1], flags=re.S)[0]
    return install_and_run.rsplit(" && ", 1)[1]


@pytest.mark.pipeline
def test_the_readme_main_command_records_every_lesson_from_a_fresh_clone(clone):
    command = _main_command()
    assert command == ".venv/bin/tfperf-lab run", command
    lessons = ["01", "09"]  # two lessons keep CI short; every lesson runs the same way
    argv = [str(BIN / "tfperf-lab"), *command.split()[1:], *lessons]  # the README's command, this environment's install
    done = subprocess.run(argv, cwd=clone, capture_output=True, text=True, timeout=900,
                          env={key: value for key, value in os.environ.items() if key != "TFPERF_COURSE"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads((clone / "report" / "course-report.json").read_text(encoding="utf-8"))
    assert [lesson["id"][:2] for lesson in summary["lessons"]] == lessons
    for lesson in summary["lessons"]:
        assert lesson["records"] and not lesson["errors"], lesson
    report = (clone / "report" / "course-report.md").read_text(encoding="utf-8")
    assert "(nothing recorded)" not in report
    for lesson in summary["lessons"]:  # the table it prints, and the figure beside it
        assert f"## {lesson['id']}" in report
    assert "| speedup (95% CI) |" in report and "x** (" in report, report[:2000]
    assert (clone / "report" / "course-report.png").stat().st_size > 10_000
    assert "course-report.md" in done.stdout, done.stdout[-2000:]


def test_the_main_job_fails_loudly_when_a_lesson_records_nothing(tmp_path, monkeypatch):
    from tfperf_lab.publish import report

    monkeypatch.setattr(report, "execute", lambda lesson, records, **kw: [])  # ran, wrote no records
    monkeypatch.setattr(report.tfperf.plots, "speedups", lambda *a, **k: None)
    path, clean = report.run(COURSE, ["01"], out=tmp_path / "r", progress=False)
    assert not clean and "recorded no measurements" in path.read_text(encoding="utf-8")


def _tool(site: pathlib.Path, cwd: pathlib.Path, *args: str, blocked: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """``tfperf-lab ARGS`` from the wheel in ``site``, with ``blocked`` packages impossible to import."""
    code = ("import sys\n"
            f"sys.path.insert(0, {str(site)!r})\n"
            f"for name in {list(blocked)!r}:\n"
            "    sys.modules[name] = None\n"
            "import importlib.util\n"
            "_find = importlib.util.find_spec\n"
            "importlib.util.find_spec = lambda name, *a: None if sys.modules.get(name.split('.')[0], 0) is None else _find(name, *a)\n"
            "from tfperf_lab.cli import main\n"
            "import tfperf_lab\n"
            f"assert tfperf_lab.__file__.startswith({str(site)!r}), tfperf_lab.__file__\n"
            f"sys.exit(main({list(args)!r}))\n")
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_a_non_editable_install_finds_the_course_from_the_working_directory(wheel, clone):
    done = _tool(wheel, clone / "lessons", "lessons")
    assert done.returncode == 0 and "| [01_callable_handles]" in done.stdout, done.stderr
    done = _tool(wheel, clone, "lint")
    assert done.returncode == 0 and "no problems" in done.stdout, done.stdout + done.stderr
    assert not (wheel / "solutions").exists() and not list(wheel.glob("tfperf_lab/*.ipynb"))


def test_outside_a_course_the_tool_says_where_it_looked(wheel, tmp_path):
    done = _tool(wheel, tmp_path, "lessons")
    assert done.returncode == 2 and "no TF Performance Lab course in" in done.stderr and "--course" in done.stderr, done.stderr
    done = _tool(wheel, tmp_path, "--course", str(ROOT), "lessons")
    assert done.returncode == 0 and "01_callable_handles" in done.stdout


def test_the_learner_library_works_alone_and_the_tool_says_what_to_install(wheel):
    code = ("import sys\n"
            f"sys.path.insert(0, {str(wheel)!r})\n"
            f"for name in {list(TOOL_ONLY)!r}:\n"
            "    sys.modules[name] = None\n"
            "import tfperf\n"
            f"assert tfperf.__file__.startswith({str(wheel)!r})\n"
            "print(tfperf.selfcheck.summary_text({'Exercise 1': [('Check that it works.', 2)]}))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "Check that it works." in done.stdout, done.stdout + done.stderr
    for command in ("check", "grade", "report", "flake", "lessons"):
        done = _tool(wheel, ROOT, command, blocked=TOOL_ONLY)
        assert done.returncode == 2 and 'pip install "tfperf[grader]"' in done.stderr and "Traceback" not in done.stderr, done.stderr
