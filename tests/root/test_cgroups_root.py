"""The job's cgroup on this machine's real kernel, as root: freezing that holds against a fork chain (awaited, on v1
and on a cgroup2 file system mounted in a private mount namespace), limits not delegated said so, a delegated group's
processes moved to a leaf, a dead grader's frozen job swept, the v1 limit values read back from the kernel, and a
`Freezer` pickled to another process freezing a real group. Everything here skips without root (or the hierarchy).
The same rules on a fake cgroup file system, without root: tests/unit/test_cgroups.py."""

from __future__ import annotations

import json
import os
import pathlib
import pickle
import shutil
import signal
import subprocess
import sys
import time
import uuid

import pytest

from tfperf_lab.isolation import cgroups, contract
from tfperf_lab.isolation.contract import Limits

import cgroup_scenarios

HERE = pathlib.Path(cgroup_scenarios.__file__).resolve().parent
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="mounting a cgroup2 file system and making cgroups needs root")
needs_unshare = pytest.mark.skipif(shutil.which("unshare") is None, reason="unshare (util-linux) is not installed")
V1_FREEZER = pathlib.Path("/sys/fs/cgroup/freezer")
needs_v1 = pytest.mark.skipif(not (V1_FREEZER / "cgroup.procs").exists(), reason="no cgroup v1 freezer hierarchy on this machine")
V1_LIMITS = pathlib.Path("/sys/fs/cgroup")
needs_v1_limits = pytest.mark.skipif(not all((V1_LIMITS / c / "cgroup.procs").exists() for c in cgroups.V1_CONTROLLERS),
                                     reason="no cgroup v1 memory, pids and freezer hierarchies on this machine")
ODD = Limits(memory_mb=1536, processes=97)  # not the defaults: the job's own limits must be the ones written
GiB6, GiB1_5 = 6 * 2**30, 1536 * 2**20


def _in_v2_namespace(tmp_path, *arguments: str) -> dict:
    """Run a scenario of tests/cgroup_scenarios.py with a fresh cgroup2 mount, in a mount namespace of its own."""
    mount = tmp_path / "cg2"
    mount.mkdir(parents=True)
    script = (f"mount -t cgroup2 none {mount} || exit 90; "
              f"exec {sys.executable} {HERE / 'cgroup_scenarios.py'} {' '.join(arguments).replace('ROOT', str(mount))}")
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent), str(HERE)])})
    if done.returncode == 90:
        pytest.skip(f"cgroup2 cannot be mounted here: {done.stderr.strip()[:200]}")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _assert_frozen_then_thawed(found: dict) -> None:
    assert found["advanced_unfrozen"] > 10, f"the workload does not run, so the test shows nothing: {found}"
    assert found["frozen_pids"] and found["frozen_pids"] == found["later_pids"], f"processes came or went while frozen: {found}"
    assert all(delta == 0 for delta in found["advanced_frozen"].values()), f"a process ran while frozen: {found['advanced_frozen']}"
    assert len(found["frozen_pids"]) >= 4, f"the fork chain is not all in the group: {found}"
    assert found["state_after_thaw"] == "thawed" and found["advanced_thawed"] > 10, f"the job did not run again after thaw: {found}"
    assert found["thawed_pids"] != found["frozen_pids"], "the walker should have moved on after the thaw"
    assert found["folders_left"] == [] and found["alive_after_remove"] == [], found


@needs_root
@needs_unshare
def test_v2_freeze_stops_a_fork_chain_and_thaw_resumes_it(tmp_path):
    found = _in_v2_namespace(tmp_path, "v2-freeze", "ROOT")
    assert found["kind"] == "v2" and found["holds"] and found["freezer"] == "cgroup", found
    assert [pathlib.PurePath(f).name[:4] for f in found["folders"]] == ["job-"], found  # one leaf per job, under our parent
    assert pathlib.PurePath(found["folders"][0]).parent.name.startswith("tfperf-test-")
    assert found["state_after_freeze"] == "frozen"
    _assert_frozen_then_thawed(found)
    print(f"v2: first freeze {found['first_freeze_ms']:.2f} ms, median of 21 freezes {found['freeze_ms_median']:.2f} ms, "
          f"thaws {found['thaw_ms_median']:.2f} ms, {found['processes']} processes")


@needs_root
@needs_unshare
def test_v2_without_memory_and_pids_delegated_says_so_and_limits_address_space(tmp_path):
    found = _in_v2_namespace(tmp_path, "v2-setup", "ROOT")  # set up only: what _Cgroup reports
    assert not found["memory_limited"]
    memory, pids = (next((m for m in found["missing"] if m.startswith(f"{word}:")), None) for word in ("memory", "pids"))
    assert memory and "memory controller is not available" in memory, found["missing"]
    assert pids and "pids controller is not available" in pids, found["missing"]
    assert not any(m.startswith("freezer:") for m in found["missing"]), "v2 freezing needs no controller"
    run = _in_v2_namespace(tmp_path / "run", "v2-run", "ROOT", str(tmp_path / "scratch"))
    assert run["problem"] is None, run["log"]
    assert f"AS {512 * 4 * 2**20}" in run["printed"], run["printed"]  # the RLIMIT_AS stand-in reached the kernel
    assert "/job-" in run["printed"] and "tfperf-test-" in run["printed"], f"the kernel ran outside the job's leaf: {run['printed']}"
    assert any(w.startswith("memory: not limited") for w in run["warnings"]), run["warnings"]
    assert any(w.startswith("pids:") for w in run["warnings"]), run["warnings"]
    assert any("RLIMIT_AS" in w and "2048 MiB" in w for w in run["warnings"]), run["warnings"]
    assert run["judge_freezer"] and run["judge_freezer"]["file"].endswith("/cgroup.freeze"), run  # v2's freezer
    assert run["judge_freezer"]["state"] == "thawed" and run["judge_why"] is None, run
    assert run["judge_freezer"]["pickles"], "the timer process gets the freezer pickled"
    assert run["judge_calls"] == [["Freezer", None], [None, None]], "the freezer is taken back as the job ends"


@needs_root
@needs_unshare
def test_v2_a_delegated_group_holding_processes_moves_them_to_a_leaf_so_controllers_reach_the_job(tmp_path):
    found = _in_v2_namespace(tmp_path, "v2-evacuate", "ROOT")
    if "skip" in found:
        pytest.skip(found["skip"])
    assert found["restored"] and not found["left"], found
    assert found["busy_without_moving"] == "Device or resource busy", f"the case this covers did not arise: {found}"
    assert found["moved"] == [found["sleeper"]] and found["delegated_procs"] == [], found
    assert found["grader_leaf_procs"] == [str(found["sleeper"])], found
    assert "hugetlb" in found["leaf_controllers"] and found["limited"] == ["hugetlb"] and found["missing"] == [], found
    assert found["holds"] and "-delegated/tfperf-test-" in found["leaf"], found


@needs_root
@needs_v1
def test_v1_freeze_is_awaited_and_holds_against_a_fork_chain():
    parent = f"tfperf-test-{uuid.uuid4().hex[:8]}"
    group = cgroups.Cgroup(uuid.uuid4().hex[:8], Limits(), parent=parent)
    try:
        assert group.kind == "v1" and group.holds and group.freezer_kind == "cgroup", group.missing
        assert group.memory_limited and group.missing == [], group.missing
        found = cgroup_scenarios.freeze_scenario(group)
    finally:
        group.remove()
        for controller in cgroups.V1_CONTROLLERS:
            if (pathlib.Path("/sys/fs/cgroup") / controller / parent).is_dir():
                (pathlib.Path("/sys/fs/cgroup") / controller / parent).rmdir()
    assert found["state_after_freeze"] == "frozen", f"freeze returned before freezer.state said FROZEN: {found}"
    _assert_frozen_then_thawed(found)
    print(f"v1: first freeze {found['first_freeze_ms']:.2f} ms, median of 21 freezes {found['freeze_ms_median']:.2f} ms, "
          f"thaws {found['thaw_ms_median']:.2f} ms, {found['processes']} processes")


@needs_root
@needs_v1
def test_a_job_left_frozen_by_a_grader_that_died_is_thawed_killed_and_removed_and_a_live_graders_job_is_not():
    parent = f"tfperf-test-{uuid.uuid4().hex[:8]}"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a grader killed with SIGKILL: its pid names the job, and it is no longer alive
    stale = cgroups.Cgroup(f"{gone.pid}-{uuid.uuid4().hex[:8]}", Limits(), parent=parent)
    live = cgroups.Cgroup(f"{os.getpid()}-{uuid.uuid4().hex[:8]}", Limits(), parent=parent)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        for procs in stale.procs:
            pathlib.Path(procs).write_text(str(sleeper.pid))
        stale.freeze()
        removed = cgroups.sweep_stale(parent=parent)
        assert sorted(folder.name for folder in removed) == [f"job-{stale.name}"] * len(stale.folders), removed
        assert sleeper.wait(timeout=10) == -signal.SIGKILL
        assert not any(folder.exists() for folder in stale.folders) and all(folder.exists() for folder in live.folders)
    finally:
        sleeper.kill()
        live.remove()
        stale.remove()
        for controller in cgroups.V1_CONTROLLERS:
            if (pathlib.Path("/sys/fs/cgroup") / controller / parent).is_dir():
                (pathlib.Path("/sys/fs/cgroup") / controller / parent).rmdir()


@needs_root
@needs_v1_limits
@pytest.mark.parametrize("limits,memory_bytes", [(Limits(), GiB6), (ODD, GiB1_5)], ids=["defaults", "odd"])
def test_v1_limits_read_back_from_the_kernel(limits, memory_bytes):
    parent = f"tfperf-test-{uuid.uuid4().hex[:8]}"
    group = cgroups.Cgroup(uuid.uuid4().hex[:8], limits, parent=parent)
    try:
        assert group.kind == "v1" and group.missing == [], group.missing
        by_hierarchy = {folder.parent.parent.name: folder for folder in group.folders}
        assert (by_hierarchy["memory"] / "memory.limit_in_bytes").read_text().strip() == str(memory_bytes)
        assert (by_hierarchy["pids"] / "pids.max").read_text().strip() == str(limits.processes)
    finally:
        group.remove()
        for controller in cgroups.V1_CONTROLLERS:
            if (V1_LIMITS / controller / parent).is_dir():
                (V1_LIMITS / controller / parent).rmdir()


@needs_root
@needs_v1_limits
def test_the_fake_reads_limits_back_as_this_kernel_does():
    """The fake's parsing and page rounding (what the v2 tests rest on) against the real kernel's, through v1's files."""
    group = V1_LIMITS / "memory" / f"tfperf-test-{uuid.uuid4().hex[:8]}"
    pids = V1_LIMITS / "pids" / group.name
    group.mkdir()
    pids.mkdir()
    try:
        for text in ("6442450944", "6144", "6144M", "6g", "0x1000", "010", "4097", "-1", "1.5G", "max"):
            try:
                (group / "memory.limit_in_bytes").write_text(text)
                kernel = (group / "memory.limit_in_bytes").read_text().strip()
            except OSError as error:
                kernel = error.errno
            try:
                fake = cgroup_scenarios.memparse(text, "-1")
            except OSError as error:
                fake = error.errno
            assert fake == kernel, f"memory.limit_in_bytes {text!r}: the kernel reads back {kernel!r}, the fake {fake!r}"
        for text in ("1", "512", "max", "-1", "abc"):
            try:
                (pids / "pids.max").write_text(text)
                kernel = (pids / "pids.max").read_text().strip()
            except OSError as error:
                kernel = error.errno
            try:
                fake = cgroup_scenarios.pids_max(text)
            except OSError as error:
                fake = error.errno
            assert fake == kernel, f"pids.max {text!r}: the kernel reads back {kernel!r}, the fake {fake!r}"
    finally:
        group.rmdir()
        pids.rmdir()


COUNTER = "import sys, time\nn = 0\nwhile True:\n    n += 1\n    open(sys.argv[1], 'w').write(str(n))\n    time.sleep(0.02)\n"


FROM_ELSEWHERE = ("import pickle, sys\nfreezer = pickle.loads(sys.stdin.buffer.read())\n"
                  "getattr(freezer, sys.argv[1])()\nprint(freezer.state())\n")


def _count(path: pathlib.Path) -> int:
    text = path.read_text() if path.exists() else ""
    return int(text) if text.isdigit() else -1


def _soon(condition, seconds: float = 20.0) -> bool:
    """Whether ``condition()`` holds within ``seconds`` (a busy machine starts a process slowly)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.skipif(os.geteuid() != 0, reason="making cgroups needs root (or a delegated cgroup)")
def test_a_freezer_pickled_to_another_process_freezes_and_thaws_a_real_cgroup(tmp_path):
    parent = f"tfperf-test-{uuid.uuid4().hex[:8]}"
    group = cgroups.Cgroup(f"{os.getpid()}-{uuid.uuid4().hex[:8]}", contract.Limits(), parent=parent)
    parents = [folder.parent for folder in group.folders]
    counter = tmp_path / "count"
    job = None
    try:
        if not group.holds:
            pytest.skip(f"no cgroup freezer here: {group.missing}")
        job = subprocess.Popen([sys.executable, "-c", COUNTER, str(counter)])
        for procs in group.procs:
            pathlib.Path(procs).write_text(str(job.pid))
        sent = pickle.dumps(group.freezer)

        def elsewhere(verb: str) -> str:  # as the grader's timer process does it: the freezer pickled to another process
            done = subprocess.run([sys.executable, "-c", FROM_ELSEWHERE, verb], input=sent, capture_output=True, timeout=30)
            assert done.returncode == 0, done.stderr.decode()[-2000:]
            return done.stdout.decode().strip()

        assert _soon(lambda: _count(counter) > 0), "the job does not run, so the test shows nothing"
        assert elsewhere("freeze") == "frozen" and group.freezer.state() == "frozen"
        before = _count(counter)
        time.sleep(0.5)
        assert _count(counter) == before, "the job ran while frozen"
        assert elsewhere("thaw") == "thawed"
        assert _soon(lambda: _count(counter) > before), "the job did not run again after the thaw"
    finally:
        group.remove()
        if job is not None:
            job.kill()
            job.wait()
        for folder in parents:
            if folder.is_dir():
                folder.rmdir()
