"""benchmarks/round_dependence.py: docs/benchmarks.md's dependence block is what its JSON generates, the JSON covers the
campaigns docs/flake/ holds, and the analysis recovers known answers on made-up rounds (an AR(1) series' autocorrelation,
independent rounds' runs test, blocks spanning many correlation times, a known spread of per-grading offsets)."""

import importlib.util
import json

import numpy as np
import pytest

from tfperf_lab.publish import readme
from pipeline import COURSE


def _benchmark():
    spec = importlib.util.spec_from_file_location("round_dependence_benchmark", COURSE.root / "benchmarks" / "round_dependence.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RD = _benchmark()


def _ar1(rng, gradings: int, rounds: int, phi: float, sd: float = 1.0) -> list[np.ndarray]:
    """``gradings`` stationary AR(1) series of ``rounds`` values, each of marginal standard deviation ``sd``."""
    shocks = rng.normal(size=(gradings, rounds))
    x = np.empty_like(shocks)
    x[:, 0] = shocks[:, 0]
    for i in range(1, rounds):
        x[:, i] = phi * x[:, i - 1] + np.sqrt(1 - phi * phi) * shocks[:, i]
    return list(sd * x)


def test_the_block_is_generated_from_the_recorded_figures():
    assert readme.current(COURSE, "dependence") == readme.generate(COURSE, "dependence"), \
        "docs/benchmarks.md's dependence block is stale: run `python benchmarks/round_dependence.py --docs`"


def test_the_figures_cover_the_campaigns_docs_flake_holds():
    """A campaign added, replaced or removed in docs/flake/ makes the JSON stale: run the benchmark again."""
    figures = json.loads(readme.dependence_file(COURSE).read_text(encoding="utf-8"))
    on_disk = sorted(path.name for path in readme.flake_folder(COURSE).glob("[0-9]*.json"))
    assert [campaign["file"] for campaign in figures["campaigns"]] == on_disk, \
        "docs/benchmarks/round-dependence.json is stale: run `python benchmarks/round_dependence.py`"
    assert figures["gradings"] == sum(campaign["gradings"] for campaign in figures["campaigns"]) > 0


def test_the_load_comes_from_the_file_name_and_must_match_the_record(tmp_path):
    assert [RD.load_of(tmp_path / name) for name in ("04_tf_data.json", "04_tf_data.hog2.json", "04_tf_data.burst.json")] == \
        ["hog1", "hog2", "burst"]
    with pytest.raises(ValueError, match="suffix"):
        RD.load_of(tmp_path / "04_tf_data.hog3.json")
    grading = {"name": "n", "baseline": [0.2] * 8, "candidate": [0.1] * 8, "dropped": [], "calls": 1}
    record = {"hogs": 2, "bursts": 0, "rows": [{"lesson": "04_tf_data", "cell": "c", "answer": "reference", "gradings": [grading]}]}
    (tmp_path / "04_tf_data.json").write_text(json.dumps(record))
    with pytest.raises(ValueError, match="name says hog1"):
        RD.load_gradings(tmp_path)
    (tmp_path / "04_tf_data.json").rename(tmp_path / "04_tf_data.hog2.json")
    gradings, campaigns = RD.load_gradings(tmp_path)
    assert campaigns[0]["load"] == "hog2" and len(gradings) == 1 and np.allclose(gradings[0]["log_ratio"], np.log(2))


def test_rounds_are_put_back_in_the_order_they_ran_with_their_wall_time():
    """Kept rounds hold their places around the dropped one; a round lasts calls x (baseline + candidate) seconds, and a
    dropped round's time still passes."""
    got = RD.rounds_of({"baseline": [0.2, 0.4, 0.2], "candidate": [0.1, 0.1, 0.2], "dropped": [[1, 1.0, 0.5]], "calls": 2})
    assert got["kept"].tolist() == [True, False, True, True]
    assert np.allclose(got["seconds"], [0.6, 1.0, 0.8]) and np.allclose(got["start"], [0.0, 3.6, 4.6])
    assert np.allclose(got["log_ratio"], np.log([2.0, 4.0, 1.0]))


def test_an_ar1_series_gives_its_autocorrelation():
    """AR(1), phi 0.5, 100 gradings of 100 rounds: lag 1 near 0.5, lag 2 near 0.25 (a lag off by one, or products not
    over the pooled variance, misses). Tolerance 0.05: removing each grading's mean biases an AR(1)'s lag-1 estimate by
    about -(1 + 3 phi)/n = -0.025 (Kendall), of which the shuffle correction gives back about 1/n, and the pooled
    estimate over 9,900 pairs has a standard error near sqrt((1 - phi^2)/9900) = 0.009: 0.015 + 3.5 standard
    errors."""
    got = RD.pooled_acf(_ar1(np.random.default_rng(1), 100, 100, 0.5))["corrected"]
    assert abs(got[1] - 0.5) < 0.05 and abs(got[2] - 0.25) < 0.05, got[:3]


def test_the_shuffle_correction_is_what_shuffling_gives():
    """The exact expectation the correction uses against 600 real within-grading shuffles of short series (n = 8, where
    the bias, -1/(n-1) = -0.14, is large): within 0.012 at every lag (the shuffles' mean has a standard error of 0.003
    at lag 4, less at the others: 4 standard errors)."""
    rng = np.random.default_rng(2)
    series = [rng.normal(size=8) * rng.uniform(0.5, 2) for _ in range(50)]
    exact = RD.pooled_acf(series, 4)["shuffle"]
    shuffled = np.mean([RD.pooled_acf([rng.permutation(x) for x in series], 4)["raw"] for _ in range(600)], axis=0)
    assert exact[1] < -0.1 and np.allclose(exact[1:], shuffled[1:], atol=0.012), (exact, shuffled)


def test_independent_rounds_look_independent():
    """600 gradings of 10 i.i.d. rounds: runs test z within +-3 (a standard normal under independence), lag 1 within
    0.045 of 0 (3.3 standard errors of a pooled estimate over 5,400 pairs), and no sign switch missing beyond 3 of its
    standard errors. Short series, so that the correction counts: each grading's own mean pulls the uncorrected lag 1 to
    -1/(n-1) = -0.11."""
    series = list(np.random.default_rng(3).normal(size=(600, 10)))
    runs = RD.runs_test(series)
    assert abs(runs["z"]) < 3 and abs(runs["missing"]) < 3 * runs["missing_se"] and runs["series"] == 600, runs
    acf = RD.pooled_acf(series)
    assert abs(acf["corrected"][1]) < 0.045 and acf["raw"][1] < -0.07, (acf["corrected"][1], acf["raw"][1])


def test_the_autocorrelation_by_seconds_follows_time():
    """Rounds of 0.04 s from an AR(1) with phi 0.5 a round: two rounds 0.04 s apart (the 0.03-0.06 s bin) correlate near
    0.5, 0.08 s apart near 0.25, 0.12 s apart near 0.125 (tolerance 0.05, as for lags in rounds)."""
    series = _ar1(np.random.default_rng(4), 100, 100, 0.5)
    starts = [np.arange(100) * 0.04 for _ in series]
    got = RD.pooled_acf_by_time(series, starts, (0.0, 0.03, 0.06, 0.1, 0.15))["corrected"]
    assert np.allclose(got[1:], [0.5, 0.25, 0.125], atol=0.05) and got[0] != got[0], got  # nothing under 0.03 s: NaN


def test_blocks_spanning_many_correlation_times_bring_the_runs_test_to_independence():
    """300 gradings of 240 rounds of 1/32 s (exact in binary, so block edges fall where meant), AR(1) with phi 0.5 a
    round (a correlation time of (1/32)/ln 2 = 0.045 s). Single rounds: sign neighbours agree (2/pi) asin(0.5) = 1/3
    more often than chance, so about a third of the switches go missing (tolerance 0.05) and z is far below -8. Blocks
    of 3/32 s (3 rounds, about 2 correlation times) keep much of it (z < -5). Blocks of 40/32 s (40 rounds, 28
    correlation times, 6 to a grading): adjacent block sums correlate 2/116 = 0.017, their signs about 0.011, which over
    1,500 pairs of blocks gives z near -0.4 (standard deviation 1): within +-3, and the switches missing within 0.07 of
    0 (3 standard errors of 0.02)."""
    rng = np.random.default_rng(5)
    gradings = [{"log_ratio": x, "start": np.arange(240) / 32, "seconds": np.full(240, 1 / 32)} for x in _ar1(rng, 300, 240, 0.5)]
    single = RD.runs_test([g["log_ratio"] for g in gradings])
    short = RD.runs_test([RD.blocks_of_seconds(g["log_ratio"], g["start"], g["seconds"], 3 / 32)[0] for g in gradings])
    blocked = [RD.blocks_of_seconds(g["log_ratio"], g["start"], g["seconds"], 40 / 32) for g in gradings]
    long = RD.runs_test([medians for medians, _ in blocked])
    assert abs(single["missing"] - 1 / 3) < 0.05 and single["z"] < -8, single
    assert short["z"] < -5, short
    assert all(sizes.tolist() == [40] * 6 for _, sizes in blocked)
    assert abs(long["z"]) < 3 and abs(long["missing"]) < 0.07 and long["series"] == 300, long


def test_a_known_offset_spread_is_recovered():
    """300 gradings of 20 rounds, within-grading sd 0.2: offsets of sd 0.1 come back as sd_b 0.1 (from medians,
    tolerance 0.025: the variance of 300 medians has a standard error near 0.0011, 0.006 on sd_b, and the block
    bootstrap of a 20-round median is biased by some 20% of its 0.0034) and 0.1 from means (tolerance 0.02), intraclass
    correlation 0.01/(0.01 + 0.04) = 0.2 (tolerance 0.05). Without offsets sd_b stays under 0.04; left uncorrected for
    the rounds' own noise it would read 0.058 (medians) and 0.045 (means)."""
    rng = np.random.default_rng(6)
    offsets = rng.normal(0, 0.1, 300)
    with_offsets = RD.offset_spread([offset + rng.normal(0, 0.2, 20) for offset in offsets], np.random.default_rng(7))
    assert abs(with_offsets["sd_b"] - 0.1) < 0.025 and abs(with_offsets["sd_b_mean"] - 0.1) < 0.02, with_offsets
    assert abs(with_offsets["icc"] - 0.2) < 0.05, with_offsets
    without = RD.offset_spread([rng.normal(0, 0.2, 20) for _ in range(300)], np.random.default_rng(8))
    assert without["sd_b"] < 0.04 and without["sd_b_mean"] < 0.04, without
    pooled = RD.pooled_icc([with_offsets, without])
    assert abs(pooled["mean"] - 0.1) < 0.04, pooled  # half the checks at 0.2, half at 0
