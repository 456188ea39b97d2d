"""How nbgrader is configured and run for this course: one `configure` for every setting, used by
``autograder/nbgrader_config.py`` (the formgrader and plain ``nbgrader`` commands) and by the tool's in-process grading,
and the command-line runner for the nbgrader steps that stay subprocesses (release, the exchange).
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import signal
import subprocess
import sys
import time
import warnings

from traitlets.config import Config

from ..course import Course, WorkFolder
from . import nbgrader_patches, untrusted
from .execute import SandboxedExecute


nbgrader_patches.apply()  # the tool's only changes to nbgrader, each with its reason: see that module
# nbgrader's own harmless SQLAlchemy noise when it registers a submission (see the nbgrader notes)
warnings.filterwarnings("ignore", message=r".*not in session, add operation along", module="nbgrader")

# nbgrader's autograde with the kernel in a sandbox and the outputs made safe before anything is scored or shown.
AUTOGRADE_PREPROCESSORS = [
    SandboxedExecute,
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    untrusted.CapOutputs,
    untrusted.SanitizeOutputs,
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]


def configure(c: Config, course: Course, work: WorkFolder | None = None) -> Config:
    """Every nbgrader setting of the course, written into the traitlets config ``c`` (returned)."""
    from .feedback import FEEDBACK_PREPROCESSORS, TF_NOISE_PATTERN  # noqa: PLC0415

    work = work or course.default_work
    for key, value in work.course_directory(course).items():
        setattr(c.CourseDirectory, key, value)
    c.CourseDirectory.source_directory = course.sources.name  # solutions/, or lessons/ in a learner's clone
    c.CourseDirectory.release_directory = "lessons"

    # The student version: solution regions become a stub that fails every test until answered.
    c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
    c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

    # Autograding: the kernel runs in a disposable sandbox (tfperf_lab.isolation.sandbox), never beside the gradebook.
    c.Autograde.autograde_preprocessors = AUTOGRADE_PREPROCESSORS
    c.SandboxedExecute.course_root = str(course.root)
    c.SandboxedExecute.records_directory = str(work.records)
    # Cell, start-up and notebook limits: SandboxedExecute's defaults, from tfperf_lab.course.config (one place).

    # A deleted test cell is put back from the gradebook and scored, instead of silently skipped.
    c.OverwriteCells.add_missing_cells = True

    # nbgrader scores a test cell 0 if it wrote anything to stderr. TensorFlow writes log lines there (oneDNN, CUDA
    # stubs) that say nothing about the answer: drop those chunks before scoring.
    c.IgnorePattern.enabled = True
    c.IgnorePattern.pattern = TF_NOISE_PATTERN

    # Output floods are cut before they reach the gradebook and the feedback: CapOutputs, in bytes (one line can be
    # 40 MiB), the same rule the sandbox's runner applies (tfperf_lab.isolation.outputs), instead of nbgrader's LimitOutput.

    # Feedback shows what failed and the measured numbers, never the hidden tests or their traceback.
    c.GenerateFeedback.preprocessors = FEEDBACK_PREPROCESSORS
    return c


def config(course: Course, work: WorkFolder, **overrides) -> Config:
    """A complete nbgrader configuration for in-process apps; ``overrides`` as ``{"Section.trait": value}``."""
    c = configure(Config(), course, work)
    for key, value in overrides.items():
        section, trait = key.split(".")
        setattr(getattr(c, section), trait, value)
    return c


def tool_environment(**extra: str) -> dict:
    """Environment for nbgrader subprocesses: this venv first on PATH (alembic), TF logs quiet."""
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
    """Run a command in its own process group; on timeout kill the group."""
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


def nbgrader(course: Course, work: WorkFolder, args: list[str], *, release: pathlib.Path | None = None,
             timeout: float | None = None, env: dict | None = None) -> Completed:
    """Run an nbgrader subcommand on ``course`` with ``work`` holding submissions and gradebook."""
    work.root.mkdir(parents=True, exist_ok=True)
    command = [str(pathlib.Path(sys.executable).parent / "nbgrader"), *args, *work.nbgrader_arguments(course)]
    if release is not None:
        command.append(f"--CourseDirectory.release_directory={release}")
    command.append(f"--SandboxedExecute.records_directory={work.records}")
    return run_tool(command, cwd=course.autograder, env=env or tool_environment(), timeout=timeout)
