"""Profiler traces into plain records: the TF1 timeline's chrome-trace JSON and the TF2 profiler's XPlane.

Two recorders, one record type. `chrome_events` reads what
``timeline.Timeline(run_metadata.step_stats).generate_chrome_trace_format()`` returns (or the file
written from it); `xplane_events` reads the ``*.xplane.pb`` that ``tf.profiler.experimental`` writes,
with the protobuf bundled in TensorFlow. Both give `TraceEvent` records in seconds, which `op_table`
sums into a top-ops table and `plot_timeline` draws one lane per device and thread.
Nothing here imports TensorFlow at import time. Introduced in lesson 08.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import os
import pathlib
import re
import tempfile
from typing import Iterable, Iterator, Sequence

__all__ = [
    "HOST_PLANE", "OpRow", "OpTable", "TraceError", "TraceEvent", "chrome_events", "find_xplane", "host_plane",
    "op_table", "ops_run", "plot_timeline", "timeline_trace", "xplane_events",
]

HOST_PLANE = "/host:CPU"  # the XPlane of the host's threads; GPUs and TPUs get "/device:GPU:0"... planes, in any order
_DEVICE_PREFIX = re.compile(r"^/job:[^/]+/replica:\d+/task:\d+/device:")
_EAGER = "EagerLocalExecute: "  # the host event of an op run eagerly, e.g. "EagerLocalExecute: WriteSummary"
_TF_OP = re.compile(r"^([^:]+):([A-Za-z_][A-Za-z0-9_]*)$")  # XPlane names a TF op "node_name:OpType"


class TraceError(ValueError):
    """A trace that cannot be read, or holds no op events; the message names the file or the cause."""


@dataclasses.dataclass(frozen=True)
class TraceEvent:
    """One op execution from a trace.

    Attributes:
        name: The node name (``"dense/MatMul"``), or the event name when the trace has none.
        op: The op type (``"MatMul"``, ``"PyFunc"``; on x86 CPUs with oneDNN some kernels are
            renamed ``_Mkl...``, e.g. ``"_MklMatMul"``: compare op types per device, never across builds).
        device: Where it ran, e.g. ``"CPU:0 Compute"`` (TF1 timeline) or ``"/host:CPU"`` (XPlane).
        thread: The thread or stream lane inside the device.
        start: Seconds since the first event of the trace.
        duration: Seconds.
    """

    name: str
    op: str
    device: str
    thread: str
    start: float
    duration: float

    @property
    def end(self) -> float:
        return self.start + self.duration


def _load_json(trace) -> dict | list:
    if isinstance(trace, (dict, list)):
        return trace
    if isinstance(trace, bytes):
        trace = trace.decode("utf-8")
    if isinstance(trace, str) and trace.lstrip()[:1] in ("{", "["):
        return json.loads(trace)
    path = pathlib.Path(trace)
    if not path.exists():
        raise TraceError(f"no chrome trace at {path}: pass the JSON text, its dict, or the path of the file you wrote")
    return json.loads(path.read_text(encoding="utf-8"))


def chrome_events(trace) -> list[TraceEvent]:
    """Read the complete (``"ph": "X"``) events of a chrome trace, sorted by start time.

    Args:
        trace: The JSON text ``generate_chrome_trace_format()`` returns, its ``json.loads`` dict,
            a list of events, or the path of a file holding it.

    Raises:
        TraceError: The trace has no ``traceEvents`` list or no complete event.

    Example:
        >>> events = trace.chrome_events(tl.generate_chrome_trace_format())
    """
    data = _load_json(trace)
    events = data if isinstance(data, list) else data.get("traceEvents") if isinstance(data, dict) else None
    if not isinstance(events, list):
        raise TraceError("a chrome trace is a dict with a 'traceEvents' list; this one has none")
    processes = {e.get("pid"): e.get("args", {}).get("name", "") for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    complete = [e for e in events if e.get("ph") == "X"]
    if not complete:
        raise TraceError("the chrome trace holds no complete ('ph': 'X') events: was the step run with FULL_TRACE?")
    origin = min(float(e.get("ts", 0)) for e in complete)
    records = [
        TraceEvent(
            name=str(e.get("args", {}).get("name", e.get("name", ""))), op=str(e.get("args", {}).get("op", e.get("name", ""))),
            device=_DEVICE_PREFIX.sub("", str(processes.get(e.get("pid"), e.get("pid")))), thread=str(e.get("tid", "")),
            start=(float(e.get("ts", 0)) - origin) / 1e6, duration=float(e.get("dur", 0)) / 1e6,
        )
        for e in complete
    ]
    return sorted(records, key=lambda r: (r.start, r.device, r.thread))


def timeline_trace(run_metadata) -> dict:
    """The chrome trace of one traced ``Session.run``: ``Timeline(step_stats)`` as a dict.

    Example:
        >>> sess.run(fetch, options=RunOptions(trace_level=RunOptions.FULL_TRACE), run_metadata=meta)
        >>> trace.chrome_events(trace.timeline_trace(meta))
    """
    from tensorflow.python.client import timeline  # noqa: PLC0415  (TensorFlow only when asked)

    return json.loads(timeline.Timeline(run_metadata.step_stats).generate_chrome_trace_format())


def find_xplane(logdir: str | os.PathLike) -> pathlib.Path:
    """The newest ``*.xplane.pb`` under ``logdir`` (the profiler writes ``plugins/profile/<run>/<host>.xplane.pb``).

    Raises:
        TraceError: There is none.
    """
    root = pathlib.Path(logdir)
    found = sorted(root.rglob("*.xplane.pb"), key=lambda p: (p.stat().st_mtime, str(p)))
    if not found:
        raise TraceError(f"no *.xplane.pb under {root}: run tf.profiler.experimental.start({str(root)!r}) ... stop() first")
    return found[-1]


def _xplane_op(plane, event) -> tuple[str, str] | None:
    """(node name, op type) of an XPlane event that is a TensorFlow op, else None."""
    match = _TF_OP.match(plane.event_metadata[event.metadata_id].name)
    if match:
        return match.group(1), match.group(2)
    for stat in event.stats:  # device planes name the op in a "tf_op" stat
        if plane.stat_metadata[stat.metadata_id].name == "tf_op":
            text = stat.str_value or plane.stat_metadata[stat.ref_value].name
            found = _TF_OP.match(text)
            return (found.group(1), found.group(2)) if found else None
    return None


def _lane_names(names: Iterable[str]) -> list[str]:
    """Thread names without the profiler's numeric ids: ``tf_Compute/-83097...`` -> ``tf_Compute 1``."""
    bases = [re.sub(r"/-?\d+$", "", name) for name in names]
    totals, seen, lanes = collections.Counter(bases), collections.Counter(), []
    for base in bases:
        seen[base] += 1
        lanes.append(f"{base} {seen[base]}" if totals[base] > 1 else base)
    return lanes


def host_plane(space):
    """The host's plane of an ``XSpace`` (named ``"/host:CPU"``), wherever it sits among the planes.

    A GPU machine's trace may list ``/device:GPU:0`` first: never take ``space.planes[0]``.

    Raises:
        TraceError: The trace has no host plane; the message lists the planes it has.
    """
    for plane in space.planes:
        if plane.name == HOST_PLANE:
            return plane
    raise TraceError(f"no {HOST_PLANE!r} plane in this trace; it has {[plane.name for plane in space.planes]}")


def _space_events(space, ops_only: bool) -> list[tuple]:
    """(name, op, plane, lane, start ps, duration ps) of every event kept, before the host/device merge."""
    raw = []
    for plane in space.planes:
        lanes = _lane_names(line.display_name or line.name for line in plane.lines)
        for line, lane in zip(plane.lines, lanes):
            for event in line.events:
                op = _xplane_op(plane, event)
                if op is None and ops_only:
                    continue
                name, kind = op or (plane.event_metadata[event.metadata_id].name,) * 2
                raw.append((name, kind, plane.name, lane, line.timestamp_ns * 1e3 + event.offset_ps, event.duration_ps, op is not None))
    return raw


def xplane_events(source: str | os.PathLike, *, ops_only: bool = True) -> list[TraceEvent]:
    """Read a TF2 profiler trace (``*.xplane.pb``, or the logdir holding one) into records.

    Each op is counted once. An op that ran on a device (a GPU's kernels, named by their ``tf_op``
    stat) also leaves an event on the host plane: the time the host took to *launch* it, which
    overlaps the device's time. Those host events are dropped, so `op_table` sums execution time
    only, never launch and execution twice. Ops that ran on the CPU keep their host events.

    Args:
        source: The ``.xplane.pb`` file, or a logdir searched with `find_xplane`.
        ops_only: Keep only TensorFlow op executions (``"node:OpType"`` events); False keeps every
            event (Python calls, executor bookkeeping, tf.data iterators), with ``op`` = its name.

    Raises:
        TraceError: No file, or (with ``ops_only``) no op event in it.
    """
    from tensorflow.tsl.profiler.protobuf import xplane_pb2  # noqa: PLC0415

    path = pathlib.Path(source)
    path = find_xplane(path) if path.is_dir() else path
    raw = _space_events(xplane_pb2.XSpace.FromString(path.read_bytes()), ops_only)
    on_device = {r[0] for r in raw if r[6] and r[2] != HOST_PLANE}
    raw = [r for r in raw if not (r[6] and r[2] == HOST_PLANE and r[0] in on_device)]
    if not raw:
        raise TraceError(f"{path} holds no TensorFlow op events: profile at least one step between start() and stop()")
    origin = min(r[4] for r in raw)
    records = [TraceEvent(n, k, d, t, (s - origin) / 1e12, ps / 1e12) for n, k, d, t, s, ps, _ in raw]
    return sorted(records, key=lambda r: (r.start, r.device, r.thread))


@contextlib.contextmanager
def ops_run() -> Iterator[collections.Counter]:
    """Count the TensorFlow ops executed while the block runs, by op type, from TensorFlow's own profiler.

    Eager ops (the profiler's ``EagerLocalExecute: Op`` events) and ops inside graphs (``node:Op``) count alike, so
    the count does not depend on how the code is written, and no Python object the code can reach is involved: an
    alias of a function, a second object, a graph built elsewhere all show up as the ops they run. The counter is
    filled when the block ends::

        with trace.ops_run() as ran:
            train_logged(...)
        ran["CreateSummaryFileWriter"], ran["WriteSummary"]

    Raises:
        TraceError: The profiler could not start (one is already running) or recorded nothing.
    """
    import tensorflow as tf  # noqa: PLC0415

    counted: collections.Counter = collections.Counter()
    with tempfile.TemporaryDirectory(prefix="tfperf-ops-") as logdir:
        try:
            tf.profiler.experimental.start(logdir)
        except Exception as error:  # noqa: BLE001  (AlreadyExists, Unavailable: the profiler says which)
            raise TraceError(f"the profiler could not start ({type(error).__name__}: {error}); "
                             "stop the one that runs (tf.profiler.experimental.stop()) and run this again") from None
        try:
            yield counted
        finally:
            tf.profiler.experimental.stop()
        for event in xplane_events(logdir, ops_only=False):
            kind = event.op[len(_EAGER):] if event.op.startswith(_EAGER) else event.op
            if event.op.startswith(_EAGER) or event.name != event.op:  # an eager op, or a graph's "node:Op"
                counted[kind] += 1


@dataclasses.dataclass(frozen=True)
class OpRow:
    """One row of an `OpTable`: total seconds and count of one op type (or node), and its share."""

    key: str
    seconds: float
    count: int
    share: float


@dataclasses.dataclass(frozen=True)
class OpTable:
    """Op types (or nodes) by total time, longest first; displays as a text table."""

    rows: tuple[OpRow, ...]
    total: float
    by: str

    def __iter__(self):
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index):
        return self.rows[index]

    def __str__(self) -> str:
        width = max([len(self.by), *(len(r.key) for r in self.rows)])
        lines = [f"{self.by:<{width}}  {'total ms':>9}  {'count':>5}  {'share':>6}"]
        lines += [f"{r.key:<{width}}  {r.seconds * 1e3:>9.3f}  {r.count:>5}  {r.share:>6.1%}" for r in self.rows]
        return "\n".join(lines + [f"(all ops: {self.total * 1e3:.3f} ms)"])

    def _repr_pretty_(self, printer, cycle):  # IPython display
        printer.text(str(self))


def op_table(events: Iterable[TraceEvent], *, n: int | None = 10, by: str = "op") -> OpTable:
    """Sum op time per op type (``by="op"``) or per node (``by="name"``), longest first.

    Shares are of the summed time of all ops, which exceeds the wall time when ops overlap.
    Ties are ordered by name. ``n=None`` keeps every row.

    Raises:
        ValueError: ``by`` is not ``"op"`` or ``"name"``, or ``n`` is below 1.

    Example:
        >>> print(trace.op_table(trace.chrome_events(chrome), n=5))
    """
    if by not in ("op", "name"):
        raise ValueError(f"by must be 'op' or 'name'; got {by!r}")
    if n is not None and n < 1:
        raise ValueError(f"n must be at least 1 (or None for all); got {n}")
    seconds, counts = collections.defaultdict(float), collections.Counter()
    for event in events:
        key = getattr(event, by)
        seconds[key] += event.duration
        counts[key] += 1
    total = sum(seconds.values())
    order = sorted(seconds, key=lambda k: (-seconds[k], k))[:n]
    rows = tuple(OpRow(k, seconds[k], counts[k], seconds[k] / total if total else 0.0) for k in order)
    return OpTable(rows, total, by)


def plot_timeline(events: Sequence[TraceEvent], *, ax=None, highlight: int = 3, ops: Sequence[str] | None = None,
                  title: str | None = None):
    """One lane per device and thread, one bar per op; some op types in colour, the rest grey.

    Args:
        events: Records from `chrome_events` or `xplane_events`.
        highlight: How many of the costliest op types get a colour (see `op_table`).
        ops: Op types to colour instead, e.g. ``["AssignSubVariableOp"]``.

    Returns the Axes (x axis in milliseconds since the first event). Very short ops are drawn at a
    minimum width, so they stay visible.
    """
    if ax is None:
        import matplotlib.pyplot as plt  # noqa: PLC0415

        ax = plt.subplots(figsize=(8.0, 3.0), layout="constrained")[1]
    lanes = sorted({(e.device, e.thread) for e in events})
    top = list(ops) if ops is not None else [row.key for row in op_table(events, n=highlight)] if events and highlight > 0 else []
    colors = {op: f"C{i}" for i, op in enumerate(top)}
    narrowest = max((e.end for e in events), default=0.0) * 1e3 / 400
    for index, lane in enumerate(lanes):
        bars = sorted((e for e in events if (e.device, e.thread) == lane), key=lambda e: e.op in colors)  # coloured on top
        ax.broken_barh([(e.start * 1e3, max(e.duration * 1e3, narrowest)) for e in bars], (index - 0.4, 0.8),
                       facecolors=[colors.get(e.op, "lightgray") for e in bars])
    ax.set_yticks(range(len(lanes)), [f"{device} / {thread}" for device, thread in lanes], fontsize="small")
    ax.invert_yaxis()
    ax.set_xlabel("time since the first op (ms)")
    if top:
        from matplotlib.patches import Patch  # noqa: PLC0415

        ax.legend(handles=[Patch(color=c, label=op) for op, c in colors.items()], loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  fontsize="small", title="costliest ops")
    if title:
        ax.set_title(title)
    return ax
