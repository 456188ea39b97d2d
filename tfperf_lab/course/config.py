"""The tool's settings in one typed place: every limit a grading run may change, with its default, and every
environment variable the course reads.

`GradingConfig` is to this course what otter-grader's ``AutograderConfig`` is to otter: the sandbox's `Limits`,
nbgrader's ``SandboxedExecute`` traits, ``tfperf-lab grade``'s options and the generated settings table in
docs/instructor-guide.md all take their defaults from `DEFAULTS`, so a default is written once. `ENVIRONMENT` lists
the ``TFPERF_*`` variables; the learner library defines most of them (a test checks the names agree: importing it here
would cost the sandbox's launcher half a second of NumPy).
"""

from __future__ import annotations

import dataclasses
import os

# The environment variables, each name written once in the tool (the learner library defines its own, under the same
# names: a test checks they agree).
COURSE_VARIABLE = "TFPERF_COURSE"
DATA_VARIABLE = "TFPERF_DATA"
OFFLINE_VARIABLE = "TFPERF_OFFLINE"
PROFILE_VARIABLE = "TFPERF_PROFILE"
LOGS_VARIABLE = "TFPERF_TF_LOGS"
RECORD_VARIABLE = "TFPERF_RECORD"
GRADER_VARIABLE = "TFPERF_GRADER"
ROLE_VARIABLE = "TFPERF_GRADER_ROLE"


@dataclasses.dataclass(frozen=True)
class GradingConfig:
    """What one grading run may change. Each field's metadata says where it is set: an option of ``tfperf-lab grade``
    or ``check``, and the nbgrader trait the formgrader and plain ``nbgrader autograde`` read."""

    cell_seconds: int = dataclasses.field(default=300, metadata={
        "help": "seconds one cell may run. TensorFlow cells are slow: a speed check runs for seconds, the first cell to "
                "touch TensorFlow pays ~4 s of import", "option": "--cell-timeout", "trait": "SandboxedExecute.timeout"})
    startup_seconds: int = dataclasses.field(default=120, metadata={
        "help": "seconds the kernel may take to start", "trait": "SandboxedExecute.startup_timeout"})
    notebook_seconds: float = dataclasses.field(default=0.0, metadata={
        "help": "seconds the whole notebook may take; 0: notebook_factor times the lesson's grading time, at least notebook_floor",
        "option": "--timeout", "trait": "SandboxedExecute.notebook_timeout"})
    notebook_factor: float = dataclasses.field(default=3.0, metadata={
        "help": "the whole notebook's limit, when notebook_seconds is 0: this many times the lesson's declared grading time"})
    notebook_floor: float = dataclasses.field(default=120.0, metadata={
        "help": "the whole notebook's limit, when notebook_seconds is 0, is never below this many seconds"})
    course_notebook_seconds: float = dataclasses.field(default=1800.0, metadata={
        "help": "seconds one of the course's own notebooks may take when `tfperf-lab validate` runs it (trusted, no sandbox)"})
    course_cell_seconds: int = dataclasses.field(default=600, metadata={
        "help": "seconds one cell of the course's own notebooks may take when `tfperf-lab run` records the course report"})
    output_text_bytes: int = dataclasses.field(default=64 * 1024, metadata={
        "help": "bytes kept of each text output (stream, error, text/*) before anything is scored or shown",
        "trait": "CapOutputs.max_text_bytes"})
    output_data_bytes: int = dataclasses.field(default=2 * 2**20, metadata={
        "help": "bytes of each image or other data output kept before anything is scored or shown; larger ones are dropped",
        "trait": "CapOutputs.max_data_bytes"})
    sandbox_text_bytes: int = dataclasses.field(default=2**20, metadata={
        "help": "the sandbox's first cap on each text output, generous, so a chatty notebook's copy still comes back"})
    sandbox_data_bytes: int = dataclasses.field(default=4 * 2**20, metadata={
        "help": "the sandbox's first cap on each image or other data output"})
    memory_mb: int = dataclasses.field(default=6144, metadata={
        "help": "memory one submission may use (cgroup, else RLIMIT_AS)", "trait": "SandboxedExecute.memory_mb"})
    processes: int = dataclasses.field(default=512, metadata={
        "help": "processes and threads one submission may run (TensorFlow starts dozens)", "trait": "SandboxedExecute.processes"})
    file_mb: int = dataclasses.field(default=256, metadata={"help": "largest file a submission may write"})
    backend: str = dataclasses.field(default="auto", metadata={
        "help": "auto (bubblewrap, refusing when it cannot run), bubblewrap, or none", "option": "--no-sandbox",
        "trait": "SandboxedExecute.backend"})
    skip_demonstrations: bool = dataclasses.field(default=True, metadata={
        "help": "leave out the demonstrations no answer or test reads (tfperf_lab.course.skipping): a graded run's "
                "outputs then show them as not run", "trait": "SandboxedExecute.skip_demonstrations"})
    cores_per_pinned_worker: int = dataclasses.field(default=2, metadata={
        "help": "cores each worker gets on a machine of 4 cores or more (its sandbox, reference process and timer run "
                "there and measure without pausing anyone)"})

    def notebook_limit(self, grading_minutes: float | None) -> float:
        """Seconds a whole notebook may take: ``notebook_seconds`` when set, else ``notebook_factor`` times the lesson's
        grading time (None: a lesson without one), at least ``notebook_floor``."""
        if self.notebook_seconds:
            return self.notebook_seconds
        return max(self.notebook_floor, (grading_minutes or 0.0) * 60 * self.notebook_factor)

    def workers(self, cpu_count: int | None = None) -> int:
        """Notebooks graded at once by default (``--workers``): up to 2 on a machine of fewer than 4 cores (their
        measurements take turns), else one per ``cores_per_pinned_worker`` cores."""
        cores = cpu_count or os.cpu_count() or 1
        return max(1, min(2, cores)) if cores < 4 else cores // self.cores_per_pinned_worker


DEFAULTS = GradingConfig()

# Every environment variable the course reads: name -> (who reads it, what it does).
ENVIRONMENT = {
    DATA_VARIABLE: ("learner library", "a folder holding the four MNIST IDX files (or Keras' mnist.npz): used first"),
    OFFLINE_VARIABLE: ("learner library", "never download: generate the offline digits instead (the sandbox sets it)"),
    PROFILE_VARIABLE: ("learner library", "full or reduced workloads (default: reduced under grading or CI, else full)"),
    LOGS_VARIABLE: ("learner library", "1 keeps TensorFlow's own log lines (debugging TensorFlow itself)"),
    RECORD_VARIABLE: ("learner library", "set by the course report and the sandbox: the file measurement records go to"),
    GRADER_VARIABLE: ("learner library", "set by the grader only: the socket a graded speed check serves its function on"),
    ROLE_VARIABLE: ("learner library", "set by the grader only: candidate (the learner's kernel) or baseline (the clean process)"),
    COURSE_VARIABLE: ("tool", "the course folder (default: the working directory and its parents)"),
}


def traits(owner: str) -> dict:
    """The configurable traitlets traits of the nbgrader preprocessor ``owner`` (e.g. ``"SandboxedExecute"``), generated
    from the fields whose ``trait`` names it: the formgrader and plain ``nbgrader autograde`` honour the same limits,
    under nbgrader's names, with the same defaults and help."""
    from traitlets import Bool, Float, Integer, Unicode  # only the grading side needs them (not the sandbox's launcher)

    kinds = {bool: Bool, int: Integer, float: Float, str: Unicode}
    made = {}
    for field in dataclasses.fields(GradingConfig):
        where, _, name = field.metadata.get("trait", "").partition(".")
        if where == owner:
            text = field.metadata["help"]
            made[name] = kinds[type(field.default)](field.default, help=text[:1].upper() + text[1:]).tag(config=True)
    return made


def table() -> str:
    """The settings and the environment variables as Markdown tables (docs/instructor-guide.md's generated block)."""
    lines = ["| setting | default | set with | what it bounds |", "|---|---|---|---|"]
    for field in dataclasses.fields(GradingConfig):
        where = " / ".join(f"`{field.metadata[key]}`" for key in ("option", "trait") if key in field.metadata) or "-"
        lines.append(f"| `{field.name}` | {field.default!r} | {where} | {field.metadata['help']} |")
    lines += ["", "| environment variable | read by | what it does |", "|---|---|---|"]
    lines += [f"| `{name}` | {reader} | {meaning} |" for name, (reader, meaning) in ENVIRONMENT.items()]
    return "\n".join(lines)
