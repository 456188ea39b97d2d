"""The unit of work of grading: one staged submission's notebook run in its sandbox, the grader timing its speed checks.

A `Job` is plain data and `run_job` needs only the course folder, so a job runs in this process or on a cluster worker
(`tfperf_lab.grading.cluster`); `executor` chooses where the jobs of a grading run go. Nothing here knows nbgrader:
`tfperf_lab.grading.execute`'s preprocessor builds the job from the notebook nbgrader hands it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib

from ..course import Course
from ..course.config import DATA_VARIABLE, DEFAULTS
from ..isolation import backends, cores, sandbox
from ..isolation.contract import Limits, Outcome


@dataclasses.dataclass
class Job:
    """The unit of work of grading one staged submission: run its notebook in a sandbox, with the grader timing its speed
    checks. Plain data, so it can run here or on a cluster worker (`tfperf_lab.grading.cluster`) that has the course folder at
    ``course_root`` (its own copy, or a shared file system)."""

    course_root: str
    lesson_id: str
    student: str
    notebook: dict
    limits: Limits
    backend: str
    scratch: str  # a folder for the sandbox's disposable files (on a worker: under its own temporary folder)


@dataclasses.dataclass
class JobDone:
    """What running a `Job` gives back: the sandbox's `Outcome` and the grader's verdicts; only the host writes files
    and grades from it."""

    outcome: Outcome
    judged: bool
    records: list  # tfperf.report.Record of the grader's speed verdicts
    judge_notes: list[str]
    reference_log: str
    where: str = "here"
    attempts: int = 1
    machine: list = dataclasses.field(default_factory=list)  # the grading machine's faults: graded again, never scored

    @property
    def verdicts(self) -> str:
        return "".join(record.to_json() + "\n" for record in self.records)


def run_job(job: Job) -> JobDone:
    """Run one job where this process is (the host, or a cluster worker); raises `JudgeUnavailable` when the grader
    cannot time its speed checks here."""
    course = Course.find(job.course_root)
    data = os.environ.get(DATA_VARIABLE)
    data_path = pathlib.Path(data) if data and pathlib.Path(data).is_dir() else None
    scratch = pathlib.Path(job.scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    # cores of its own on the machine it runs on (a local run, another run and every cluster worker of this node claim
    # from the same cores), where the machine is big enough; None: it shares them and measures in turn
    with cores.claim(DEFAULTS.cores_per_pinned_worker) as claimed:
        limits = dataclasses.replace(job.limits, cpus=claimed)
        judge = _judge_for(course, job.lesson_id, job.notebook, data_path, claimed)
        with judge or contextlib.nullcontext():
            outcome = sandbox.run(dict(job.notebook), limits=limits, chosen=backends.backend(job.backend), scratch=scratch, data=data_path,
                                  lesson_files=course.sources / job.lesson_id if (course.sources / job.lesson_id).is_dir() else None,
                                  judge=judge)
    return JobDone(outcome, judge is not None, list(judge.records) if judge else [], list(judge.notes) if judge else [],
                   judge.reference_log if judge else "",
                   machine=(list(judge.machine_faults) if judge else []) + ([outcome.machine] if outcome.machine else []))


class LocalExecutor:
    """Jobs run in this process's threads (one per grading worker)."""

    def run(self, job: Job) -> JobDone:
        return run_job(job)


LOCAL = LocalExecutor()


def run(job: Job, executor=None) -> JobDone:
    """Run ``job`` with ``executor`` (e.g. `tfperf_lab.grading.cluster.DaskExecutor`; None: in this process)."""
    return (executor or LOCAL).run(job)


def _judge_for(course: Course, lesson_id: str, nb, data: pathlib.Path | None, cpus: tuple[int, ...] | None = None):
    """A `Judge` for this submission when its lesson has speed checks and the instructor's source is here (None otherwise:
    without solutions/ a learner's own `check` measures in its kernel, as the self-check does)."""
    from ..speed.judge import Judge

    try:
        lesson = course.lesson(lesson_id)
    except LookupError:
        return None
    if not course.has_hidden_tests or not lesson.speed_checks() or not lesson.source.exists():
        return None
    return Judge(lesson.source, environment=sandbox.reference_environment(data), executed=nb, cpus=cpus)
