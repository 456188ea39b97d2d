"""Grading through nbgrader: a learner's `check` of one notebook, an instructor's `grade` of a folder.

Both take the same path: the submission is copied into a work folder (the original is never
opened for writing), its nbgrader cell metadata is repaired from the release by cell id if an
editor stripped it, nbgrader autogrades it in a subprocess with a whole-notebook time limit, and
the result is read back per graded cell from the gradebook and the autograded notebook, together
with the speedups the tests measured (``TFPERF_RECORD``).
"""

from __future__ import annotations

import concurrent.futures
import ast
import csv
import dataclasses
import difflib
import hashlib
import json
import os
import pathlib
import re
import shutil
import tempfile
import time

from nbgrader.api import Gradebook, MissingEntry

from tfperf.report import RECORD_VARIABLE, load_records

from . import course

ERROR_LINE = re.compile(r"\[(?:Autograde|GenerateAssignment|GenerateFeedback)App \| ERROR\] (.*)")
# Code in a learner's cells that reassigns the clock or the course's timing harness.
TAMPERING = re.compile(
    r"(?m)^[^#\n]*(\btime\.(perf_counter|time|monotonic|process_time)\s*=(?!=)|\b(tfperf|timing|checks|report)(\.\w+)+\s*=(?!=)"
    r"|setattr\(\s*(tfperf|time|timing|checks)\b|\b_CLOCK\b|sys\.modules\[\s*['\"](tfperf|time))"
)
SPEED_NAME = re.compile(r"assert_speedup\((?:.|\n)*?name=[\"']([\w.-]+)[\"']")


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

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["feedback"] = str(self.feedback) if self.feedback else None
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "SubmissionResult":
        data = dict(data, cells=[CellResult(**cell) for cell in data["cells"]])
        data["feedback"] = pathlib.Path(data["feedback"]) if data.get("feedback") else None
        return cls(**data)

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
            kind = "speed check" if item.get("threshold") else "measured"
            lines.append(f"  {kind} {item['name']}: {item['speedup']:.2f}x (95% CI {item['ci'][0]:.2f}-{item['ci'][1]:.2f}x"
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


def _content(cell: dict) -> tuple[str, str]:
    return cell.get("cell_type", ""), _visible(_text(cell.get("source")))


def _match_by_content(notebook: dict, release: dict) -> dict[int, int]:
    """Submission cell index -> release cell index, for notebooks whose cell ids are gone (Colab downloads).

    Cells with the same content as the release anchor the match (tests, markdown, demo code); an
    answer cell, whose content changed, is paired when it is the only cell of its type between the
    same two anchors. A gap that cannot be paired that way stays unmatched.
    """
    theirs, ours = [_content(c) for c in notebook["cells"]], [_content(c) for c in release["cells"]]
    matcher = difflib.SequenceMatcher(a=ours, b=theirs, autojunk=False)
    pairs = {block.b + k: block.a + k for block in matcher.get_matching_blocks() for k in range(block.size)}
    anchors = [(-1, -1), *sorted((r, s) for s, r in pairs.items()), (len(ours), len(theirs))]
    for (r0, s0), (r1, s1) in zip(anchors, anchors[1:], strict=False):
        release_gap, submitted_gap = list(range(r0 + 1, r1)), list(range(s0 + 1, s1))
        if len(release_gap) == len(submitted_gap) and all(ours[r][0] == theirs[s][0] for r, s in zip(release_gap, submitted_gap, strict=True)):
            pairs.update(zip(submitted_gap, release_gap, strict=True))
            continue
        for r in release_gap:
            same_type = [s for s in submitted_gap if theirs[s][0] == ours[r][0]]
            if sum(ours[other][0] == ours[r][0] for other in release_gap) == 1 and len(same_type) == 1:
                pairs[same_type[0]] = r
    return pairs


def _repair_metadata(notebook: dict, release: dict) -> tuple[int, int]:
    """Give back nbgrader metadata to cells that lost it: by cell id, else by content; returns (by id, by content)."""
    graded = {cell.get("id"): cell for cell in release["cells"] if "nbgrader" in cell.get("metadata", {})}
    by_id = by_content = 0
    for cell in notebook["cells"]:
        metadata = cell.setdefault("metadata", {})
        if "nbgrader" not in metadata and cell.get("id") in graded:
            metadata["nbgrader"] = json.loads(json.dumps(graded[cell["id"]]["metadata"]["nbgrader"]))
            by_id += 1
    if any("id" in cell for cell in notebook["cells"]) or any("nbgrader" in cell["metadata"] for cell in notebook["cells"]):
        return by_id, by_content
    for mine, theirs in _match_by_content(notebook, release).items():
        original = release["cells"][theirs]
        notebook["cells"][mine]["id"] = original.get("id")
        if "nbgrader" in original.get("metadata", {}):
            notebook["cells"][mine]["metadata"]["nbgrader"] = json.loads(json.dumps(original["metadata"]["nbgrader"]))
            by_content += 1
    taken = {cell.get("id") for cell in notebook["cells"]}
    for index, cell in enumerate(notebook["cells"]):  # nbformat 4.5 wants an id on every cell
        if not cell.get("id"):
            cell["id"] = next(f"learner-{index}-{n}" for n in range(len(notebook["cells"]) + 1) if f"learner-{index}-{n}" not in taken)
    notebook["nbformat"], notebook["nbformat_minor"] = 4, max(5, notebook.get("nbformat_minor", 0))
    return by_id, by_content


def _protected(cell: dict) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return bool(meta.get("locked") or (meta.get("grade") and not meta.get("solution")))


def _tamper_notes(notebook: dict, release: dict) -> list[str]:
    """What the learner changed in cells nbgrader will restore: deleted, retyped or edited tests and read-only cells."""
    submitted = {cell.get("id"): cell for cell in notebook["cells"]}
    notes = []
    for cell in release["cells"]:
        if not _protected(cell):
            continue
        name, mine = cell.get("id"), submitted.get(cell.get("id"))
        kind = "test cell" if cell["metadata"]["nbgrader"].get("grade") else "read-only cell"
        if mine is None:
            notes.append(f"{kind} {name} was deleted: restored from the release and graded")
        elif mine.get("cell_type") != cell["cell_type"]:
            notes.append(f"{kind} {name} was changed to {mine.get('cell_type')}: restored from the release and graded")
        elif _visible(_text(mine.get("source"))) != _visible(_text(cell["source"])):
            notes.append(f"{kind} {name} was edited: the original was restored and graded")
    return notes


def _restore_read_only(notebook: dict, release: dict) -> None:
    """Put back deleted read-only cells (they define the baselines speed is measured against), after their predecessor.

    nbgrader restores edited read-only cells by checksum and re-adds deleted test cells, but not deleted read-only ones.
    """
    for index, cell in enumerate(release["cells"]):
        present = [c.get("id") for c in notebook["cells"]]
        if not course.is_read_only(cell) or cell.get("id") in present:
            continue
        before = next((present.index(c.get("id")) for c in reversed(release["cells"][:index]) if c.get("id") in present), -1)
        notebook["cells"].insert(before + 1, json.loads(json.dumps(cell)))


def _bound_names(source: str) -> dict[str, int]:
    """Names a cell binds at its top level (def, class, assignment, import) -> line number."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return {}
    names = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node.lineno
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                names.update({n.id: node.lineno for n in ast.walk(target) if isinstance(n, ast.Name)})
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update({(alias.asname or alias.name).split(".")[0]: node.lineno for alias in node.names})
    return names


def _read_only_names(release: dict) -> set[str]:
    """Functions, classes and CONSTANTS defined by read-only cells: the baselines and settings speed checks use."""
    names = set()
    for cell in release["cells"]:
        if course.is_read_only(cell):
            source = _text(cell["source"])
            names |= {name for name in _bound_names(source) if name.isupper() or re.search(rf"^(def|class)\s+{name}\b", source, re.M)}
    return names


def _tampering(notebook: dict, release: dict | None = None) -> list[str]:
    """Lines in the learner's own code cells that reassign the clock, the timing harness, or a read-only baseline."""
    found, guarded = [], _read_only_names(release) if release else set()
    for cell in notebook["cells"]:
        if cell.get("cell_type") == "code" and not _protected(cell):
            source = _text(cell.get("source", ""))
            found += [match.group(0).strip() for match in TAMPERING.finditer(source)]
            found += [f"redefines {name}, which a read-only cell defines" for name in _bound_names(source) if name in guarded]
    return found


def _visible(source: str) -> str:
    """A test cell as learners see it: without its hidden region (an instructor's copy still has it)."""
    return re.sub(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS\n?", "", source, flags=re.S).strip()


def speed_checks(lesson: course.Lesson) -> dict[str, list[str]]:
    """grade_id -> names of the speed checks (``assert_speedup(..., name=...)``) its test cell runs."""
    checks = {}
    for cell in course.read_notebook(lesson.source)["cells"]:
        text = "".join(cell["source"])
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade") and "assert_speedup(" in text:
            checks[cell["id"]] = SPEED_NAME.findall(text)
    return checks


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
    release = course.read_notebook(course.lesson(found).release)
    by_id, by_content = _repair_metadata(notebook, release)
    if by_id:
        notes.append(f"{by_id} cells had lost their nbgrader metadata; restored from the release by cell id")
    if by_content:
        notes.append(f"the notebook had lost its nbgrader metadata and cell ids (as in a Colab download): {by_content} graded cells "
                     f"matched to the release by their content")
    if not any("nbgrader" in cell.get("metadata", {}) for cell in notebook["cells"]):
        raise SubmissionError(f"{path.name} has lost its nbgrader metadata and its cell ids, and none of its cells matches the release, "
                              f"so its answers cannot be matched to the exercises: copy your answers into a fresh copy of lessons/{found}")
    by_name = [lesson_id for lesson_id in (lesson.id for lesson in course.lessons()) if lesson_id in path.name]
    if by_name and by_name[0] != found:
        notes.append(f"the file is named for {by_name[0]} but is lesson {found}: graded as {found}")
    notes += _tamper_notes(notebook, release)
    _restore_read_only(notebook, release)
    tampering = _tampering(notebook, release)
    if tampering:
        notes.append(f"the notebook reassigns the clock, the timing harness or a baseline ({'; '.join(tampering[:3])}): no speed points")
    folder = work / "submitted" / student / found
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / f"{found}.ipynb").write_text(json.dumps(notebook, indent=1), encoding="utf-8")
    (folder / ".tampering.json").write_text(json.dumps(tampering), encoding="utf-8")
    for name in ("timestamp.txt", "submission_secret.txt"):  # the exchange's; release_feedback needs the secret
        if (path.parent / name).exists():
            shutil.copy(path.parent / name, folder / name)
    return found, notes


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


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
            ename, evalue = errors[0].get("ename", "Error"), _text(errors[0].get("evalue", ""))
            if ename in ("CellTimeoutError", "KeyboardInterrupt"):  # nbgrader interrupts a cell at its time limit
                outcomes[grade_id] = ("timeout", "stopped at the cell time limit (an endless loop?)")
                continue
            status = "failed" if ename == "AssertionError" else "error"
            outcomes[grade_id] = (status, f"{ename}: {evalue}".splitlines()[0][:300] if evalue else ename)
        elif stderr:
            outcomes[grade_id] = ("error", "wrote to stderr: " + ("".join(_text(o.get("text")) for o in stderr).strip().splitlines() or [""])[0][:200])
        else:
            outcomes[grade_id] = ("passed", "")
    return outcomes


def collect(work: pathlib.Path, lesson_id: str, student: str, *, since: float = 0.0) -> list[CellResult]:
    """Per-cell scores of one autograded submission, in notebook order.

    An autograded notebook older than ``since`` (or missing) means the run did not finish: every
    autograded cell then scores 0 as "not run", in the report and in the gradebook.
    """
    autograded = work / "autograded" / student / lesson_id / f"{lesson_id}.ipynb"
    finished = autograded.exists() and autograded.stat().st_mtime >= since
    outcomes = _cell_outcomes(autograded) if finished else {}
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
            if not finished:
                status, message = "not run", "the notebook stopped before this cell ran"
                if grade is not None and grade.auto_score:
                    grade.auto_score = 0.0
                    gradebook.db.commit()
            score = grade.score if grade is not None and finished else 0.0
            if status == "passed" and score < cell["points"]:
                status, message = "failed", "no points awarded"
            results.append(CellResult(cell["id"], score, cell["points"], "auto", status, message))
    return results


def _withhold_speed_points(work: pathlib.Path, result: SubmissionResult, tampering: list[str]) -> None:
    """Zero speed cells that passed without a genuine measurement: tampering, or no harness record."""
    checks = speed_checks(course.lesson(result.lesson))
    measured = {item["name"]: item for item in result.measurements}
    with Gradebook(f"sqlite:///{work / 'gradebook.db'}", course_id=course.COURSE_ID) as gradebook:
        for cell in result.cells:
            if cell.id not in checks or not cell.score:
                continue
            if tampering:
                reason = "the notebook reassigns the clock, the timing harness or a baseline"
            elif not all(measured.get(name, {}).get("passed") for name in checks[cell.id]):
                reason = "its speed check did not run through the course's timing harness"
            else:
                continue
            grade = gradebook.find_grade(cell.id, result.lesson, result.lesson, result.student)
            grade.auto_score = 0.0
            gradebook.db.commit()
            cell.score, cell.status, cell.message = 0.0, "failed", f"speed points withheld: {reason}"


def autograde(work: pathlib.Path, lesson_id: str, student: str, *, timeout: float | None = None,
              cell_timeout: int | None = None) -> SubmissionResult:
    """Autograde one submitted notebook already in ``work``; never raises for a bad submission."""
    lesson = course.lesson(lesson_id)
    limit = timeout or max(120.0, lesson.minutes_grading * 60 * 3)
    started = time.time()
    records = work / "records" / student / f"{lesson_id}.jsonl"
    records.parent.mkdir(parents=True, exist_ok=True)
    records.unlink(missing_ok=True)
    args = ["autograde", lesson_id, "--student", student, "--force"] + ([f"--Execute.timeout={cell_timeout}"] if cell_timeout else [])
    # The kernel's temporary files (TensorBoard logs, a submission's scratch files) go in a folder removed afterwards.
    (work / "tmp").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{student}-{lesson_id}-", dir=work / "tmp", ignore_cleanup_errors=True) as scratch:
        env = course.tool_environment(**{RECORD_VARIABLE: str(records), "TMPDIR": scratch})
        done = course.nbgrader(args, work=work, timeout=limit, env=env)
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
    result.cells = collect(work, lesson_id, student, since=started)
    tampering_file = work / "submitted" / student / lesson_id / ".tampering.json"
    tampering = json.loads(tampering_file.read_text()) if tampering_file.exists() else []
    _withhold_speed_points(work, result, tampering)
    autograded = work / "autograded" / student / lesson_id / f"{lesson_id}.ipynb"
    outcomes = _cell_outcomes(autograded) if autograded.exists() and autograded.stat().st_mtime >= started else {}
    timed_out = [cell_id for cell_id, (status, _) in outcomes.items() if status == "timeout"]
    if timed_out:
        result.notes.append(f"cells that ran out of time (stopped, scored 0, the rest graded): {', '.join(timed_out)}")
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


def _sha256(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _state_file(work: pathlib.Path, student: str, lesson_id: str) -> pathlib.Path:
    return work / "state" / student / f"{lesson_id}.json"


def _finished(work: pathlib.Path, student: str, path: pathlib.Path) -> SubmissionResult | None:
    """The result of an earlier run on exactly this file, if that run finished (for resuming)."""
    for state in (work / "state" / student).glob("*.json"):
        saved = json.loads(state.read_text(encoding="utf-8"))
        if saved.get("sha256") == _sha256(path) and saved.get("source") == str(path):
            return SubmissionResult.from_dict(saved["result"])
    return None


def _grade_one(work: pathlib.Path, student: str, path: pathlib.Path, lesson_id: str, notes: list[str], *,
               timeout: float | None, cell_timeout: int | None, with_feedback: bool) -> SubmissionResult:
    result = autograde(work, lesson_id, student, timeout=timeout, cell_timeout=cell_timeout)
    result.notes[:0] = notes
    result.feedback = feedback(work, lesson_id, student) if with_feedback else None
    state = _state_file(work, student, lesson_id)
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps({"sha256": _sha256(path), "source": str(path), "result": result.to_dict()}), encoding="utf-8")
    return result


# Parallel gradings share the cores their speed checks time on. On the 2-core development machine, two workers (about
# a core each) gave no false failure in 240 reference gradings of the 12 speed checks (docs/flake/workers-2.json) and
# graded about twice as many notebooks a minute as one (lesson 01: 7.9 s a notebook, against 15 s); more workers than
# cores cannot grade faster. Two at most, until a larger machine is measured with `tfperf-lab flake --workers N`.
DEFAULT_WORKERS = max(1, min(2, os.cpu_count() or 1))


def grade(folder: pathlib.Path, *, work: pathlib.Path = course.WORK, csv_path: pathlib.Path | None = None,
          timeout: float | None = None, cell_timeout: int | None = None, workers: int = DEFAULT_WORKERS, force: bool = False,
          with_feedback: bool = True, progress: bool = True) -> list[SubmissionResult]:
    """Autograde every submission in ``folder``, write feedback and a CSV with one column per graded cell.

    Submissions already graded in ``work`` from the same file content are not graded again unless
    ``force``: a run that was stopped halfway resumes where it stopped. ``workers`` notebooks are
    graded at once (default: ``DEFAULT_WORKERS``, measured free of false failures); speed checks share the cores.
    """
    from tqdm.auto import tqdm

    pairs = find_submissions(folder)
    if not pairs:
        raise SystemExit(f"no submissions in {folder}: expected {folder}/<student>/<lesson>.ipynb")
    queued, results = [], []
    for student, path in pairs:
        earlier = None if force else _finished(work, student, path)
        if earlier is not None:
            results.append(earlier)
            continue
        try:
            found, notes = submit(path, work, student)
            queued.append((student, path, found, notes))
        except SubmissionError as error:
            results.append(SubmissionResult(student, path.stem, error=str(error)))
    if queued:
        prepare(work, sorted({lesson_id for _, _, lesson_id, _ in queued}))
        _register_students(work, {student for student, _, _, _ in queued})
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [pool.submit(_grade_one, work, student, path, lesson_id, notes, timeout=timeout, cell_timeout=cell_timeout,
                               with_feedback=with_feedback)
                   for student, path, lesson_id, notes in queued]
        for future in tqdm(concurrent.futures.as_completed(futures), total=len(futures), desc="grading", unit="notebook",
                           disable=not progress):
            results.append(future.result())
    results.sort(key=lambda r: (r.student, r.lesson))
    write_csv(results, csv_path or work / "grades.csv")
    return results


def _register_students(work: pathlib.Path, students: set[str]) -> None:
    """Add the students to the gradebook before parallel autogrades: two of them creating the same student race
    (nbgrader's check-then-insert fails with "UNIQUE constraint failed: student.id")."""
    with Gradebook(f"sqlite:///{work / 'gradebook.db'}", course_id=course.COURSE_ID) as gradebook:
        for student in sorted(students):
            gradebook.update_or_create_student(student)


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
