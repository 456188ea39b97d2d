"""Stage 2 of grading, execute: the nbgrader preprocessor that runs the kernel in a disposable sandbox.

`SandboxedExecute` takes the place of nbgrader's ``Execute`` in ``Autograde.autograde_preprocessors`` (see
`tfperf_lab.grading.settings`), so every autograde of this course runs the learner's code in
`tfperf_lab.isolation.sandbox`: ours (`tfperf_lab.grading.autograde`), the formgrader's button, plain
``nbgrader autograde`` and the JupyterHub exchange alike. The host keeps the gradebook; the sandbox run (a
`tfperf_lab.grading.job.Job`) gives back the executed copy and the measurement records, which this preprocessor writes
where `RunFiles` says, for the score stage.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import time
import typing

from nbformat import from_dict
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Any, Unicode
from tfperf.units import interval

from ..course import Course, CourseNotFound, skipping
from ..course import config
from ..isolation.backends import SandboxUnavailable
from ..isolation.contract import Limits
from . import untrusted
from .job import Job, run

@dataclasses.dataclass(frozen=True)
class RunFiles:
    """What one sandbox run gave back, as `SandboxedExecute` writes it and the autograde reads it: under
    ``<records directory>/<student>/``, the notebook's own records, the grader's verdicts, the run's facts and its log."""

    folder: pathlib.Path
    lesson_id: str

    @classmethod
    def of(cls, records_directory: str | pathlib.Path, student: str, lesson_id: str) -> "RunFiles":
        return cls(pathlib.Path(records_directory) / student, lesson_id)

    @property
    def records(self) -> pathlib.Path:
        return self.folder / f"{self.lesson_id}.jsonl"

    @property
    def verdicts(self) -> pathlib.Path:
        return self.folder / f"{self.lesson_id}.verdicts.jsonl"

    @property
    def run(self) -> pathlib.Path:
        return self.folder / f"{self.lesson_id}.run.json"

    @property
    def log(self) -> pathlib.Path:
        return self.folder / f"{self.lesson_id}.log"


@dataclasses.dataclass
class RunReport:
    """The one hand-off from a sandbox run to the host: what `SandboxedExecute` learned, written once (``run.json``
    beside the run's other files, `RunFiles`) and read once, by `tfperf_lab.grading.autograde`. ``machine``: the
    grading machine's faults (the row is the machine's, graded again); ``judged``: the grader timed the speed checks,
    so its verdicts (``verdicts.jsonl``), not the notebook's records, decide speed points."""

    problem: str | None = None
    seconds: float = 0.0
    inside: dict = dataclasses.field(default_factory=dict)  # the runner's own timings (untrusted: for benchmarks only)
    timed_out: bool = False
    backend: str = ""
    limit: float = 0.0
    finished: float = 0.0  # when (epoch seconds)
    judged: bool = False
    judge_notes: list = dataclasses.field(default_factory=list)
    warnings: list = dataclasses.field(default_factory=list)  # limits that do not hold on the machine that ran it
    where: str = "here"
    attempts: int = 1  # more than one: a cluster worker died while running it, and another ran it again
    machine: list = dataclasses.field(default_factory=list)
    stopped: str | None = None  # the notebook came back stopped before its end (its time limit, a dead kernel): `Outcome.stopped`

    def write(self, files: "RunFiles") -> None:
        files.run.write_text(json.dumps(dataclasses.asdict(self)), encoding="utf-8")

    @classmethod
    def read(cls, files: "RunFiles") -> "RunReport | None":
        """The report of the last run, or None when the preprocessor never wrote one (nbgrader failed before it ran)."""
        if not files.run.exists():
            return None
        known = {field.name for field in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in json.loads(files.run.read_text(encoding="utf-8")).items() if key in known})


class SandboxedExecute(NbGraderPreprocessor):
    """Run the notebook in a sandbox (bubblewrap by default) instead of beside the gradebook."""

    # cell_seconds, startup_seconds, notebook_seconds, memory_mb, processes, file_mb, the sandbox's output caps, backend,
    # skip_demonstrations: generated from the course's one configuration (each GradingConfig field whose "trait" names this class)
    locals().update(config.traits("SandboxedExecute"))
    executor = Any(None, allow_none=True, help="Where the sandbox runs (`tfperf_lab.grading.cluster.DaskExecutor`); "
                   "None: in this process").tag(config=True)
    course_root = Unicode("", help="The course folder (default: found from the working directory)").tag(config=True)
    records_directory = Unicode("", help="Where the host writes what came back: <student>/<lesson>.jsonl and .run.json").tag(config=True)

    def preprocess(self, nb, resources):
        info = resources.get("nbgrader", {})
        student, lesson_id = info.get("student", "unknown"), info.get("assignment", "unknown")
        course = Course.find(self.course_root or None)
        given = config.GradingConfig.of_traits(self)
        limit = given.notebook_limit(_grading_minutes(course, lesson_id))
        limits = Limits.of(given, wall_seconds=limit)
        directory = pathlib.Path(self.records_directory or course.default_work.records)
        files = RunFiles.of(directory, student, lesson_id)
        files.folder.mkdir(parents=True, exist_ok=True)
        try:
            return self._run(nb, resources, course=course, given=given, limit=limit, limits=limits, files=files,
                             student=student, lesson_id=lesson_id, scratch=directory.parent / "sandbox")
        except (SandboxFailed, untrusted.UntrustedInput) as error:  # the notebook's: it did not run, or came back malformed
            report = RunReport.read(files) or RunReport(finished=time.time())
            if not report.problem:
                report.problem = str(error)
                report.write(files)
            raise
        except Exception as error:  # our code (or a library under it) failed on the host: never the student's fault
            report = RunReport.read(files) or RunReport(finished=time.time())
            if not report.machine:
                report.machine = [grader_failed(error)]
                report.write(files)
            raise

    def _run(self, nb, resources, *, course, given, limit, limits, files, student, lesson_id, scratch):
        from ..speed.judge import JudgeUnavailable
        from .cluster import ClusterUnavailable

        sent = json.loads(json.dumps(nb))
        skipped = _leave_out_demonstrations(course, lesson_id, sent) if given.skip_demonstrations else {}
        job = Job(course_root=str(course.root), lesson_id=lesson_id, student=student, notebook=sent, limits=limits,
                  backend=given.backend, scratch=str(scratch))
        try:
            done = run(job, self.executor)
        except (JudgeUnavailable, SandboxUnavailable, CourseNotFound, ClusterUnavailable) as error:  # nothing ran: the machine's fault
            problem = f"{type(error).__name__}: {error}"
            RunReport(problem=problem, machine=[problem], finished=time.time()).write(files)
            raise
        outcome = done.outcome
        files.records.write_text(outcome.records, encoding="utf-8")
        files.verdicts.write_text(done.verdicts, encoding="utf-8")
        RunReport(problem=outcome.problem, seconds=outcome.seconds, inside=outcome.inside, timed_out=outcome.timed_out,
                  backend=outcome.backend, limit=limit, finished=time.time(), judged=done.judged, judge_notes=done.judge_notes,
                  warnings=outcome.warnings, where=done.where, attempts=done.attempts, machine=done.machine,
                  stopped=outcome.stopped).write(files)
        files.log.write_text(outcome.log + (f"\n[judge reference]\n{done.reference_log}" if done.judged else ""), encoding="utf-8")
        if outcome.notebook is None:
            raise SandboxFailed(outcome.problem or "the notebook did not come back from the sandbox")
        executed = from_dict(outcome.notebook)
        untrusted.check_shape(executed, "the executed notebook")
        _put_back(executed, skipped)
        enforce_speed(executed, _speed_checks(course, lesson_id), Deciding.of(done, outcome.records))
        return executed, resources


def grader_failed(error: BaseException) -> str:
    """How a fault of the grader's own code is worded on a row (the machine's, graded again; `tfperf_lab.grading.batch`)."""
    return f"the grader's own code failed ({type(error).__name__}: {str(error)[:300]})"


def _leave_out_demonstrations(course: Course, lesson_id: str, sent: dict) -> dict[str, str]:
    """Empty the demonstration cells of the notebook about to be sent (`tfperf_lab.course.skipping`: cells no answer or
    test reads; an empty cell does not run); returns cell id -> its text, which `_put_back` restores afterwards."""
    try:
        source = course.lesson(lesson_id).source_notebook()
    except LookupError:
        return {}
    ids = skipping.skippable(source, sent)
    kept = {}
    for cell in sent["cells"]:
        if cell.get("id") in ids:
            kept[cell["id"]] = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            cell["source"], cell["outputs"] = "", []
    return kept


def _put_back(executed, skipped: dict[str, str]) -> None:
    """The left-out cells get their text back and one output saying they were not run (whatever the sandbox sent)."""
    for cell in executed.cells:
        if cell.get("id") in skipped:
            cell.source = skipped[cell["id"]]
            cell.outputs = [from_dict({"output_type": "stream", "name": "stdout", "text": f"[{skipping.SKIPPED_NOTE}]\n"})]
            cell.execution_count = None


@dataclasses.dataclass(frozen=True)
class Deciding:
    """What decides a job's speed points, typed by where it came from (never by a label a record carries):
    ``"grader"``, the verdicts the grader's judge measured outside the kernel (the grader's own file); ``"harness"``, the
    records the course's timing harness wrote in the kernel, which decide only a learner's own check where the grader
    could not judge (no instructor's source). ``unreadable``: why the records could not be read (nothing passes)."""

    source: typing.Literal["grader", "harness"]
    records: tuple = ()
    notes: tuple = ()
    unreadable: str | None = None

    @classmethod
    def of(cls, done, records_text: str) -> "Deciding":
        if done.judged:
            return cls("grader", tuple(done.records), tuple(done.judge_notes))
        from tfperf.report import parse_records

        try:
            return cls("harness", tuple(parse_records(records_text, source="the notebook's records")))
        except ValueError as error:
            return cls("harness", unreadable=f"its measurement records could not be read ({error})")

    def missing(self, names: list[str]) -> list[str]:
        """Why each of ``names`` earns no speed points (empty: every one passed)."""
        if self.unreadable:
            return [self.unreadable]
        decided = {record.name: record for record in self.records}
        reasons = []
        for name in names:
            record = decided.get(name)
            if record is not None and record.passed:
                continue
            if record is not None:
                reasons.append(f"{name}: measured {record.speedup:.2f}x ({interval(*record.ci)}), needs {record.threshold:g}x")
            elif self.source == "grader":
                reasons.append(next((note for note in self.notes if note.startswith(f"speed check {name}")), f"{name}: not measured"))
            else:
                reasons.append(f"{name}: its speed check did not run through the course's timing harness")
        return reasons


def enforce_speed(executed, checks: dict[str, list[str]], deciding: Deciding) -> None:
    """The one place speed points are decided: a speed test cell without a passing verdict for each of its checks from
    ``deciding`` gets an error output, so nbgrader scores it 0 whatever the kernel printed (the formgrader and plain
    ``nbgrader autograde`` included)."""
    who = "from the grader" if deciding.source == "grader" else "from the course's timing harness"
    for cell in executed.cells:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id not in checks:
            continue
        reasons = deciding.missing(checks[grade_id])
        if not reasons:
            continue
        message = f"no speed points {who}: " + "; ".join(reasons)
        cell.outputs.append(from_dict({"output_type": "error", "ename": SPEED_VERDICT, "evalue": message,
                                       "traceback": [f"{SPEED_VERDICT}: {message}"]}))


SPEED_VERDICT = "SpeedVerdict"


class SandboxFailed(RuntimeError):
    """The notebook did not come back usable from its sandbox (timed out, out of memory, kernel died)."""


def _speed_checks(course: Course, lesson_id: str) -> dict[str, list[str]]:
    """The lesson's speed test cells and their checks (none for a lesson the course does not have)."""
    try:
        return course.lesson(lesson_id).speed_checks()
    except LookupError:
        return {}


def _grading_minutes(course: Course, lesson_id: str) -> float | None:
    """The lesson's declared grading time (None for a lesson the course does not have)."""
    try:
        return course.lesson(lesson_id).minutes_grading
    except LookupError:
        return None


