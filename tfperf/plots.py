"""Figures built from measurement results: speedup bars, one comparison, latency per step.

Each function takes results and an optional Axes, draws on it, and returns it; none changes global
style. Figures always come from the learner's own run. Introduced in lesson 01.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from .units import format_seconds
from .units import pick_unit as _pick_unit

__all__ = ["comparison", "speedup_vs_time", "speedups", "step_latency"]


def _axes(ax, size=(6.0, 3.2)):
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=size, layout="constrained")[1]


def _finish(ax, xlabel: str, ylabel: str, title: str | None = None):
    """Axis labels, the title if any, and the legend every plot of the course has; returns the axes."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(loc="best", fontsize="small")
    return ax


def _as_row(item) -> tuple[str, float, float, float, float | None]:
    """(label, speedup, ci low, ci high, claim) from a `tfperf.timing.Comparison` or a record dict."""
    if not isinstance(item, Mapping):
        return f"{item.candidate.label} vs {item.baseline.label}", item.speedup, *item.ci, None
    label = item.get("label") or f"{item['candidate']['label']} vs {item['baseline']['label']}"
    return label, item["speedup"], item["ci"][0], item["ci"][1], item.get("claim_value")


def speedups(results: Sequence, *, ax=None, log: bool = True, threshold: float | None = None, title: str | None = None):
    """Horizontal bars of speedups with their confidence intervals.

    Args:
        results: `Comparison` objects or record dicts (see `tfperf.report`).
        log: Log-scale x axis (speedups from 0.9x to 20x on one figure).
        threshold: Draw the pass line of a graded check.
    """
    rows = [_as_row(item) for item in results]
    ax = _axes(ax, size=(7.0, 0.45 * len(rows) + 1.2))
    y = np.arange(len(rows))
    values = np.array([r[1] for r in rows])
    errors = np.array([[r[1] - r[2] for r in rows], [r[3] - r[1] for r in rows]]).clip(min=0)
    colors = ["tab:green" if v > 1 else "tab:gray" for v in values]
    ax.barh(y, values, xerr=errors, color=colors, capsize=3, left=0 if not log else None)
    ax.axvline(1.0, color="black", linewidth=0.8)
    if threshold is not None:
        ax.axvline(threshold, color="tab:red", linestyle="--", linewidth=1, label=f"threshold {threshold:g}x")
        ax.legend(loc="lower right")
    if log:
        ax.set_xscale("log")
    ax.set_yticks(y, [r[0] for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("speedup (x, higher is better)")
    if title:
        ax.set_title(title)
    return ax


def comparison(result, *, ax=None):
    """Per-round speedups of one comparison, with the median, its interval and any threshold."""
    ax = _axes(ax)
    rounds = np.arange(1, result.rounds + 1)
    ax.plot(rounds, result.ratios, "o", color="tab:blue", alpha=0.7, label="round")
    ax.axhline(result.speedup, color="tab:blue", label=f"median {result.speedup:.2f}x")
    ax.axhspan(*result.ci, color="tab:blue", alpha=0.15, label=f"{result.confidence:.0%} CI")
    ax.axhline(1.0, color="black", linewidth=0.8)
    if result.threshold is not None:
        ax.axhline(result.threshold, color="tab:red", linestyle="--", label=f"threshold {result.threshold:g}x")
    return _finish(ax, "round", f"{result.baseline.label} / {result.candidate.label}")


def step_latency(series: Mapping[str, Sequence[float]], *, x: Mapping[str, Sequence[float]] | None = None,
                 ax=None, xlabel: str = "step", log: bool = False):
    """Seconds per step (or per item) for one or more named series, in one shared unit.

    Args:
        series: Label -> seconds per step.
        x: Label -> x values (default: 0, 1, 2, ...), e.g. the op count of a growing graph.
        log: Log-scale y axis.
    """
    ax = _axes(ax)
    scale, unit = _pick_unit(float(np.median(np.concatenate([np.asarray(v, float) for v in series.values()]))))
    for label, values in series.items():
        xs = x[label] if x is not None else np.arange(len(values))
        ax.plot(xs, np.asarray(values, float) / scale, label=label, linewidth=1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"time per step ({unit})")
    if log:
        ax.set_yscale("log")
    ax.legend(loc="best", fontsize="small")
    return ax


def speedup_vs_time(results: Sequence, *, saving: float | None = None, ax=None):
    """Speedup against the baseline's time per call, with a fixed-saving model curve.

    When a change saves a fixed ``saving`` seconds per call, a baseline step of ``t`` seconds
    speeds up ``t / (t - saving)``: large for tiny steps, vanishing for long ones.
    """
    ax = _axes(ax)
    times = np.array([r.baseline.median for r in results])
    values = np.array([r.speedup for r in results])
    errors = np.array([[r.speedup - r.ci[0] for r in results], [r.ci[1] - r.speedup for r in results]]).clip(min=0)
    ax.errorbar(times * 1e3, values, yerr=errors, fmt="o", capsize=3, color="tab:blue", label="measured")
    for r, t, v in zip(results, times, values):
        ax.annotate(r.candidate.label, (t * 1e3, v), textcoords="offset points", xytext=(5, 5), fontsize="small")
    if saving is not None and saving > 0:
        grid = np.geomspace(max(saving * 1.05, times.min() * 0.5), times.max() * 2, 200)
        ax.plot(grid * 1e3, grid / (grid - saving), "--", color="tab:gray", label=f"fixed saving of {saving * 1e6:.0f} us")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    return _finish(ax, "baseline time per call (ms)", "speedup (x)")


def metric_curves(series: Mapping[str, Sequence[float]], *, x: Sequence[float] | None = None, ax=None,
                  xlabel: str = "epoch", ylabel: str = "value", title: str | None = None):
    """Metric values (accuracy, loss) per epoch or step for one or more named series.

    Lesson 05 draws a metric reset every epoch next to the same metric never reset.

    Args:
        series: Label -> values, one per epoch (or step).
        x: Shared x values (default: 1, 2, 3, ...).
        ylabel: What the values are, e.g. ``"training accuracy"``.
    """
    ax = _axes(ax)
    for label, values in series.items():
        xs = np.arange(1, len(values) + 1) if x is None else np.asarray(x, float)
        ax.plot(xs, np.asarray(values, float), marker="o", markersize=3, linewidth=1.2, label=label)
    return _finish(ax, xlabel, ylabel, title)


def loss_vs_time(curves: Mapping[str, tuple[Sequence[float], Sequence[float]]], *, ax=None, log: bool = False,
                 ylabel: str = "training loss", title: str | None = None):
    """Loss against elapsed wall time for one or more training runs, each on its own time axis.

    Lesson 06 draws the same training loop run eagerly and inside ``tf.function``: at equal time
    the faster loop has taken more steps, so its curve falls sooner.

    Args:
        curves: Label -> (elapsed seconds after each step, loss at that step).
        log: Log-scale time axis (a long eager run next to a short compiled one).
    """
    ax = _axes(ax)
    for label, (seconds, losses) in curves.items():
        ax.plot(np.asarray(seconds, float), np.asarray(losses, float), linewidth=1, label=label)
    if log:
        ax.set_xscale("log")
    return _finish(ax, "elapsed time (s)", ylabel, title)


__all__.append("metric_curves")


def break_even(eager: float, graph: float, first_call: float, *, steps: int | None = None, ax=None):
    """Cumulative seconds against steps: eager, and a tf.function whose first call traces.

    Lesson 03: the first call costs ``first_call`` seconds (trace plus one step), every later step
    ``graph`` instead of ``eager``, so the lines cross after about
    ``(first_call - graph) / (eager - graph)`` steps.

    Args:
        eager, graph: Seconds per step, eager and inside the tf.function.
        first_call: Seconds of the tf.function's first call.
        steps: Last step drawn (default: three times the break-even, at least 10).
    """

    ax = _axes(ax)
    crossing = (first_call - graph) / (eager - graph) if eager > graph else None
    n = np.arange((steps or max(10, int(np.ceil(3 * crossing)) if crossing else 100)) + 1)
    ax.plot(n, n * eager, label=f"eager, {format_seconds(eager)} per step")
    ax.plot(n, np.where(n > 0, first_call + (n - 1).clip(min=0) * graph, 0.0),
            label=f"tf.function, first call {format_seconds(first_call)}, then {format_seconds(graph)}")
    if crossing is not None:
        ax.axvline(crossing, color="tab:gray", linestyle=":", label=f"break-even after ~{crossing:.0f} steps")
    return _finish(ax, "training steps", "cumulative time (s)")


__all__.append("break_even")


def logged_scalars(series: Mapping[str, object], *, ax=None, ylabel: str = "value", title: str | None = None):
    """Scalars read back from TensorBoard event files (lesson 07's fallback when TensorBoard is blocked).

    Args:
        series: Label -> anything with ``steps`` and ``values`` (a `tfperf.events.Series`), e.g.
            ``{"train": events.scalars(d, run="train")["epoch_loss"], "validation": ...}``.
        ylabel: What the values are, e.g. ``"loss"``.
    """
    ax = _axes(ax)
    for label, item in series.items():
        steps, values = np.asarray(item.steps, float), np.asarray(item.values, float)
        ax.plot(steps, values, marker="o" if len(steps) < 20 else None, markersize=3, linewidth=1.2, label=label)
    return _finish(ax, "step", ylabel, title)


def logged_histograms(series, *, ax=None, title: str | None = None):
    """One histogram series read back from event files: a density curve per step, darker = later.

    Buckets get wider as the weights spread, so counts are divided by the bucket width (a step whose
    values are all equal, such as zero-initialised biases, has no width and draws nothing).

    Args:
        series: Anything with ``steps`` and ``values`` of ``(buckets, 3)`` arrays of
            ``[left edge, right edge, count]`` (a `tfperf.events.Series` of kind ``"histograms"``).
    """
    import matplotlib

    ax = _axes(ax)
    colors = matplotlib.colormaps["viridis_r"](np.linspace(0.1, 0.9, max(len(series.steps), 1)))
    for index, (step, buckets) in enumerate(zip(series.steps, series.values)):
        left, right, count = np.asarray(buckets, float).reshape(-1, 3).T
        width = right - left
        density = np.divide(count, width, out=np.full_like(count, np.nan), where=width > 0)
        label = f"step {step}" if index in (0, len(series.steps) - 1) else None
        ax.plot((left + right) / 2, density, color=colors[index], linewidth=1, label=label)
    return _finish(ax, "value", "weights per unit value", title or getattr(series, "tag", ""))


def logged_images(images, *, ax=None, title: str | None = None):
    """Images read back from event files, side by side: an ``(n, h, w, c)`` uint8 array."""
    ax = _axes(ax, size=(1.2 * len(images) + 0.5, 1.6))
    strip = np.concatenate(list(np.asarray(images)), axis=1)
    ax.imshow(strip.squeeze(-1) if strip.shape[-1] == 1 else strip, cmap="gray")
    ax.set_axis_off()
    if title:
        ax.set_title(title)
    return ax


__all__ += ["logged_histograms", "logged_images", "logged_scalars"]


def timeline(spans: Mapping[str, Sequence[tuple[float, float]]], *, ax=None, title: str | None = None):
    """Gantt chart of work spans: one row per label (e.g. producer, consumer), one bar per span.

    Args:
        spans: Label -> ``(start, end)`` times in seconds (e.g. ``time.perf_counter()`` values).
            Overlapping spans of one label (parallel work) are drawn in extra lanes under it.

    Times are shown in ms from the earliest start. Introduced in lesson 04 (tf.data overlap).
    """
    lanes = []  # (row label, colour index, spans)
    for colour, (label, rows) in enumerate(spans.items()):
        ends: list[float] = []
        mine: list[list[tuple[float, float]]] = []
        for start, end in sorted(rows):
            lane = next((i for i, last in enumerate(ends) if last <= start), len(ends))
            if lane == len(ends):
                ends.append(end)
                mine.append([])
            ends[lane] = end
            mine[lane].append((start, end))
        lanes += [(label if i == 0 else f"{label} ({i + 1})", colour, row) for i, row in enumerate(mine)]
    if not lanes:
        raise ValueError("timeline needs at least one (start, end) span; got none")
    origin = min(start for _, _, row in lanes for start, _ in row)
    ax = _axes(ax, size=(7.0, 0.45 * len(lanes) + 1.2))
    for index, (_, colour, row) in enumerate(lanes):
        ax.broken_barh([((s - origin) * 1e3, (e - s) * 1e3) for s, e in row], (index - 0.35, 0.7), color=f"C{colour % 10}")
    ax.set_yticks(range(len(lanes)), [label for label, _, _ in lanes])
    ax.set_ylim(len(lanes) - 0.5, -0.5)
    ax.set_xlabel("time (ms)")
    if title:
        ax.set_title(title)
    return ax


__all__.append("timeline")
