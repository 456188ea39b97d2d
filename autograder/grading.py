"""Grading through nbgrader: a learner's `check` of one notebook, an instructor's `grade` of a folder.

Both take the same path: the submission is copied into a work folder (the original is never
opened for writing), its nbgrader cell metadata is repaired from the release by cell id if an
editor stripped it, nbgrader autogrades it in a subprocess with a whole-notebook time limit, and
the result is read back per graded cell from the gradebook and the autograded notebook, together
with the speedups the tests measured (``TFPERF_RECORD``).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import pathlib
import re
import shutil
import tempfile

from nbgrader.api import Gradebook, MissingEntry

from tfperf.report import RECORD_VARIABLE, load_records

from . import course

ERROR_LINE = re.compile(r"\[(?:Autograde|GenerateAssignment|GenerateFeedback)App \| ERROR\] (.*)")


@dataclasses.dataclass
class CellResult:
    """One graded cell: ``status`` is passed, failed, error, timeout, missing or manual."""

    id: str
    score: float | None
    max_score: float
    kind: str
    status: str
    message: str = ""


@dataclasses.dataclass
class SubmissionResult:
    """The grade of one submitted notebook, or why it could not be graded (``error``)."""

    student: str
    lesson: str
    cells: list[CellResult] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    measurements: list[dict] = dataclasses.field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0
    feedback: pathlib.Path | None = None

    @property
    def score(self) -> float:
        return sum(cell.score or 0.0 for cell in self.cells if cell.kind == "auto")

    @property
    def max_score(self) -> float:
        return sum(cell.max_score for cell in self.cells if cell.kind == "auto")

    def lines(self) -> list[str]:
        """A readable per-cell report."""
        head = f"{self.lesson} ({self.student}): "
        if self.error:
            lines = [head + f"NOT GRADED: {self.error}"]
        else:
            manual = sum(cell.max_score for cell in self.cells if cell.kind == "manual")
            lines = [head + f"{self.score:g} / {self.max_score:g} points autograded" + (f", {manual:g} more graded by hand" if manual else "")
                     + f" ({self.seconds:.0f} s)"]
        lines += [f"  note: {note}" for note in self.notes]
        width = max((len(cell.id) for cell in self.cells), default=10)
        for cell in self.cells:
            score = "-" if cell.score is None else f"{cell.score:g}"
            lines.append(f"  {cell.id:<{width}}  {score:>3}/{cell.max_score:<3g} {cell.status:<8} {cell.message}".rstrip())
        for item in self.measurements:
            lines.append(f"  measured {item['name']}: {item['speedup']:.2f}x (95% CI {item['ci'][0]:.2f}-{item['ci'][1]:.2f}x"
                         + (f", needs >= {item['threshold']:g}x" if item.get("threshold") else "") + ")")
        if self.feedback:
            lines.append(f"  feedback: {self.feedback}")
        return lines


class SubmissionError(ValueError):
    """A submission that cannot be graded at all: not a notebook, or not one of this course's."""


def identify(notebook: dict, filename: str) -> str:
    """Which lesson a submitted notebook belongs to: its metadata, else its file name, else its cells."""
    known = {lesson.id: lesson for lesson in course.lessons()}
    tagged = notebook.get("metadata", {}).get("tfperf", {}).get("lesson")
    if tagged in known:
        return tagged
    by_name = [lesson_id for lesson_id in known if lesson_id in filename]
    if len(by_name) == 1:
        return by_name[0]
    ids = {cell.get("id") for cell in notebook.get("cells", [])}
    overlap = {lesson_id: len(ids & {c["id"] for c in lesson.grade_cells()}) for lesson_id, lesson in known.items()}
    best = max(overlap, key=overlap.get, default=None)
    if best and overlap[best]:
        return best
    raise SubmissionError(f"cannot tell which lesson {filename} is: no tfperf metadata, no lesson name in the file name, no known cell ids")


def _load_submission(path: pathlib.Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SubmissionError(f"{path.name} cannot be read ({error})") from None
    if not text.strip():
        raise SubmissionError(f"{path.name} is empty")
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as error:
        raise SubmissionError(f"{path.name} is not valid notebook JSON (line {error.lineno}: {error.msg}); re-download it from Jupyter") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise SubmissionError(f"{path.name} is JSON but not a Jupyter notebook (no cell list)")
    return notebook


def _repair_metadata(notebook: dict, release: dict) -> int:
    """Give back nbgrader metadata to cells that lost it, matched by cell id; returns how many."""
    by_id = {cell.get("id"): cell["metadata"]["nbgrader"] for cell in release["cells"] if "nbgrader" in cell.get("metadata", {})}
    repaired = 0
    for cell in notebook["cells"]:
        metadata = cell.setdefault("metadata", {})
        if "nbgrader" not in metadata and cell.get("id") in by_id:
            metadata["nbgrader"] = json.loads(json.dumps(by_id[cell["id"]]))
            repaired += 1
    return repaired


def prepare(work: pathlib.Path, lesson_ids: list[str]) -> None:
    """Register lessons in the work gradebook (sources and hidden tests), releasing into the work folder."""
    for lesson_id in lesson_ids:
        done = course.nbgrader(["generate_assignment", lesson_id, "--force"], work=work, release=work / "release")
        if done.returncode != 0:
            raise RuntimeError(f"nbgrader generate_assignment {lesson_id} failed:\n{done.output[-3000:]}")


def submit(path: pathlib.Path, work: pathlib.Path, student: str, lesson_id: str | None = None) -> tuple[str, list[str]]:
    """Copy a submission into ``work/submitted/<student>/<lesson>/``; returns the lesson and notes."""
    notebook = _load_submission(path)
    found = identify(notebook, path.name)
    if lesson_id and found != lesson_id:
        raise SubmissionError(f"{path.name} is lesson {found}, not {lesson_id}")
    notes = []
    repaired = _repair_metadata(notebook, course.read_notebook(course.lesson(found).release))
    if repaired:
        notes.append(f"{repaired} cells had lost their nbgrader metadata; restored from the release by cell id")
    folder = work / "submitted" / student / found
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / f"{found}.ipynb").write_text(json.dumps(notebook, indent=1), encoding="utf-8")
    stamp = path.parent / "timestamp.txt"
    if stamp.exists():
        shutil.copy(stamp, folder / "timestamp.txt")
    return found, notes


def _cell_outcomes(autograded: pathlib.Path) -> dict[str, tuple[str, str]]:
    """grade_id -> (status from outputs, one-line message) from an autograded notebook."""
    outcomes = {}
    if not autograded.exists():
        return outcomes
    for cell in course.read_notebook(autograded)["cells"]:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or cell.get("id")
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        stderr = [o for o in cell.get("outputs", []) if o.get("output_type") == "stream" and o.get("name") == "stderr"]
        if errors:
            ename, evalue = errors[0].get("ename", "Error"), str(errors[0].get("evalue", ""))
            status = "timeout" if ename == "CellTimeoutError" else ("failed" if ename == "AssertionError" else "error")
            outcomes[grade_id] = (status, f"{ename}: {evalue}".splitlines()[0][:300] if evalue else ename)
        elif stderr:
            outcomes[grade_id] = ("error", "wrote to stderr: " + "".join(o.get("text", "") for o in stderr).strip().splitlines()[0][:200])
        else:
            outcomes[grade_id] = ("passed", "")
    return outcomes


def collect(work: pathlib.Path, lesson_id: str, student: str) -> list[CellResult]:
    """Per-cell scores of one autograded submission, in notebook order."""
    outcomes = _cell_outcomes(work / "autograded" / student / lesson_id / f"{lesson_id}.ipynb")
    results = []
    with Gradebook(f"sqlite:///{work / 'gradebook.db'}", course_id=course.COURSE_ID) as gradebook:
        try:
            grades = {g.name: g for g in gradebook.find_submission_notebook(lesson_id, lesson_id, student).grades}
        except MissingEntry:
            grades = {}
        for cell in course.lesson(lesson_id).grade_cells():
            grade = grades.get(cell["id"])
            status, message = outcomes.get(cell["id"], ("missing", "cell not found in the graded notebook"))
            if cell["kind"] == "manual":
                score = grade.manual_score if grade is not None else None
                results.append(CellResult(cell["id"], score, cell["points"], "manual", "manual", "graded by your instructor"))
                continue
            score = grade.score if grade is not None else 0.0
            if status == "passed" and score < cell["points"]:
                status, message = "failed", "no points awarded"
            results.append(CellResult(cell["id"], score, cell["points"], "auto", status, message))
    return results


def autograde(work: pathlib.Path, lesson_id: str, student: str, *, timeout: float | None = None) -> SubmissionResult:
    """Autograde one submitted notebook already in ``work``; never raises for a bad submission."""
    lesson = course.lesson(lesson_id)
    limit = timeout or max(120.0, lesson.minutes_grading * 60 * 3)
    records = work / "records" / student / f"{lesson_id}.jsonl"
    records.parent.mkdir(parents=True, exist_ok=True)
    records.unlink(missing_ok=True)
    env = course.tool_environment(**{RECORD_VARIABLE: str(records)})
    done = course.nbgrader(["autograde", lesson_id, "--student", student, "--force"], work=work, timeout=limit, env=env)
    log = work / "logs" / f"{student}-{lesson_id}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(done.output, encoding="utf-8")
    result = SubmissionResult(student, lesson_id, seconds=done.seconds, measurements=load_records(records))
    if done.timed_out:
        result.error = f"the notebook did not finish within {limit:.0f} s and was stopped (log: {log})"
    else:
        errors = ERROR_LINE.findall(done.output)
        if done.returncode != 0 or errors:
            result.error = _explain(done.output, errors) + f" (log: {log})"
    result.cells = collect(work, lesson_id, student)
    return result


def _explain(output: str, errors: list[str]) -> str:
    if "DeadKernelError" in output or "Kernel died" in output:
        return "the kernel died while running the notebook (os._exit, a crash or out of memory)"
    return errors[0] if errors else "nbgrader failed: " + output.strip().splitlines()[-1][:300]


def feedback(work: pathlib.Path, lesson_id: str, student: str) -> pathlib.Path | None:
    """Write the HTML feedback (no hidden tests, one-line errors); returns its path."""
    course.nbgrader(["generate_feedback", lesson_id, "--student", student, "--force"], work=work)
    path = work / "feedback" / student / lesson_id / f"{lesson_id}.html"
    return path if path.exists() else None


def check(notebook: pathlib.Path, *, lesson_id: str | None = None, feedback_to: pathlib.Path | None = None,
          work: pathlib.Path | None = None, timeout: float | None = None) -> SubmissionResult:
    """Grade a learner's own copy of a lesson, as the instructor's autograder would."""
    owned = work is None
    work = pathlib.Path(tempfile.mkdtemp(prefix="tfperf-check-")) if owned else work
    try:
        try:
            found, notes = submit(notebook, work, "self", lesson_id)
        except SubmissionError as error:
            return SubmissionResult("self", lesson_id or "?", error=str(error))
        prepare(work, [found])
        result = autograde(work, found, "self", timeout=timeout)
        result.notes[:0] = notes
        html = feedback(work, found, "self")
        if html is not None:
            target = feedback_to or notebook.with_name(f"{notebook.stem}.feedback.html")
            shutil.copy(html, target)
            result.feedback = target
        return result
    finally:
        if owned:
            shutil.rmtree(work, ignore_errors=True)


def find_submissions(folder: pathlib.Path) -> list[tuple[str, pathlib.Path]]:
    """(student, notebook) pairs: ``folder/<student>/*.ipynb`` or ``folder/<student>/<lesson>/*.ipynb``."""
    pairs = []
    for student_dir in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for path in sorted(student_dir.rglob("*.ipynb")):
            if ".ipynb_checkpoints" not in path.parts and not path.name.endswith(".feedback.html"):
                pairs.append((student_dir.name, path))
    return pairs


def grade(folder: pathlib.Path, *, work: pathlib.Path = course.WORK, csv_path: pathlib.Path | None = None,
          timeout: float | None = None, progress: bool = True) -> list[SubmissionResult]:
    """Autograde every submission in ``folder``, write feedback and a CSV with one column per graded cell."""
    from tqdm.auto import tqdm

    pairs = find_submissions(folder)
    if not pairs:
        raise SystemExit(f"no submissions in {folder}: expected {folder}/<student>/<lesson>.ipynb")
    queued, results = [], []
    for student, path in pairs:
        try:
            found, notes = submit(path, work, student)
            queued.append((student, found, notes))
        except SubmissionError as error:
            results.append(SubmissionResult(student, path.stem, error=str(error)))
    prepare(work, sorted({lesson_id for _, lesson_id, _ in queued}))
    for student, lesson_id, notes in tqdm(queued, desc="grading", unit="notebook", disable=not progress):
        result = autograde(work, lesson_id, student, timeout=timeout)
        result.notes[:0] = notes
        result.feedback = feedback(work, lesson_id, student)
        results.append(result)
    write_csv(results, csv_path or work / "grades.csv")
    return results


def write_csv(results: list[SubmissionResult], path: pathlib.Path) -> pathlib.Path:
    """One row per submission: student, lesson, score, max, status, then one column per graded cell."""
    columns: list[str] = []
    for result in results:
        for cell in result.cells:
            key = f"{result.lesson}:{cell.id}"
            if key not in columns:
                columns.append(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "lesson", "score", "max_score", "status", *columns])
        for result in results:
            scores = {f"{result.lesson}:{cell.id}": ("" if cell.score is None else cell.score) for cell in result.cells}
            status = result.error or "graded"
            writer.writerow([result.student, result.lesson, result.score, result.max_score, status, *(scores.get(c, "") for c in columns)])
    return path
