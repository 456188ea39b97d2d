"""Stage 4 of grading, batch: a class folder (or one learner's notebook) through stage -> execute -> score, with feedback.

`grade` finds ``FOLDER/<student>/<lesson>.ipynb`` files, stages each (a bad one lands on its own row and never stops
the class), registers the lessons and students in the gradebook, autogrades with ``workers`` sandboxes at once (each
pinned to its own cores), writes feedback, ``grades.csv`` and the class page (`classpage`: ``WORK/class/index.html``),
and keeps a state file per submission so a stopped run resumes. `check` is a batch of one for a learner, in a
temporary work folder. Every nbgrader step runs in this process; only the notebooks run elsewhere, in their sandboxes.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import hashlib
import json
import os
import pathlib
import re
import shutil
import tempfile
import time
import warnings

from nbgrader.api import Gradebook

from . import autograde, classpage, decisions, intake, job, score, settings, stage, store
from .execute import grader_failed
from . import untrusted
from ..course.config import DEFAULTS, GradingConfig
from ..course import Course, WorkFolder
from .results import SubmissionResult, write_csv

# Parallel gradings share the cores their speed checks time on. A job is pinned to cores of its own only where each job
# gets at least two (lessons measure parallel work: lesson 04's parallel reads need AUTOTUNE to see two cores) and two
# such jobs fit: it claims them where it runs (`tfperf_lab.isolation.cores`). On 2 or 3 cores: two workers, unpinned,
# the count measured free of false failures (docs/flake/workers-2.json). From 4 cores: one worker per two cores, each
# job on its two (not measured on such a machine yet: `tfperf-lab flake --workers N` does it).
DEFAULT_WORKERS = DEFAULTS.workers()


class NoSubmissions(FileNotFoundError):
    """A class folder with nothing to grade."""


def _nbgrader_app(app_class, course: Course, work: WorkFolder, lesson_id: str, student: str | None = None, **overrides):
    from nbgrader.coursedir import CourseDirectory

    nbgrader_config = settings.config(course, work, **overrides)
    coursedir = CourseDirectory(config=nbgrader_config)
    coursedir.assignment_id = lesson_id
    if student is not None:
        coursedir.student_id = student
    app = app_class(coursedir=coursedir, config=nbgrader_config)
    app.force = True
    return app


def prepare(course: Course, work: WorkFolder, lesson_ids: list[str]) -> None:
    """Register lessons in the work gradebook (sources and hidden tests), releasing into the work folder."""
    from nbgrader.converters import GenerateAssignment

    work.root.mkdir(parents=True, exist_ok=True)
    for lesson_id in lesson_ids:
        app = _nbgrader_app(GenerateAssignment, course, work, lesson_id, **{"CourseDirectory.release_directory": str(work.release)})
        try:
            app.start()
        except Exception as error:  # noqa: BLE001
            raise RuntimeError(f"nbgrader generate_assignment {lesson_id} failed: {error}") from None


def register_students(course: Course, work: WorkFolder, students: set[str]) -> None:
    """Add the students to the gradebook before parallel autogrades: two of them creating the same student race
    (nbgrader's check-then-insert fails with "UNIQUE constraint failed: student.id")."""
    with Gradebook(work.gradebook_url, course_id=course.id) as gradebook:
        for student in sorted(students):
            gradebook.update_or_create_student(student)


def feedback(course: Course, work: WorkFolder, lesson_id: str, student: str, result: SubmissionResult | None = None) -> pathlib.Path:
    """Write the HTML feedback (no hidden tests, one-line errors, sanitized) with what happened, in the student's words,
    at its top (`tfperf_lab.grading.feedback.outcome_box`: ``result``, else the saved one); raises RuntimeError when it cannot."""
    from nbgrader.converters import GenerateFeedback

    from .feedback import with_outcome

    app = _nbgrader_app(GenerateFeedback, course, work, lesson_id, student)
    try:
        app.start()
    except Exception as error:  # noqa: BLE001
        raise RuntimeError(f"feedback could not be generated ({error})") from None
    path = work.feedback(student, lesson_id)
    if not path.exists():
        raise RuntimeError("feedback could not be generated (nbgrader wrote no page)")
    if result is None and (kept := store.entry(work, student, lesson_id)) is not None:
        result = kept.result
    if result is not None:
        path.write_text(with_outcome(path.read_text(encoding="utf-8"), result), encoding="utf-8")
    return path


def outcome_page(work: WorkFolder, result: SubmissionResult) -> pathlib.Path | None:
    """The feedback page of a row with no graded notebook to show (not a notebook, not this lesson's, stopped, the grading
    machine's fault): what happened and what to do, in the student's words. None for a student id that is no folder name."""
    from .feedback import outcome_page as page

    try:
        untrusted.check_student_id(result.student)
    except untrusted.UntrustedInput:
        return None
    lesson = re.sub(r"[^\w.-]", "_", result.lesson)[:100] or "notebook"
    path = work.feedback(result.student, lesson)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page(result, f"{lesson}: feedback for {result.student}"), encoding="utf-8")
    return path


def grade_staged(course: Course, work: WorkFolder, staged: stage.Staged, *, config: GradingConfig = DEFAULTS,
                 with_feedback: bool = True, executor=None, semester=None) -> SubmissionResult:
    """Execute and score one staged submission, then write its feedback and state; never raises for the notebook."""
    began = time.monotonic()
    staged.write(work)
    decisions.clear_paid(course, work, staged.student, staged.lesson.id)  # a review decision pays again only for the same file
    before = score.manual_scores(work, course, staged.lesson.id, staged.student)
    run = autograde.autograde(course, work, staged.lesson.id, staged.student, config=config, executor=executor)
    executed = time.monotonic()
    log = work.log(staged.student, staged.lesson.id)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(run.log, encoding="utf-8")
    result = score.score(course, work, staged, run, manual_before=before)
    result.submitted_at, result.submitted_how = staged.handed_in
    if semester is not None:  # so the student's page says it too (every output assesses it again: `store.rows`)
        from . import semester as semester_

        semester_.assess(result, semester)
    scored = time.monotonic()
    if result.error:
        result.error += f" (log: {log})"
    if with_feedback and not result.error and not result.machine:
        try:
            result.feedback = feedback(course, work, staged.lesson.id, staged.student, result)
        except RuntimeError as error:
            result.notes.append(str(error))
    if with_feedback and result.feedback is None:  # every outcome gets a page the student understands
        result.feedback = outcome_page(work, result)
    if result.machine:  # never kept as finished: the next plain `grade` grades it again
        store.faulted(work, result, sha256=staged.sha256, source=staged.origin)
    else:
        store.graded(work, result, sha256=staged.sha256, source=staged.origin, release=staged.lesson.fingerprint())
    result.stages = {"autograde (nbgrader around the sandbox)": executed - began - run.sandbox,
                     "sandbox set-up and runner imports": run.sandbox - sum(run.inside.values()) + run.inside.get("runner_imports", 0.0),
                     "kernel start and cells": run.inside.get("kernel_and_cells", 0.0),
                     "score": scored - executed, "feedback and state": time.monotonic() - scored}
    return result


def find_submissions(folder: pathlib.Path) -> list[tuple[str, pathlib.Path]]:
    """(student, notebook) pairs: ``folder/<student>/*.ipynb`` or ``folder/<student>/<lesson>/*.ipynb`` (links included, to refuse)."""
    pairs = []
    for student_dir in sorted(p for p in folder.iterdir() if (p.is_dir() or p.is_symlink()) and not p.name.startswith(".")):
        if student_dir.is_symlink():
            pairs.append((student_dir.name, student_dir / "(linked folder)"))
            continue
        for path in sorted(_walk(student_dir)):
            if ".ipynb_checkpoints" not in path.parts:
                pairs.append((student_dir.name, path))
    return pairs


def _walk(folder: pathlib.Path):
    """Notebook files under ``folder``, never descending into a linked folder."""
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = [d for d in dirs if not pathlib.Path(root, d).is_symlink()]
        yield from (pathlib.Path(root, name) for name in files if name.endswith(".ipynb"))


STALE = "graded again: the lesson's tests changed since this file was last graded"


@dataclasses.dataclass
class Told:
    """What one `grade` run did besides grading, for the command line to say: ``stale``, (student, lesson) graded again
    because their lesson's tests changed; ``left``, (student, file) not graded because of ``only``."""

    stale: list = dataclasses.field(default_factory=list)
    left: list = dataclasses.field(default_factory=list)


def _finished(course: Course, work: WorkFolder, student: str, path: pathlib.Path) -> tuple[SubmissionResult | None, bool]:
    """The stored result of this very file, if any, and whether it is stale (`store.resume`)."""
    try:
        digest = hashlib.sha256(stage.read_untrusted(path)).hexdigest()
    except untrusted.UntrustedInput:
        return None, False
    return store.resume(course, work, student, path, digest)


def grade(course: Course, folder: pathlib.Path, *, work: WorkFolder | None = None, csv_path: pathlib.Path | None = None,
          config: GradingConfig = DEFAULTS, workers: int = DEFAULT_WORKERS, force: bool = False,
          with_feedback: bool = True, progress: bool = True, cluster: str | None = None,
          cluster_timeout: float = 30.0, only: str | None = None, told: "Told | None" = None, roster=None,
          semester=None) -> list[SubmissionResult]:
    """Autograde every submission in ``folder``, write feedback and a CSV with one column per graded cell.

    Submissions already graded in ``work`` from the same file content are not graded again unless ``force``: a run that
    was stopped halfway resumes where it stopped. A grade taken against an earlier release of its lesson's tests is
    stale and graded again (`STALE` on its row). ``only`` (a lesson id) grades that lesson's submissions again and keeps
    every other row as it stands; files of other lessons not graded yet are left for the next plain run. ``told`` (a
    `Told`) collects what the command line says about this run: the stale rows graded again, the files left. Review
    decisions (same file) and manual scores survive every grading again. With ``cluster`` (a Dask scheduler's address),
    each submission's sandbox run goes to a worker of that cluster (`tfperf_lab.grading.cluster`), as many at once as it has worker threads; this
    machine stages, scores and writes everything; a scheduler that does not answer within ``cluster_timeout`` seconds
    grades nothing. Raises `NoSubmissions` for an empty folder and
    `tfperf_lab.isolation.backends.SandboxUnavailable` when no sandbox works here and ``config.backend`` is not ``"none"``.
    ``config`` (limits, sandbox) travels as one object to every job's runner. The CSV and the class page show the class as
    `store.rows` does: late penalties under ``semester`` and every student of ``roster`` (the course's own files unless
    given; `store.rows` reads them). Returns those rows.
    """
    from . import semester as semester_

    from tfperf import env as tf_env

    from ..isolation import backends

    before = tf_env.cpu_times()  # the class page records what the machine did while it graded

    if not cluster:
        backends.backend(config.backend)  # refuse before anything is written when no sandbox can run (a cluster's workers check theirs)
    work = work or course.default_work
    folder = pathlib.Path(folder)
    semester = semester if semester is not None else semester_.load(semester_.default_path(course))  # the pages say it too
    pairs = find_submissions(folder)
    told = Told() if told is None else told
    if not pairs:
        raise NoSubmissions(f"no submissions in {folder}: expected {folder}/<student>/<lesson>.ipynb")
    queued, results = [], []
    for student, path in pairs:
        earlier, stale = _finished(course, work, student, path)
        if only is not None and earlier is not None and earlier.lesson != only:
            results.append(earlier)  # another lesson: kept as it stands
            continue
        if earlier is not None and not (force or stale or only is not None):
            results.append(earlier)
            continue
        try:
            staged = stage.stage(course, path, student, within=folder)
            if only is not None and staged.lesson.id != only:
                told.left.append((student, path))
                continue
            if stale and not force:
                staged.notes.insert(0, STALE)
                told.stale.append((student, staged.lesson.id))
            staged.handed_in = intake.submission_time(path, folder / student)
            queued.append(staged)
        except untrusted.UntrustedInput as error:
            results.append(SubmissionResult(student, path.stem, error=str(error)))
            keep = store.refused
        except Exception as error:  # noqa: BLE001  (one bad submission never stops the class; our code failed: the machine's)
            results.append(SubmissionResult(student, path.stem, machine=[grader_failed(error)]))
            keep = store.faulted
        else:
            continue
        results[-1].submitted_at, results[-1].submitted_how = intake.submission_time(path, folder / student)
        if with_feedback:
            results[-1].feedback = outcome_page(work, results[-1])
        with contextlib.suppress(Exception):  # kept only under a usable student id, of a file that can be read
            untrusted.check_student_id(student)
            keep(work, results[-1], sha256=hashlib.sha256(stage.read_untrusted(path)).hexdigest(), source=path)
    if queued:
        prepare(course, work, sorted({staged.lesson.id for staged in queued}))
        register_students(course, work, {staged.student for staged in queued})
    remote = None
    if cluster and queued:
        from .cluster import DaskExecutor

        remote = DaskExecutor(cluster, timeout=cluster_timeout)
        workers = remote.slots
    with contextlib.ExitStack() as stack:
        if remote is not None:
            stack.callback(remote.close)
        results += grade_queued(course, work, queued, workers=workers, config=config, with_feedback=with_feedback,
                                progress=progress, executor=remote, semester=semester)
    results = store.rows(work, course, given=results, roster=roster, semester=semester)
    grades = write_csv(results, csv_path or work.grades_csv)
    try:  # every row of the class, resumed ones too; workers only when some ran now
        classpage.write(results, classpage.folder(work), course=course, workers=workers if queued else None,
                        csv=grades, machine=tf_env.fingerprint(before))
    except Exception as error:  # noqa: BLE001  (the grades are written: a page that cannot be drawn loses none)
        warnings.warn(f"the class page could not be written: {type(error).__name__}: {error}", stacklevel=2)
    return results


def grade_queued(course: Course, work: WorkFolder, queued: list, *, workers: int, config: GradingConfig = DEFAULTS,
                 with_feedback: bool = True, progress: bool = False, executor=None, semester=None) -> list[SubmissionResult]:
    """Grade the staged submissions, ``workers`` at a time. Each job claims cores of its own where it runs, if that
    machine has room (`tfperf_lab.isolation.cores`, in `tfperf_lab.grading.job.run_job`): here, or on a cluster worker.

    nbgrader's converters change the process's working directory to the course's and back, each from where it found it:
    two at once in threads can leave it in the course folder. It is put back here once all are done."""
    from tqdm.auto import tqdm

    results = []
    with contextlib.chdir(os.getcwd()), concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        def one(staged: stage.Staged) -> SubmissionResult:
            try:
                return grade_staged(course, work, staged, config=config, with_feedback=with_feedback, executor=executor,
                                    semester=semester)
            except Exception as error:  # noqa: BLE001  (the grader's own code failed: the machine's row, graded again)
                failed = SubmissionResult(staged.student, staged.lesson.id, notes=list(staged.notes),
                                          machine=[grader_failed(error)])
                store.faulted(work, failed, sha256=staged.sha256, source=staged.origin)
                if with_feedback:
                    failed.feedback = outcome_page(work, failed)
                return failed

        futures = [pool.submit(one, staged) for staged in queued]
        for future in tqdm(concurrent.futures.as_completed(futures), total=len(futures), desc="grading", unit="notebook",
                           disable=not progress):
            results.append(future.result())
    return results


def check(course: Course, path: pathlib.Path, *, lesson_id: str | None = None, feedback_to: pathlib.Path | None = None,
          work: WorkFolder | None = None, config: GradingConfig = DEFAULTS) -> SubmissionResult:
    """Grade a learner's own copy of a lesson as the instructor's grader would (visible tests only without ``solutions/``)."""
    owned = work is None
    work = work or WorkFolder(pathlib.Path(tempfile.mkdtemp(prefix="tfperf-check-")))
    try:
        began = time.monotonic()
        try:
            staged = stage.stage(course, path, "self", lesson_id)
        except untrusted.UntrustedInput as error:
            return SubmissionResult("self", lesson_id or "?", error=str(error))
        staging = time.monotonic()
        prepare(course, work, [staged.lesson.id])
        register_students(course, work, {"self"})
        prepared = time.monotonic()
        result = grade_staged(course, work, staged, config=config)
        result.stages = {"stage": staging - began, "gradebook (generate_assignment)": prepared - staging, **result.stages}
        if not course.has_hidden_tests:
            result.notes.insert(0, "graded with the visible tests only: this course folder has no solutions/ (the hidden tests stay "
                                   "with your instructor), so your instructor's grade can be lower")
        if result.feedback is not None:
            target = feedback_to or path.with_name(f"{path.stem}.feedback.html")
            shutil.copy(result.feedback, target)
            result.feedback = target
        return result
    finally:
        if owned:
            shutil.rmtree(work.root, ignore_errors=True)
