"""Helpers of the pipeline tests: the course under test, submissions built from its own notebooks, and grading them."""

import ast
import contextlib
import csv
import functools
import hashlib
import io
import json
import os
import pathlib
import shutil
import time

import pytest

from tfperf import env as tfenv
from tfperf_lab.grading import batch
from tfperf_lab.course import Course, Lesson, notebook, variants, WorkFolder
from tfperf_lab.grading.results import SubmissionResult

ROOT = pathlib.Path(__file__).resolve().parents[1]
COURSE = Course.find(ROOT)


def write_submission(folder: pathlib.Path, student: str, lesson: Lesson, notebook: dict | None = None,
                     source: pathlib.Path | None = None) -> pathlib.Path:
    """Put a notebook at FOLDER/<student>/<lesson>.ipynb, from a dict or a file."""
    target = folder / student / f"{lesson.id}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    if notebook is not None:
        target.write_text(json.dumps(notebook), encoding="utf-8")
    else:
        shutil.copy(source, target)
    return target


def with_changes(lesson: Lesson, changes: dict[str, dict[str, str]]) -> dict:
    """The reference solution with text replacements applied to several cells: {cell id: {old: new}}."""
    return variants.apply(lesson.source_notebook(), {cell: tuple(replace.items()) for cell, replace in changes.items()})


def with_solution(lesson: Lesson, grade_id: str, replace: dict[str, str]) -> dict:
    """The reference solution with text replacements applied to one solution cell."""
    return with_changes(lesson, {grade_id: replace})


@functools.lru_cache(maxsize=1)
def _transformer():
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager()


def _binds_and_reads(source: str) -> tuple[set[str], set[str]] | None:
    """The names a cell binds and the names it reads (a string that is a name counts as read: ``globals()["x"]``),
    by a plain reading of its Python with IPython's magics turned into calls; None when it does not parse."""
    try:
        tree = ast.parse(_transformer().transform_cell(source))
    except SyntaxError:
        return None
    binds, reads = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (binds if isinstance(node.ctx, (ast.Store, ast.Del)) else reads).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            binds.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            binds |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            reads.add(node.value)
    return binds, reads


def lean(lesson: Lesson, nb: dict) -> dict:
    """``nb`` with the lesson's demonstrations emptied where no later cell reads a name they bind, as a learner may
    delete them: the instructor's plain code cells (no nbgrader role, not a speed fixture) whose text is unchanged.
    Every cell a learner wrote or edited, every answer, test and fixture, and every cell they need, still run.

    The test run's class grades every answer but the references this way (a lesson 01 variant graded alone in 13.1 s
    instead of 15.5 s): the answers built to lose points, the reaches and the honest corpus, whose styles live in the
    answer cells, all of which still run. The references and the untouched student versions run in full, so the
    demonstrations are graded too."""
    nb = notebook.copy(nb)
    theirs = {cell.get("id"): notebook.source(cell) for cell in lesson.source_notebook()["cells"]}
    needed: set[str] = set()
    for cell in reversed(nb["cells"]):
        if cell.get("cell_type") != "code":
            continue
        source = notebook.source(cell)
        names = _binds_and_reads(source)
        if names is None:
            continue
        role = notebook.nbgrader_meta(cell)
        plain = (not (role.get("grade") or role.get("solution") or role.get("locked"))
                 and notebook.FIXTURE_TAG not in cell.get("metadata", {}).get("tags", []) and theirs.get(cell.get("id")) == source)
        if plain and not names[0] & needed:
            cell["source"], cell["outputs"], cell["execution_count"] = "", [], None
            continue
        needed |= names[1]
    return nb


def scores(result) -> dict[str, float | None]:
    return {cell.id: cell.score for cell in result.cells}


def assert_keeps_and_loses(result, keeps, loses) -> None:
    """The submission was graded, every cell of KEEPS scored points and every cell of LOSES scored exactly 0.

    A cell name that the result lacks counts as a failure on either side, so a renamed test cell cannot pass unnoticed.
    """
    assert result.error is None, "\n".join(result.lines())
    got = scores(result)
    lost = [cell for cell in keeps if not got.get(cell)]
    kept = [cell for cell in loses if got.get(cell) != 0]
    assert not lost and not kept, f"should keep points but did not: {lost}; should lose them but did not: {kept}\n" + "\n".join(result.lines())


def hidden_lines(lesson: Lesson) -> list[str]:
    """Lines of the source's hidden test regions (longer than 12 characters) that appear nowhere in the student version."""
    visible = json.dumps(lesson.release_notebook())
    lines = []
    for cell in lesson.source_notebook()["cells"]:
        for region in notebook.hidden_regions(notebook.source(cell)):
            lines += [line.strip() for line in region.splitlines()
                      if len(line.strip()) > 12 and json.dumps(line.strip())[1:-1] not in visible]
    return lines


def leaks(html: str, lesson: Lesson) -> list[str]:
    """What a feedback page shows that it must not: hidden test lines, the hidden-test markers, IPython traceback frames.

    ("Cell In[12], line 3" and the "---->" marker are IPython's; a lesson may print TensorFlow's own
    "(most recent call last)" op history as ordinary output, which is fine.)
    """
    found = [line for line in hidden_lines(lesson) if line in html]
    return found + [mark for mark in ("BEGIN HIDDEN TESTS", "Cell In[", "----&gt; ") if mark in html]


class GradedClass:
    """The test run's class: every submission the selected test modules grade with the grader's defaults, graded once,
    together, as an instructor grades a class: ``tfperf-lab grade FOLDER`` (two workers, feedback pages, the CSV).

    A module says what it puts in the class with a ``class_submissions()`` function (``{name: notebook}`` for its
    ``LESSON``, or ``{(lesson id, name): notebook}``) and reads its results through `class_results`. A notebook that
    two modules submit (the reference of lessons 01 and 03, say) is graded once. One class instead of one per module
    keeps both workers busy to the end instead of draining them at every module, and grades no notebook twice. What the
    command printed and its CSV rows are kept too (`printed_of`, `rows_of`); the results are read back from the work
    folder's saved states, which is what a second ``tfperf-lab grade`` resumes from.
    """

    def __init__(self):
        self.notebooks: dict[tuple[str, str], dict] = {}  # (lesson id, student) -> notebook
        self.digests: dict[tuple[str, str], tuple[str, str]] = {}  # (lesson id, content digest) -> (lesson id, student)
        self.names: dict[tuple[str, str, str], str] = {}  # (module, lesson id, module's name) -> student
        self.results: dict[tuple[str, str], SubmissionResult] = {}
        self.rows: dict[tuple[str, str], dict] = {}  # (lesson id, student) -> the CSV row
        self.printed = ""  # what `tfperf-lab grade` printed
        self.code: int | None = None  # its exit code
        self.left_behind: list[str] = []
        self.work: pathlib.Path | None = None  # the grading's work folder (its release/ holds every lesson it graded)
        self.seconds = 0.0  # the grading's wall time
        self.busy = 0.0  # the machine's busy CPU seconds meanwhile (/proc/stat)

    def add(self, module: str, lesson_id: str, name: str, nb: dict) -> None:
        digest = hashlib.sha256(json.dumps(nb, sort_keys=True).encode()).hexdigest()
        known = self.digests.get((lesson_id, digest))
        if known is None:
            student = name if (lesson_id, name) not in self.notebooks else f"{module.removeprefix('test_')}-{name}"
            known = self.digests[(lesson_id, digest)] = (lesson_id, student)
            self.notebooks[known] = nb
        self.names[(module, lesson_id, name)] = known[1]

    def add_module(self, module) -> None:
        """The module's submissions; each one but a lesson's reference, and those ``module.runs_in_full(name)`` names,
        runs `lean`."""
        lesson = getattr(module, "LESSON", None)
        in_full = getattr(module, "runs_in_full", lambda name: False)
        for key, nb in module.class_submissions().items():
            lesson_id, name = key if isinstance(key, tuple) else (lesson.id, key)
            of = COURSE.lesson(lesson_id)
            self.add(module.__name__, lesson_id, name, nb if in_full(name) or nb == of.source_notebook() else lean(of, nb))

    def grade(self, tmp_path_factory) -> None:
        """Grade the class with the instructor's command; kernels get a temporary folder of their own, and what they
        leave in it is ``left_behind``."""
        from tfperf_lab import cli

        folder, work, elsewhere = (tmp_path_factory.mktemp(name) for name in ("class", "class_work", "elsewhere"))
        self.work = work
        for (lesson_id, student), nb in self.notebooks.items():
            write_submission(folder, student, COURSE.lesson(lesson_id), nb)
        printed = io.StringIO()
        began, busy = time.monotonic(), tfenv.busy_seconds()
        with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(printed):
            patch.setenv("TMPDIR", str(elsewhere))
            self.code = cli.main(["--course", str(COURSE.root), "grade", str(folder), "--work", str(work),
                                  "--workers", str(batch.DEFAULT_WORKERS)])
        self.seconds, self.busy = time.monotonic() - began, tfenv.busy_seconds() - busy
        global GRADED
        GRADED = self  # conftest's terminal summary says where its time went
        self.printed = printed.getvalue()
        with (work / "grades.csv").open(encoding="utf-8") as handle:
            self.rows = {(row["lesson"], row["student"]): row for row in csv.DictReader(handle)}
        folder_of = WorkFolder(work)
        for lesson_id, student in self.notebooks:
            state = folder_of.state(student, lesson_id)
            self.results[(lesson_id, student)] = (
                SubmissionResult.from_dict(json.loads(state.read_text(encoding="utf-8"))["result"]) if state.exists() else
                SubmissionResult(student, lesson_id, error=f"no saved result; the CSV says: {self.rows.get((lesson_id, student))}"))
        named_reference = {(lesson, student) for (_, lesson, name), student in self.names.items() if name == "reference"}
        keep_measurements(self.results.values(), references=named_reference)
        self.left_behind = sorted(p.name for p in elsewhere.iterdir()) + sorted(p.name for p in (work / "tmp").glob("*"))

    def time_spent(self) -> list[str]:
        """Where the class's wall time went, per lesson: notebooks, their summed grading seconds and the seconds their
        speed checks spent measuring (one at a time, the other worker paused, where two workers share 2 cores). CI
        prints it, so the suite's largest cost is read from every run, not guessed."""
        cores = os.cpu_count() or 1
        lines = [f"{len(self.results)} notebooks in {self.seconds:.0f} s with {batch.DEFAULT_WORKERS} workers on {cores} cores; "
                 f"the machine busy {self.busy:.0f} of {self.seconds * cores:.0f} CPU seconds; measuring "
                 f"{sum(m.elapsed for r in self.results.values() for m in r.measurements):.0f} s"]
        by_lesson: dict[str, list[SubmissionResult]] = {}
        for (lesson, _), result in sorted(self.results.items()):
            by_lesson.setdefault(lesson, []).append(result)
        for lesson, results in by_lesson.items():
            lines.append(f"  {lesson:22} {len(results):3} notebooks  {sum(r.seconds for r in results):6.0f} s graded  "
                         f"{sum(m.elapsed for r in results for m in r.measurements):5.0f} s measuring  "
                         f"slowest {max(r.seconds for r in results):4.0f} s")
        return lines

    def _mine(self, module: str, lesson_id: str | None):
        return [(lesson, name, student) for (owner, lesson, name), student in self.names.items()
                if owner == module and lesson_id in (None, lesson)]

    def of(self, module: str, lesson_id: str | None = None) -> dict[str, SubmissionResult]:
        """A module's results by the names it gave (one lesson's, when the module submitted to several)."""
        return {name: self.results[(lesson, student)] for lesson, name, student in self._mine(module, lesson_id)}

    def rows_of(self, module: str) -> dict[tuple[str, str], dict]:
        """A module's CSV rows, by (the name it gave, lesson id)."""
        return {(name, lesson): self.rows[(lesson, student)] for lesson, name, student in self._mine(module, None)}

    def printed_of(self, module: str) -> dict[tuple[str, str], str]:
        """What `tfperf-lab grade` printed for each of a module's submissions (its head line and the indented lines under
        it), by (the name it gave, lesson id)."""
        return {(name, lesson): _printed(self.printed, lesson, student) for lesson, name, student in self._mine(module, None)}


def _printed(printed: str, lesson_id: str, student: str) -> str:
    taken: list[str] = []
    for line in printed.splitlines():
        if line.startswith(f"{lesson_id} ({student}): "):
            taken.append(line)
        elif taken and line.startswith("  "):
            taken.append(line)
        elif taken:
            break
    return "\n".join(taken)


def class_results(lesson: Lesson | None = None, *, name: str = "graded"):
    """A module fixture called ``name``: this module's results from the test run's class (conftest's ``graded_class``)."""
    @pytest.fixture(scope="module", name=name)
    def graded(request, graded_class):
        return graded_class.of(request.module.__name__, lesson.id if lesson else None)
    return graded


GRADED: GradedClass | None = None  # the test run's class, once graded
MEASURED: list = []  # (lesson, student, Record) of every graded speed check in this test run: conftest prints their margins


def keep_measurements(results, references: set[tuple[str, str]] = frozenset()) -> None:
    """Add the graded speed checks of ``results`` to MEASURED; a (lesson id, student) in ``references`` is a reference
    answer that the class graded under another module's name."""
    MEASURED.extend((result.lesson, "reference" if (result.lesson, result.student) in references else result.student, record)
                    for result in results for record in result.measurements if record.threshold)
