"""Stage 1 of grading, stage: from a file a student handed in to the copy nbgrader autogrades.

`stage` reads the submission without following links (a symlink or special file is refused), checks it as untrusted
input (`tfperf_lab.grading.untrusted`), identifies its lesson, gives back nbgrader metadata an editor stripped (by cell id,
else by content, as in a Colab download), puts back deleted read-only cells, notes every protected cell the learner
changed, reads every cell the learner wrote for reaches into the course's machinery (`tfperf_lab.grading.review`: the review
list), and returns a `Staged` submission.
`Staged.write` puts it where nbgrader expects it; nothing is written before the checks pass, and the original file
is never opened for writing.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import pathlib
import shutil

from ..course import Course, Lesson, WorkFolder, notebook
from ..isolation import sandbox
from . import review, untrusted

EXCHANGE_FILES = ("timestamp.txt", "submission_secret.txt")  # the exchange's; release_feedback needs the secret


class SubmissionError(untrusted.UntrustedInput):
    """A submission that cannot be graded at all: not a notebook, or not one of this course's."""


@dataclasses.dataclass
class Staged:
    """A submission ready to autograde: the repaired notebook, what the learner changed, and where it came from."""

    student: str
    lesson: Lesson
    notebook: dict
    notes: list[str]
    review: list[review.Finding]  # reaches into the course's or the interpreter's machinery (tfperf_lab.grading.review)
    origin: pathlib.Path
    sha256: str
    extras: dict[str, bytes] = dataclasses.field(default_factory=dict)
    handed_in: tuple[str | None, str | None] = (None, None)  # when it was handed in, and how that is known (`intake.submission_time`)

    def write(self, work: WorkFolder) -> pathlib.Path:
        """Put the staged copy (and the exchange's files) at ``work.submitted(student, lesson)``."""
        target = work.submitted(self.student, self.lesson.id)
        if target.parent.exists():
            shutil.rmtree(target.parent)
        target.parent.mkdir(parents=True)
        notebook.write(self.notebook, target)
        for name, data in self.extras.items():
            (target.parent / name).write_bytes(data)
        return target


def read_untrusted(path: pathlib.Path, *, within: pathlib.Path | None = None) -> bytes:
    """The bytes of a submitted file, refusing links (also in the folders under ``within``) and anything but a regular file."""
    parts = [path] + ([p for p in path.parents if within is not None and p != within and p.is_relative_to(within)])
    for item in parts:
        if item.is_symlink():
            raise SubmissionError(f"{path.name}: {item.name} is a symbolic link, which grading never follows "
                                  f"(a zip can restore one): submit the notebook file itself")
    try:
        return sandbox.read_regular(path, untrusted.MAX_NOTEBOOK_BYTES)
    except sandbox.NotRegular as error:
        raise SubmissionError(str(error)) from None


def identify(course: Course, nb: dict, filename: str) -> Lesson:
    """Which lesson a submitted notebook belongs to: its metadata, else its file name, else its cells."""
    known = {lesson.id: lesson for lesson in course.lessons}
    meta = nb.get("metadata", {}).get("tfperf", {})
    tagged = meta.get("lesson") if isinstance(meta, dict) else None
    if isinstance(tagged, str) and tagged in known:
        return known[tagged]
    by_name = [lesson_id for lesson_id in known if lesson_id in filename]
    if len(by_name) == 1:
        return known[by_name[0]]
    ids = {cell.get("id") for cell in nb["cells"]}
    overlap = {lesson_id: len(ids & {c["id"] for c in lesson.grade_cells()}) for lesson_id, lesson in known.items()}
    best = max(overlap, key=overlap.get, default=None)
    if best and overlap[best]:
        return known[best]
    raise SubmissionError(f"cannot tell which lesson {filename} is: no tfperf metadata, no lesson name in the file name, no known cell ids")


def _content(cell: dict) -> tuple[str, str]:
    return cell.get("cell_type", ""), notebook.visible(notebook.source(cell))


def _match_by_content(nb: dict, release: dict) -> dict[int, int]:
    """Submission cell index -> release cell index, for notebooks whose cell ids are gone (Colab downloads).

    Cells with the same content as the release anchor the match (tests, markdown, demo code); an answer cell, whose
    content changed, is paired when it is the only cell of its type between the same two anchors.
    """
    theirs, ours = [_content(c) for c in nb["cells"]], [_content(c) for c in release["cells"]]
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


def repair_metadata(nb: dict, release: dict) -> tuple[int, int]:
    """Give back nbgrader metadata to cells that lost it: by cell id, else by content; returns (by id, by content)."""
    graded = {cell.get("id"): cell for cell in release["cells"] if "nbgrader" in cell.get("metadata", {})}
    by_id = by_content = 0
    for cell in nb["cells"]:
        metadata = cell.setdefault("metadata", {})
        if "nbgrader" not in metadata and cell.get("id") in graded:
            metadata["nbgrader"] = notebook.copy(graded[cell["id"]]["metadata"]["nbgrader"])
            by_id += 1
    if not any("id" in cell for cell in nb["cells"]) and not any("nbgrader" in cell["metadata"] for cell in nb["cells"]):
        for mine, theirs in _match_by_content(nb, release).items():
            original = release["cells"][theirs]
            nb["cells"][mine]["id"] = original.get("id")
            if "nbgrader" in original.get("metadata", {}):
                nb["cells"][mine]["metadata"]["nbgrader"] = notebook.copy(original["metadata"]["nbgrader"])
                by_content += 1
    taken = {cell.get("id") for cell in nb["cells"]}
    for index, cell in enumerate(nb["cells"]):  # nbformat 4.5 wants an id on every cell
        if not cell.get("id"):
            cell["id"] = next(f"learner-{index}-{n}" for n in range(len(nb["cells"]) + 1) if f"learner-{index}-{n}" not in taken)
    nb["nbformat"], nb["nbformat_minor"] = 4, max(5, nb.get("nbformat_minor", 0) if isinstance(nb.get("nbformat_minor"), int) else 0)
    return by_id, by_content


def tamper_notes(nb: dict, release: dict, source: dict | None = None) -> list[str]:
    """What the learner changed in cells nbgrader will restore: deleted, retyped or edited tests and read-only cells.
    A cell counts as unchanged when its whole source (hidden-test markers and what lies between them included) is the
    release's or the instructor's (``source``)."""
    submitted = {cell.get("id"): cell for cell in nb["cells"]}
    instructor = {cell.get("id"): notebook.source(cell) for cell in (source or release)["cells"]}
    notes = []
    for cell in release["cells"]:
        if not notebook.is_protected(cell):
            continue
        name, mine = cell.get("id"), submitted.get(cell.get("id"))
        kind = "test cell" if cell["metadata"]["nbgrader"].get("grade") else "read-only cell"
        if mine is None:
            notes.append(f"{kind} {name} was deleted: restored from the release and graded")
        elif mine.get("cell_type") != cell["cell_type"]:
            notes.append(f"{kind} {name} was changed to {mine.get('cell_type')}: restored from the release and graded")
        elif notebook.source(mine) not in (notebook.source(cell), instructor.get(name)):
            notes.append(f"{kind} {name} was edited: the original was restored and graded")
    return notes


def restore_deleted(nb: dict, release: dict) -> None:
    """Put back deleted read-only cells (they define the baselines speed is measured against) and test cells, each
    after its predecessor, with its release id.

    nbgrader restores edited cells by checksum (a test cell's hidden tests too) but re-adds no deleted read-only cell,
    and re-adds a deleted test cell with no id, which nbformat 4.5 warns about today and will refuse later: the
    submission would then stop grading. The copy of the release cell lacks the hidden tests; nbgrader writes them back.
    """
    for index, cell in enumerate(release["cells"]):
        present = [c.get("id") for c in nb["cells"]]
        if not notebook.is_protected(cell) or cell.get("id") in present:
            continue
        before = next((present.index(c.get("id")) for c in reversed(release["cells"][:index]) if c.get("id") in present), -1)
        nb["cells"].insert(before + 1, notebook.copy(cell))


def stage(course: Course, path: pathlib.Path, student: str, lesson_id: str | None = None, *,
          within: pathlib.Path | None = None) -> Staged:
    """Check, identify and repair one submitted file; raises `SubmissionError` (or `UntrustedInput`) with the reason."""
    untrusted.check_student_id(student)
    data = read_untrusted(path, within=within)
    nb = untrusted.parse_notebook(data, path.name)
    lesson = identify(course, nb, path.name)
    if lesson_id and lesson.id != lesson_id:
        raise SubmissionError(f"{path.name} is lesson {lesson.id}, not {lesson_id}")
    notes = []
    release = lesson.release_notebook()
    by_id, by_content = repair_metadata(nb, release)
    if by_id:
        notes.append(f"{by_id} cells had lost their nbgrader metadata; restored from the release by cell id")
    if by_content:
        notes.append(f"the notebook had lost its nbgrader metadata and cell ids (as in a Colab download): {by_content} graded cells "
                     f"matched to the release by their content")
    if not any("nbgrader" in cell.get("metadata", {}) for cell in nb["cells"]):
        raise SubmissionError(f"{path.name} has lost its nbgrader metadata and its cell ids, and none of its cells matches the release, "
                              f"so its answers cannot be matched to the exercises: copy your answers into a fresh copy of lessons/{lesson.id}")
    untrusted.validate(nb, path.name)
    by_name = [item.id for item in course.lessons if item.id in path.name]
    if by_name and by_name[0] != lesson.id:
        notes.append(f"the file is named for {by_name[0]} but is lesson {lesson.id}: graded as {lesson.id}")
    instructor = lesson.source_notebook() if lesson.source.exists() else None  # absent in a learner's published copy
    notes += tamper_notes(nb, release, instructor)
    restore_deleted(nb, release)
    found = review.review(nb, release, instructor)
    if found:
        notes.append(review.note(found))
    extras = {}
    for name in EXCHANGE_FILES:
        beside = path.parent / name
        if beside.is_file() and not beside.is_symlink():
            extras[name] = beside.read_bytes()[:4096]
    return Staged(student, lesson, nb, notes, found, path, hashlib.sha256(data).hexdigest(), extras)
