"""Cores claimed per job on the machine where it runs (`tfperf_lab.isolation.cores`): disjoint across threads and
processes, released when a job ends or its process dies, and none on a machine too small to pin."""

import os
import subprocess
import sys
import threading
import time

import pytest

from tfperf_lab.isolation import cores


@pytest.fixture
def four_cores(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    return tmp_path / "locks"


@pytest.mark.parametrize("count,per_job,expected", [(2, 2, []), (3, 2, []), (4, 2, [(0, 1), (2, 3)]), (5, 2, [(0, 1), (2, 3)]),
                                                    (8, 2, [(0, 1), (2, 3), (4, 5), (6, 7)]), (8, 4, [(0, 1, 2, 3), (4, 5, 6, 7)]),
                                                    (4, 4, []), (4, 0, [])])
def test_jobs_are_pinned_only_where_at_least_two_sets_fit(count, per_job, expected):
    assert cores.sets(list(range(count)), per_job) == expected


def test_a_machine_too_small_to_pin_gives_no_cores(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    with cores.claim(2, where=tmp_path) as chosen:
        assert chosen is None
    assert not tmp_path.joinpath("core-0.lock").exists()


def test_claims_are_disjoint_and_a_third_waits_for_one_to_end(four_cores):
    with cores.claim(2, where=four_cores) as first, cores.claim(2, where=four_cores) as second:
        assert {first, second} == {(0, 1), (2, 3)}
        with pytest.raises(TimeoutError, match="no set of 2 cores came free"):
            with cores.claim(2, timeout=0.3, where=four_cores):
                pass
        got = []

        def third():
            with cores.claim(2, timeout=10, where=four_cores) as chosen:
                got.append(chosen)

        waiting = threading.Thread(target=third)
        waiting.start()
        time.sleep(0.3)
        assert got == []  # still waiting while both sets are held
    waiting.join(10)
    assert got and got[0] in {(0, 1), (2, 3)}


CLAIM_AND_HOLD = """
import os, sys, time, pathlib
os.sched_getaffinity = lambda pid: {0, 1, 2, 3}
from tfperf_lab.isolation import cores
with cores.claim(2, where=pathlib.Path(sys.argv[1])) as chosen:
    print(chosen, flush=True)
    time.sleep(60)
"""


def test_another_process_sees_the_claims_and_a_killed_process_releases_its_cores(four_cores):
    """A cluster worker or a second grading run on the same machine: the same cores are never given out twice, and a
    worker killed mid-job (SIGKILL: no cleanup runs) frees its cores for the next job."""
    holders = [subprocess.Popen([sys.executable, "-c", CLAIM_AND_HOLD, str(four_cores)], stdout=subprocess.PIPE, text=True)
               for _ in range(2)]
    try:
        claimed = {holder.stdout.readline().strip() for holder in holders}
        assert claimed == {"(0, 1)", "(2, 3)"}
        with pytest.raises(TimeoutError):
            with cores.claim(2, timeout=0.3, where=four_cores):
                pass
        holders[0].kill()
        holders[0].wait()
        with cores.claim(2, timeout=5, where=four_cores) as chosen:
            assert chosen is not None
    finally:
        for holder in holders:
            holder.kill()
            holder.wait()
