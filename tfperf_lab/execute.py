"""Stage 2 of grading, execute: nbgrader's autograde with the kernel in a disposable sandbox.

`SandboxedExecute` takes the place of nbgrader's ``Execute`` in ``Autograde.autograde_preprocessors`` (see
`tfperf_lab.settings`), so every autograde of this course runs the learner's code in `tfperf_lab.sandbox`: ours,
the formgrader's button, plain ``nbgrader autograde`` and the JupyterHub exchange alike. The host keeps the gradebook;
the sandbox gets a copy of the notebook and gives back the executed copy and the measurement records, which this
preprocessor writes to ``records_directory/<student>/<lesson>.jsonl`` and ``.run.json`` for the score stage.

`autograde` runs nbgrader's ``Autograde`` converter in this process on one staged submission (no nbgrader start-up
per notebook) and returns an `Execution`: what the score stage needs to know about the run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pathlib
import threading
import time

from nbformat import from_dict
from nbgrader import utils as nbgrader_utils
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Float, Integer, Unicode

from . import sandbox
from .course import Course, WorkFolder

_CPUS = threading.local()  # the cores this worker thread's sandboxes are pinned to
_ENVIRONMENT = threading.Lock()
_SETTERS: dict[str, list] = {}


@contextlib.contextmanager
def _shared_setenv(**values: str):
    """nbgrader's ``utils.setenv``, safe when several autogrades run in threads of one process.

    nbgrader sets ``NBGRADER_EXECUTION`` around each execution and deletes it afterwards; two overlapping autogrades
    then delete it twice (KeyError). Here the first to enter sets it and the last to leave restores it. (No kernel
    starts in this process: the sandbox gives its kernel a whole environment of its own.)
    """
    with _ENVIRONMENT:
        for key, value in values.items():
            users = _SETTERS.setdefault(key, [0, os.environ.get(key)])
            if users[0] == 0:
                users[1] = os.environ.get(key)
                os.environ[key] = value
            users[0] += 1
    try:
        yield
    finally:
        with _ENVIRONMENT:
            for key in values:
                users = _SETTERS[key]
                users[0] -= 1
                if users[0] == 0:
                    if users[1] is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = users[1]


nbgrader_utils.setenv = _shared_setenv


class SandboxedExecute(NbGraderPreprocessor):
    """Run the notebook in a sandbox (bubblewrap by default) instead of beside the gradebook."""

    timeout = Integer(300, help="Seconds one cell may run").tag(config=True)
    startup_timeout = Integer(120, help="Seconds the kernel may take to start").tag(config=True)
    notebook_timeout = Float(0, help="Seconds the whole notebook may take (0: 3x the lesson's grading budget, at least 120)").tag(config=True)
    backend = Unicode("auto", help="auto (bubblewrap, refusing when it cannot run), bubblewrap, or none").tag(config=True)
    memory_mb = Integer(sandbox.Limits.memory_mb, help="Memory one submission may use").tag(config=True)
    processes = Integer(sandbox.Limits.processes, help="Processes and threads one submission may run").tag(config=True)
    course_root = Unicode("", help="The course folder (default: found from the working directory)").tag(config=True)
    records_directory = Unicode("", help="Where the host writes what came back: <student>/<lesson>.jsonl and .run.json").tag(config=True)

    def preprocess(self, nb, resources):
        info = resources.get("nbgrader", {})
        student, lesson_id = info.get("student", "unknown"), info.get("assignment", "unknown")
        course = Course.find(self.course_root or None)
        limit = self.notebook_timeout or _default_limit(course, lesson_id)
        limits = sandbox.Limits(wall_seconds=limit, cell_seconds=self.timeout, startup_seconds=self.startup_timeout,
                                memory_mb=self.memory_mb, processes=self.processes, cpus=getattr(_CPUS, "cpus", None))
        records = pathlib.Path(self.records_directory or course.default_work.root / "records") / student
        records.mkdir(parents=True, exist_ok=True)
        scratch = records.parent.parent / "sandbox"
        from .judge import JudgeUnavailable

        job = Job(course_root=str(course.root), lesson_id=lesson_id, student=student, notebook=json.loads(json.dumps(nb)), limits=limits,
                  backend=self.backend, scratch=str(scratch))
        try:
            done = _EXECUTOR.run(job)
        except JudgeUnavailable as error:  # nothing ran: say exactly why (the result's "problem")
            (records / f"{lesson_id}.run.json").write_text(json.dumps({"problem": str(error), "finished": time.time()}), encoding="utf-8")
            raise
        outcome = done.outcome
        (records / f"{lesson_id}.jsonl").write_text(outcome.records, encoding="utf-8")
        (records / f"{lesson_id}.verdicts.jsonl").write_text(done.verdicts, encoding="utf-8")
        (records / f"{lesson_id}.run.json").write_text(json.dumps({
            "seconds": outcome.seconds, "inside": outcome.inside, "timed_out": outcome.timed_out, "problem": outcome.problem, "backend": outcome.backend,
            "limit": limit, "finished": time.time(), "judged": done.judged, "judge_notes": done.judge_notes,
            "warnings": outcome.warnings, "where": done.where, "attempts": done.attempts}), encoding="utf-8")
        (records / f"{lesson_id}.log").write_text(outcome.log + (f"\n[judge reference]\n{done.reference_log}" if done.judged else ""),
                                                  encoding="utf-8")
        if outcome.notebook is None:
            raise SandboxFailed(outcome.problem or "the notebook did not come back from the sandbox")
        from . import untrusted

        executed = from_dict(outcome.notebook)
        untrusted.check_shape(executed, "the executed notebook")
        if done.judged:
            enforce_verdicts(executed, course.lesson(lesson_id).speed_checks(), done.records, done.judge_notes)
        return executed, resources


@dataclasses.dataclass
class Job:
    """The unit of work of grading one staged submission: run its notebook in a sandbox, with the grader timing its speed
    checks. Plain data, so it can run here or on a cluster worker (`tfperf_lab.cluster`) that has the course folder at
    ``course_root`` (its own copy, or a shared file system)."""

    course_root: str
    lesson_id: str
    student: str
    notebook: dict
    limits: sandbox.Limits
    backend: str
    scratch: str  # a folder for the sandbox's disposable files (on a worker: under its own temporary folder)


@dataclasses.dataclass
class JobDone:
    """What running a `Job` gives back: the sandbox's `Outcome` and the grader's verdicts; only the host writes files
    and grades from it."""

    outcome: sandbox.Outcome
    judged: bool
    records: list  # tfperf.report.Record of the grader's speed verdicts
    judge_notes: list[str]
    reference_log: str
    where: str = "here"
    attempts: int = 1

    @property
    def verdicts(self) -> str:
        return "".join(record.to_json() + "\n" for record in self.records)


def run_job(job: Job) -> JobDone:
    """Run one job where this process is (the host, or a cluster worker); raises `JudgeUnavailable` when the grader
    cannot time its speed checks here."""
    course = Course.find(job.course_root)
    data = os.environ.get("TFPERF_DATA")
    data_path = pathlib.Path(data) if data and pathlib.Path(data).is_dir() else None
    scratch = pathlib.Path(job.scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    judge = _judge_for(course, job.lesson_id, job.notebook, data_path, job.limits.cpus)
    with judge or contextlib.nullcontext():
        outcome = sandbox.run(dict(job.notebook), limits=job.limits, chosen=sandbox.backend(job.backend), scratch=scratch, data=data_path,
                              lesson_files=course.sources / job.lesson_id if (course.sources / job.lesson_id).is_dir() else None,
                              judge=judge)
    return JobDone(outcome, judge is not None, list(judge.records) if judge else [], list(judge.notes) if judge else [],
                   judge.reference_log if judge else "")


class LocalExecutor:
    """Jobs run in this process's threads (one per grading worker)."""

    def run(self, job: Job) -> JobDone:
        return run_job(job)


_EXECUTOR = LocalExecutor()


@contextlib.contextmanager
def executor(chosen) -> "contextlib.AbstractContextManager":
    """Run this block's jobs with ``chosen`` (e.g. `tfperf_lab.cluster.DaskExecutor`) instead of in this process."""
    global _EXECUTOR
    before, _EXECUTOR = _EXECUTOR, chosen
    try:
        yield chosen
    finally:
        _EXECUTOR = before


def _judge_for(course: Course, lesson_id: str, nb, data: pathlib.Path | None, cpus: tuple[int, ...] | None = None):
    """A `Judge` for this submission when its lesson has speed checks and the instructor's source is here (None otherwise:
    without solutions/ a learner's own `check` measures in its kernel, as the self-check does)."""
    from .judge import Judge

    try:
        lesson = course.lesson(lesson_id)
    except LookupError:
        return None
    if not course.has_hidden_tests or not lesson.speed_checks() or not lesson.source.exists():
        return None
    return Judge(lesson.source, environment=sandbox.reference_environment(data), executed=nb, cpus=cpus)


def enforce_verdicts(executed, checks: dict[str, list[str]], records: list, notes: list[str]) -> None:
    """A speed test cell without the grader's passing verdict for each of its checks gets an error output, so nbgrader
    scores it 0 whatever the kernel printed (the formgrader and plain ``nbgrader autograde`` included)."""
    decided = {record.name: record for record in records}
    for cell in executed.cells:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id not in checks:
            continue
        missing = [name for name in checks[grade_id] if not (decided.get(name) and decided[name].passed)]
        if not missing:
            continue
        reasons = []
        for name in missing:
            if name in decided:
                low, high = decided[name].ci
                reasons.append(f"{name}: measured {decided[name].speedup:.2f}x ({low:.2f}-{high:.2f}x), needs {decided[name].threshold:g}x")
            else:
                reasons.append(next((note for note in notes if note.startswith(f"speed check {name}")), f"{name}: not measured"))
        message = "; ".join(reasons)
        cell.outputs.append(from_dict({"output_type": "error", "ename": "SpeedVerdict", "evalue": f"no speed points from the grader: {message}",
                                       "traceback": [f"SpeedVerdict: no speed points from the grader: {message}"]}))


class SandboxFailed(RuntimeError):
    """The notebook did not come back usable from its sandbox (timed out, out of memory, kernel died)."""


def _default_limit(course: Course, lesson_id: str) -> float:
    try:
        return max(120.0, course.lesson(lesson_id).minutes_grading * 60 * 3)
    except LookupError:
        return 600.0


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
    verdicts: str = ""  # the grader's own speed records (tfperf_lab.judge); None of the notebook's records decide points
    judged: bool = False
    judge_notes: list = dataclasses.field(default_factory=list)
    attempts: int = 1  # more than one: a cluster worker died while running it, and another ran it again
    warnings: list = dataclasses.field(default_factory=list)  # limits that do not hold here (tfperf_lab.sandbox)


def autograde(course: Course, work: WorkFolder, lesson_id: str, student: str, *, timeout: float | None = None,
              cell_timeout: int | None = None, backend: str = "auto", cpus: tuple[int, ...] | None = None) -> Execution:
    """nbgrader's Autograde of ``work``'s staged copy, in this process, with the kernel sandboxed; never raises for the notebook."""
    import logging

    from nbgrader.coursedir import CourseDirectory
    from nbgrader.converters import Autograde

    from . import settings

    overrides = {"SandboxedExecute.backend": backend}
    if timeout:
        overrides["SandboxedExecute.notebook_timeout"] = float(timeout)
    if cell_timeout:
        overrides["SandboxedExecute.timeout"] = int(cell_timeout)
    config = settings.config(course, work, **overrides)
    coursedir = CourseDirectory(config=config)
    coursedir.assignment_id, coursedir.student_id = lesson_id, student
    log = logging.getLogger(f"tfperf_lab.autograde.{student}.{lesson_id}")
    messages = _Capture()
    log.addHandler(messages)
    log.propagate = False
    run_file = work.root / "records" / student / f"{lesson_id}.run.json"
    run_file.unlink(missing_ok=True)
    (work.root / "records" / student / f"{lesson_id}.verdicts.jsonl").unlink(missing_ok=True)
    began = time.monotonic()
    _CPUS.cpus = cpus
    converter = Autograde(coursedir=coursedir, config=config, log=log)
    converter.force = True
    try:
        converter.start()
        failure = None
    except Exception as error:  # noqa: BLE001  (nbgrader reports a failed notebook by raising NbGraderException)
        failure = error
    finally:
        log.removeHandler(messages)
    run = json.loads(run_file.read_text()) if run_file.exists() else {}
    problem = run.get("problem")
    if failure is not None and problem is None:
        problem = messages.first_error() or f"nbgrader failed: {failure}"
    records_file = work.root / "records" / student / f"{lesson_id}.jsonl"
    log_file = work.root / "records" / student / f"{lesson_id}.log"
    verdicts_file = work.root / "records" / student / f"{lesson_id}.verdicts.jsonl"
    return Execution(time.monotonic() - began, failure is None and problem is None, problem, run.get("backend", backend),
                     records_file.read_text(encoding="utf-8") if records_file.exists() else "",
                     "\n".join(messages.lines) + "\n" + (log_file.read_text(encoding="utf-8") if log_file.exists() else ""),
                     run.get("seconds", 0.0), run.get("inside") or {},
                     verdicts_file.read_text(encoding="utf-8") if run.get("judged") and verdicts_file.exists() else "",
                     bool(run.get("judged")), list(run.get("judge_notes") or []), int(run.get("attempts") or 1),
                     list(run.get("warnings") or []))


class _Capture(__import__("logging").Handler):
    """nbgrader's log lines for one autograde (its errors explain a failed run)."""

    def __init__(self):
        super().__init__()
        self.lines: list[str] = []
        self.errors: list[str] = []

    def emit(self, record):
        message = record.getMessage()
        self.lines.append(f"[{record.levelname}] {message}")
        if record.levelno >= 40 and "SandboxFailed" not in message:
            self.errors.append(message)

    def first_error(self) -> str | None:
        return self.errors[0].splitlines()[0][:300] if self.errors else None
