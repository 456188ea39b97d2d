"""What grading returns: one `SubmissionResult` per submitted notebook, one `CellResult` per graded cell.

Read by the command line (`lines`), the CSV, the resume state (`to_dict`/`from_dict`), the exchange and the flake
campaigns. Measurements are `tfperf.report.Record` objects: the same type the notebooks write.
"""

from __future__ import annotations

import csv
import dataclasses
import pathlib

from tfperf import present
from tfperf.report import Record


NOT_SUBMITTED = "not submitted"
MACHINE = ("the grading machine's fault, not the notebook's (graded again by the next `tfperf-lab grade` once the "
           "machine is fixed)")


@dataclasses.dataclass
class CellResult:
    """One graded cell: ``status`` is passed, failed, error, timeout, missing, not run, manual, review (withheld until
    a person has looked: `tfperf_lab.grading.review`) or rejected (withheld, and a person decided to pay nothing:
    `tfperf_lab.grading.decisions`)."""

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
    measurements: list[Record] = dataclasses.field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0
    feedback: pathlib.Path | None = None
    sandbox: str = ""
    stages: dict[str, float] = dataclasses.field(default_factory=dict)  # seconds per grading stage (benchmarks/)
    judged: bool = False  # the grader timed the speed checks (tfperf_lab.speed.judge): only its measurements decided speed points
    review: list[str] = dataclasses.field(default_factory=list)  # why it is on the review list (tfperf_lab.grading.review), if it is
    attempts: int = 1  # more than one: graded again after a cluster worker was lost (tfperf_lab.grading.cluster)
    findings: list[dict] = dataclasses.field(default_factory=list)  # the review's findings: {"cell", "line", "code", "why"}
    # cell id -> what a withheld cell had before it was withheld: {"earned" (its test's points, the grader's speed verdict
    # applied), "status", "message", "findings" (["cell C line N", ...])}; what `tfperf-lab review --accept` pays
    withheld: dict[str, dict] = dataclasses.field(default_factory=dict)
    decision: dict | None = None  # a person's review decision: {"decision": accepted|rejected, "by", "at"} (tfperf_lab.grading.decisions)
    # the grading machine's faults (no course, no sandbox, no freezer, no reference process): the row is the machine's,
    # never the student's; it is not saved as finished, so the next `tfperf-lab grade` grades it again
    machine: list[str] = dataclasses.field(default_factory=list)
    submitted: bool = True  # False: a roster student with nothing handed in for this lesson (`tfperf_lab.grading.store.rows`)
    submitted_at: str | None = None  # when it was handed in (ISO 8601), as the intake recorded it or the file's time
    submitted_how: str | None = None  # where that time comes from: "the intake's record", "nbgrader's timestamp", "the file's time"
    # lateness and its penalty, decided from the semester's due dates (`tfperf_lab.grading.semester.assess`):
    # {"submitted", "due", "extended", "hours", "days", "penalty" (points), "policy", "how"}; None when on time
    late: dict | None = None
    excused: bool = False  # excused from this lesson by the semester file: no penalty, and not counted when missing

    @property
    def raw_score(self) -> float:
        """The autograded points before any late penalty."""
        return sum(cell.score or 0.0 for cell in self.cells if cell.kind == "auto")

    @property
    def penalty(self) -> float:
        return float(self.late.get("penalty") or 0.0) if self.late else 0.0

    @property
    def score(self) -> float:
        """The autograded points, less the late penalty (`tfperf_lab.grading.semester.assess`)."""
        return max(0.0, self.raw_score - self.penalty)

    @property
    def max_score(self) -> float:
        return sum(cell.max_score for cell in self.cells if cell.kind == "auto")

    @property
    def status(self) -> str:
        """The CSV's status column: the grading machine's fault, the error, or graded (saying so when no sandbox isolated
        the run)."""
        if self.machine:
            return f"{MACHINE}: {'; '.join(self.machine)}"
        if not self.submitted:
            return "excused" if self.excused else NOT_SUBMITTED
        if self.error:
            return self.error
        status = "graded without a sandbox (--no-sandbox)" if self.sandbox == "none" else "graded"
        if self.late:
            status += f", late {self.late['days']} day(s): -{self.late['penalty']:g} points"
        elif self.excused:
            status += ", excused"
        return status + (f" (again: {self.attempts - 1} grading worker(s) lost while it ran)" if self.attempts > 1 else "")

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["feedback"] = str(self.feedback) if self.feedback else None
        data["measurements"] = [record.to_dict() for record in self.measurements]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "SubmissionResult":
        data = dict(data, cells=[CellResult(**cell) for cell in data["cells"]])
        data["measurements"] = [Record.from_dict(item) for item in data.get("measurements", [])]
        data["feedback"] = pathlib.Path(data["feedback"]) if data.get("feedback") else None
        return cls(**data)

    def lines(self) -> list[str]:
        """A readable per-cell report."""
        head = f"{self.lesson} ({self.student}): "
        if self.machine:
            lines = [head + f"NOT GRADED, {MACHINE}: " + "; ".join(self.machine)]
        elif not self.submitted:
            lines = [head + self.status]
        elif self.error:
            lines = [head + f"NOT GRADED: {self.error}"]
        else:
            manual = sum(cell.max_score for cell in self.cells if cell.kind == "manual")
            lines = [head + f"{self.score:g} / {self.max_score:g} points autograded" + (f", {manual:g} more graded by hand" if manual else "")
                     + f" ({self.seconds:.0f} s)"]
            if self.late:
                lines.append(f"  late: handed in {self.late['submitted']} ({self.late['how']}), due {self.late['due']}"
                             f"{' (extended)' if self.late['extended'] else ''}: -{self.late['penalty']:g} points ({self.late['policy']})")
        lines += [f"  note: {note}" for note in self.notes]
        if self.decision:
            lines.append(f"  review: {self.decision['decision']} by {self.decision['by']} on {self.decision['at']}")
        lines += [f"  REVIEW: {finding}" for finding in self.review]
        width = max((len(cell.id) for cell in self.cells), default=10)
        for cell in self.cells:
            score = "-" if cell.score is None else f"{cell.score:g}"
            lines.append(f"  {cell.id:<{width}}  {score:>3}/{cell.max_score:<3g} {cell.status:<8} {cell.message}".rstrip())
        lines += [f"  {present.measurement(item)}" for item in self.measurements]
        if self.feedback:
            lines.append(f"  feedback: {self.feedback}")
        return lines


def write_csv(results: list[SubmissionResult], path: pathlib.Path) -> pathlib.Path:
    """One row per submission: student, lesson, score (less any late penalty), max, status, review (why a person should
    look, or empty; after a person's decision, it starts with it: "accepted by NAME: ..."), submitted (when it was handed
    in), late_penalty, then one column per graded cell."""
    columns: list[str] = []
    for result in results:
        for cell in result.cells:
            key = f"{result.lesson}:{cell.id}"
            if key not in columns:
                columns.append(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "lesson", "score", "max_score", "status", "review", "submitted", "late_penalty", *columns])
        for result in results:
            scores = {f"{result.lesson}:{cell.id}": ("" if cell.score is None else cell.score) for cell in result.cells}
            review = " | ".join(result.review)
            if result.decision and review:
                review = f"{result.decision['decision']} by {result.decision['by']}: {review}"
            writer.writerow([result.student, result.lesson, result.score, result.max_score, result.status, review,
                             result.submitted_at or "", result.penalty if result.late else "", *(scores.get(c, "") for c in columns)])
    return path
