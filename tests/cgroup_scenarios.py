"""What tests/root/test_cgroups_root.py (and tests/unit/test_cgroups.py, on a fake) runs against a cgroup, in this process or (for cgroup v2) in a private mount namespace.

``python tests/cgroup_scenarios.py SCENARIO ROOT`` runs one scenario with the cgroup file system mounted at ROOT and
prints its findings as one JSON line: the test asserts on them.
"""

from __future__ import annotations

import errno
import json
import pathlib
import pickle
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
import uuid

from tfperf_lab.isolation import backends, cgroups, sandbox
from tfperf_lab.isolation.contract import Limits

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


def members(group: cgroups.Cgroup) -> set[int]:
    return {int(pid) for pid in (group.folders[0] / "cgroup.procs").read_text().split()} if group.folders else set()


def snapshot(group: cgroups.Cgroup) -> dict[int, int]:
    found = {pid: cpu_ticks(pid) for pid in members(group)}
    return {pid: ticks for pid, ticks in found.items() if ticks is not None}


def freeze_scenario(group: cgroups.Cgroup, seconds: float = 1.0) -> dict:
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
        view = cgroups.Cgroup.adopt(freezer_group, group.kind)  # processes listed by the group that freezes
        before = snapshot(view)
        time.sleep(seconds)
        running = snapshot(view)
        found["advanced_unfrozen"] = sum(running.get(pid, ticks) - ticks for pid, ticks in before.items())
        began = time.monotonic()
        group.freeze()
        found["first_freeze_ms"] = (time.monotonic() - began) * 1000
        found["state_after_freeze"] = group.freezer.state()
        frozen = snapshot(view)
        time.sleep(seconds)
        still = snapshot(view)
        found["frozen_pids"], found["later_pids"] = sorted(frozen), sorted(still)
        found["advanced_frozen"] = {str(pid): still.get(pid, -1) - ticks for pid, ticks in frozen.items()}
        group.thaw()
        found["state_after_thaw"] = group.freezer.state()
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
    group = cgroups.Cgroup(uuid.uuid4().hex[:8], Limits(), root=root, parent=parent)
    found = {"kind": group.kind, "holds": group.holds, "freezer": group.freezer_kind, "missing": group.missing,
             "memory_limited": group.memory_limited, "folders": [str(f) for f in group.folders]}
    try:
        if group.holds and workload:
            found |= freeze_scenario(group)
    finally:
        group.remove()
        (root / parent).rmdir()
    return found


class FakeJudge:
    """What `sandbox.run` needs of a judge (`tfperf_lab.isolation.contract.Watcher`): somewhere to mount, a progress
    reader; it records the freezer it is given first (the run's last call takes it back: the job ended)."""

    def __init__(self, folder: pathlib.Path):
        self.folder, self.given, self.why, self.calls = folder, "unset", "unset", []

    def sandbox_binds(self):
        return self.folder, "/grader/candidate.sock"

    def host_address(self):
        return str(self.folder / "candidate.sock")

    def use_freezer(self, freezer, why):  # what the freezer was when given (the run removes its group at the end)
        self.calls.append((None if freezer is None else type(freezer).__name__, why))
        if self.given == "unset":
            self.given, self.why = None if freezer is None else {
                "file": str(freezer.file), "state": freezer.state(), "pickles": pickle.loads(pickle.dumps(freezer)) == freezer}, why

    def progress(self, stream):
        threading.Thread(target=stream.read, daemon=True).start()

    def seconds_paused(self):
        return 0.0


PROBE = ("import resource\nprint('AS', resource.getrlimit(resource.RLIMIT_AS)[0])\n"
         "print('CG', [l for l in open('/proc/self/cgroup').read().splitlines() if l.startswith('0::')])")


def run_probe(root: pathlib.Path, scratch: pathlib.Path, memory_mb: int = 512) -> dict:
    """`sandbox.run` (no sandbox backend, a fake judge) with its cgroups under ``root``: what the kernel saw, the
    outcome's warnings, the group the judge got."""
    import nbformat

    parent = f"tfperf-test-{uuid.uuid4().hex[:8]}"
    saved = cgroups.CGROUP_ROOT, cgroups.CGROUP_PARENT
    cgroups.CGROUP_ROOT, cgroups.CGROUP_PARENT = root, parent  # put back below: pytest may run this in its own process
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PROBE)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    judge = FakeJudge(scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        outcome = sandbox.run(json.loads(nbformat.writes(nb)), limits=Limits(wall_seconds=120, memory_mb=memory_mb),
                              chosen=backends.NoSandbox(), scratch=scratch / "jobs", judge=judge)
    finally:
        cgroups.CGROUP_ROOT, cgroups.CGROUP_PARENT = saved
        if (root / parent).is_dir():
            (root / parent).rmdir()
    printed = "".join(o.get("text", "") for c in (outcome.notebook or {}).get("cells", []) for o in c.get("outputs", []))
    return {"problem": outcome.problem, "log": outcome.log[-2000:], "printed": printed, "warnings": outcome.warnings,
            "judge_freezer": judge.given, "judge_why": judge.why, "judge_calls": judge.calls}


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
        cgroups.Cgroup.V2_CONTROLLERS = ("hugetlb",)
        group = cgroups.Cgroup(tag, Limits(), root=root, parent=parent, base=delegated)
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



# -- a cgroup file system in a plain folder: the limit values this machine's kernel cannot show --------------------------
PAGE = 4096
PAGE_COUNTER_MAX = (2**63 - 1) // PAGE  # what "max" (v2) and -1 (v1) become: v1 reads it back in bytes
PID_MAX_LIMIT = 4 * 1024 * 1024


def memparse(text: str, unlimited: str) -> str:
    """What a kernel reads back after ``text`` is written to a memory limit: page_counter_memparse (bytes, or K/M/G/T/P/E,
    hexadecimal and octal too; ``unlimited`` is "max" on v2, "-1" on v1) stored in whole pages, shown in bytes."""
    text = text.strip()
    if text == unlimited:
        return "max" if unlimited == "max" else str(PAGE_COUNTER_MAX * PAGE)
    found = re.fullmatch(r"(0x[0-9a-f]+|0[0-7]*|[1-9][0-9]*)([kmgtpe]?)", text, re.IGNORECASE)
    if found is None:
        raise OSError(errno.EINVAL, "Invalid argument")
    digits = found.group(1)
    number = int(digits, 16 if digits[:2].lower() == "0x" else 8 if digits.startswith("0") else 10)
    number <<= 10 * ("kmgtpe".find(found.group(2).lower()) + 1) if found.group(2) else 0
    return str(min(number // PAGE, PAGE_COUNTER_MAX) * PAGE)


def pids_max(text: str) -> str:
    """pids.max as the kernel takes it: "max" or a count from 0 below PID_MAX_LIMIT, read back as written."""
    text = text.strip()
    if text == "max":
        return text
    try:
        number = int(text, 0)
    except ValueError:
        raise OSError(errno.EINVAL, "Invalid argument") from None
    if not 0 <= number < PID_MAX_LIMIT:
        raise OSError(errno.EINVAL, "Invalid argument")
    return str(number)


class FakeCgroupFS:
    """A cgroup file system in a plain folder (``root``), v2 or v1, for what this machine's kernel cannot show: cgroup v2
    with the memory and pids controllers (v1 holds them here), and the values a limit file reads back.

    While installed (`install`, with pytest's monkeypatch), making, writing and removing folders under ``root`` with
    pathlib follow the kernel's rules, as the sandbox's setup meets them:

    - a group has the core files and the interface files of its controllers (v2: those its parent's
      ``cgroup.subtree_control`` passes on now, with ``memory.swap.max`` only when ``swap``; v1: its hierarchy's);
    - ``cgroup.subtree_control`` takes ``+name``/``-name`` of controllers in ``cgroup.controllers`` (else ENOENT), and
      not in a group below the root that holds processes (EBUSY);
    - memory limits are parsed as the kernel's memparse does and kept in whole pages (6144 written reads back 4096),
      ``pids.max`` takes "max" or a count, ``cgroup.freeze`` 0 or 1 and ``freezer.state`` FROZEN or THAWED (a fake group
      reaches the state at once: no process of it runs); any other interface file keeps what is written; a file that
      is not there cannot be made (EACCES);
    - a group with no process and no child group is removed whole by rmdir (else EBUSY).

    ``writes`` keeps every accepted write as (path relative to ``root``, text), in order. Processes that write their PID to
    ``cgroup.procs`` themselves (the sandbox's launcher) write a plain file: the fake cannot move or kill them.
    """

    V2_FILES = {
        "memory": {"memory.max": "max", "memory.high": "max", "memory.low": "0", "memory.min": "0", "memory.current": "0",
                   "memory.events": "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n"},
        "pids": {"pids.max": "max", "pids.current": "0", "pids.events": "max 0\n"},
        "cpu": {"cpu.max": "max 100000", "cpu.weight": "100"},
        "cpuset": {"cpuset.cpus": "", "cpuset.mems": ""},
        "io": {"io.max": ""},
    }
    V1_FILES = {
        "memory": {"memory.limit_in_bytes": str(PAGE_COUNTER_MAX * PAGE), "memory.usage_in_bytes": "0",
                   "memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n"},
        "pids": {"pids.max": "max", "pids.current": "0"},
        "freezer": {"freezer.state": "THAWED"},
        "cpuset": {"cpuset.cpus": "0-1", "cpuset.mems": "0"},
        "cpu": {"cpu.cfs_quota_us": "-1", "cpu.cfs_period_us": "100000"},
    }
    READ_ONLY = {"cgroup.controllers", "cgroup.events", "memory.events", "memory.current", "pids.current", "pids.events",
                 "memory.usage_in_bytes", "memory.oom_control"}

    def __init__(self, root: pathlib.Path, kind: str = "v2", controllers=("cpuset", "cpu", "io", "memory", "pids"),
                 swap: bool = True):
        self.root, self.kind, self.swap = pathlib.Path(root), kind, swap
        self.writes: list[tuple[str, str]] = []
        self.root.mkdir(parents=True)
        if kind == "v2":
            self._files(self.root, {"cgroup.controllers": " ".join(controllers), "cgroup.subtree_control": "",
                                    "cgroup.procs": "", "cgroup.type": "domain"})
        else:
            for controller in controllers:
                (self.root / controller).mkdir()
                self._files(self.root / controller, {"cgroup.procs": "", "tasks": "", "cgroup.clone_children": "0"})

    @classmethod
    def v1(cls, root: pathlib.Path, controllers=("cpuset", "cpu", "memory", "pids", "freezer")) -> "FakeCgroupFS":
        return cls(root, "v1", controllers)

    @staticmethod
    def _files(folder: pathlib.Path, files: dict[str, str]) -> None:
        for name, text in files.items():
            (folder / name).write_bytes(text.encode())  # write_bytes: not the patched write_text

    def _mine(self, path: pathlib.Path) -> bool:
        return path.is_absolute() and path.is_relative_to(self.root) and path != self.root

    def read(self, relative: str) -> str:
        return (self.root / relative).read_text().strip()

    def enabled(self, relative: str = "") -> list[str]:
        """The controllers a group passes on (v2 ``cgroup.subtree_control``), sorted."""
        return sorted((self.root / relative / "cgroup.subtree_control").read_text().split())

    # -- what the kernel does --------------------------------------------------------------------------------------
    def _interface(self, controllers) -> dict[str, str]:
        """A v2 group's files for ``controllers``, as they are when the controller is enabled for it."""
        files = {}
        for controller in controllers:
            files |= self.V2_FILES.get(controller, {})
        if "memory" in controllers and self.swap:
            files["memory.swap.max"] = "max"
        return files

    def _pass_on(self, folder: pathlib.Path) -> None:
        """v2: each child group's controllers are what ``folder`` enables now; enabling one adds its files, disabling drops them."""
        enabled = (folder / "cgroup.subtree_control").read_text().split()
        for child in (c for c in folder.iterdir() if (c / "cgroup.controllers").is_file()):
            before = (child / "cgroup.controllers").read_text().split()
            self._files(child, {"cgroup.controllers": " ".join(enabled),
                                **{k: v for k, v in self._interface(enabled).items() if not (child / k).exists()}})
            for name in set(self._interface(before)) - set(self._interface(enabled)):
                (child / name).unlink()

    def _made(self, folder: pathlib.Path) -> None:
        """The files a kernel gives a group just made."""
        if self.kind == "v2":
            controllers = (folder.parent / "cgroup.subtree_control").read_text().split()
            files = {"cgroup.controllers": " ".join(controllers), "cgroup.subtree_control": "", "cgroup.procs": "",
                     "cgroup.type": "domain", "cgroup.freeze": "0", "cgroup.events": "populated 0\nfrozen 0\n", "cgroup.kill": "",
                     **self._interface(controllers)}
        else:
            hierarchy = folder.relative_to(self.root).parts[0]
            files = {"cgroup.procs": "", "tasks": "", **self.V1_FILES.get(hierarchy, {})}
            if hierarchy == "memory" and self.swap:
                files["memory.memsw.limit_in_bytes"] = str(PAGE_COUNTER_MAX * PAGE)
        self._files(folder, files)

    def _write(self, file: pathlib.Path, text: str) -> None:
        name, folder = file.name, file.parent
        if not file.is_file():
            raise PermissionError(errno.EACCES, "Permission denied", str(file))  # cgroupfs makes no files
        if name in self.READ_ONLY:
            raise OSError(errno.EINVAL, "Invalid argument", str(file))
        if name == "cgroup.subtree_control":
            available = set((folder / "cgroup.controllers").read_text().split())
            enabled = set(file.read_text().split())
            for word in text.split():
                if word[:1] not in "+-" or word[1:] not in available:
                    raise OSError(errno.ENOENT, "No such file or directory", str(file))
                if folder != self.root and (folder / "cgroup.procs").read_text().split():
                    raise OSError(errno.EBUSY, "Device or resource busy", str(file))  # no internal processes
                enabled = enabled | {word[1:]} if word[0] == "+" else enabled - {word[1:]}
            stored = " ".join(sorted(enabled))
        elif name in ("memory.max", "memory.high", "memory.swap.max"):
            stored = memparse(text, "max")
        elif name in ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"):
            stored = memparse(text, "-1")
        elif name == "pids.max":
            stored = pids_max(text)
        elif name == "cgroup.freeze":
            if text.strip() not in ("0", "1"):
                raise OSError(errno.EINVAL, "Invalid argument", str(file))
            stored = text.strip()
            (folder / "cgroup.events").write_bytes(f"populated 0\nfrozen {stored}\n".encode())
        elif name == "freezer.state":
            if text.strip() not in ("FROZEN", "THAWED"):
                raise OSError(errno.EINVAL, "Invalid argument", str(file))
            stored = text.strip()
        elif name == "cgroup.kill":
            if text.strip() != "1":
                raise OSError(errno.EINVAL, "Invalid argument", str(file))
            stored = ""
        elif name in ("cgroup.procs", "tasks"):
            stored = file.read_text() + text.strip() + "\n"
        else:
            stored = text
        file.write_bytes((stored + ("\n" if stored and not stored.endswith("\n") else "")).encode())
        if name == "cgroup.subtree_control":
            self._pass_on(folder)
        self.writes.append((file.relative_to(self.root).as_posix(), text))

    def install(self, monkeypatch) -> "FakeCgroupFS":
        """Make pathlib's mkdir, write_text and rmdir behave as on a cgroup file system under ``root`` (undone with monkeypatch)."""
        fake = self
        mkdir, write_text, rmdir = pathlib.Path.mkdir, pathlib.Path.write_text, pathlib.Path.rmdir

        def fake_mkdir(path, mode=0o777, parents=False, exist_ok=False):
            if not fake._mine(path):
                return mkdir(path, mode, parents, exist_ok)
            existed = path.is_dir()
            mkdir(path, mode, parents, exist_ok)
            if not existed:
                fake._made(path)

        def fake_write_text(path, data, encoding=None, errors=None, newline=None):
            if not fake._mine(path):
                return write_text(path, data, encoding, errors, newline)
            fake._write(path, data)
            return len(data)

        def fake_rmdir(path):
            if not fake._mine(path) or not (path / "cgroup.procs").is_file():
                return rmdir(path)
            if any(child.is_dir() for child in path.iterdir()) or (path / "cgroup.procs").read_text().split():
                raise OSError(errno.EBUSY, "Device or resource busy", str(path))
            shutil.rmtree(path)

        monkeypatch.setattr(pathlib.Path, "mkdir", fake_mkdir)
        monkeypatch.setattr(pathlib.Path, "write_text", fake_write_text)
        monkeypatch.setattr(pathlib.Path, "rmdir", fake_rmdir)
        return self


# The "notebook" of `ProbeBackend`: what the sandbox's launcher left the process it started, as one JSON line.
LIMITS_PROBE = """
import glob, json, os, resource, sys
files = sorted(glob.glob(sys.argv[1], recursive=True))
found = {"pid": os.getpid(), "cores": sorted(os.sched_getaffinity(0)),
         "file_size": resource.getrlimit(resource.RLIMIT_FSIZE)[0], "address_space": resource.getrlimit(resource.RLIMIT_AS)[0],
         "procs": {path: open(path).read().split() for path in files}}
for path in files:  # the process leaves its groups, as it would on a kernel: the group's removal kills nothing
    open(path, "w").close()
print("PROBE " + json.dumps(found))
"""


class ProbeBackend(backends.Backend):
    """A backend whose whole run is one small Python process (no kernel, no notebook) printing what the sandbox's
    launcher gave it: its cores, its file-size and address-space limits, and the job's cgroup.procs files under
    ``root`` (which it then empties)."""

    name, isolated = "probe", False

    def __init__(self, root: pathlib.Path):
        self.pattern = str(root / "**" / "job-*" / "cgroup.procs")

    def problem(self) -> str | None:
        return None

    def command(self, job, inner, env, data, binds=()):
        return [sys.executable, "-I", "-c", LIMITS_PROBE, self.pattern]


def run_limits(fake: FakeCgroupFS, scratch: pathlib.Path, limits: Limits, monkeypatch) -> dict:
    """`sandbox.run` with its cgroups in ``fake`` (installed) and `ProbeBackend`: the launcher's command line, what the
    probe printed, the outcome's warnings, and the job groups left under the fake root afterwards."""
    commands = []
    real_popen = subprocess.Popen

    def recording(args, *rest, **options):
        commands.append(list(args))
        return real_popen(args, *rest, **options)

    monkeypatch.setattr(cgroups, "CGROUP_ROOT", fake.root)
    monkeypatch.setattr(cgroups, "CGROUP_PARENT", "tfperf-test")
    monkeypatch.setattr(cgroups, "_own_cgroup", lambda controller: None)  # the delegated group is the fake's root
    monkeypatch.setattr(sandbox.subprocess, "Popen", recording)
    monkeypatch.setattr(sandbox, "_SWEPT", threading.Event())  # the sweep before a first job looks at the fake only
    outcome = sandbox.run({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, limits=limits,
                          chosen=ProbeBackend(fake.root), scratch=scratch)
    monkeypatch.setattr(sandbox.subprocess, "Popen", real_popen)
    line = next((line for line in outcome.log.splitlines() if line.startswith("PROBE ")), None)
    assert line is not None, f"the probe did not run: {outcome.log[-2000:]}"
    return {"command": commands[0], "probe": json.loads(line[len("PROBE "):]), "warnings": outcome.warnings,
            "left": sorted(str(p.relative_to(fake.root)) for p in fake.root.rglob("job-*"))}


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
