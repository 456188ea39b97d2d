"""nbgrader's exchange for this course: release, collect, grade and return lessons on a JupyterHub.

On a hub the instructor and the students share one folder, the *exchange* (``Exchange.root``,
nbgrader's default ``/usr/local/share/nbgrader/exchange``), and a *course id*
(``CourseDirectory.course_id``, this course's ``tf-performance-lab``). The steps and who runs them:

================  ==========  ==============================================================
step              who         what moves
================  ==========  ==============================================================
release           instructor  ``solutions/<lesson>`` -> release -> ``<root>/<course>/outbound/<lesson>``
fetch_assignment  student     ``outbound/<lesson>`` -> ``~/<lesson>/``
submit            student     ``~/<lesson>/`` -> ``inbound/<student>+<lesson>+<time>+<random>``
collect           instructor  newest ``inbound`` copy per student -> ``<work>/submitted/<student>/<lesson>``
autograde         instructor  ``submitted`` -> ``autograded`` and the gradebook (this course's grader)
return_feedback   instructor  ``generate_feedback`` then ``release_feedback`` -> ``<root>/<course>/feedback/<hash>.html``
fetch_feedback    student     their own ``<hash>.html`` -> ``~/<lesson>/feedback/<time>/<lesson>.html``
================  ==========  ==============================================================

:class:`Instructor` runs the instructor's steps with the course's ``autograder/nbgrader_config.py``
through :func:`settings.nbgrader`, with everything it writes (gradebook, release copy, submitted,
autograded, feedback) in a work folder it is given (the ignored ``.work/`` by default on the command line),
never among the course's files. Collected notebooks go
through the same path as ``tfperf-lab grade``: :func:`stage.stage` (untrusted-input checks, metadata
repair from the release, tampering notes), :func:`batch.grade_staged` (the kernel in its sandbox, a whole-notebook
time limit, per-cell results, speed points only for genuine measurements) and the feedback preprocessors of ``feedback.py``
(no hidden tests, one-line errors), which ``generate_feedback`` applies before ``release_feedback``
copies the HTML into the exchange.

:class:`Student` runs a student's step in a separate process with its own home, working folder,
Jupyter config and data folders (nbgrader's submit cache, which holds the secret that finds the
student's feedback, lives there) and a student config that names only the exchange and the course,
as a hub's student image would. nbgrader takes the student id from the OS account (or from
``JUPYTERHUB_USER`` when the account is ``jovyan``, as in DockerSpawner images); simulated students
share one OS account, so their id is passed with ``--student``, nbgrader's documented override.
"""

from __future__ import annotations

import dataclasses
import pathlib
import re
import shutil
import stat
import sys

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.utils import notebook_hash

from . import batch, settings, stage
from . import untrusted
from ..course import COURSE_ID, Course, WorkFolder
from ..course.config import DEFAULTS, GradingConfig, add_options, escape_help
from .results import SubmissionResult

STEP_TIMEOUT = 180.0  # seconds for one file-moving step (mostly nbgrader's ~2 s of imports, more on a busy machine)
NBGRADER_MESSAGE = re.compile(r"\[\w+ \| (CRITICAL|ERROR)\] (.*)")
# A submission this exchange staged carries this file; a folder nbgrader collect just (re)wrote does not.
STAGED_MARKER = ".staged"


class ExchangeStepError(RuntimeError):
    """An exchange step failed: which step, for whom, and nbgrader's own message."""

    def __init__(self, step: str, who: str, done: settings.Completed | None = None, message: str = ""):
        self.step, self.who, self.done = step, who, done
        if done is not None and not message:
            message = _nbgrader_message(done)
        super().__init__(f"nbgrader {step} failed for {who}: {message}")


def _nbgrader_message(done: settings.Completed) -> str:
    if done.timed_out:
        return f"stopped after {done.seconds:.0f} s (time limit)"
    found = [(level, text.strip()) for level, text in NBGRADER_MESSAGE.findall(done.output)]
    # The exchange's own reason is CRITICAL; the app then adds a generic ERROR "nbgrader <step> failed".
    specific = [text for level, text in found if level == "CRITICAL"] or [text for _, text in found]
    tail = done.output.strip().splitlines()[-5:]
    return "; ".join(specific) if specific else f"exit code {done.returncode}: " + " | ".join(tail)


def _nbgrader_command() -> str:
    return str(pathlib.Path(sys.executable).parent / "nbgrader")


def make_exchange_root(root: pathlib.Path) -> pathlib.Path:
    """Create an exchange folder as a hub administrator would: world-writable with the sticky bit (1777).

    nbgrader's ``release_assignment`` creates ``<root>/<course>/`` with ``outbound`` (0755, students read),
    ``inbound`` (2733: students write and enter but cannot list, so nobody sees another's submission)
    and ``feedback`` (0711: a student can open only a file whose hashed name they know).
    """
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o1777)
    return root


@dataclasses.dataclass
class Instructor:
    """The instructor's side of the exchange for this course.

    ``root`` is the exchange folder, ``work`` the instructor's work folder (gradebook, ``release``,
    ``submitted``, ``collected``, ``autograded``, ``feedback``), ``course_id`` the course's id on
    the hub. ``check_owner`` keeps nbgrader's warning when a submission's OS owner is not the
    student it names; simulated students share one account, so tests turn it off.
    """

    course: Course
    root: pathlib.Path
    work: WorkFolder
    course_id: str = COURSE_ID
    check_owner: bool = True

    @property
    def release_directory(self) -> pathlib.Path:
        return self.work.release

    @property
    def _course(self) -> Course:
        """The course under this exchange's course id (the gradebook keeps one course)."""
        return dataclasses.replace(self.course, id=self.course_id)

    def run(self, step: str, lesson_id: str, *extra: str, timeout: float | None = STEP_TIMEOUT,
            env: dict | None = None) -> settings.Completed:
        """Run ``nbgrader <step> <lesson>`` on this course and exchange; raise :class:`ExchangeStepError` on failure."""
        args = [step, lesson_id, *extra, f"--Exchange.root={self.root}"]  # the course id comes with the work folder's settings
        done = settings.nbgrader(self._course, self.work, args, release=self.release_directory, timeout=timeout, env=env)
        if done.returncode != 0 or done.timed_out:
            raise ExchangeStepError(step, f"the instructor (lesson {lesson_id})", done)
        return done

    def release(self, lesson_ids: list[str], *, force: bool = True) -> list[pathlib.Path]:
        """Register lessons in the gradebook, generate their student versions and put them in ``outbound``."""
        released = []
        for lesson_id in (self.course.lesson(item).id for item in lesson_ids):
            self.register(lesson_id)
            self.run("release_assignment", lesson_id, *(["--force"] if force else []))
            released.append(self.root / self.course_id / "outbound" / lesson_id)
        return released

    def register(self, lesson_id: str) -> None:
        """``generate_assignment`` into ``work/release``: the gradebook gets the lesson and its hidden tests.

        What :func:`batch.prepare` does, under this exchange's course id (the gradebook keeps one course).
        """
        self.run("generate_assignment", lesson_id, "--force")

    def _registered(self, lesson_id: str) -> bool:
        if not self.work.has_gradebook:
            return False
        with Gradebook(self.work.gradebook_url, course_id=self.course_id) as gradebook:
            try:
                gradebook.find_assignment(lesson_id)
                return True
            except MissingEntry:
                return False

    def collect(self, lesson_id: str) -> dict[str, list[str] | untrusted.UntrustedInput]:
        """Collect the newest submission of every student and stage the new ones for grading.

        nbgrader copies each student's newest ``inbound`` folder to ``work/submitted/<student>/<lesson>``
        (``--update``: a newer resubmission replaces the one collected before). Each folder it (re)wrote is
        kept as it arrived in ``work/collected/<student>/<lesson>`` and staged by :func:`stage.stage`.
        Returns the students collected by this call -> notes, or the :class:`untrusted.UntrustedInput`
        that makes their submission ungradable.
        """
        lesson_id = self.course.lesson(lesson_id).id
        extra = ["--update"] + ([] if self.check_owner else ["--ExchangeCollect.check_owner=False"])
        self.run("collect", lesson_id, *extra)
        collected: dict[str, list[str] | untrusted.UntrustedInput] = {}
        for folder in self.work.submitted_folders(lesson_id):
            if (folder / STAGED_MARKER).exists():
                continue  # collected and staged before; nothing newer in the exchange
            student = folder.parent.name
            raw = self.work.collected(student, lesson_id)
            if raw.exists():
                shutil.rmtree(raw)
            shutil.copytree(folder, raw, symlinks=True)
            staged = self._stage(raw, student, lesson_id)
            collected[student] = staged if isinstance(staged, Exception) else staged.notes
        return collected

    def staged(self, lesson_id: str, *, pending_only: bool = False) -> list[str]:
        """Students whose submission is staged for grading; ``pending_only``: not yet graded since it arrived."""
        students = []
        for folder in self.work.submitted_folders(lesson_id):
            notebook = folder / f"{lesson_id}.ipynb"
            if not (folder / STAGED_MARKER).exists() or not notebook.exists():
                continue
            graded = self.work.autograded(folder.parent.name, lesson_id)
            if pending_only and graded.exists() and graded.stat().st_mtime >= notebook.stat().st_mtime:
                continue
            students.append(folder.parent.name)
        return students

    def _stage(self, raw: pathlib.Path, student: str, lesson_id: str, *, write: bool = True) -> stage.Staged | untrusted.UntrustedInput:
        notebook = raw / f"{lesson_id}.ipynb"
        if not notebook.exists() and not notebook.is_symlink():
            found = sorted(p.name for p in raw.glob("*.ipynb"))
            return stage.SubmissionError(f"the submission has no {notebook.name} (it has: {', '.join(found) or 'no notebooks'})")
        try:
            staged = stage.stage(self._course, notebook, student, lesson_id, within=raw)
        except untrusted.UntrustedInput as error:
            return error
        if write:
            staged.write(self.work)
            (self.work.submitted(student, lesson_id).parent / STAGED_MARKER).write_text("", encoding="utf-8")
        return staged

    def autograde(self, lesson_id: str, collected: dict[str, list[str] | untrusted.UntrustedInput] | None = None, *,
                  everyone: bool = False, config: GradingConfig = DEFAULTS, workers: int = batch.DEFAULT_WORKERS) -> list[SubmissionResult]:
        """Autograde staged submissions, ``workers`` at a time (`batch`'s default: as ``tfperf-lab grade`` does), each
        in its sandbox with :func:`batch.grade_staged`.

        Grades every staged submission not graded since it arrived (``everyone``: all of them again),
        with the notes of ``collected`` (:meth:`collect`'s answer); its ungradable ones are reported as
        results with an ``error``. Each notebook runs in its own nbgrader process: its own time limit and
        its own record of the speedups it measured, so speed points go to the submission that measured them.
        """
        lesson_id = self.course.lesson(lesson_id).id
        collected = collected or {}
        if not self._registered(lesson_id):
            self.register(lesson_id)
        results = [SubmissionResult(student, lesson_id, error=str(notes))
                   for student, notes in collected.items() if isinstance(notes, Exception)]
        queued = []
        for student in self.staged(lesson_id, pending_only=not everyone):
            staged = self._stage(self.work.collected(student, lesson_id), student, lesson_id, write=False)
            if isinstance(staged, Exception):
                results.append(SubmissionResult(student, lesson_id, error=str(staged)))
            else:
                queued.append(staged)
        results += batch.grade_queued(self._course, self.work, queued, workers=workers, config=config, with_feedback=False)
        for staged in queued:
            (self.work.submitted(staged.student, lesson_id).parent / STAGED_MARKER).write_text("", encoding="utf-8")  # rewritten by grading
        return sorted(results, key=lambda result: result.student)

    def return_feedback(self, lesson_id: str, students: list[str] | None = None) -> dict[str, pathlib.Path]:
        """``generate_feedback`` (hidden tests removed) then ``release_feedback`` into the exchange.

        Only submissions that came through the exchange get feedback here (``tfperf-lab grade`` may share
        the work folder: its submissions have no secret, and ``release_feedback`` would stop at them).
        Returns student -> the feedback file in the exchange, named by a hash of the submission's secret,
        which only that student's submit cache knows. ``students`` (default: every autograded student who
        submitted through the exchange) must all get feedback, or :class:`ExchangeStepError` says who did not.
        """
        lesson_id = self.course.lesson(lesson_id).id
        autograded = self.work.autograded_students(lesson_id)
        through_exchange = [name for name in autograded if (self.work.autograded(name, lesson_id).parent / "submission_secret.txt").exists()]
        others = sorted(set(autograded) - set(through_exchange))
        exclude = [f"--CourseDirectory.student_id_exclude={','.join(others)}"] if others else []
        self.run("generate_feedback", lesson_id, "--force", *exclude)
        self.run("release_feedback", lesson_id, *exclude)
        released = {}
        for student in through_exchange if students is None else students:
            folder = self.work.feedback(student, lesson_id).parent
            html, secret = folder / f"{lesson_id}.html", folder / "submission_secret.txt"
            if not html.exists():
                raise ExchangeStepError("generate_feedback", f"student {student}", message=f"no feedback at {html} (not autograded?)")
            if not secret.exists():
                raise ExchangeStepError("release_feedback", f"student {student}", message="the submission did not come through the "
                                        "exchange (no submission_secret.txt), so the student could not fetch its feedback")
            target = self.root / self.course_id / "feedback" / f"{notebook_hash(secret=secret.read_text(), notebook_id=lesson_id)}.html"
            if not target.exists():
                raise ExchangeStepError("release_feedback", f"student {student}", message=f"expected {target} in the exchange")
            released[student] = target
        return released


@dataclasses.dataclass
class Student:
    """A student on the hub, simulated: their own home (the working folder) and nbgrader config.

    ``setup()`` writes ``~/.jupyter/nbgrader_config.py`` with only the exchange root and the course id,
    what a hub gives every student; the course's instructor config is never read.
    """

    name: str
    home: pathlib.Path
    root: pathlib.Path
    course_id: str = COURSE_ID

    def setup(self) -> Student:
        config = self.home / ".jupyter" / "nbgrader_config.py"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(f"c = get_config()  # noqa: F821\nc.Exchange.root = {str(self.root)!r}\n"
                          f"c.CourseDirectory.course_id = {self.course_id!r}\n", encoding="utf-8")
        return self

    def environment(self) -> dict:
        """This student's process environment: home, user name and Jupyter folders of their own."""
        home = str(self.home)
        env = settings.tool_environment(HOME=home, USER=self.name, LOGNAME=self.name, JUPYTERHUB_USER=self.name,
                                      JUPYTER_CONFIG_DIR=str(self.home / ".jupyter"),
                                      JUPYTER_DATA_DIR=str(self.home / ".local" / "share" / "jupyter"),
                                      JUPYTER_RUNTIME_DIR=str(self.home / ".local" / "share" / "jupyter" / "runtime"))
        env.pop("JUPYTER_PATH", None)
        env.pop("JUPYTER_CONFIG_PATH", None)
        return env

    def run(self, step: str, lesson_id: str, *extra: str, timeout: float = STEP_TIMEOUT) -> settings.Completed:
        """Run ``nbgrader <step> <lesson>`` as this student, in their home; raise on failure."""
        if not (self.home / ".jupyter" / "nbgrader_config.py").exists():
            self.setup()
        ident = [f"--student={self.name}"] if step in ("submit", "fetch_feedback") else []
        done = settings.run_tool([_nbgrader_command(), step, lesson_id, *ident, *extra], cwd=self.home, env=self.environment(),
                               timeout=timeout)
        if done.returncode != 0 or done.timed_out:
            raise ExchangeStepError(step, f"student {self.name} (lesson {lesson_id})", done)
        return done

    def fetch(self, lesson_id: str) -> pathlib.Path:
        """``nbgrader fetch_assignment``: the released lesson into ``~/<lesson>/``; returns the notebook."""
        self.run("fetch_assignment", lesson_id)
        return self.notebook(lesson_id)

    def notebook(self, lesson_id: str) -> pathlib.Path:
        return self.home / lesson_id / f"{lesson_id}.ipynb"

    def submit(self, lesson_id: str) -> settings.Completed:
        """``nbgrader submit``: ``~/<lesson>/`` into the exchange's inbound (and the student's own cache)."""
        return self.run("submit", lesson_id)

    def fetch_feedback(self, lesson_id: str) -> list[pathlib.Path]:
        """``nbgrader fetch_feedback``: returns the feedback files now in ``~/<lesson>/feedback/<time>/``."""
        self.run("fetch_feedback", lesson_id)
        return sorted((self.home / lesson_id / "feedback").glob("*/*.html"))


DEFAULT_ROOT = "/usr/local/share/nbgrader/exchange"  # nbgrader's own default Exchange.root


STEPS = {
    "release": "put lessons in the exchange's outbound folder, for the students to fetch",
    "collect": "copy the students' new submissions in and stage them for grading",
    "grade": "collect, then autograde what is new (as `tfperf-lab grade` does)",
    "return": "generate feedback and release it to the students",
}


def parser(prog: str = "tfperf-lab exchange", example=lambda command: None):
    """The exchange's command line: one subcommand per step of `STEPS`, each taking the lessons and the exchange's
    options after it. ``example(command)`` (``"exchange"``, ``"exchange grade"``) is the text ending each --help: the
    command line passes its own (`tfperf_lab.cli.example`), which this floor may not import."""
    import argparse

    raw = argparse.RawDescriptionHelpFormatter
    top = argparse.ArgumentParser(prog=prog, description="nbgrader's exchange on a JupyterHub: release a "
                                  "lesson to the students, collect and grade their submissions, return feedback.",
                                  epilog=example("exchange"), formatter_class=raw)
    shared = argparse.ArgumentParser(add_help=False)
    shared.add_argument("lessons", nargs="+", help="lesson ids or unique prefixes, e.g. 01")
    shared.add_argument("--root", default=DEFAULT_ROOT, help=escape_help(f"the exchange folder (default {DEFAULT_ROOT})"))
    shared.add_argument("--course-id", default=COURSE_ID, help=escape_help(f"course id on the hub (default {COURSE_ID})"))
    shared.add_argument("--work", help="instructor work folder: gradebook, submissions, feedback (default: the course's .work/, "
                        "where the formgrader looks)")
    steps = top.add_subparsers(dest="step", required=True, metavar="STEP")
    for step, text in STEPS.items():
        made = steps.add_parser(step, help=escape_help(text), description=text, epilog=example(f"exchange {step}"),
                                formatter_class=raw, parents=[shared])
        if step == "grade":
            made.add_argument("--all", action="store_true", help="grade every collected submission again")
            add_options(made, "notebook_seconds", "cell_seconds")  # the limits `tfperf-lab grade` takes, by the same names
            made.add_argument("--workers", type=int, default=batch.DEFAULT_WORKERS,
                              help=f"notebooks graded at once (default on this machine: {batch.DEFAULT_WORKERS}, as `tfperf-lab grade`)")
    return top


def main(argv: list[str] | None = None, prog: str = "tfperf-lab exchange", course: Course | None = None,
         example=lambda command: None) -> int:
    """The instructor's exchange steps on the command line (``tfperf-lab exchange`` delegates here, with its examples)."""
    args = parser(prog, example).parse_args(argv)

    course = course or Course.find()
    work = WorkFolder(pathlib.Path(args.work)) if args.work else course.default_work
    instructor = Instructor(course, pathlib.Path(args.root).resolve(), work, course_id=args.course_id)
    try:
        lesson_ids = [course.lesson(item).id for item in args.lessons]
        if args.step == "release":
            for path in instructor.release(lesson_ids):
                print(f"released {path.name} -> {path}")
            return 0
        for lesson_id in lesson_ids:
            if args.step == "return":
                for student, path in instructor.return_feedback(lesson_id).items():
                    print(f"{lesson_id}: feedback for {student} released ({path.name})")
                continue
            collected = instructor.collect(lesson_id)
            for student, notes in collected.items():
                state = f"NOT GRADABLE: {notes}" if isinstance(notes, Exception) else "; ".join(["collected", *notes])
                print(f"{lesson_id} ({student}): {state}")
            if args.step == "grade":
                results = instructor.autograde(lesson_id, collected, everyone=args.all, config=GradingConfig.from_options(args),
                                                workers=args.workers)
                for result in results:
                    print("\n".join(result.lines()))
                table = batch.write_csv(results, instructor.work.root / f"grades-{lesson_id}.csv")
                print(f"{lesson_id}: {len(results)} graded; grades: {table}; next: `{prog} return {lesson_id}`")
    except ExchangeStepError as error:
        print(error, file=sys.stderr)
        return 1
    return 0


def mode(path: pathlib.Path) -> int:
    """Permission bits of a path, e.g. ``0o2733`` for the exchange's inbound folder."""
    return stat.S_IMODE(path.stat().st_mode)

