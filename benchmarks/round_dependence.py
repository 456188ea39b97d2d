"""How dependent the speed checks' rounds are, from the rounds the flake campaigns recorded.

A benchmark, not a test, and it measures nothing new: it reads the kept and dropped rounds of every grading in the
campaigns under ``docs/flake/`` (``[0-9]*.json``; ``superseded/`` and ``uncontrolled/`` are left out) and asks what the
decision rule assumes (docs/grading.md, "Where it does not hold yet"): that each kept round's log ratio
(log baseline/candidate) lies above the grading's true median with chance 1/2 whatever the rounds before it did. It
gives, per group of round durations, the autocorrelation of kept rounds' log ratios by lag in rounds and by lag in
seconds, pooled over gradings and corrected for each grading's own mean (less what shuffling each grading's rounds
gives); the Wald-Wolfowitz runs test on signs about each grading's median, for single rounds and for the medians of
blocks of consecutive kept rounds (k rounds, or as many as span T seconds), which is how a next rule could decide on
units close to independent, each beside the same gradings' single rounds (a longer block leaves fewer gradings the test
can judge, so a smaller |z| alone is not less dependence); and, per check x answer x load, the spread of the grading-to-grading offsets (sd_b) and
the intraclass correlation, which blocking cannot remove. A round's time is its two timed batches, calls x (baseline +
candidate) seconds a call; the grader's overhead between batches is not in it. The load comes from the file name, as
docs/layout.md names the campaigns (``<lesson>.json``: ``--hog 1``, ``.hog2.json``: ``--hog 2``, ``.burst.json``:
``--burst 2``), checked against what the record says it ran beside.

The figures go to ``docs/benchmarks/round-dependence.json`` (``--out``); ``--docs`` regenerates the block in
``docs/benchmarks.md`` from it, and a test keeps the two in sync. Deterministic: the shuffle correction is the shuffle's
exact expectation, and the one bootstrap (the variance of a grading's median) has a fixed seed. It takes some 15
seconds on one core.

    .venv/bin/python benchmarks/round_dependence.py --out docs/benchmarks/round-dependence.json
    .venv/bin/python benchmarks/round_dependence.py --docs
"""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import statistics
import sys

import numpy as np

from tfperf_lab.course import Course
from tfperf_lab.publish import readme
from tfperf_lab.speed.replay import in_order, median_variance  # what replay's calibration reads and estimates likewise

# groups of gradings by the median duration of their kept rounds (seconds): lower bound, upper bound, label
GROUPS = ((0.0, 0.04, "under 40 ms"), (0.04, 0.1, "40-100 ms"), (0.1, 0.5, "0.1-0.5 s"), (0.5, float("inf"), "over 0.5 s"))
SHORT = 0.1  # rounds shorter than this (seconds, the grading's median) are "short": the two first groups
MAX_LAG = 10  # lags in rounds
TIME_BINS = (0.0, 0.03, 0.06, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0)  # lags in seconds between two rounds' starts
MIN_PAIRS = 150  # a time bin with fewer pairs of rounds is not shown
BLOCK_ROUNDS = (3, 5, 10)  # blocks of k consecutive kept rounds
BLOCK_SECONDS = (0.1, 0.2, 0.25, 0.3, 0.5)  # blocks of consecutive kept rounds spanning at least T seconds
MIN_KEPT = 8  # gradings with fewer kept rounds are left out
LOADS = {"": ("hog1", {"hogs": 1, "bursts": 0}), "hog2": ("hog2", {"hogs": 2, "bursts": 0}),
         "burst": ("burst", {"hogs": 0, "bursts": 2})}  # file-name suffix -> load, and what the record must say
BOOTSTRAP_SEED = 3
BOOTSTRAP_REPS = 200
BOOTSTRAP_BLOCK = 5


# --- loading ----------------------------------------------------------------------------------------------------------

def _suffix(path: pathlib.Path) -> str:
    """What a campaign file's name adds between the lesson and ``.json``: "", "hog2", "burst"."""
    suffix = path.name[: -len(".json")].partition(".")[2]
    if suffix not in LOADS:
        raise ValueError(f"{path.name}: no load is named by the suffix {suffix!r} (known: {sorted(LOADS)})")
    return suffix


def load_of(path: pathlib.Path) -> str:
    """The load a campaign ran beside, from its file name: ``<lesson>.json`` one busy core (hog1), ``<lesson>.hog2.json``
    two (hog2), ``<lesson>.burst.json`` two bursty neighbours (burst)."""
    return LOADS[_suffix(path)][0]


def rounds_of(recorded: dict) -> dict:
    """One grading's rounds in the order they ran, from a campaign row's ``gradings`` entry (as
    `tfperf_lab.speed.replay.Grading.of` reads it): ``baseline``/``candidate`` hold the kept rounds' seconds a call,
    ``dropped`` the others as [position among all rounds, baseline, candidate], ``calls`` the calls a batch.

    Returns ``log_ratio``, ``seconds`` (the round's two batches: calls x (baseline + candidate)) and ``start`` (seconds
    since the first timed round began, dropped rounds' time included) of the kept rounds; ``log_ratio_all`` and
    ``seconds_all`` of all rounds, with ``kept`` flags; and the check's ``elapsed`` seconds. None if a recorded time is
    not positive."""
    times, kept = in_order(recorded)
    if (times <= 0).any():
        return None
    seconds = times.sum(axis=1) * max(1, int(recorded.get("calls", 1)))
    start = np.concatenate([[0.0], np.cumsum(seconds)[:-1]])
    log_ratio = np.log(times[:, 0] / times[:, 1])
    return {"log_ratio": log_ratio[kept], "seconds": seconds[kept], "start": start[kept], "kept": kept,
            "log_ratio_all": log_ratio, "seconds_all": seconds, "elapsed": float(recorded.get("elapsed", 0.0))}


def load_gradings(folder: pathlib.Path, min_kept: int = MIN_KEPT) -> tuple[list[dict], list[dict]]:
    """Every grading of every campaign in ``folder`` (``[0-9]*.json``, not its subfolders) with at least ``min_kept``
    kept rounds, as `rounds_of` gives it plus ``file``, ``load``, ``lesson``, ``cell``, ``name`` and ``answer``; and one
    entry per campaign file (its load and how many gradings it gave)."""
    gradings, campaigns = [], []
    for path in sorted(folder.glob("[0-9]*.json")):
        load = load_of(path)
        record = json.loads(path.read_text(encoding="utf-8"))
        said = {key: int(record.get(key) or 0) for key in ("hogs", "bursts")}
        if said != LOADS[_suffix(path)][1]:
            raise ValueError(f"{path.name}: its name says {load}, the record says {said}")
        found = 0
        for row in record["rows"]:
            for recorded in row.get("gradings") or []:
                got = rounds_of(recorded)
                if got is None or len(got["log_ratio"]) < min_kept:
                    continue
                gradings.append(got | {"file": path.name, "load": load, "lesson": row["lesson"], "cell": row["cell"],
                                       "name": recorded["name"], "answer": row["answer"]})
                found += 1
        campaigns.append({"file": path.name, "load": load, "date": record.get("date"), "gradings": found})
    return gradings, campaigns


def group_of(grading: dict) -> str:
    """The duration group (`GROUPS`) of a grading: by the median of its kept rounds' seconds."""
    typical = float(np.median(grading["seconds"]))
    return next(label for low, high, label in GROUPS if low <= typical < high)


def normal_scores(x: np.ndarray) -> np.ndarray:
    """Within-series normal scores: each value's rank mapped to the standard normal quantile, so that one burst round
    weighs no more than any other."""
    ranks = np.argsort(np.argsort(x, kind="stable"), kind="stable")
    inverse = statistics.NormalDist().inv_cdf
    return np.array([inverse((r + 0.5) / len(x)) for r in ranks])


# --- autocorrelation --------------------------------------------------------------------------------------------------

def pooled_acf(series: list[np.ndarray], max_lag: int = MAX_LAG) -> dict:
    """Autocorrelation by lag in rounds, pooled over series: `pooled_acf_by_time` with each round's index for its start,
    so bin k holds lag k. Each series less its own mean, the products at lag k summed over all series and divided by
    their count, over the pooled variance; ``shuffle`` (what shuffling each series within itself gives on average) is
    the bias of removing each series' own mean (about -1/n at every lag), and ``corrected`` = ``raw`` - ``shuffle``.
    Index k is lag k; index 0 is 1. ``pairs`` counts the products at each lag."""
    series = [np.asarray(x, dtype=float) for x in series]
    by_lag = pooled_acf_by_time(series, [np.arange(len(x), dtype=float) for x in series],
                                bins=np.arange(max_lag + 1) + 0.5)
    return {key: np.concatenate([[1.0 if key != "pairs" else 0.0], values]) for key, values in by_lag.items()}


def pooled_acf_by_time(series: list[np.ndarray], starts: list[np.ndarray], bins=TIME_BINS) -> dict:
    """Autocorrelation by the time between two rounds' starts (``bins``, seconds: bin i holds lags in [bins[i],
    bins[i+1])), pooled over series: every pair of a series' rounds, each series less its own mean, with an exact
    shuffle correction (a shuffled centred series of n values with sum of squares S has E[x_i x_j] = -S/(n(n-1)) for
    i != j: a shuffle puts the series' values on its own round times at random)."""
    edges = np.asarray(bins, dtype=float)
    width = len(edges) - 1
    num, null, pairs = np.zeros(width), np.zeros(width), np.zeros(width)
    squares = values = 0.0
    for x, t in zip(series, starts):
        x, t = np.asarray(x, dtype=float), np.asarray(t, dtype=float)
        n = len(x)
        if n < 2:
            continue
        x = x - x.mean()
        s = float((x * x).sum())
        squares, values = squares + s, values + n
        i, j = np.triu_indices(n, 1)
        where = np.digitize(t[j] - t[i], edges) - 1
        inside = (where >= 0) & (where < width)
        np.add.at(num, where[inside], x[i][inside] * x[j][inside])
        counts = np.bincount(where[inside], minlength=width)
        pairs += counts
        null -= counts * s / (n * (n - 1))
    variance = squares / values if values else np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        raw, shuffle = num / pairs / variance, null / pairs / variance
    return {"raw": raw, "shuffle": shuffle, "corrected": raw - shuffle, "pairs": pairs}


# --- runs test on single rounds and blocks ----------------------------------------------------------------------------

def blocks_of_rounds(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Medians of consecutive blocks of ``k`` values (a last, incomplete block is left out), and each block's size."""
    m = len(x) // k
    medians = np.median(np.asarray(x)[: m * k].reshape(m, k), axis=1) if m else np.array([])
    return medians, np.full(m, k)


def blocks_of_seconds(x: np.ndarray, start: np.ndarray, seconds: np.ndarray, span: float) -> tuple[np.ndarray, np.ndarray]:
    """Medians of blocks of consecutive kept rounds, each closed by the first round whose end lies at least ``span``
    seconds after the block's first round began (dropped rounds between them count as time; a last, incomplete block is
    left out), and each block's size in kept rounds."""
    medians, sizes, first = [], [], 0
    for i in range(len(x)):
        if start[i] + seconds[i] - start[first] >= span:
            medians.append(float(np.median(x[first: i + 1])))
            sizes.append(i + 1 - first)
            first = i + 1
    return np.array(medians), np.array(sizes, dtype=int)


def _runs(x: np.ndarray) -> tuple[float, float, float] | None:
    """One series' runs about its median: (runs - expected, variance, expected - 1), or None if its runs cannot vary
    (fewer than two signs of one kind and one of the other: one + and one -, which two or three units give)."""
    x = np.asarray(x, dtype=float)
    if len(x) < 2:
        return None
    signs = np.sign(x - np.median(x))
    signs = signs[signs != 0]
    above, below = int((signs > 0).sum()), int((signs < 0).sum())
    n = above + below
    if above == 0 or below == 0:
        return None
    variance = 2 * above * below * (2 * above * below - n) / (n * n * (n - 1))
    if variance <= 0:
        return None
    expected = 1 + 2 * above * below / n
    return 1 + int((signs[1:] != signs[:-1]).sum()) - expected, variance, expected - 1


def informative(x: np.ndarray) -> bool:
    """Whether the runs test can say anything about a series (`_runs`)."""
    return _runs(x) is not None


def runs_test(series: list[np.ndarray]) -> dict:
    """Wald-Wolfowitz runs test on the signs of each series about its own median (values at the median dropped),
    pooled: z = sum(R - E[R]) / sqrt(sum Var[R]), with each series' exact moments given its numbers of + and - signs.
    z well below 0: too few sign switches (neighbours alike, positive dependence); near 0: as if independent.
    ``missing`` is the share of the expected sign switches that did not happen, sum(E[R] - R) / sum(E[R] - 1), 0 if
    independent, with its standard error ``missing_se``; ``series`` counts the series whose runs can vary (both signs,
    and more than one of one of them: the others say nothing), ``units`` the values in them."""
    excess = variance = switches = 0.0
    used = units = 0
    for x in series:
        got = _runs(x)
        if got is None:
            continue
        excess, variance, switches = excess + got[0], variance + got[1], switches + got[2]
        used, units = used + 1, units + len(x)
    return {"z": excess / np.sqrt(variance) if variance else None,
            "missing": -excess / switches if switches else None,
            "missing_se": np.sqrt(variance) / switches if switches else None,
            "series": used, "units": units}


def schemes() -> list[tuple[str, object]]:
    """The units the runs test is run on, each a name and a function from a grading to (values, rounds in each):
    single rounds, blocks of k rounds, blocks spanning T seconds."""
    return ([("single rounds", lambda g: (g["log_ratio"], np.ones(len(g["log_ratio"]), dtype=int)))]
            + [(f"blocks of {k} rounds", lambda g, k=k: blocks_of_rounds(g["log_ratio"], k)) for k in BLOCK_ROUNDS]
            + [(f"blocks of {t:g} s", lambda g, t=t: blocks_of_seconds(g["log_ratio"], g["start"], g["seconds"], t))
               for t in BLOCK_SECONDS])


# --- per-grading offsets ----------------------------------------------------------------------------------------------

def variance_inflation(n: int, rho: np.ndarray | None) -> float:
    """How much a mean of ``n`` consecutive values with autocorrelation ``rho`` (index = lag) varies more than one of
    independent values: 1 + 2 sum_k (1 - k/n) rho_k."""
    if rho is None:
        return 1.0
    k = np.arange(1, min(n, len(rho)))
    return float(1 + 2 * np.sum((1 - k / n) * rho[k])) if len(k) else 1.0


def offset_spread(series: list[np.ndarray], rng: np.random.Generator, rho: list[np.ndarray | None] | None = None) -> dict:
    """How much the gradings of one check (one answer, one load) sit apart beyond their rounds' own noise.

    From means: sb2 = var(grading means) - mean(s_w^2 / n_g x inflation), s_w^2 the pooled within-grading variance and
    the inflation `variance_inflation` from ``rho`` (one autocorrelation per series, or None for independent rounds);
    ``icc`` = sb2 / (sb2 + s_w^2) and ``sd_b_mean`` = sqrt(sb2), both at 0 when sb2 < 0. From medians (what the rule
    decides on): sbm = var(grading medians) - mean(`median_variance`), giving ``sd_b`` = sqrt(sbm) and ``icc_median``.
    ``sb2``, ``sbm`` and ``sw2`` are kept, unclipped, for pooling (`pooled_icc`). In log units: sd_b 0.05 is about a 5%
    offset of one grading's ratio."""
    series = [np.asarray(x, dtype=float) for x in series]
    rho = rho or [None] * len(series)
    n = np.array([len(x) for x in series])
    means = np.array([x.mean() for x in series])
    medians = np.array([np.median(x) for x in series])
    sw2 = sum(float(((x - x.mean()) ** 2).sum()) for x in series) / (n.sum() - len(series))
    sb2 = float(np.var(means, ddof=1) - np.mean([sw2 / len(x) * variance_inflation(len(x), r) for x, r in zip(series, rho)]))
    sbm = float(np.var(medians, ddof=1) - np.mean([median_variance(x, rng, BOOTSTRAP_BLOCK, BOOTSTRAP_REPS) for x in series]))
    return {"gradings": len(series), "rounds_median": float(np.median(n)), "sd_w": float(np.sqrt(sw2)),
            "sd_b": float(np.sqrt(max(sbm, 0.0))), "sd_b_mean": float(np.sqrt(max(sb2, 0.0))),
            "icc": max(sb2, 0.0) / (max(sb2, 0.0) + sw2), "icc_median": max(sbm, 0.0) / (max(sbm, 0.0) + sw2),
            "sb2": sb2, "sbm": sbm, "sw2": sw2}


def pooled_icc(spreads: list[dict]) -> dict:
    """One intraclass correlation over many checks: sum(max(sb2, 0)) / sum(max(sb2, 0) + s_w^2), from means and from
    medians."""
    def pooled(key):
        between = sum(max(s[key], 0.0) for s in spreads)
        return between / (between + sum(s["sw2"] for s in spreads)) if spreads else None
    return {"mean": pooled("sb2"), "median": pooled("sbm")}


# --- the whole analysis -----------------------------------------------------------------------------------------------

def _numbers(values, digits: int = 4) -> list:
    return [None if v is None or not np.isfinite(v) else round(float(v), digits) for v in values]


def _rounded(got: dict) -> dict:
    return {key: round(float(v), 4) if isinstance(v, float) else v for key, v in got.items()}


def _quantiles(values, qs=(50, 75, 90)) -> dict:
    return {f"q{q}": round(float(np.percentile(values, q)), 4) for q in qs} if len(values) else {}


def analyse(gradings: list[dict], campaigns: list[dict]) -> dict:
    """Every figure of the JSON, from `load_gradings`' gradings."""
    groups = {label: [g for g in gradings if group_of(g) == label] for _, _, label in GROUPS}
    short = [g for g in gradings if float(np.median(g["seconds"])) < SHORT]
    sets = {"all": gradings, **groups, "under 0.1 s": short}

    by_rounds, by_time = {}, {}
    rho = {}
    for label, chosen in sets.items():
        if not chosen:
            continue
        logs = [g["log_ratio"] for g in chosen]
        scores = [normal_scores(x) for x in logs]
        log_acf, score_acf = pooled_acf(logs), pooled_acf(scores)
        if label in groups:
            rho[label] = np.clip(np.nan_to_num(log_acf["corrected"]), 0, 1)
        time_acf = pooled_acf_by_time(scores, [g["start"] for g in chosen])
        time_log = pooled_acf_by_time(logs, [g["start"] for g in chosen])
        by_rounds[label] = {"gradings": len(chosen), "rounds": int(sum(len(x) for x in logs)),
                            "median_round_s": round(float(np.median(np.concatenate([g["seconds"] for g in chosen]))), 4),
                            "log_ratio": _numbers(log_acf["corrected"]), "log_ratio_uncorrected": _numbers(log_acf["raw"]),
                            "normal_scores": _numbers(score_acf["corrected"]), "pairs": [int(p) for p in log_acf["pairs"]]}
        by_time[label] = {"normal_scores": _numbers(time_acf["corrected"]), "log_ratio": _numbers(time_log["corrected"]),
                          "pairs": [int(p) for p in time_acf["pairs"]]}

    runs = {}
    for name, units in schemes():
        runs[name] = {}
        for label, chosen in sets.items():
            blocked = [units(g) for g in chosen]
            judged = [i for i, (values, _) in enumerate(blocked) if informative(values)]
            got = _rounded(runs_test([blocked[i][0] for i in judged]))
            sizes = [size for i in judged for size in blocked[i][1]]
            got["rounds_per_unit"] = float(np.median(sizes)) if sizes else None
            # the same gradings' single rounds: is a smaller |z| less dependence, or only fewer units?
            got["same_gradings_single_rounds"] = _rounded(runs_test([chosen[i]["log_ratio"] for i in judged]))
            runs[name][label] = got

    rng = np.random.default_rng(BOOTSTRAP_SEED)
    units: dict[tuple, list[dict]] = {}
    for g in gradings:
        units.setdefault((g["lesson"], g["cell"], g["name"], g["answer"], g["load"]), []).append(g)
    spreads = []
    for key in sorted(units):
        chosen = units[key]
        if len(chosen) < 2:
            continue
        got = offset_spread([g["log_ratio"] for g in chosen], rng, [rho.get(group_of(g)) for g in chosen])
        spreads.append({"lesson": key[0], "cell": key[1], "name": key[2], "answer": key[3], "load": key[4],
                        **{k: round(v, 5) if isinstance(v, float) else v for k, v in got.items()}})
    reference = [s for s in spreads if s["answer"] == "reference"]
    elapsed = [g["elapsed"] / g["seconds_all"].sum() for g in gradings if g["elapsed"] > 0]
    return {
        "generated": datetime.date.today().isoformat(),
        "source": "docs/flake/[0-9]*.json",
        "min_kept_rounds": MIN_KEPT,
        "campaigns": campaigns,
        "gradings": len(gradings),
        "kept_rounds": int(sum(len(g["log_ratio"]) for g in gradings)),
        "all_rounds": int(sum(len(g["kept"]) for g in gradings)),
        "elapsed_over_rounds_median": round(float(np.median(elapsed)), 3) if elapsed else None,
        "groups": [{"label": label, "from_s": low, "to_s": None if high == float("inf") else high} for low, high, label in GROUPS],
        "acf_by_rounds": by_rounds,
        "time_bins_s": list(TIME_BINS),
        "min_pairs": MIN_PAIRS,
        "acf_by_time": by_time,
        "runs": runs,
        "offsets": {
            "units": spreads,
            "sd_b": _quantiles([s["sd_b"] for s in spreads]),
            "sd_b_reference": _quantiles([s["sd_b"] for s in reference]),
            "sd_b_mean": _quantiles([s["sd_b_mean"] for s in spreads]),
            "icc_pooled": {k: round(v, 4) for k, v in pooled_icc(spreads).items()},
            "icc_pooled_reference": {k: round(v, 4) for k, v in pooled_icc(reference).items()},
            "bootstrap": {"seed": BOOTSTRAP_SEED, "reps": BOOTSTRAP_REPS, "block": BOOTSTRAP_BLOCK},
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="where to write the figures (default: docs/benchmarks/round-dependence.json, "
                                                    "which docs/benchmarks.md's dependence block reads)")
    parser.add_argument("--folder", default=None, help="the campaign records to read (default: docs/flake/)")
    parser.add_argument("--docs", action="store_true", help="analyse nothing: regenerate docs/benchmarks.md's block from the JSON")
    args = parser.parse_args(argv)
    course = Course.find(pathlib.Path.cwd())
    if args.docs:
        print(readme.update(course, "dependence"))
        return 0
    gradings, campaigns = load_gradings(pathlib.Path(args.folder) if args.folder else readme.flake_folder(course))
    figures = analyse(gradings, campaigns)
    for label, row in figures["acf_by_rounds"].items():
        r = row["log_ratio"]
        print(f"{label:12s} {row['gradings']:5d} gradings, median round {row['median_round_s']:.3f} s: lag 1/2/5 {r[1]:.2f} {r[2]:.2f} "
              f"{r[5]:.2f}, runs z {figures['runs']['single rounds'][label]['z']:.1f}")
    for name, got in figures["runs"].items():
        for label in ("all", "under 0.1 s"):
            row, same = got[label], got[label]["same_gradings_single_rounds"]
            print(f"{name:20s} {label:12s} z {row['z'] or 0:6.1f}, switches missing {row['missing'] or 0:6.1%} ({row['series']} gradings); "
                  f"their single rounds: z {same['z'] or 0:6.1f}, switches missing {same['missing'] or 0:6.1%}")
    offsets = figures["offsets"]
    print(f"sd_b median {offsets['sd_b']['q50']:.3f}, q75 {offsets['sd_b']['q75']:.3f}, q90 {offsets['sd_b']['q90']:.3f}; pooled ICC "
          f"{offsets['icc_pooled']['mean']:.2f} from means, {offsets['icc_pooled']['median']:.2f} from medians")
    path = pathlib.Path(args.out) if args.out else readme.dependence_file(course)
    path.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
