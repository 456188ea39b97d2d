"""TensorBoard event files read back into plain records: runs, tags, steps and values.

What a training loop logged with ``tf.summary`` (or the Keras ``TensorBoard`` callback) can be read
back without a TensorBoard server, to test it or to plot it with matplotlib where TensorBoard cannot
run (Colab often blocks it). Two traps this module hides:

* TensorFlow 2 writes every summary, scalars included, as a *tensor* event tagged with a plugin name
  (``"scalars"``, ``"histograms"``, ``"images"``). TensorBoard's ``EventAccumulator.Scalars(tag)``
  raises KeyError for them; ``EventAccumulator.Tensors(tag)`` returns them.
* ``EventAccumulator``'s default size guidance keeps a random sample of only 10 tensor events per tag;
  this module keeps every event.

A *run* is a folder holding event files, named relative to the log folder (``"."`` for the folder
itself; the Keras callback writes ``"train"`` and ``"validation"``). Events are returned in the order
they were written; logging twice into one folder appends. TensorBoard is imported only when a file is
read, so importing this module imports neither TensorBoard nor TensorFlow. Introduced in lesson 07.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import logging
import os
import pathlib
from typing import Any, Iterator

import numpy as np

KINDS = ("scalars", "histograms", "images")
EVENT_FILE_MARK = "tfevents"

__all__ = ["EventsError", "KINDS", "Series", "describe", "event_files", "histograms", "images", "read", "records",
           "runs", "scalars", "summaries_written", "tags"]


class EventsError(ValueError):
    """No event files where expected, or an unknown run; the message names the path and the fix."""


@dataclasses.dataclass(frozen=True)
class Series:
    """Everything logged under one tag of one run, in the order it was written.

    Attributes:
        run: The run folder, relative to the log folder (``"."`` for the folder itself).
        tag: The summary's name, e.g. ``"loss"`` or ``"weights/mlp/hidden/kernel"``.
        kind: ``"scalars"``, ``"histograms"`` or ``"images"``.
        steps: The step of each value.
        values: Floats for scalars; ``(buckets, 3)`` float arrays of ``[left edge, right edge, count]``
            for histograms; ``(n, height, width, channels)`` uint8 arrays for images.
        wall_times: Seconds since the epoch when each value was written.
    """

    run: str
    tag: str
    kind: str
    steps: tuple[int, ...]
    values: tuple
    wall_times: tuple[float, ...]

    def __len__(self) -> int:
        return len(self.steps)

    def at(self, step: int) -> Any:
        """The value logged at ``step`` (the last one if it was logged twice).

        Raises:
            KeyError: nothing was logged at ``step``; the message lists the steps that were.
        """
        for logged, value in zip(reversed(self.steps), reversed(self.values)):
            if logged == step:
                return value
        shown = list(self.steps[:10]) + (["..."] if len(self.steps) > 10 else [])
        raise KeyError(f"{self.tag!r} has no value at step {step}; logged steps: {shown}")

    def __repr__(self) -> str:
        span = f"steps {self.steps[0]}-{self.steps[-1]}" if self.steps else "empty"
        return f"Series({self.run}/{self.tag}, {self.kind}, {len(self)} values, {span})"


def _path(logdir: str | os.PathLike) -> pathlib.Path:
    path = pathlib.Path(logdir)
    if not path.exists():
        raise EventsError(f"{path} does not exist: pass the folder given to tf.summary.create_file_writer or TensorBoard(log_dir=...)")
    return path


def event_files(logdir: str | os.PathLike) -> list[pathlib.Path]:
    """Every TensorBoard event file under ``logdir`` (searched recursively), sorted by path."""
    path = _path(logdir)
    if path.is_file():
        return [path] if EVENT_FILE_MARK in path.name else []
    return sorted(p for p in path.rglob(f"*{EVENT_FILE_MARK}*") if p.is_file())


def runs(logdir: str | os.PathLike) -> list[str]:
    """The runs under ``logdir``: folders holding event files, relative to it (``"."`` for itself).

    Raises:
        EventsError: there is no event file under ``logdir``.
    """
    path = _path(logdir)
    files = event_files(path)
    if not files:
        raise EventsError(
            f"no TensorBoard event files (events.out.tfevents.*) under {path}: did the loop log anything, "
            "and was the writer flushed (writer.flush() or writer.close()) before reading?"
        )
    if path.is_file():
        return ["."]
    return sorted({str(f.parent.relative_to(path)) for f in files})


@contextlib.contextmanager
def _quiet_tensorboard() -> Iterator[None]:
    """TensorBoard logs out-of-order steps as warnings, which reach stderr: keep them for errors."""
    logger = logging.getLogger("tensorboard")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _accumulator(path: pathlib.Path):
    from tensorboard.backend.event_processing import event_accumulator as ea

    keep_all = {key: 0 for key in ea.DEFAULT_SIZE_GUIDANCE}  # 0: keep every event, not a sample of 10
    accumulator = ea.EventAccumulator(str(path), size_guidance=keep_all, purge_orphaned_data=False)
    with _quiet_tensorboard():
        accumulator.Reload()
    return accumulator


def _decode_images(blobs) -> np.ndarray:
    """(n, height, width, channels) uint8 from PNG/JPEG bytes."""
    from PIL import Image

    arrays = [np.asarray(Image.open(io.BytesIO(blob))) for blob in blobs]
    return np.stack([a[..., np.newaxis] if a.ndim == 2 else a for a in arrays])


def _tensor_value(kind: str, proto) -> Any:
    from tensorboard.util import tensor_util

    array = tensor_util.make_ndarray(proto)
    if kind == "scalars":
        return float(array)
    if kind == "histograms":
        return np.asarray(array, dtype=float).reshape(-1, 3)
    return _decode_images(array[2:])  # images: [width, height, encoded image, ...] as strings


def _legacy_histogram(histogram) -> np.ndarray:
    """A TF1 HistogramProto as ``[left, right, count]`` rows (edges clipped to the data's min and max)."""
    limits = np.asarray(histogram.bucket_limit, dtype=float)
    lefts = np.concatenate([[histogram.min], limits[:-1]])
    rows = np.stack([lefts, np.minimum(limits, histogram.max), np.asarray(histogram.bucket, dtype=float)], axis=1)
    return rows[rows[:, 2] > 0] if len(rows) else rows.reshape(0, 3)


def _series_of_run(path: pathlib.Path, run: str) -> dict[str, Series]:
    accumulator = _accumulator(path)
    found = accumulator.Tags()
    series: dict[str, Series] = {}
    for tag in found.get("tensors", []):
        kind = accumulator.SummaryMetadata(tag).plugin_data.plugin_name
        if kind in KINDS:
            events = accumulator.Tensors(tag)
            series[tag] = Series(run, tag, kind, tuple(int(e.step) for e in events),
                                 tuple(_tensor_value(kind, e.tensor_proto) for e in events), tuple(e.wall_time for e in events))
    legacy = (("scalars", accumulator.Scalars, lambda e: float(e.value)),
              ("histograms", accumulator.Histograms, lambda e: _legacy_histogram(e.histogram_value)),
              ("images", accumulator.Images, lambda e: _decode_images([e.encoded_image_string])))
    for kind, getter, convert in legacy:  # TF1-style summaries (tf.compat.v1.summary)
        for tag in found.get(kind, []):
            events = getter(tag)
            series[tag] = Series(run, tag, kind, tuple(int(e.step) for e in events), tuple(convert(e) for e in events),
                                 tuple(e.wall_time for e in events))
    return series


def read(logdir: str | os.PathLike, *, run: str = ".", kind: str | None = None) -> dict[str, Series]:
    """Every scalar, histogram and image series of one run, by tag.

    Args:
        logdir: The log folder (or one event file).
        run: Which run folder, relative to ``logdir`` (see `runs`); ``"."`` is ``logdir`` itself.
        kind: Keep only ``"scalars"``, ``"histograms"`` or ``"images"``.

    Returns:
        ``{tag: Series}``; other summaries (graphs, text, Keras model configs) are left out.

    Raises:
        EventsError: no event files, or ``run`` is not one of the runs.
        ValueError: ``kind`` is not one of `KINDS`.

    Example:
        >>> events.read("logs/fit/train")["epoch_loss"].values
    """
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS} or None; got {kind!r}")
    path = _path(logdir)
    known = runs(path)
    if run not in known:
        raise EventsError(f"{path} has no run {run!r}; its runs are {known}: pass run=... (e.g. run={known[0]!r})")
    series = _series_of_run(path if path.is_file() else path / run, run)
    return {tag: s for tag, s in series.items() if kind is None or s.kind == kind}


def scalars(logdir: str | os.PathLike, *, run: str = ".") -> dict[str, Series]:
    """The scalar series of one run, by tag: ``scalars(d)["loss"].values`` (see `read`)."""
    return read(logdir, run=run, kind="scalars")


def histograms(logdir: str | os.PathLike, *, run: str = ".") -> dict[str, Series]:
    """The histogram series of one run, by tag; each value is a ``(buckets, 3)`` array (see `read`)."""
    return read(logdir, run=run, kind="histograms")


def images(logdir: str | os.PathLike, *, run: str = ".") -> dict[str, Series]:
    """The image series of one run, by tag; each value is an ``(n, h, w, c)`` uint8 array (see `read`)."""
    return read(logdir, run=run, kind="images")


def tags(logdir: str | os.PathLike, *, run: str = ".") -> dict[str, list[str]]:
    """The tags of one run by kind: ``{"scalars": [...], "histograms": [...], "images": [...]}``."""
    series = read(logdir, run=run)
    return {kind: sorted(tag for tag, s in series.items() if s.kind == kind) for kind in KINDS}


def records(logdir: str | os.PathLike) -> list[dict]:
    """Every logged value of every run as one flat dict: run, kind, tag, step, wall_time, value.

    Scalar values are floats; histogram and image values are NumPy arrays (see `Series`).
    """
    rows = []
    for run in runs(logdir):
        for series in read(logdir, run=run).values():
            rows.extend({"run": series.run, "kind": series.kind, "tag": series.tag, "step": step, "wall_time": wall, "value": value}
                        for step, value, wall in zip(series.steps, series.values, series.wall_times))
    return rows


def summaries_written(logdir: str | os.PathLike) -> int:
    """How many summary values the event files under ``logdir`` hold, of every kind (text and graphs too), read raw:
    one for each summary op that wrote there (compare it with `tfperf.trace.ops_run`'s ``WriteSummary`` count)."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    with _quiet_tensorboard():
        return sum(len(event.summary.value) for path in event_files(logdir) for event in EventFileLoader(str(path)).Load())


def describe(logdir: str | os.PathLike) -> str:
    """One line per run and tag: kind, number of values and their steps, e.g. for a notebook printout."""
    lines = []
    for run in runs(logdir):
        for tag, series in sorted(read(logdir, run=run).items(), key=lambda item: (item[1].kind, item[0])):
            steps = f"steps {series.steps[0]}-{series.steps[-1]}" if len(series) else "no values"
            lines.append(f"{run:<12} {series.kind:<10} {tag:<40} {len(series):>4} values, {steps}")
    return "\n".join(lines)
