"""The grader's side of a speed check (`tfperf_lab.speed.judge`), on a tiny notebook with no TensorFlow: a few seconds.

A real reference process runs the tiny instructor source; the "learner's kernel" is a thread of this test serving a
function through `tfperf.link`, as `assert_speedup` does in a graded kernel. What the judge must do: time both sides
itself and pass an honest fast answer, refuse outputs that differ from the reference's, refuse a candidate served
outside its test cell or twice, and say when a check was never served.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import pytest

from tfperf import link, timing
from tfperf_lab.speed import judge
from tfperf_lab.course import notebook
from tfperf_lab.isolation import sandbox
from tfperf_lab.speed import timer

FIXTURE = "import time\nimport numpy as np\nimport tfperf\n"
TEST = ('def slow(v):\n    time.sleep(0.002)\n    return v * 2\n\n\n'
        'tfperf.assert_speedup(slow, None, draw=lambda rng: rng.random(4), threshold=2.0, name="tiny", min_rounds=4, budget=3.0)\n')


def _nb() -> dict:
    cells = [{"cell_type": "code", "id": "setup", "metadata": {"tags": ["speed-fixture"]}, "source": FIXTURE, "outputs": [], "execution_count": None},
             {"cell_type": "markdown", "id": "words", "metadata": {}, "source": "Some words."},
             {"cell_type": "code", "id": "speedy", "metadata": {"nbgrader": {"grade": True, "grade_id": "speedy", "points": 1, "solution": False,
                                                                           "locked": True, "schema_version": 3}},
              "source": TEST, "outputs": [], "execution_count": None}]
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


@pytest.fixture()
def tiny(tmp_path):
    nb = _nb()
    source = notebook.write(nb, tmp_path / "tiny.ipynb")
    environment = sandbox.reference_environment(None) | {"PATH": os.path.dirname(sys.executable) + ":/usr/bin:/bin"}
    return source, nb, environment, tmp_path


def _serve(address, fn, results, name="tiny"):
    results.append(link.serve(name, fn, draw=lambda rng: rng.random(4), address=str(address)))


def _run(tiny, candidates, *, window=True):
    """Open a judge, report the test cell running, serve each candidate in turn; return the judge and the verdicts."""
    source, nb, environment, scratch = tiny
    verdicts = []
    with judge.Judge(source, environment=environment, executed=nb) as referee:
        reader, writer = os.pipe()
        referee.progress(os.fdopen(reader, "rb"))
        with os.fdopen(writer, "wb", buffering=0) as progress:
            progress.write(b"start 2\n" if window else b"start 0\n")
            for fn in candidates:
                thread = threading.Thread(target=_serve, args=(referee.candidate_address, fn, verdicts))
                thread.start()
                thread.join(timeout=120)
            time.sleep(0.1)
    return referee, verdicts


def test_an_honest_fast_answer_passes_on_the_graders_numbers(tiny):
    referee, verdicts = _run(tiny, [lambda v: v * 2])
    assert verdicts[0]["passed"], (verdicts, referee.notes, referee.reference_log)
    (record,) = referee.records
    assert record.name == "tiny" and record.technique == judge.TECHNIQUE and record.ci[0] >= 2.0, record
    assert record.baseline["metadata"]["grader"] and record.threshold == 2.0  # the threshold came from the instructor's cell


def test_a_slow_answer_fails(tiny):
    def slow(v):
        time.sleep(0.002)
        return v * 2

    referee, verdicts = _run(tiny, [slow])
    assert not verdicts[0]["passed"] and referee.records and not referee.records[0].passed, (verdicts, referee.notes)


def test_outputs_that_differ_from_the_reference_are_refused(tiny):
    referee, verdicts = _run(tiny, [lambda v: v * 2 + 1e-3])
    assert not verdicts[0]["passed"] and "differ from the reference" in verdicts[0]["reason"], verdicts
    assert not referee.records


def test_a_candidate_served_outside_its_cell_or_twice_is_not_measured(tiny, monkeypatch):
    monkeypatch.setattr(judge, "PROGRESS_SECONDS", 0.5)
    referee, verdicts = _run(tiny, [lambda v: v * 2], window=False)
    assert not verdicts[0]["passed"] and "outside its own test cell" in verdicts[0]["reason"], verdicts
    referee, verdicts = _run(tiny, [lambda v: v * 2, lambda v: v * 2])
    assert verdicts[0]["passed"] and not verdicts[1]["passed"] and "second time" in verdicts[1]["reason"], verdicts


def test_a_check_never_served_is_named(tiny):
    referee, verdicts = _run(tiny, [])
    assert not referee.records and any("never served" in note for note in referee.notes), referee.notes
    # the reference process starts with the job (its import off the critical path) and is stopped when grading ends
    assert referee._reference is None or referee._reference.poll() is not None, "the reference process outlived the grading"


def test_the_reference_process_starts_with_the_job_and_a_failed_start_is_the_machines_fault(tiny, monkeypatch):
    referee, verdicts = _run(tiny, [lambda v: v * 2])
    assert referee._reference is not None and verdicts[0]["passed"], (verdicts, referee.notes)

    def cannot(self):
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(judge.Judge, "_start_reference", cannot)
    referee, verdicts = _run(tiny, [lambda v: v * 2])
    assert not verdicts[0]["passed"] and "could not start its reference process" in verdicts[0]["reason"], verdicts
    assert "not of the notebook" in verdicts[0]["reason"] and not referee.records


def test_digests_need_every_element_and_tolerate_rounding():
    a = link.digest({"loss": np.float32(0.5), "values": [np.arange(6.0).reshape(2, 3)], "name": "ignored"})
    assert a == [0.5, 0.25, 1.0, 15.0, 55.0, 6.0]
    changed = np.arange(6.0)
    changed[5] += 1
    assert not timer.matches(link.digest([changed]), link.digest([np.arange(6.0)]), 1e-4, 1e-6)
    assert timer.matches(link.digest([np.arange(6.0) * (1 + 1e-7)]), link.digest([np.arange(6.0)]), 1e-4, 1e-6)


def test_batches_are_sized_by_the_slower_side_with_a_floor_for_the_faster_one():
    # like the self-check's samples: the slower side about 20 ms a batch
    assert timer.batch_calls(0.001, 0.003) == 7
    assert timer.batch_calls(0.003, 0.003) == 7
    # a large ratio: the faster side still runs 2 ms, the slower side at most 0.25 s
    assert timer.batch_calls(0.0005, 0.010) == 4
    assert timer.batch_calls(0.0005, 0.087) == 2
    assert timer.batch_calls(0.0005, 0.4) == 1
    # a longer sample_time from the check is honoured; tiny calls are batched
    assert timer.batch_calls(0.001, 0.002, sample_time=0.1) == 50
    assert timer.batch_calls(1e-5, 2e-5) == 1000
    assert timer.batch_calls(0.0, 0.0) >= 1



@pytest.mark.parametrize("per_call,overhead,grows", [(25e-6, 4e-4, True), (80e-6, 4e-4, True), (5e-3, 4e-4, False), (0.3, 4e-4, False)])
def test_batches_sized_on_single_calls_that_are_mostly_messaging_are_resized_and_slower_calls_keep_their_size(per_call, overhead, grows):
    """A single call's time includes the batch's messaging (and freezing the sandbox): lesson 01's 25-80 us calls were
    sized as if they took ~0.5 ms, into batches of 1-4 ms that one time slice of a neighbour could double."""
    options = timing.CheckOptions(threshold=1.6)

    class Fake(timer.Rounds):
        def __init__(self):
            self.options, self.sizes = options, []

        def pair(self, seed, calls):
            self.sizes.append(calls)
            return overhead + 3 * per_call * calls, overhead + per_call * calls, (None, None)  # baseline 3x slower per call

    rounds = Fake()
    single = timer.batch_calls(overhead + per_call, overhead + 3 * per_call, options.sample_time)
    calls = rounds.calibrated(single)
    assert len(rounds.sizes) <= timer.CALIBRATIONS
    if grows:
        assert calls > 1.5 * single
        assert 0.5 * options.sample_time <= 3 * per_call * calls <= timer.MAX_BATCH  # the slower side's batch: ~20 ms, not ~1 ms
    else:
        assert calls == single and len(rounds.sizes) == 1

def test_a_busy_grading_process_does_not_touch_the_measurement(tiny):
    # Another worker's nbgrader steps run as threads of the grading process. Sorting a long list holds the interpreter
    # lock for a few tenths of a second at a time: a clock in this process would add that wait to the batch it lands on
    # (the 2 ms baseline measured 229-314 ms a call that way). The rounds run in a timer process of their own.
    # (The candidate is served from a process of its own here, as the learner's kernel is.)
    source, nb, environment, scratch = tiny
    serve = ("import sys\nfrom tfperf import link\n"
             "print(link.serve('tiny', lambda v: v * 2, draw=lambda rng: rng.random(4), address=sys.argv[1]))\n")
    stop = threading.Event()

    def hold_the_lock():
        numbers = list(range(1_500_000, 0, -1))
        while not stop.is_set():
            sorted(numbers, key=int)

    holder = threading.Thread(target=hold_the_lock, daemon=True)
    with judge.Judge(source, environment=environment, executed=nb) as referee:
        reader, writer = os.pipe()
        referee.progress(os.fdopen(reader, "rb"))
        with os.fdopen(writer, "wb", buffering=0) as progress:
            progress.write(b"start 2\n")
            holder.start()
            try:
                kernel = subprocess.run([sys.executable, "-c", serve, str(referee.candidate_address)], capture_output=True, text=True, timeout=120)
            finally:
                stop.set()
                holder.join()
    assert "'passed'" in kernel.stdout, (kernel.stdout, kernel.stderr[-2000:], referee.notes)
    (record,) = referee.records
    assert record.baseline["median"] < 0.05, f"the baseline sleeps 2 ms a call and measured {record.baseline['median'] * 1e3:.0f} ms: the lock's waits were timed"


def test_a_judge_that_cannot_start_says_so_and_leaves_nothing_behind(tiny, monkeypatch):
    source, nb, environment, _ = tiny

    def refuse(path):
        raise OSError(36, "File name too long")

    monkeypatch.setattr(judge, "_listener", refuse)
    referee = judge.Judge(source, environment=environment, executed=nb)
    with pytest.raises(judge.JudgeUnavailable, match="could not start timing .* not of the notebook"):
        with referee:
            pass
    assert not referee.folder.exists() and referee not in judge._ACTIVE



def test_judge_folders_left_by_a_killed_grader_are_removed_by_the_next_and_a_live_graders_are_not(tiny, request, monkeypatch):
    source, nb, environment, _ = tiny
    root = pathlib.Path(tempfile.mkdtemp(prefix="tj-", dir="/tmp"))  # short: a socket's path is at most 107 bytes
    request.addfinalizer(lambda: shutil.rmtree(root, ignore_errors=True))
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a grader killed with SIGKILL: its pid names its folder, and it is no longer alive
    stale = root / f"{judge.FOLDER_PREFIX}{gone.pid}-abc123"
    (stale / "link").mkdir(parents=True)
    (stale / "link" / "candidate.sock").write_text("")
    live = root / f"{judge.FOLDER_PREFIX}{os.getppid()}-def456"  # another grading run on this machine, alive
    live.mkdir()
    unnamed = root / f"{judge.FOLDER_PREFIX}q8x_2kfz"  # no pid in its name (older versions): not ours to judge
    unnamed.mkdir()
    monkeypatch.setattr(judge, "_folder_root", lambda: str(root))
    monkeypatch.setattr(judge, "_SWEPT", threading.Event())
    referee = judge.Judge(source, environment=environment, executed=nb)  # the process's first judge sweeps
    assert not stale.exists() and live.is_dir() and unnamed.is_dir()
    assert referee.folder.parent == root and referee.folder.name.startswith(f"{judge.FOLDER_PREFIX}{os.getpid()}-")
    assert judge.sweep_stale_folders(root) == []  # its own folder is a live grader's
    with referee:
        pass
    assert not referee.folder.exists()

# -- protocol 2: messages read once, with limits; calls chained; bursts dropped ------------------------------------------
def _raw_client(address, payload: bytes, then=None):
    """A 'kernel' that speaks bytes of its choosing to the grader, then (optionally) serves honestly."""
    import socket as socket_module

    client = socket_module.socket(socket_module.AF_UNIX, socket_module.SOCK_STREAM)
    client.connect(str(address))
    client.sendall(payload)
    time.sleep(0.3)
    client.close()
    if then is not None:
        then()


@pytest.mark.parametrize("payload", [b"[" * 200_000 + b"\n", b'{"hello": ' * 3000 + b"\n", b"x" * (link.LINE_LIMIT + 10),
                                     b'{"hello": "tiny", "role": "candidate", "protocol": 1}\n'])
def test_a_malformed_or_old_hello_is_refused_and_the_grader_goes_on(tiny, payload):
    results = []
    source, nb, environment, _ = tiny
    with judge.Judge(source, environment=environment, executed=nb) as referee:
        reader, writer = os.pipe()
        referee.progress(os.fdopen(reader, "rb"))
        with os.fdopen(writer, "wb", buffering=0) as progress:
            progress.write(b"start 2\n")
            _raw_client(referee.candidate_address, payload, then=lambda: _serve(referee.candidate_address, lambda v: v * 2, results))
    assert results and results[0]["passed"], (results, referee.notes)
    assert any("did not speak its protocol" in note for note in referee.notes), referee.notes


def test_messages_are_decoded_with_limits():
    assert link.decode(b'{"digests": [[1, 2, 3]]}\n') == {"digests": [[1, 2, 3]]}
    for bad, why in [(b"[" * 5000 + b"\n", "not JSON"), (b'{"a": [[[[[[[1]]]]]]]}\n', "deeper"), (b"[1]\n", "not a JSON object"),
                     (b'{"a": 1}', "cut short"), (b"{" + b" " * link.LINE_LIMIT + b"}\n", "longer")]:
        with pytest.raises(link.ProtocolError, match=why):
            link.decode(bad)
    with pytest.raises(link.ProtocolError, match="protocol"):
        link.hello({"hello": "x", "role": "candidate", "protocol": 1})
    assert link.hello({"hello": "x", "role": "baseline", "protocol": link.PROTOCOL}) == ("x", "baseline", {})


def test_a_call_cannot_see_the_next_calls_inputs_before_it_answers():
    """Two answers that differ in the last bits draw different next inputs; the same answers, the same inputs."""
    def inputs(first_output):
        rng = np.random.default_rng(7)
        seen = [rng.random(3)]
        link.advance(rng, link.digest(first_output))
        seen.append(rng.random(3))
        return seen

    a, b, c = inputs(np.float64(1.0)), inputs(np.float64(1.0) + 1e-12), inputs(np.float64(1.0))
    assert np.array_equal(a[0], b[0]) and not np.array_equal(a[1], b[1]) and np.array_equal(a[1], c[1])


def test_a_batch_run_all_at_once_does_not_match_the_replay(tiny, monkeypatch):
    """A server that draws a whole batch's inputs up front (to stack them) answers inputs the replay never drew."""
    def stacked(fn, draw, observe, wait, seed, calls):
        rng = np.random.default_rng(seed)
        return [link.digest(fn(draw(rng))) for _ in range(calls)]

    monkeypatch.setattr(link, "_batch", stacked)
    referee, verdicts = _run(tiny, [lambda v: v * 2])
    assert not verdicts[0]["passed"] and "differ from the reference" in verdicts[0]["reason"], verdicts


def test_a_trickled_answer_counts_whole_against_the_batch_deadline():
    import socket as socket_module

    ours, theirs = socket_module.socketpair()
    side = timer.Side(ours, {"hello": "x"})

    def trickle():
        theirs.recv(1000)
        for byte in b'{"digests": [[1.0]]}\n':
            theirs.sendall(bytes([byte]))
            time.sleep(0.05)

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    began = time.monotonic()
    with pytest.raises(timer.Failed, match="did not answer within"):
        side.batch(1, 1, timeout=0.3)
    assert time.monotonic() - began < 0.6
    thread.join()


def _judged(before, rounds, seconds=0.05):
    disturbance = timer.Disturbance(before)
    return [disturbance.judge(w, seconds) for w in rounds]


def test_rounds_a_burst_landed_on_are_dropped_and_a_steady_load_drops_none():
    assert all(_judged([(0.5, 0.45)] * 3, [(0.5, 0.45)] * 12))
    bursty = [(0.02, 0.03)] * 10 + [(0.6, 0.02), (0.01, 0.5)]
    assert _judged([(0.02, 0.03)] * 3, bursty) == [True] * 10 + [False, False]
    assert all(_judged([(None, None)] * 2, [(None, None)] * 5)) and all(_judged([], [(0.9, 0.9)] * 5))


def test_a_round_is_judged_once_and_a_long_burst_keeps_none_of_its_rounds():
    """Against the running median of all rounds (the rule before sign-cs-2) a burst longer than half the rounds so far
    lifted the median and kept its own rounds, and every earlier round was decided again; here each stays as judged."""
    disturbance = timer.Disturbance([(0.01, 0.01)] * 3)
    rounds = [(0.01, 0.01)] * 5 + [(0.7, 0.01)] * 30 + [(0.01, 0.01)] * 5  # 30 rounds of 50 ms: 1.5 s of burst
    flags = []
    for waited in rounds:
        disturbance.judge(waited, 0.05)
        flags.append(list(disturbance.flags))
    assert flags[-1] == [True] * 5 + [False] * 30 + [True] * 5
    assert all(later[: len(earlier)] == earlier for earlier, later in zip(flags, flags[1:]))  # never revised


def test_a_load_that_began_after_the_sizing_becomes_the_usual_one_after_rebase_seconds():
    disturbance = timer.Disturbance([(0.01, 0.01)] * 3)
    spent = 0.25
    steps = int(timer.REBASE_SECONDS / spent)
    flags = [disturbance.judge((0.5, 0.5), spent) for _ in range(steps + 4)]
    assert flags == [False] * steps + [True] * 4  # the rounds before the change was seen stay dropped


def test_the_grader_reads_how_long_a_process_waited_for_a_cpu():
    me = os.getpid()
    waited = timer.run_delay(me)
    assert waited is not None and waited >= 0
    assert timer.run_delay(2**22 + 12345) is None


def test_a_judge_with_cores_of_its_own_measures_on_them_without_pausing_anyone(tiny, monkeypatch):
    """Jobs pinned to disjoint cores measure at the same time: no global lock, no pausing of other jobs, the reference
    process and the timer on the job's cores."""
    source, nb, environment, _ = tiny
    seen = {}
    real_measure = timer.measure

    def watching(reference, candidate, options, group, cpus=None):
        seen["lock_held"] = judge._MEASURING.locked()
        seen["cpus"] = cpus
        seen["reference_cores"] = os.sched_getaffinity(reference.pid) if reference.pid else None
        return real_measure(reference, candidate, options, group, cpus=cpus)

    monkeypatch.setattr(timer, "measure", watching)
    verdicts = []
    with judge.Judge(source, environment=environment, executed=nb, cpus=(0,)) as referee:
        other = judge.Judge(source, environment=environment, executed=nb)  # an unpinned job of the same process
        other.use_freezer(type("Freezer", (), {"freeze": lambda self: seen.setdefault("paused", True), "thaw": lambda self: None})(), None)
        judge._ACTIVE.add(other)
        try:
            reader, writer = os.pipe()
            referee.progress(os.fdopen(reader, "rb"))
            with os.fdopen(writer, "wb", buffering=0) as progress:
                progress.write(b"start 2\n")
                _serve(referee.candidate_address, lambda v: v * 2, verdicts)
        finally:
            judge._ACTIVE.discard(other)
    assert verdicts and verdicts[0]["passed"], (verdicts, referee.notes)
    assert seen["lock_held"] is False and seen["cpus"] == (0,) and seen["reference_cores"] == {0} and "paused" not in seen, seen


def test_grading_processes_on_one_machine_take_turns_and_the_wait_stops_the_waiting_jobs_clocks(tmp_path, monkeypatch):
    lock = tmp_path / "measuring.lock"
    monkeypatch.setattr(judge, "MACHINE_LOCK", lock)
    holder = subprocess.Popen([sys.executable, "-c",
                               "import fcntl, sys, time\nh = open(sys.argv[1], 'a')\nfcntl.flock(h, fcntl.LOCK_EX)\nprint('held', flush=True)\n"
                               "time.sleep(0.8)\n", str(lock)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"  # another grading process is measuring
    waiting = type("Job", (), {"paused_seconds": 0.0})()
    began = time.monotonic()
    with judge.Judge._machine_turn(waiting):
        waited = time.monotonic() - began
    holder.wait()
    assert waited >= 0.5, waited
    assert waiting.paused_seconds == pytest.approx(waited, abs=0.05)


# Issue 53 item 3: an undecided check whose rounds clear the threshold is the machine's to decide again, never a fail.

def _as_if(comparison, *, ci, disturbed=0, ratios=None):
    """``comparison`` with another interval, that many disturbed rounds and (when given) other per-round ratios."""
    import dataclasses

    metadata = dict(comparison.baseline.metadata, disturbed_rounds=disturbed)
    changed = dataclasses.replace(comparison, ci=ci, baseline=dataclasses.replace(comparison.baseline, metadata=metadata),
                                  candidate=dataclasses.replace(comparison.candidate, metadata=metadata))
    return dataclasses.replace(changed, ratios=tuple(ratios)) if ratios is not None else changed


def _measured_as(monkeypatch, *faked):
    """The judge's timer measures for real; its first len(faked) results are changed by ``faked`` (`_as_if`'s keywords)."""
    calls = []
    real = timer.measure

    def measure(*args, **kwargs):
        comparison = real(*args, **kwargs)
        calls.append(comparison)
        return _as_if(comparison, **faked[len(calls) - 1]) if len(calls) <= len(faked) else comparison

    monkeypatch.setattr(judge.timer, "measure", measure)
    monkeypatch.setattr(judge, "REMEASURE_AFTER", (0.05, 0.05))
    return calls


UNDECIDED = {"ci": (1.6, 2.7), "disturbed": 12}  # the check asks for 2x: the interval holds it; the real rounds clear it


def test_an_undecided_check_whose_rounds_clear_the_threshold_is_measured_again_and_the_later_verdict_counts(tiny, monkeypatch):
    calls = _measured_as(monkeypatch, UNDECIDED)
    referee, verdicts = _run(tiny, [lambda v: v * 2])
    assert len(calls) == 2 and verdicts[0]["passed"], (verdicts, referee.notes)
    assert any("measured 2 times" in note and "12 of its" in note for note in referee.notes), referee.notes
    assert not referee.machine_faults and referee.records[0].passed


def test_a_check_the_machine_never_decides_is_the_machines_never_a_fail(tiny, monkeypatch):
    calls = _measured_as(monkeypatch, *[UNDECIDED] * 3)
    referee, verdicts = _run(tiny, [lambda v: v * 2])
    assert len(calls) == 1 + len(judge.REMEASURE_AFTER), calls
    assert not verdicts[0]["passed"] and "could not confirm" in verdicts[0]["reason"], verdicts
    assert "not of the notebook" in verdicts[0]["reason"], verdicts
    assert referee.machine_faults and not referee.records, (referee.machine_faults, referee.records)


def test_an_undecided_check_whose_rounds_point_below_fails_and_is_measured_once(tiny, monkeypatch):
    calls = _measured_as(monkeypatch, {"ci": (1.2, 2.3), "disturbed": 12, "ratios": [1.5] * 12})
    referee, verdicts = _run(tiny, [lambda v: v * 2])
    assert len(calls) == 1 and not verdicts[0]["passed"], verdicts
    assert not referee.machine_faults and referee.records and not referee.records[0].passed


def test_only_an_undecided_interval_with_rounds_above_the_threshold_is_the_machines():
    sides = [timing.TimingResult(label, (0.01,) * 8) for label in ("baseline", "candidate")]
    comparison = timing.Comparison(sides[0], sides[1], (2.2,) * 8, (1.5, 2.5), threshold=2.0)
    assert "2.20x, clears the 2x asked" in judge.undecided_above(_as_if(comparison, ci=(1.5, 2.5), disturbed=3))
    assert judge.undecided_above(_as_if(comparison, ci=(1.5, 2.5), ratios=[1.9] * 8)) is None  # rounds below: the answer's
    assert judge.undecided_above(_as_if(comparison, ci=(2.1, 3.0))) is None  # passed: evidence
    assert judge.undecided_above(_as_if(comparison, ci=(1.1, 1.9), ratios=[1.5] * 8)) is None  # failed: evidence it is slow
