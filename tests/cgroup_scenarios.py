"""What tests/test_cgroups.py runs against a real cgroup, in this process or (for cgroup v2) in a private mount namespace.

``python tests/cgroup_scenarios.py SCENARIO ROOT`` runs one scenario with the cgroup file system mounted at ROOT and
prints its findings as one JSON line: the test asserts on them.
"""

from __future__ import annotations

import json
import pathlib
import pickle
import statistics
import subprocess
import sys
import threading
import time
import uuid

from tfperf_lab.isolation import sandbox

# A job that no SIGSTOP scan of /proc can stop: three processes in a chain (each forks the next, then spins) and a
# walker that forks a child and exits, over and over, so its PID keeps changing.
WORKLOAD = """
import os
def spin(forever=True):
    n = 0
    while forever or n < 200000:
        n += 1
for _ in range(3):
    if os.fork() != 0:
        break
else:
    while True:
        spin(False)
        if os.fork() != 0:
            os._exit(0)
spin()
"""


def cpu_ticks(pid: int) -> int | None:
    """utime + stime of ``pid`` in clock ticks (None once it is gone or a zombie)."""
    try:
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in ("Z", "X") else int(fields[11]) + int(fields[12])


def members(group: sandbox._Cgroup) -> set[int]:
    return {int(pid) for pid in (group.folders[0] / "cgroup.procs").read_text().split()} if group.folders else set()


def snapshot(group: sandbox._Cgroup) -> dict[int, int]:
    found = {pid: cpu_ticks(pid) for pid in members(group)}
    return {pid: ticks for pid, ticks in found.items() if ticks is not None}


def freeze_scenario(group: sandbox._Cgroup, seconds: float = 1.0) -> dict:
    """Run WORKLOAD in ``group`` (joined through the sandbox's launcher), then: how its processes move before a freeze,
    while frozen, and after the thaw; what the freezer file says; how long freezing took (ms, several freezes)."""
    freezer_group = next((folder for folder in group.folders if (folder / "freezer.state").exists()), group.folders[0])
    launcher = [sys.executable, "-m", "tfperf_lab.isolation.sandbox"]
    for path in group.procs:
        launcher += ["--procs", path]
    job = subprocess.Popen(launcher + ["--", sys.executable, "-c", WORKLOAD])
    reaper = threading.Thread(target=job.wait, daemon=True)
    reaper.start()
    found: dict = {}
    try:
        time.sleep(1.0)
        view = sandbox._Cgroup.adopt(freezer_group, group.kind)  # processes listed by the group that freezes
        before = snapshot(view)
        time.sleep(seconds)
        running = snapshot(view)
        found["advanced_unfrozen"] = sum(running.get(pid, ticks) - ticks for pid, ticks in before.items())
        began = time.monotonic()
        group.freeze()
        found["first_freeze_ms"] = (time.monotonic() - began) * 1000
        found["state_after_freeze"] = group._state()
        frozen = snapshot(view)
        time.sleep(seconds)
        still = snapshot(view)
        found["frozen_pids"], found["later_pids"] = sorted(frozen), sorted(still)
        found["advanced_frozen"] = {str(pid): still.get(pid, -1) - ticks for pid, ticks in frozen.items()}
        group.thaw()
        found["state_after_thaw"] = group._state()
        time.sleep(seconds)
        thawed = snapshot(view)
        found["thawed_pids"] = sorted(thawed)
        found["advanced_thawed"] = sum(thawed.get(pid, ticks) - ticks for pid, ticks in still.items())
        freezes, thaws = [], []
        for _ in range(21):
            began = time.monotonic()
            group.freeze()
            freezes.append((time.monotonic() - began) * 1000)
            began = time.monotonic()
            group.thaw()
            thaws.append((time.monotonic() - began) * 1000)
            time.sleep(0.02)
        found["freeze_ms_median"], found["thaw_ms_median"] = statistics.median(freezes), statistics.median(thaws)
        found["processes"] = len(thawed)
        everyone = set(frozen) | set(thawed)
    finally:
        folders = list(group.folders)
        group.remove()
    found["folders_left"] = [str(folder) for folder in folders if folder.exists()]
    time.sleep(0.2)
    found["alive_after_remove"] = sorted(pid for pid in everyone if cpu_ticks(pid) is not None)
    return found


def v2_freeze(root: pathlib.Path, workload: bool = True) -> dict:
    parent = f"tfperf-test-{uuid.uuid4().hex[:8]}"
    group = sandbox._Cgroup(uuid.uuid4().hex[:8], sandbox.Limits(), root=root, parent=parent)
    found = {"kind": group.kind, "holds": group.holds, "freezer": group.freezer, "missing": group.missing,
             "memory_limited": group.memory_limited, "folders": [str(f) for f in group.folders]}
    try:
        if group.holds and workload:
            found |= freeze_scenario(group)
    finally:
        group.remove()
        (root / parent).rmdir()
    return found


class FakeJudge:
    """What `sandbox.run` needs of a judge: somewhere to mount, a progress reader; it records the group it is given."""

    def __init__(self, folder: pathlib.Path):
        self.folder, self.candidate_address, self.given = folder, folder / "candidate.sock", "unset"

    @property
    def group(self):
        return self._group

    @group.setter
    def group(self, value):  # what the group was when given (the run removes it at the end)
        self._group = value
        self.given = None if value is None else {"kind": value.kind, "holds": value.holds, "parent": value.parent,
                                                 "pickles": pickle.loads(pickle.dumps(value)).procs == value.procs}

    def sandbox_binds(self):
        return self.folder, "/grader/candidate.sock"

    def progress(self, stream):
        threading.Thread(target=stream.read, daemon=True).start()


PROBE = ("import resource\nprint('AS', resource.getrlimit(resource.RLIMIT_AS)[0])\n"
         "print('CG', [l for l in open('/proc/self/cgroup').read().splitlines() if l.startswith('0::')])")


def run_probe(root: pathlib.Path, scratch: pathlib.Path, memory_mb: int = 512) -> dict:
    """`sandbox.run` (no sandbox backend, a fake judge) with its cgroups under ``root``: what the kernel saw, the
    outcome's warnings, the group the judge got."""
    import nbformat

    parent = f"tfperf-test-{uuid.uuid4().hex[:8]}"
    saved = sandbox.CGROUP_ROOT, sandbox.CGROUP_PARENT
    sandbox.CGROUP_ROOT, sandbox.CGROUP_PARENT = root, parent  # put back below: pytest may run this in its own process
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PROBE)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    judge = FakeJudge(scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        outcome = sandbox.run(json.loads(nbformat.writes(nb)), limits=sandbox.Limits(wall_seconds=120, memory_mb=memory_mb),
                              chosen=sandbox.NoSandbox(), scratch=scratch / "jobs", judge=judge)
    finally:
        sandbox.CGROUP_ROOT, sandbox.CGROUP_PARENT = saved
        if (root / parent).is_dir():
            (root / parent).rmdir()
    printed = "".join(o.get("text", "") for c in (outcome.notebook or {}).get("cells", []) for o in c.get("outputs", []))
    return {"problem": outcome.problem, "log": outcome.log[-2000:], "printed": printed, "warnings": outcome.warnings,
            "judge_group": judge.given}


def v2_evacuate(root: pathlib.Path) -> dict:
    """A delegated group that holds a process (a container's root, a Delegate=yes scope): enabling a controller below
    it fails (EBUSY) until its processes move into a leaf. ``hugetlb``, the one controller this machine's v2 hierarchy
    has (v1 holds the rest), stands in for memory and pids."""
    if "hugetlb" not in (root / "cgroup.controllers").read_text().split():
        return {"skip": "no controller at all on this cgroup2 hierarchy"}
    was_enabled = "hugetlb" in (root / "cgroup.subtree_control").read_text().split()
    tag = uuid.uuid4().hex[:8]
    delegated, parent = root / f"tfperf-test-{tag}-delegated", f"tfperf-test-{tag}"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    found: dict = {"sleeper": sleeper.pid}
    try:
        (root / "cgroup.subtree_control").write_text("+hugetlb")
        delegated.mkdir()
        (delegated / "cgroup.procs").write_text(str(sleeper.pid))
        try:
            (delegated / "cgroup.subtree_control").write_text("+hugetlb")
            found["busy_without_moving"] = False
        except OSError as error:
            found["busy_without_moving"] = error.strerror
        sandbox._Cgroup.V2_CONTROLLERS = ("hugetlb",)
        group = sandbox._Cgroup(tag, sandbox.Limits(), root=root, parent=parent, base=delegated)
        found |= {"limited": group.limited, "missing": group.missing, "moved": group.moved, "holds": group.holds,
                  "delegated_procs": (delegated / "cgroup.procs").read_text().split(),
                  "grader_leaf_procs": (delegated / f"{parent}-grader" / "cgroup.procs").read_text().split(),
                  "leaf_controllers": (group.folders[0] / "cgroup.controllers").read_text().split() if group.folders else None,
                  "leaf": str(group.folders[0]) if group.folders else None}
        group.remove()
    finally:
        sleeper.kill()
        sleeper.wait()
        for folder in (delegated / parent, delegated / f"{parent}-grader", delegated):
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)
        if not was_enabled:
            (root / "cgroup.subtree_control").write_text("-hugetlb")
    found["restored"] = ("hugetlb" in (root / "cgroup.subtree_control").read_text().split()) == was_enabled
    found["left"] = delegated.exists()
    return found


if __name__ == "__main__":
    scenario, where = sys.argv[1], pathlib.Path(sys.argv[2])
    if scenario == "v2-freeze":
        result = v2_freeze(where)
    elif scenario == "v2-evacuate":
        result = v2_evacuate(where)
    elif scenario == "v2-setup":
        result = v2_freeze(where, workload=False)
    elif scenario == "v2-run":
        result = run_probe(where, pathlib.Path(sys.argv[3]))
    else:
        raise SystemExit(f"unknown scenario {scenario}")
    print(json.dumps(result))
