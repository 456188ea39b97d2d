"""The job's cgroup (`tfperf_lab.isolation.cgroups.Cgroup`, its `Freezer`) on real kernels: freezing that holds against a fork chain, awaited
on v1 and v2, a freeze that cannot complete raising, and limits that do not hold said so (with the RLIMIT_AS stand-in).

cgroup v2 runs here even on a v1 machine: as root, in a private mount namespace (``unshare -m``), a cgroup2 file system
is mounted on a temporary folder. Its root lists only the controllers v1 does not hold (no memory, no pids) and
delegates none: the "not delegated" case. Freezing needs no controller on v2, so it is real there.

The limit values the job's groups get (memory in bytes, no swap, the process count; v1 and v2) are read back from a fake
cgroup file system (`cgroup_scenarios.FakeCgroupFS`, which parses and rounds them as a kernel does) and, on v1, as root,
from the kernel; the cores and file-size limit from what the sandbox's launcher gives the process it starts.
"""

from __future__ import annotations

import contextlib
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

from tfperf_lab.isolation import cgroups, sandbox
from tfperf_lab.isolation.contract import Limits

import cgroup_scenarios

HERE = pathlib.Path(__file__).resolve().parent
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="mounting a cgroup2 file system and making cgroups needs root")
needs_unshare = pytest.mark.skipif(shutil.which("unshare") is None, reason="unshare (util-linux) is not installed")
V1_FREEZER = pathlib.Path("/sys/fs/cgroup/freezer")
needs_v1 = pytest.mark.skipif(not (V1_FREEZER / "cgroup.procs").exists(), reason="no cgroup v1 freezer hierarchy on this machine")


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


def _fake_v2(tmp_path, frozen: str) -> pathlib.Path:
    folder = tmp_path / "job-fake"
    folder.mkdir()
    (folder / "cgroup.freeze").write_text("0\n")
    (folder / "cgroup.events").write_text(f"populated 1\nfrozen {frozen}\n")
    (folder / "cgroup.procs").write_text("")
    return folder


def test_a_freeze_that_never_completes_raises_and_leaves_the_job_running(tmp_path):
    folder = _fake_v2(tmp_path, "0")  # plain files: cgroup.events never says frozen 1
    group = cgroups.Cgroup.adopt(folder, "v2")
    assert group.holds and group.freezer_kind == "cgroup"
    freezer = pickle.loads(pickle.dumps(group.freezer))  # as the grader's timer process gets it
    began = time.monotonic()
    with pytest.raises(cgroups.FreezeFailed, match=r"did not become frozen within 0\.3 s.*frozen 0.*left running"):
        freezer.freeze(seconds=0.3)
    assert 0.3 <= time.monotonic() - began < 1.5
    assert (folder / "cgroup.freeze").read_text() == "0", "a failed freeze is undone"


def test_a_freeze_returns_once_the_kernel_says_frozen_and_thaw_awaits_thawed(tmp_path):
    folder = _fake_v2(tmp_path, "1")
    group = cgroups.Cgroup.adopt(folder, "v2")
    began = time.monotonic()
    group.freeze(seconds=0.3)
    assert time.monotonic() - began < 0.1 and (folder / "cgroup.freeze").read_text() == "1"
    with pytest.raises(cgroups.FreezeFailed, match="did not become thawed"):  # events still say frozen 1
        group.thaw(seconds=0.2)


def test_a_job_that_ended_is_not_frozen_and_says_nothing_when_another_job_pauses_it(tmp_path, monkeypatch):
    """Another job's judge may pause this job just as its notebook ends and its group is removed: nothing is left to
    stop, so freezing and thawing do nothing instead of writing a note on an honest row."""
    folder = _fake_v2(tmp_path, "0")
    group = cgroups.Cgroup.adopt(folder, "v2")
    monkeypatch.setattr(cgroups.time, "sleep", lambda seconds: None)  # the fake folder holds files: rmdir retries at once
    group.remove()
    monkeypatch.undo()
    assert group.ended and group.freeze_file is None and group.folders == []
    group.freeze(seconds=0.2)
    group.thaw(seconds=0.2)
    (tmp_path / "other").mkdir()
    fresh = cgroups.Cgroup.adopt(_fake_v2(tmp_path / "other", "0"), "v2")
    with pytest.raises(cgroups.FreezeFailed):  # a job that has not ended still says when it cannot be frozen
        fresh.freeze(seconds=0.2)


def test_no_writable_cgroup_means_no_freezer_no_silent_limits_and_no_group_for_the_judge(tmp_path):
    group = cgroups.Cgroup("none", Limits(), root=tmp_path / "no-cgroups-here")
    assert group.kind == "none" and not group.holds and group.freezer_kind == "none" and not group.memory_limited
    assert [m.split(":")[0] for m in group.missing] == ["memory", "pids", "freezer"], group.missing
    with pytest.raises(cgroups.FreezeFailed, match="no cgroup freezer"):
        group.freeze()
    assert not any(hasattr(module, name) for module in (cgroups, sandbox) for name in ("_ProcessTree", "_signal")), \
        "no SIGSTOP stand-in for a freezer"
    run = cgroup_scenarios.run_probe(tmp_path / "no-cgroups-here", tmp_path / "scratch")
    assert run["problem"] is None, run["log"]
    assert run["judge_freezer"] is None, "the judge must not get a freezer that cannot freeze"
    assert run["judge_why"].startswith("freezer: the job cannot be frozen"), run["judge_why"]
    assert f"AS {512 * 4 * 2**20}" in run["printed"], run["printed"]
    assert [w.split(":")[0] for w in run["warnings"]] == ["memory", "pids", "freezer", "memory"], run["warnings"]
    assert cgroups.CGROUP_ROOT == pathlib.Path("/sys/fs/cgroup"), "the probe must leave the module as it found it"


def test_the_delegated_group_is_the_graders_own_and_stays_put_once_the_grader_moved_into_its_leaf():
    root = pathlib.Path("/sys/fs/cgroup")
    scope = "/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope"
    assert cgroups.Cgroup.delegated(root, scope, True, "tfperf-lab") == root  # root: the whole hierarchy
    assert cgroups.Cgroup.delegated(root, scope, False, "tfperf-lab") == root / scope[1:]
    moved = scope + "/tfperf-lab-grader"  # after an earlier job emptied the scope into our leaf
    assert cgroups.Cgroup.delegated(root, moved, False, "tfperf-lab") == root / scope[1:]
    assert cgroups.Cgroup.delegated(root, None, False, "tfperf-lab") == root


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


# -- the limit values written, read back as a kernel stores them ---------------------------------------------------
# This machine runs cgroup v1, whose hierarchies hold memory and pids: no v2 hierarchy here has those controllers, so the
# v2 values are checked on a fake cgroup2 file system (cgroup_scenarios.FakeCgroupFS: a kernel's parsing, page rounding
# and delegation rules, in a plain folder), and the v1 values on both the fake and, as root, the real kernel.
ODD = Limits(memory_mb=1536, processes=97)  # not the defaults: the job's own limits must be the ones written
GiB6, GiB1_5 = 6 * 2**30, 1536 * 2**20


@pytest.mark.parametrize("limits,memory_bytes", [(Limits(), GiB6), (ODD, GiB1_5)], ids=["defaults", "odd"])
@pytest.mark.parametrize("swap", [True, False], ids=["swap-accounting", "no-swap-accounting"])
def test_v2_writes_memory_in_bytes_no_swap_and_the_process_count(tmp_path, monkeypatch, limits, memory_bytes, swap):
    fake = cgroup_scenarios.FakeCgroupFS(tmp_path / "cg2", swap=swap).install(monkeypatch)
    group = cgroups.Cgroup("values", limits, root=fake.root, parent="tfperf-test", base=fake.root)
    leaf = fake.root / "tfperf-test" / "job-values"
    assert group.kind == "v2" and group.folders == [leaf] and group.missing == [], group.missing
    assert group.limited == ["memory", "pids"] and group.memory_limited
    assert fake.read("tfperf-test/job-values/memory.max") == str(memory_bytes)
    assert fake.read("tfperf-test/job-values/pids.max") == str(limits.processes)
    if swap:  # no swapping past the memory limit
        assert fake.read("tfperf-test/job-values/memory.swap.max") == "0"
    else:  # absent without swap accounting: not written, and the group is still made
        assert not (leaf / "memory.swap.max").exists()
    # the controllers reach the leaf through every ancestor, and nothing else is enabled or written
    assert fake.enabled() == ["memory", "pids"] and fake.enabled("tfperf-test") == ["memory", "pids"]
    assert fake.enabled("tfperf-test/job-values") == [] and fake.read("tfperf-test/job-values/cgroup.controllers") == "memory pids"
    assert [path for path, _ in fake.writes] == [
        "cgroup.subtree_control", "cgroup.subtree_control", "tfperf-test/cgroup.subtree_control", "tfperf-test/cgroup.subtree_control",
        "tfperf-test/job-values/memory.max", *(["tfperf-test/job-values/memory.swap.max"] if swap else []),
        "tfperf-test/job-values/pids.max"], fake.writes  # no cpu.max, no cpuset.cpus: cores are pinned by the launcher
    assert group.freeze_file == leaf / "cgroup.freeze" and fake.read("tfperf-test/job-values/cgroup.freeze") == "0"
    group.freeze()
    assert fake.read("tfperf-test/job-values/cgroup.freeze") == "1"
    group.thaw()
    assert fake.read("tfperf-test/job-values/cgroup.freeze") == "0"
    group.remove()
    assert not leaf.exists() and (fake.root / "tfperf-test").is_dir(), "the job's leaf goes, our parent group stays"


def test_v2_with_only_memory_delegated_limits_memory_and_says_pids_is_not(tmp_path, monkeypatch):
    fake = cgroup_scenarios.FakeCgroupFS(tmp_path / "cg2", controllers=("cpu", "memory")).install(monkeypatch)
    group = cgroups.Cgroup("partial", ODD, root=fake.root, parent="tfperf-test", base=fake.root)
    assert group.limited == ["memory"] and fake.read("tfperf-test/job-partial/memory.max") == str(GiB1_5)
    assert not (fake.root / "tfperf-test" / "job-partial" / "pids.max").exists()
    assert [m.split(":")[0] for m in group.missing] == ["pids"] and "pids controller is not available" in group.missing[0]


@pytest.mark.parametrize("limits,memory_bytes", [(Limits(), GiB6), (ODD, GiB1_5)], ids=["defaults", "odd"])
def test_v1_writes_memory_in_bytes_and_the_process_count(tmp_path, monkeypatch, limits, memory_bytes):
    fake = cgroup_scenarios.FakeCgroupFS.v1(tmp_path / "cg1").install(monkeypatch)
    monkeypatch.setattr(cgroups, "_own_cgroup", lambda controller: None)  # each hierarchy's root is ours, as for root
    group = cgroups.Cgroup("values", limits, root=fake.root, parent="tfperf-test")
    job = "tfperf-test/job-values"
    assert group.kind == "v1" and group.missing == [] and group.limited == ["memory", "pids"], group.missing
    assert group.folders == [fake.root / controller / job for controller in ("memory", "pids", "freezer")]
    assert fake.read(f"memory/{job}/memory.limit_in_bytes") == str(memory_bytes)
    assert fake.read(f"pids/{job}/pids.max") == str(limits.processes)
    assert [path for path, _ in fake.writes] == [f"memory/{job}/memory.limit_in_bytes", f"pids/{job}/pids.max"], fake.writes
    assert group.freeze_file == fake.root / "freezer" / job / "freezer.state"
    group.freeze()
    assert fake.read(f"freezer/{job}/freezer.state") == "FROZEN"
    group.thaw()
    assert fake.read(f"freezer/{job}/freezer.state") == "THAWED"


V1_LIMITS = pathlib.Path("/sys/fs/cgroup")
needs_v1_limits = pytest.mark.skipif(not all((V1_LIMITS / c / "cgroup.procs").exists() for c in cgroups.V1_CONTROLLERS),
                                     reason="no cgroup v1 memory, pids and freezer hierarchies on this machine")


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


@contextlib.contextmanager
def _affinity(cores: set[int]):
    """Run the next lines with this thread (and so the processes it starts) on ``cores``, then put the affinity back."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cores)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or not {0, 1} <= os.sched_getaffinity(0), reason="needs cores 0 and 1 (Linux)")
@pytest.mark.parametrize("kind,cpus,inherited,cores", [("v2", (0, 1), {0}, [0, 1]), ("v1", (1,), {0, 1}, [1]),
                                                       ("v2", None, {1}, [1])], ids=["v2-both-cores", "v1-one-core", "v2-unpinned"])
def test_the_job_runs_in_its_groups_on_its_cores_with_its_file_size_limit(tmp_path, monkeypatch, kind, cpus, inherited, cores):
    """`sandbox.run` end to end with a fake cgroup tree and a probe for a notebook (no kernel): the launcher joins every
    group of the job, pins the cores (started from other cores than asked, so a dropped pin shows), caps file size, and
    sets no address-space stand-in where a cgroup limits memory."""
    import resource

    root = tmp_path / "cg"
    fake = (cgroup_scenarios.FakeCgroupFS(root) if kind == "v2" else cgroup_scenarios.FakeCgroupFS.v1(root)).install(monkeypatch)
    limits = Limits(wall_seconds=60, memory_mb=1536, processes=97, file_mb=3, cpus=cpus)
    with _affinity(inherited):
        found = cgroup_scenarios.run_limits(fake, tmp_path / "scratch", limits, monkeypatch)
    command, probe = found["command"], found["probe"]
    launcher = command[:command.index("--")]
    assert probe["cores"] == cores, (probe, launcher)
    assert ("--cpus" in launcher) == (cpus is not None), launcher
    if cpus is not None:
        assert launcher[launcher.index("--cpus") + 1] == ",".join(map(str, cpus)), launcher
    assert probe["file_size"] == 3 * 2**20, probe
    assert "--memory" not in launcher, "memory is the cgroup's to limit: no RLIMIT_AS stand-in"
    assert probe["address_space"] == resource.getrlimit(resource.RLIMIT_AS)[0], probe  # this process's, inherited
    hierarchies = ["memory", "pids", "freezer"] if kind == "v1" else [""]
    leaves = [pathlib.Path(root, h, "tfperf-test") for h in hierarchies]
    assert len(probe["procs"]) == len(hierarchies) and all(pids == [str(probe["pid"])] for pids in probe["procs"].values()), probe
    assert all(pathlib.PurePath(path).parent.parent in leaves for path in probe["procs"]), probe["procs"]
    assert found["warnings"] == [] and found["left"] == [], found
