"""What the sandbox and a submission's judge promise each other, and what one sandbox run takes and gives back.

- `Limits`: what one submission may use (each default is `tfperf_lab.course.config`'s);
- `Outcome`: what came back out of one run (`tfperf_lab.isolation.sandbox.run`);
- `Freezing`: what stops every process of a job and resumes it (`tfperf_lab.isolation.cgroups.Freezer`, a picklable value);
- `Watcher`: all that `run` asks of the judge timing a job's speed checks, and all it gives it
  (`tfperf_lab.speed.judge.Judge` keeps it). `run` calls these methods and reads or writes nothing else of a judge.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import typing

from ..course.config import DEFAULTS, GradingConfig


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one submission may use: the sandbox's share of a `GradingConfig`, under the same names (`of`), plus what
    only one run knows. ``wall_seconds`` bounds the whole notebook, ``cell_seconds`` each cell."""

    wall_seconds: float = DEFAULTS.notebook_limit(None)
    cell_seconds: int = DEFAULTS.cell_seconds
    startup_seconds: int = DEFAULTS.startup_seconds
    memory_mb: int = DEFAULTS.memory_mb
    processes: int = DEFAULTS.processes  # threads count too: TensorFlow starts dozens
    file_mb: int = DEFAULTS.file_mb
    sandbox_text_bytes: int = DEFAULTS.sandbox_text_bytes
    sandbox_data_bytes: int = DEFAULTS.sandbox_data_bytes
    cpus: tuple[int, ...] | None = None  # cores the sandbox is pinned to (None: all)

    @classmethod
    def of(cls, config: GradingConfig, **run) -> "Limits":
        """The limits ``config`` sets, each field of the same name, and ``run``'s (``wall_seconds``, ``cpus``)."""
        shared = {field.name for field in dataclasses.fields(cls)} & {field.name for field in dataclasses.fields(config)}
        return cls(**{name: getattr(config, name) for name in shared}, **run)

    def to_json(self) -> str:
        """The form the sandbox hands its runner (``--limits``), read back by `from_json`."""
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "Limits":
        values = json.loads(text)
        return cls(**{**values, "cpus": tuple(values["cpus"]) if values.get("cpus") is not None else None})


@dataclasses.dataclass
class Outcome:
    """What came back out: the executed notebook (None if there is none), the records text, and how the run ended."""

    notebook: dict | None
    records: str
    seconds: float
    returncode: int
    timed_out: bool = False
    problem: str | None = None  # why there is no usable notebook: timed out, out of memory, kernel died...
    log: str = ""
    backend: str = ""
    inside: dict = dataclasses.field(default_factory=dict)  # the runner's own timings (untrusted: for benchmarks only)
    warnings: list[str] = dataclasses.field(default_factory=list)  # limits or freezer that do not hold here (`Cgroup.missing`)
    stopped: str | None = None  # the notebook came back, but stopped before its end: its time limit ran out, or the kernel died
    machine: str | None = None  # the sandbox could not start here (the runner never ran): the grading machine's fault


class Freezing(typing.Protocol):
    """Stops every process of one job, whatever it forks, and resumes it; each returns once the kernel says so, else
    raises `tfperf_lab.isolation.cgroups.FreezeFailed` (a job that did not freeze is left running, never half frozen)."""

    def freeze(self, seconds: float = ...) -> None: ...

    def thaw(self, seconds: float = ...) -> None: ...


class Watcher(typing.Protocol):
    """The judge of one job, as `tfperf_lab.isolation.sandbox.run` sees it: the order below is the order `run` calls in."""

    def sandbox_binds(self) -> tuple[pathlib.Path, str]:
        """The folder the sandbox mounts read-only, and the path of the judge's socket as the kernel sees it inside."""
        ...

    def host_address(self) -> str:
        """The judge's socket as the host sees it: where a kernel run without a sandbox (backend ``none``) connects."""
        ...

    def use_freezer(self, freezer: Freezing | None, why: str | None) -> None:
        """The job's freezer once its first process runs; or None and ``why`` (a sentence) when no freezer holds here: the
        judge then gives no speed verdict. Called once more with (None, None) as the job ends, before its cgroup goes:
        from then on nothing of the job is left to pause."""
        ...

    def progress(self, stream: typing.BinaryIO) -> None:
        """The runner's progress, ``start N`` / ``end N`` lines (N a cell's index), read until it ends (the judge follows
        it in a thread of its own: this returns at once)."""
        ...

    def seconds_paused(self) -> float:
        """How long the job has been paused so far while other jobs measured, a pause in progress included: its
        wall-clock limit moves on by as much."""
        ...
