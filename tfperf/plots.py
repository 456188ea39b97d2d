"""Figures built from measurement results: speedup bars, one comparison, latency per step.

Each function takes results and an optional Axes, draws on it, and returns it; none changes global
style. Figures always come from the learner's own run. Introduced in lesson 01.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from . import present as _present
from .units import UNITS, format_seconds
from .units import pick_unit as _pick_unit

__all__ = ["comparison", "speedup_vs_time", "speedups", "step_latency"]


def _axes(ax, size=(6.0, 3.2)):
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=size, layout="constrained")[1]


def _unit(unit: str | None, seconds) -> tuple[float, str]:
    """(scale, name) of ``unit``, or of the unit the median of ``seconds`` reads best in."""
    if unit is None:
        return _pick_unit(float(np.median(seconds)))
    return next(u for u in UNITS if u[1] == unit)


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


SPEEDUP_AXIS = "times faster than its baseline (x): above 1 faster, below 1 slower"
SPEEDUP_CONVENTION = "each bar: candidate vs baseline, how many times faster the candidate is"
_VERDICT_COLORS = {"faster": "tab:green", "slower": "tab:red", "inconclusive": "tab:gray"}
_VERDICT_WORDS = {"faster": "faster (interval above 1x)", "slower": "slower (interval below 1x)",
                  "inconclusive": "no measurable difference (interval reaches 1x)"}


def _verdict(low: float, high: float) -> str:
    """The word an interval allows (`tfperf.present.verdict`: the whole interval above or below 1x), a bar's key."""
    return _present.verdict((low, high), neither="inconclusive")


def _two_and_five(value: float, _position=None) -> str:
    """A minor tick's label on a log axis spanning more than a decade: only 0.2x, 0.5x, 2x, 5x, 20x... (0.17x reads off it)."""
    if value <= 0:
        return ""
    mantissa = round(value / 10 ** np.floor(np.log10(value)), 6)
    return f"{value:g}x" if mantissa in (2.0, 5.0) else ""


def speedups(results: Sequence, *, ax=None, log: bool = True, threshold: float | None = None, title: str | None = None):
    """Horizontal bars of speedups with their confidence intervals, in the course's one convention.

    Every bar reads "candidate vs baseline": how many times faster the candidate is than its
    baseline (baseline time / candidate time), so 1x is no change and a bar left of the 1x line is
    a slowdown. The convention is written under the title of every chart. A bar is green only when
    its whole interval lies above 1x, red when it lies below, grey when the interval reaches 1x
    (the words `Comparison.describe` uses).

    Args:
        results: `Comparison` objects or record dicts (see `tfperf.report`).
        log: Log-scale x axis (speedups from 0.9x to 20x on one figure).
        threshold: Draw the pass line of a graded check.
        title: What the chart compares; the convention line is added under it.
    """
    rows = [_as_row(item) for item in results]
    owned = ax is None
    ax = _axes(ax, size=(8.0, 0.45 * len(rows) + 2.0))
    y = np.arange(len(rows))
    values = np.array([r[1] for r in rows])
    errors = np.array([[r[1] - r[2] for r in rows], [r[3] - r[1] for r in rows]]).clip(min=0)
    verdicts = [_verdict(r[2], r[3]) for r in rows]
    # bars grow from the 1x line: to the right a speedup, to the left a slowdown
    ax.barh(y, values - 1.0, left=1.0, color=[_VERDICT_COLORS[v] for v in verdicts])
    ax.errorbar(values, y, xerr=errors, fmt="none", ecolor="black", capsize=3)
    ax.axvline(1.0, color="black", linewidth=0.8)
    if threshold is not None:
        ax.axvline(threshold, color="tab:red", linestyle="--", linewidth=1, label=f"threshold {threshold:g}x")
    if log:
        ax.set_xscale("log")
    ax.set_yticks(y, [r[0] for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel(SPEEDUP_AXIS)
    ax.set_title(f"{title}\n({SPEEDUP_CONVENTION})" if title else f"({SPEEDUP_CONVENTION})", fontsize="medium", wrap=True)
    from matplotlib.patches import Patch

    from matplotlib.ticker import FuncFormatter

    times = FuncFormatter(lambda value, _: f"{value:g}x")
    ax.xaxis.set_major_formatter(times)
    if log:  # within one decade the minor ticks are the only labels: write them as speedups too
        span = max([r[3] for r in rows] + [1.0]) / min([r[2] for r in rows if r[2] > 0] + [1.0])
        ax.xaxis.set_minor_formatter(times if span < 10 else FuncFormatter(_two_and_five))
    handles = [Patch(color=_VERDICT_COLORS[v], label=_VERDICT_WORDS[v]) for v in dict.fromkeys(verdicts)]
    handles += ax.get_legend_handles_labels()[0]
    if owned:  # below the axes, where it covers no bar
        ax.figure.legend(handles=handles, loc="outside lower center", fontsize="small", ncols=len(handles), frameon=False)
    else:
        ax.legend(handles=handles, loc="best", fontsize="small")
    return ax


def comparison(result, *, ax=None):
    """Per-round speedups of one comparison, with the median, its interval and any threshold."""
    ax = _axes(ax)
    rounds = np.arange(1, result.rounds + 1)
    ax.plot(rounds, result.ratios, "o", color="tab:blue", alpha=0.7, label="round")
    ax.axhline(result.speedup, color="tab:blue", label=f"median {result.speedup:.2f}x")
    if np.all(np.isfinite(result.ci)) and result.ci[0] > 0:  # too few rounds: no interval to draw
        ax.axhspan(*result.ci, color="tab:blue", alpha=0.15, label=f"{result.confidence:.0%} CI")
    ax.axhline(1.0, color="black", linewidth=0.8)
    if result.threshold is not None:
        ax.axhline(result.threshold, color="tab:red", linestyle="--", label=f"threshold {result.threshold:g}x")
    return _finish(ax, "round", f"{SPEEDUP_AXIS.split(':')[0]}\n({result.candidate.label} vs {result.baseline.label})")


def step_latency(series: Mapping[str, Sequence[float]], *, x: Mapping[str, Sequence[float]] | None = None,
                 ax=None, xlabel: str = "step", ylabel: str = "time per step", unit: str | None = None, log: bool = False):
    """Seconds per step (or per item) for one or more named series, in one shared unit.

    Args:
        series: Label -> seconds per step.
        x: Label -> x values (default: 0, 1, 2, ...), e.g. the op count of a growing graph.
        ylabel: What one value is, e.g. ``"time per image"``; the unit is added.
        unit: ``"ms"``, ``"us"``...: one unit for every figure of a lesson (default: from the median).
        log: Log-scale y axis.
    """
    ax = _axes(ax)
    scale, unit = _unit(unit, np.concatenate([np.asarray(v, float) for v in series.values()]))
    for label, values in series.items():
        xs = x[label] if x is not None else np.arange(len(values))
        ax.plot(xs, np.asarray(values, float) / scale, label=label, linewidth=1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"{ylabel} ({unit})")
    if log:
        ax.set_yscale("log")
    ax.legend(loc="best", fontsize="small")
    return ax


def growth(seconds: Sequence[float], *, x: Sequence[float] | None = None, window: int = 10, ax=None,
           unit: str = "ms", xlabel: str = "ops already in the graph", ylabel: str = "time per image", per: int = 1000,
           per_what: str = "ops"):
    """Time per item against a growing size: every item, a rolling median, and the slope between the ends.

    Lesson 02 draws the leaky loop with it. Single items that another program delayed (spikes) would
    flatten the trend, so the y axis stops above the rolling median and says how many items it leaves
    out; the straight line joins the medians of the first and the last ``window`` items, the slope the
    lesson prints, labelled in ``unit`` per ``per`` ``per_what`` (ms per 1,000 ops). On a loaded machine the rolling
    median can climb in steps (another program holding a core for a while) rather than in a straight line.

    Args:
        seconds: Seconds per item, in order.
        x: The size when each item ran (default: 0, 1, 2, ...).
        window: Items per rolling median and per end of the slope.
        unit: One unit for the lesson's figures.
        per, per_what: The slope is given per ``per`` of these x units, e.g. 1,000 "ops".
    """
    values = np.asarray(seconds, float)
    xs = np.arange(len(values), dtype=float) if x is None else np.asarray(x, float)
    if len(values) < 2 * window or len(xs) != len(values):
        raise ValueError(f"growth needs at least 2 * window = {2 * window} items and one x per item; got {len(values)} and {len(xs)}")
    scale, unit = _unit(unit, values)
    ax = _axes(ax, size=(7.0, 3.4))
    rolling = np.array([np.median(values[max(0, i - window // 2): i + window // 2 + 1]) for i in range(len(values))])
    top = 1.3 * rolling.max() / scale
    off = int(np.sum(values / scale > top))
    ax.plot(xs, np.minimum(values / scale, top), ".", color="tab:blue", alpha=0.35, markersize=4,
            label="one item" + (f" ({off} spike{'' if off == 1 else 's'} drawn at the top edge)" if off else ""))
    ax.plot(xs, rolling / scale, color="tab:blue", linewidth=1.5, label=f"rolling median of {window}")
    ends = [(xs[:window].mean(), np.median(values[:window])), (xs[-window:].mean(), np.median(values[-window:]))]
    (x0, y0), (x1, y1) = ends
    slope = (y1 - y0) / (x1 - x0) if x1 != x0 else 0.0
    ax.plot([x0, x1], [y0 / scale, y1 / scale], "--", color="tab:red", marker="o",
            label=f"slope between the first and last {window}: {slope * per / scale:.3g} {unit} per {per:,} {per_what}")
    ax.set_ylim(0, top * 1.02)
    return _finish(ax, xlabel, f"{ylabel} ({unit})")


__all__.append("growth")


def speedup_vs_time(results: Sequence, *, saving: float | None = None, ax=None):
    """Speedup against the baseline's time per call, with a fixed-saving model curve.

    When a change saves a fixed ``saving`` seconds per call, a baseline step of ``t`` seconds
    speeds up ``t / (t - saving)``: large for tiny steps, vanishing for long ones.
    """
    ax = _axes(ax)
    times = np.array([r.baseline.median for r in results])
    values = np.array([r.speedup for r in results])
    errors = np.array([[r.speedup - r.ci[0] for r in results], [r.ci[1] - r.speedup for r in results]]).clip(min=0)
    errors[~np.isfinite(errors)] = 0  # too few rounds for an interval: no bar
    ax.errorbar(times * 1e3, values, yerr=errors, fmt="o", capsize=3, color="tab:blue", label="measured")
    for r, t, v in zip(results, times, values):
        ax.annotate(r.candidate.label, (t * 1e3, v), textcoords="offset points", xytext=(5, 5), fontsize="small")
    if saving is not None and saving > 0:
        grid = np.geomspace(max(saving * 1.05, times.min() * 0.5), times.max() * 2, 200)
        ax.plot(grid * 1e3, grid / (grid - saving), "--", color="tab:gray", label=f"fixed saving of {saving * 1e6:.0f} us")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    return _finish(ax, "baseline time per call (ms)", SPEEDUP_AXIS.split(":")[0] + " (x)")


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
    if x is None:  # epochs (or steps) 1, 2, 3...: whole-number ticks only
        ax.xaxis.get_major_locator().set_params(integer=True)
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


def logged_scalars(series: Mapping[str, object], *, ax=None, ylabel: str = "value", title: str | None = None,
                   xlabel: str = "step", first: int = 0):
    """Scalars read back from TensorBoard event files (lesson 07's fallback when TensorBoard is blocked).

    The x axis is the step the values were logged at, whole numbers only (no 0.5 ticks).

    Args:
        series: Label -> anything with ``steps`` and ``values`` (a `tfperf.events.Series`), e.g.
            ``{"train": events.scalars(d, run="train")["epoch_loss"], "validation": ...}``.
        ylabel: What the values are, e.g. ``"loss"``.
        xlabel: What a step counts: ``"epoch"`` for values logged once per epoch.
        first: The number the first logged step is drawn at: ``1`` to count epochs 1, 2, 3... as `metric_curves`
            does when the values were logged at steps 0, 1, 2...
    """
    ax = _axes(ax)
    for label, item in series.items():
        steps, values = np.asarray(item.steps, float) + first, np.asarray(item.values, float)
        ax.plot(steps, values, marker="o" if len(steps) < 20 else None, markersize=3, linewidth=1.2, label=label)
    ax.xaxis.get_major_locator().set_params(integer=True)
    return _finish(ax, xlabel, ylabel, title)


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


def stretch(spans: Mapping[str, Sequence[tuple[float, float]]], expected: Mapping[str, float]) -> dict[str, float]:
    """Median span length over its expected length, per label of ``expected`` (1.0: drawn as long as it is meant to be).

    A loaded machine wakes sleeping threads late, so a 10 ms wait can last 40 ms: a timeline of such
    spans no longer shows what the code does. Lesson 04 checks this before it draws.
    """
    return {label: float(np.median([end - start for start, end in spans[label]])) / seconds
            for label, seconds in expected.items() if spans.get(label)}


__all__.append("stretch")


def timeline(spans: Mapping[str, Sequence[tuple[float, float]]], *, ax=None, title: str | None = None,
             expected: Mapping[str, float] | None = None, tolerance: float = 1.5):
    """Gantt chart of work spans: one row per label (e.g. producer, consumer), one bar per span.

    Args:
        spans: Label -> ``(start, end)`` times in seconds (e.g. ``time.perf_counter()`` values).
            Overlapping spans of one label (parallel work) are drawn in extra lanes under it.

        expected: Label -> seconds a span should last (e.g. a 10 ms sleep). When the median span of a
            label is more than ``tolerance`` times that, the title says so: the machine stretched the
            spans and the chart cannot show the effect (see `stretch`).

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
    late = {label: ratio for label, ratio in stretch(spans, expected or {}).items() if ratio > tolerance}
    if late:
        warning = "; ".join(f"{label}: {expected[label] * 1e3:.0f} ms spans last {ratio * expected[label] * 1e3:.0f} ms"
                            for label, ratio in late.items())
        title = f"{title or ''}\nNOT FAITHFUL, machine too busy ({warning})".strip()
    if title:
        ax.set_title(title, color="tab:red" if late else "black", fontsize="medium")
    return ax


__all__.append("timeline")
