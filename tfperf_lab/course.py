"""The course on disk: where things are, which lessons exist, and how nbgrader is invoked.

Lessons are discovered from ``solutions/<lesson>/<lesson>.ipynb``; each source notebook carries
its own description in ``metadata.tfperf`` (title, technique, article, what is measured, the
article's claim, expected minutes), so the README table, the course report and the time-budget
tests all read one place.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
AUTOGRADER = ROOT / "autograder"
SOLUTIONS = ROOT / "solutions"
LESSONS = ROOT / "lessons"
WORK = ROOT / ".work"
COURSE_ID = "tf-performance-lab"


@dataclasses.dataclass(frozen=True)
class Lesson:
    """One lesson, as described by its source notebook's ``metadata.tfperf``."""

    id: str
    title: str
    technique: str
    article: str
    measures: str
    claim: str
    minutes_full: float
    minutes_grading: float

    @property
    def source(self) -> pathlib.Path:
        return SOLUTIONS / self.id / f"{self.id}.ipynb"

    @property
    def release(self) -> pathlib.Path:
        return LESSONS / self.id / f"{self.id}.ipynb"

    @property
    def run_time_text(self) -> str:
        """The run-time promise every lesson's first cell states, generated from ``metadata.tfperf.minutes``."""
        return run_time_text(self.minutes_full, self.minutes_grading)

    def grade_cells(self) -> list[dict]:
        """The graded cells of the source, in notebook order: ``{"id", "points", "kind"}``."""
        cells = []
        for cell in read_notebook(self.source)["cells"]:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if meta.get("grade"):
                kind = "manual" if cell["cell_type"] == "markdown" or meta.get("solution") else "auto"
                cells.append({"id": meta["grade_id"], "points": float(meta.get("points", 0)), "kind": kind})
        return cells


def run_time_text(minutes_full: float, minutes_grading: float) -> str:
    """What a lesson's first cell says of its run time; `tfperf-lab run` reports any lesson that overran it."""
    def minutes(value: float) -> str:
        return f"{float(value):g} minute{'' if float(value) == 1 else 's'}"

    return f"expected run time: under {minutes(minutes_full)} on a 2-core CPU (under {minutes(minutes_grading)} when graded)"


def is_read_only(cell: dict) -> bool:
    """A locked code cell that is neither a test nor an answer: support code, such as the baselines speed checks time."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return cell.get("cell_type") == "code" and bool(meta.get("locked")) and not meta.get("grade") and not meta.get("solution")


def read_notebook(path: pathlib.Path) -> dict:
    return json.loads(pathlib.Path(path).read_text(encoding="utf-8"))


def lessons() -> list[Lesson]:
    """Every lesson with a source notebook, in course order."""
    found = []
    for folder in sorted(p for p in SOLUTIONS.iterdir() if p.is_dir()):
        notebook = folder / f"{folder.name}.ipynb"
        if not notebook.exists():
            continue
        meta = read_notebook(notebook).get("metadata", {}).get("tfperf", {})
        minutes = meta.get("minutes", {})
        found.append(Lesson(folder.name, meta.get("title", folder.name), meta.get("technique", ""), meta.get("article", ""),
                            meta.get("measures", ""), meta.get("claim", ""), float(minutes.get("full", 0)),
                            float(minutes.get("grading", 0))))
    return found


def lesson(lesson_id: str) -> Lesson:
    """The lesson named ``lesson_id`` (its folder name, or a unique prefix such as ``01``)."""
    matches = [item for item in lessons() if item.id == lesson_id or item.id.startswith(lesson_id)]
    if len(matches) != 1:
        known = ", ".join(item.id for item in lessons())
        raise SystemExit(f"unknown lesson {lesson_id!r}; lessons: {known}")
    return matches[0]


def update_readme_block(start: str, end: str, block: str, readme: pathlib.Path | None = None) -> None:
    """Replace what lies between the markers START and END in the README (generated blocks: example report, flake table)."""
    readme = readme or ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    if start not in text or end not in text:
        raise ValueError(f"{readme} lacks the markers {start!r} ... {end!r}")
    head, rest = text.split(start, 1)
    readme.write_text(f"{head}{start}\n{block}\n{end}{rest.split(end, 1)[1]}", encoding="utf-8")


def readme_block(start: str, end: str, readme: pathlib.Path | None = None) -> str:
    """What the README holds between two markers (the tests compare it with what generates it)."""
    text = (readme or ROOT / "README.md").read_text(encoding="utf-8")
    return text.split(start, 1)[1].split(end, 1)[0].strip("\n")


def tool_environment(**extra: str) -> dict:
    """Environment for nbgrader and the kernels it starts: this venv first on PATH, TF logs quiet."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(pathlib.Path(sys.executable).parent), env.get("PATH", "")])
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    env.setdefault("PYTHONWARNINGS", "ignore::DeprecationWarning")
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # no debugger warning on stderr at kernel start
    env.update(extra)
    return env


@dataclasses.dataclass
class Completed:
    """What a tool run returned; ``timed_out`` when it was killed at its time limit."""

    returncode: int
    output: str
    seconds: float
    timed_out: bool = False


def run_tool(command: list[str], *, cwd: pathlib.Path, env: dict, timeout: float | None = None) -> Completed:
    """Run a command in its own process group; on timeout kill the group (kernels included)."""
    began = time.monotonic()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
        return Completed(process.returncode, output, time.monotonic() - began)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return Completed(-9, output, time.monotonic() - began, timed_out=True)


def nbgrader(args: list[str], *, work: pathlib.Path, release: pathlib.Path | None = None, timeout: float | None = None,
             env: dict | None = None) -> Completed:
    """Run an nbgrader subcommand on this course with ``work`` holding submissions and gradebook."""
    work.mkdir(parents=True, exist_ok=True)
    command = [
        str(pathlib.Path(sys.executable).parent / "nbgrader"), *args,
        f"--CourseDirectory.root={ROOT}",
        f"--CourseDirectory.submitted_directory={work / 'submitted'}",
        f"--CourseDirectory.autograded_directory={work / 'autograded'}",
        f"--CourseDirectory.feedback_directory={work / 'feedback'}",
        f"--CourseDirectory.db_url=sqlite:///{work / 'gradebook.db'}",
    ]
    if release is not None:
        command.append(f"--CourseDirectory.release_directory={release}")
    return run_tool(command, cwd=AUTOGRADER, env=env or tool_environment(), timeout=timeout)
