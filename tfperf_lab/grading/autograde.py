"""One autograde, in this process: nbgrader's ``Autograde`` converter on one staged submission, its kernel sandboxed.

`autograde` builds the course's nbgrader configuration (`tfperf_lab.grading.settings`), in which
`tfperf_lab.grading.execute.SandboxedExecute` runs the notebook, and returns an `Execution`: what the score stage needs
to know about the run, read from the files the preprocessor wrote (`execute.RunFiles`). No nbgrader start-up per
notebook; nbgrader's own `capture_log` keeps its log lines for the result.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time

from ..course import Course, WorkFolder
from ..course.config import DEFAULTS, GradingConfig
from . import execute, settings


@dataclasses.dataclass
class Execution:
    """How one autograde went: the run's seconds, whether it finished, and why not; ``sandbox`` and ``inside`` time the
    sandbox from the host and (as the runner reports it, for benchmarks only) its kernel start and cells."""

    seconds: float
    finished: bool
    problem: str | None
    backend: str
    records: str
    log: str
    sandbox: float = 0.0
    inside: dict = dataclasses.field(default_factory=dict)
    verdicts: str = ""  # the grader's own speed records (tfperf_lab.speed.judge); none of the notebook's records decide points
    judged: bool = False
    judge_notes: list = dataclasses.field(default_factory=list)
    attempts: int = 1  # more than one: a cluster worker died while running it, and another ran it again
    warnings: list = dataclasses.field(default_factory=list)  # limits that do not hold here (tfperf_lab.isolation.sandbox)
    machine: list = dataclasses.field(default_factory=list)  # the grading machine's faults: the row is the machine's, graded again
    stopped: str | None = None  # it finished, but stopped before its end: its time limit ran out, or the kernel died


_ENTRY = re.compile(r"^\[(DEBUG|INFO|WARNING|ERROR|CRITICAL)\] ", flags=re.M)


def first_error(log: str) -> str | None:
    """The first line of the first error nbgrader logged, unless it is the sandbox's own failure (the run's "problem"
    says that one better)."""
    starts = [match.start() for match in _ENTRY.finditer(log)] + [len(log)]
    for start, end in zip(starts, starts[1:]):
        entry = log[start:end]
        level, _, message = entry.partition("] ")
        if level[1:] in ("ERROR", "CRITICAL") and "SandboxFailed" not in message:
            return message.splitlines()[0][:300]
    return None


def raised(log: str) -> str | None:
    """The exception that made nbgrader fail, from the first traceback it logged: ``"SystemError: AST constructor
    recursion depth mismatch ..."`` (None when it logged none)."""
    starts = [match.start() for match in _ENTRY.finditer(log)] + [len(log)]
    for start, end in zip(starts, starts[1:]):
        level, _, message = log[start:end].partition("] ")
        if level[1:] in ("ERROR", "CRITICAL") and message.startswith("Traceback"):
            return _last_line(message)[:300]
    return None


def _last_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[-1] if lines else "no message"


def autograde(course: Course, work: WorkFolder, lesson_id: str, student: str, *, config: GradingConfig = DEFAULTS,
              executor=None) -> Execution:
    """nbgrader's Autograde of ``work``'s staged copy, in this process, with the kernel sandboxed under ``config``'s
    limits (handed to nbgrader as its traits); never raises for the notebook."""
    from nbgrader.converters import Autograde
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.utils import capture_log

    overrides = config.overrides()
    if executor is not None:  # where the sandbox runs (a cluster); the preprocessor's own default runs it here
        overrides["SandboxedExecute.executor"] = executor
    nbgrader_config = settings.config(course, work, **overrides)
    coursedir = CourseDirectory(config=nbgrader_config)
    coursedir.assignment_id, coursedir.student_id = lesson_id, student
    log = logging.getLogger(f"tfperf_lab.grading.autograde.{student}.{lesson_id}")
    log.propagate = False
    files = execute.RunFiles.of(work.records, student, lesson_id)
    files.run.unlink(missing_ok=True)
    files.verdicts.unlink(missing_ok=True)
    began = time.monotonic()
    converter = Autograde(coursedir=coursedir, config=nbgrader_config, log=log)
    converter.force = True
    captured = capture_log(converter)  # nbgrader reports a failed notebook by raising NbGraderException: caught there
    lines = captured.get("log", "")
    run = execute.RunReport.read(files) or execute.RunReport(backend=config.backend)
    problem, machine = run.problem, list(run.machine)
    if not captured["success"] and problem is None and not machine:
        # nbgrader failed, and not on the notebook (it ran, or never got to run, and came back well formed): nbgrader's
        # pipeline or our code around it failed on the host. The machine's fault: the next plain `grade` grades it again.
        failed = raised(lines) or first_error(lines) or _last_line(captured.get("error"))
        machine = [f"the grader failed on the host, not on the notebook ({failed})"]
        problem = machine[0]
    return Execution(
        seconds=time.monotonic() - began, finished=captured["success"] and problem is None, problem=problem, backend=run.backend or config.backend,
        records=files.records.read_text(encoding="utf-8") if files.records.exists() else "",
        log=lines + "\n" + (files.log.read_text(encoding="utf-8") if files.log.exists() else ""),
        sandbox=run.seconds, inside=run.inside or {},
        verdicts=files.verdicts.read_text(encoding="utf-8") if run.judged and files.verdicts.exists() else "",
        judged=run.judged, judge_notes=list(run.judge_notes), attempts=run.attempts, warnings=list(run.warnings), machine=machine,
        stopped=run.stopped)
