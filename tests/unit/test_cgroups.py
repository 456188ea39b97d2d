"""The job's cgroup (`tfperf_lab.isolation.cgroups.Cgroup`, its `Freezer`) without root: a freeze awaited until the
kernel says so, one that cannot complete raising and leaving the job running, an ended job never paused, no writable
cgroup said so, the delegated group found; the limit values written (memory in bytes, no swap, the process count; v1
and v2) read back from a fake cgroup file system (`cgroup_scenarios.FakeCgroupFS`, which parses and rounds them as a
kernel does); the cores and file-size limit from what the sandbox's launcher gives the process it starts. The same on
this machine's real kernel, as root: tests/root/test_cgroups_root.py."""

from __future__ import annotations

import contextlib
import os
import pathlib
import pickle
import time

import pytest

from tfperf_lab.isolation import cgroups, sandbox
from tfperf_lab.isolation.contract import Limits

import cgroup_scenarios


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
