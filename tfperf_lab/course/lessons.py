"""The course on disk: one `Course` (its folders and lessons, parsed once) and one `WorkFolder` (every path a grading run writes).

A course folder holds ``autograder/nbgrader_config.py`` (the nbgrader course folder), ``solutions/<lesson>/<lesson>.ipynb``
(sources with hidden tests) and ``lessons/`` (the student versions). `Course.find` locates it from a given folder, the
``TFPERF_COURSE`` environment variable or the working directory and its parents, never from where this package is
installed, so a non-editable install works from any course folder. Each source notebook describes itself in
``metadata.tfperf`` (title, technique, article, what is measured, the article's claim, expected minutes): the README
table, the course report and the time-budget tests all read that one place.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import pathlib

from . import notebook
from .config import COURSE_VARIABLE

COURSE_ID = "tf-performance-lab"
MARKER = pathlib.Path("autograder") / "nbgrader_config.py"


class CourseNotFound(FileNotFoundError):
    """No course folder where one was looked for."""


class UnknownLesson(LookupError):
    """A lesson id that names no lesson (or more than one)."""


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
    source: pathlib.Path
    release: pathlib.Path
    minutes_study: float = 0.0

    @property
    def run_time_text(self) -> str:
        """The run-time promise every lesson's first cell states, generated from ``metadata.tfperf.minutes``."""
        return run_time_text(self.minutes_full, self.minutes_grading, self.minutes_study)

    @property
    def graded_time_text(self) -> str:
        """The grading note's sentence on the time grading takes (`graded_time_text`)."""
        return graded_time_text(self.minutes_full, self.minutes_grading)

    def source_notebook(self) -> dict:
        """A fresh copy of the source notebook (solutions and hidden tests): callers may change it."""
        return notebook.copy(_parsed(self.source))

    def release_notebook(self) -> dict:
        """A fresh copy of the student version."""
        return notebook.copy(_parsed(self.release))

    def fingerprint(self) -> str:
        """The release a grade is taken against: `notebook.fingerprint` of the instructor's source (the student version
        where a learner's copy of the course has no solutions/)."""
        return notebook.fingerprint(_parsed(self.source if self.source.exists() else self.release))

    def grade_cells(self) -> list[dict]:
        """The graded cells of the source, in notebook order: ``{"id", "points", "kind"}``."""
        return notebook.grade_cells(_parsed(self.source))

    def speed_checks(self) -> dict[str, list[str]]:
        """grade_id -> names of the speed checks (``assert_speedup(..., name=...)``) its test cell runs."""
        return notebook.speed_checks(_parsed(self.source))

    def speed_outputs(self) -> dict[str, list[str]]:
        """Speed test cell -> the output tests of its exercise that must pass for it to be paid
        (`tfperf_lab.course.notebook.speed_outputs`)."""
        return notebook.speed_outputs(_parsed(self.source))

    def review_cells(self) -> dict[str, list[str]]:
        """grade_id -> the speed checks whose review flag withholds its points (speed test cells, and structural cells
        ``review_with`` them); see `tfperf_lab.course.notebook.review_cells`."""
        return notebook.review_cells(_parsed(self.source))


@functools.lru_cache(maxsize=64)
def _parsed_at(path: pathlib.Path, mtime_ns: int) -> dict:
    return notebook.read(path)


def _parsed(path: pathlib.Path) -> dict:
    """A notebook parsed once per version on disk (read-only: copy it before changing it)."""
    return _parsed_at(path, path.stat().st_mtime_ns)


def run_time_text(minutes_full: float, minutes_grading: float, minutes_study: float = 0) -> str:
    """What a lesson's first cell says of a learner's time and the machine's; `tfperf-lab run` reports any lesson that overran.

    The time grading takes is the grading note's (`graded_time_text`, the lesson's "How this is graded" section): the
    lesson's opening speaks of the learner's run only.
    """
    study = f"study time: about {_minutes(minutes_study)} · " if minutes_study else ""
    return f"{study}expected run time: under {_minutes(minutes_full)} on a 2-core CPU"


def graded_time_text(minutes_full: float, minutes_grading: float) -> str:
    """The grading note's sentence on the time grading takes. Grading runs smaller workloads than a learner's run, yet
    can take longer: it starts a fresh sandboxed kernel and runs the hidden tests and every speed check; the sentence
    says so when that is the case."""
    why = (": smaller workloads, but a fresh sandboxed kernel, the hidden tests and every speed check"
           if minutes_grading > minutes_full else ", on smaller workloads")
    return f"Graded, the notebook runs in under {_minutes(minutes_grading)} on a 2-core CPU{why}."


def _minutes(value: float) -> str:
    return f"{float(value):g} minute{'' if float(value) == 1 else 's'}"


@dataclasses.dataclass(frozen=True)
class Course:
    """A course folder and its lessons (discovered from ``solutions/<lesson>/<lesson>.ipynb``, in course order)."""

    root: pathlib.Path
    id: str = COURSE_ID

    @classmethod
    def find(cls, start: str | os.PathLike | None = None) -> "Course":
        """The course in ``start`` (or ``$TFPERF_COURSE``, or the working directory) or in one of its parents.

        Raises:
            CourseNotFound: naming where it looked and how to point at a course.
        """
        origin = pathlib.Path(start or os.environ.get(COURSE_VARIABLE) or os.getcwd()).resolve()
        for folder in (origin, *origin.parents):
            if (folder / MARKER).is_file() and ((folder / "solutions").is_dir() or (folder / "lessons").is_dir()):
                return cls(folder)
        raise CourseNotFound(f"no TF Performance Lab course in {origin} or its parents (a course folder holds {MARKER} and "
                             f"solutions/ or lessons/): run the command from the course folder, pass --course PATH or set {COURSE_VARIABLE}")

    @property
    def autograder(self) -> pathlib.Path:
        """The nbgrader course folder (its configuration; where the formgrader starts)."""
        return self.root / "autograder"

    @property
    def config_file(self) -> pathlib.Path:
        return self.root / MARKER

    @property
    def solutions(self) -> pathlib.Path:
        return self.root / "solutions"

    @property
    def has_hidden_tests(self) -> bool:
        """Whether this folder has the sources (an instructor's) or only the student versions (a learner's clone)."""
        return self.solutions.is_dir()

    @property
    def sources(self) -> pathlib.Path:
        """Where nbgrader takes each lesson's tests from: ``solutions/``, else the student versions (visible tests only)."""
        return self.solutions if self.has_hidden_tests else self.releases

    @property
    def releases(self) -> pathlib.Path:
        return self.root / "lessons"

    @property
    def readme(self) -> pathlib.Path:
        return self.root / "README.md"

    @property
    def pyproject(self) -> pathlib.Path:
        return self.root / "pyproject.toml"

    @property
    def docs(self) -> pathlib.Path:
        return self.root / "docs"

    @property
    def default_work(self) -> "WorkFolder":
        """The instructor's work folder (ignored by git)."""
        return WorkFolder(self.root / ".work")

    @functools.cached_property
    def lessons(self) -> tuple[Lesson, ...]:
        """Every lesson with a source notebook, in course order."""
        found = []
        for folder in sorted(p for p in self.sources.iterdir() if p.is_dir()):
            source = folder / f"{folder.name}.ipynb"
            if not source.exists():
                continue
            meta = _parsed(source).get("metadata", {}).get("tfperf", {})
            minutes = meta.get("minutes", {})
            found.append(Lesson(folder.name, meta.get("title", folder.name), meta.get("technique", ""), meta.get("article", ""),
                                meta.get("measures", ""), meta.get("claim", ""), float(minutes.get("full", 0)),
                                float(minutes.get("grading", 0)), source, self.releases / folder.name / f"{folder.name}.ipynb",
                                float(minutes.get("study", 0))))
        return tuple(found)

    def lesson(self, lesson_id: str) -> Lesson:
        """The lesson named ``lesson_id`` (its folder name, or a unique prefix such as ``01``).

        Raises:
            UnknownLesson: listing the lessons there are.
        """
        matches = [item for item in self.lessons if item.id == lesson_id or item.id.startswith(lesson_id)]
        if len(matches) != 1:
            raise UnknownLesson(f"unknown lesson {lesson_id!r}; lessons: {', '.join(item.id for item in self.lessons)}")
        return matches[0]

    def select(self, lesson_ids: list[str] | None) -> list[Lesson]:
        """The lessons named (every lesson when none is)."""
        return [self.lesson(item) for item in lesson_ids] if lesson_ids else list(self.lessons)


@dataclasses.dataclass(frozen=True)
class WorkFolder:
    """Everything a grading run writes, and the one place its paths are built.

    ``submitted/<student>/<lesson>/`` (staged copies), ``autograded/`` and ``feedback/`` (nbgrader's), ``gradebook.db``,
    ``state/`` (what was graded from which file, for resuming), ``review/`` (review decisions), ``faults/`` (the
    grading machine's faults per file), ``logs/``, ``release/`` (the student versions nbgrader
    generated for this gradebook), ``sandbox/`` (each submission's disposable folders) and ``grades.csv``.
    """

    root: pathlib.Path

    def __post_init__(self):
        object.__setattr__(self, "root", pathlib.Path(self.root).resolve())

    @property
    def gradebook_url(self) -> str:
        return f"sqlite:///{self.root / 'gradebook.db'}"

    @property
    def release(self) -> pathlib.Path:
        return self.root / "release"

    @property
    def grades_csv(self) -> pathlib.Path:
        return self.root / "grades.csv"

    @property
    def records(self) -> pathlib.Path:
        """``records/<student>/``: what each sandbox run gave back (`tfperf_lab.grading.execute.RunFiles`)."""
        return self.root / "records"

    @property
    def sandboxes(self) -> pathlib.Path:
        return self.root / "sandbox"

    @property
    def has_gradebook(self) -> bool:
        return (self.root / "gradebook.db").exists()

    def submitted(self, student: str, lesson_id: str) -> pathlib.Path:
        """The staged notebook nbgrader autogrades."""
        return self.root / "submitted" / student / lesson_id / f"{lesson_id}.ipynb"

    def submitted_folders(self, lesson_id: str) -> list[pathlib.Path]:
        """``submitted/<student>/<lesson>/`` of every student with a submission of the lesson."""
        return sorted((self.root / "submitted").glob(f"*/{lesson_id}"))

    def autograded_students(self, lesson_id: str) -> list[str]:
        return sorted(p.parent.name for p in (self.root / "autograded").glob(f"*/{lesson_id}"))

    def collected(self, student: str, lesson_id: str) -> pathlib.Path:
        """The exchange's copy of a submission as it arrived (``collected/<student>/<lesson>/``)."""
        return self.root / "collected" / student / lesson_id

    def autograded(self, student: str, lesson_id: str) -> pathlib.Path:
        return self.root / "autograded" / student / lesson_id / f"{lesson_id}.ipynb"

    def feedback(self, student: str, lesson_id: str) -> pathlib.Path:
        return self.root / "feedback" / student / lesson_id / f"{lesson_id}.html"

    def state(self, student: str, lesson_id: str) -> pathlib.Path:
        return self.root / "state" / student / f"{lesson_id}.json"

    def states(self, student: str) -> list[pathlib.Path]:
        return sorted((self.root / "state" / student).glob("*.json"))

    def decision(self, student: str, lesson_id: str) -> pathlib.Path:
        """A person's review decision on a submission (`tfperf_lab.grading.decisions`)."""
        return self.root / "review" / student / f"{lesson_id}.json"

    def faults(self, student: str, lesson_id: str) -> pathlib.Path:
        """The grading machine's faults on one submission's file (`tfperf_lab.grading.store.faulted`)."""
        return self.root / "faults" / student / f"{lesson_id}.json"

    def log(self, student: str, lesson_id: str) -> pathlib.Path:
        return self.root / "logs" / f"{student}-{lesson_id}.log"

    def course_directory(self, course: Course) -> dict[str, str]:
        """nbgrader's ``CourseDirectory`` settings that put this work folder under ``course``."""
        return {"root": str(course.root), "course_id": course.id, "submitted_directory": str(self.root / "submitted"),
                "autograded_directory": str(self.root / "autograded"), "feedback_directory": str(self.root / "feedback"),
                "db_url": self.gradebook_url}

    def nbgrader_arguments(self, course: Course) -> list[str]:
        """The same settings as nbgrader command-line options."""
        return [f"--CourseDirectory.{key}={value}" for key, value in self.course_directory(course).items()]
