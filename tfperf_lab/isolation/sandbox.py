"""A disposable sandbox per submission: the only place a learner's code runs when graded.

`run` copies one notebook into a fresh job folder, executes it there with `tfperf_lab.isolation.runner` inside a backend, and
returns the executed notebook and the measurement records, read back by the host with size limits. Inside the
bubblewrap backend (Linux, the default) the kernel sees: the Python environment and the course's learner library
read-only, the data folder read-only, its own notebook copy and a private ``/tmp`` writable; nothing else of the
host (no ``solutions/``, gradebook, work folder, other students or instructor home), a clean environment, no
network, its own PID namespace (every process it starts ends with it), and limits on memory and process count
(a cgroup, where one is writable), file size, CPU cores and wall time.

Each job also gets a cgroup of its own (`_Cgroup`, with every backend, ``--no-sandbox`` included), for its memory and
process limits and for the freezer the grader's judge uses to stop the whole job while it times the baseline:

- cgroup v2 (``/sys/fs/cgroup/cgroup.controllers`` exists): under the delegated subtree (the hierarchy's root when the
  grader runs as root, else the grader's own cgroup, e.g. a ``systemd-run --user --scope -p Delegate=yes`` scope) a
  parent group ``tfperf-lab`` that never holds a process, and each job in a leaf ``tfperf-lab/job-ID``. The memory and
  pids controllers are enabled in each ancestor's ``cgroup.subtree_control`` we may write; if the delegated group
  itself holds processes (a container's root), they move to a leaf ``tfperf-lab-grader`` first. Freezing (the core
  ``cgroup.freeze``, no controller needed) holds on any kernel from 5.2; the memory and pids limits hold only where
  those controllers reach the job's leaf.
- cgroup v1: a leaf ``tfperf-lab/job-ID`` in each of the memory, pids and freezer hierarchies.
- `_Cgroup.freeze` returns only once the kernel reports the job frozen (v2 ``cgroup.events`` ``frozen 1``, v1
  ``freezer.state`` FROZEN), within 2 s, else it thaws the job and raises `FreezeFailed`; `thaw` likewise.

What does not hold is never silent: `_Cgroup.missing` has a sentence for each of memory, pids and freezer that is not
there, and `run` returns them in `Outcome.warnings` (written to the run's ``run.json``). Where memory is not limited by
a cgroup, an address-space limit (RLIMIT_AS, four times the memory limit) stands in. Where no freezer holds (no
writable cgroup: a grader that is neither root nor delegated a cgroup), nothing stops the job's processes: there is no
signal-based stand-in, since a process that forks faster than a scan of /proc escapes it; the judge gets no group
(``judge.group`` is None) and gives no speed verdict.

A backend is a small object (`Backend`): ``problem()`` says why it cannot run here (None when it can) and
``command()`` wraps the runner's command line. A container engine (docker, podman) fits the same interface.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

from ..course.config import DEFAULTS

RUNNER = "tfperf_lab.isolation.runner"
EXECUTED_LIMIT = 64 * 1024 * 1024  # bytes of executed notebook read back
RECORDS_LIMIT = 4 * 1024 * 1024
INSIDE = pathlib.PurePosixPath("/job")


class SandboxUnavailable(RuntimeError):
    """No sandbox backend works on this machine (the message says why and what to install)."""


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one submission may use. ``wall_seconds`` bounds the whole notebook, ``cell_seconds`` each cell."""

    wall_seconds: float = 600.0
    cell_seconds: int = DEFAULTS.cell_seconds
    startup_seconds: int = DEFAULTS.startup_seconds
    memory_mb: int = DEFAULTS.memory_mb
    processes: int = DEFAULTS.processes  # threads count too: TensorFlow starts dozens
    file_mb: int = DEFAULTS.file_mb
    cpus: tuple[int, ...] | None = None  # cores the sandbox is pinned to (None: all)


@dataclasses.dataclass
class Outcome:
    """What came back out: the executed notebook (None if there is none), the records text, and how the run ended."""

    notebook: dict | None
    records: str
    seconds: float
    returncode: int
    timed_out: bool = False
    problem: str | None = None  # why there is no usable notebook: timed out, out of memory, kernel died...
    log: str = ""
    backend: str = ""
    inside: dict = dataclasses.field(default_factory=dict)  # the runner's own timings (untrusted: for benchmarks only)
    warnings: list[str] = dataclasses.field(default_factory=list)  # limits or freezer that do not hold here (`_Cgroup.missing`)


def _python_paths() -> list[pathlib.Path]:
    """Folders the runner's Python needs: the interpreter, the environment, and the learner library and tool if installed editable."""
    import tfperf
    import tfperf_lab

    paths = {pathlib.Path(sys.base_prefix).resolve(), pathlib.Path(sys.prefix).resolve(),
             pathlib.Path(tfperf.__file__).resolve().parent, pathlib.Path(tfperf_lab.__file__).resolve().parent}
    executable = pathlib.Path(sys.executable).resolve()
    paths.add(executable.parent.parent)
    # an editable package's folder lies beside the course; everything under the environment is covered by it
    roots = sorted(paths, key=lambda p: len(p.parts))
    return [p for i, p in enumerate(roots) if not any(p.is_relative_to(q) for q in roots[:i])]


class Backend:
    """A way to run a command in isolation; see the module docstring."""

    name = "base"
    isolated = True

    def problem(self) -> str | None:
        raise NotImplementedError

    def command(self, job: pathlib.Path, inner: list[str], env: dict[str, str], data: pathlib.Path | None,
                binds: tuple[tuple[pathlib.Path, str], ...] = ()) -> list[str]:
        """The command line running ``inner`` isolated; ``binds`` are (host folder, path inside) mounted read-only."""
        raise NotImplementedError


class Bubblewrap(Backend):
    """bubblewrap (Debian/Ubuntu package ``bubblewrap``): unprivileged Linux namespaces, no daemon, ~10 ms to start."""

    name = "bubblewrap"

    def problem(self) -> str | None:
        if not sys.platform.startswith("linux"):
            return "bubblewrap needs Linux"
        binary = shutil.which("bwrap")
        if binary is None:
            return "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
        probe = subprocess.run([binary, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"], capture_output=True,
                               text=True)
        if probe.returncode != 0:
            return f"bubblewrap cannot create namespaces here: {probe.stderr.strip()[:200]}"
        return None

    def command(self, job: pathlib.Path, inner: list[str], env: dict[str, str], data: pathlib.Path | None,
                binds: tuple[tuple[pathlib.Path, str], ...] = ()) -> list[str]:
        # no capabilities inside, even for root: the kernel cannot trace the runner, mount, or change its limits
        args = [shutil.which("bwrap") or "bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--clearenv", "--cap-drop", "ALL",
                "--tmpfs", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        for name in ("usr", "bin", "lib", "lib32", "lib64", "sbin"):
            top = pathlib.Path("/") / name
            if top.is_symlink():
                args += ["--symlink", os.readlink(top), str(top)]
            elif top.is_dir():
                args += ["--ro-bind", str(top), str(top)]
        for name in ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "alternatives", "fonts"):
            if (pathlib.Path("/etc") / name).exists():
                args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
        args += ["--ro-bind", str(job / "etc" / "passwd"), "/etc/passwd", "--ro-bind", str(job / "etc" / "group"), "/etc/group"]
        for path in _python_paths():
            args += ["--ro-bind", str(path), str(path)]
        if data is not None:
            args += ["--ro-bind", str(data), "/data"]
        for host, inside in binds:
            args += ["--ro-bind", str(host), inside]
        args += ["--ro-bind", str(job / "in"), str(INSIDE / "in"), "--bind", str(job / "out"), str(INSIDE / "out"),
                 "--bind", str(job / "home"), str(INSIDE / "home"), "--chdir", str(INSIDE / "home" / "lesson")]
        for key, value in env.items():
            args += ["--setenv", key, value]
        return args + ["--", *inner]


class NoSandbox(Backend):
    """No isolation (``--no-sandbox``, stated in the report and the CSV): a clean environment and its own job folder only."""

    name = "none"
    isolated = False

    def problem(self) -> str | None:
        return None

    def command(self, job: pathlib.Path, inner: list[str], env: dict[str, str], data: pathlib.Path | None,
                binds: tuple[tuple[pathlib.Path, str], ...] = ()) -> list[str]:
        return inner


BACKENDS = {"bubblewrap": Bubblewrap, "none": NoSandbox}


def backend(name: str = "auto") -> Backend:
    """The named backend, or for ``auto`` the first that works here.

    Raises:
        SandboxUnavailable: when none works, with each backend's reason and the way out.
    """
    if name != "auto":
        chosen = BACKENDS[name]()
        reason = chosen.problem()
        if reason:
            raise SandboxUnavailable(f"the {name} sandbox cannot run here: {reason}")
        return chosen
    reasons = []
    for candidate in (Bubblewrap(),):
        reason = candidate.problem()
        if reason is None:
            return candidate
        reasons.append(reason)
    raise SandboxUnavailable("no sandbox for student code works here (" + "; ".join(reasons) + "). Install one, or grade without "
                             "isolation with --no-sandbox (the report and the CSV then say so)")


CGROUP_ROOT = pathlib.Path("/sys/fs/cgroup")  # where the cgroup file system is mounted (tests point it elsewhere)
CGROUP_PARENT = "tfperf-lab"  # our parent group: every job is a leaf below it
FREEZE_SECONDS = 2.0  # how long `freeze` and `thaw` wait for the kernel to report the new state
V1_CONTROLLERS = ("memory", "pids", "freezer")


class FreezeFailed(RuntimeError):
    """The job's cgroup did not reach the frozen (or thawed) state in time, or cannot be frozen: never timed as if frozen."""


def _read(path: pathlib.Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _own_cgroup(controller: str | None) -> str | None:
    """This process's cgroup path (``/a/b``) in the v2 hierarchy (``controller`` None) or the v1 hierarchy holding ``controller``."""
    for line in _read(pathlib.Path("/proc/self/cgroup")).splitlines():
        number, _, rest = line.partition(":")
        names, _, path = rest.partition(":")
        if (controller is None and number == "0" and names == "") or (controller is not None and controller in names.split(",")):
            return path
    return None


def _v1_base(hierarchy: pathlib.Path, controller: str) -> pathlib.Path:
    """Where our parent group goes in a v1 hierarchy: its root for root, else the grader's own group there."""
    own = _own_cgroup(controller)
    return hierarchy if os.geteuid() == 0 or own is None else hierarchy / own.lstrip("/")


class _Cgroup:
    """One job's cgroup: its memory and process limits and its freezer, set up as systemd and nsjail do it.

    cgroup v2 (``root/cgroup.controllers`` exists): the delegated subtree is ``root`` itself when the grader runs as root,
    else the grader's own cgroup (from /proc/self/cgroup). Below it, a parent group of ours (``parent``) that never holds
    a process, and each job in a leaf of its own (v2's no-internal-process rule). The memory and pids controllers are
    enabled in every ancestor's ``cgroup.subtree_control`` we may write (from the top down); where the delegated group
    itself holds processes (a container's root, a ``Delegate=yes`` scope), they are first moved into a leaf beside ours,
    as Docker's and systemd's nesting rule asks. The leaf's ``cgroup.controllers`` then says what really holds.
    cgroup v1: a leaf ``parent/job-NAME`` in each of the memory, pids and freezer hierarchies.

    ``missing`` has one sentence per limit or freezer that does not hold (never silent); ``memory_limited`` says whether
    the run needs the address-space stand-in; ``holds`` whether `freeze` can stop every process of the job. Picklable
    (paths and strings only): the grader's timer process freezes and thaws it.
    """

    V2_CONTROLLERS = ("memory", "pids")  # enabled down to each job's leaf (v2)

    def __init__(self, name: str, limits: Limits, root: pathlib.Path | None = None, parent: str | None = None,
                 base: pathlib.Path | None = None):
        self.root = pathlib.Path(root or CGROUP_ROOT)
        self.parent = parent or CGROUP_PARENT
        self.name = name
        self.folders: list[pathlib.Path] = []
        self.kind = "none"
        self.limited: list[str] = []  # controllers whose limit is written: "memory", "pids"
        self.missing: list[str] = []
        self.freeze_file: pathlib.Path | None = None
        self.moved: list[int] = []  # processes moved out of the delegated group so controllers could be enabled (v2)
        self.ended = False  # `remove` ran: nothing of the job runs, and freezing or thawing it is nothing to do
        self._changing = threading.RLock()  # one freeze, thaw or removal at a time (another job's judge may pause this one)
        if (self.root / "cgroup.controllers").exists():
            self._v2(limits, base)
        elif any((self.root / controller).is_dir() for controller in V1_CONTROLLERS):
            self._v1(limits)
        else:
            self.missing = [_sentence(controller, f"no cgroup file system at {self.root}") for controller in ("memory", "pids", "freezer")]

    @classmethod
    def adopt(cls, folder: pathlib.Path, kind: str) -> "_Cgroup":
        """A group over an existing job folder (``kind`` "v2" or "v1" freezer), nothing created: for tests and tools."""
        group = cls.__new__(cls)
        group.root, group.parent, group.name = folder.parent, folder.parent.name, folder.name
        group.folders, group.kind, group.limited, group.missing, group.moved = [folder], kind, [], [], []
        file = folder / ("cgroup.freeze" if kind == "v2" else "freezer.state")
        group.freeze_file = file if file.exists() else None
        group.ended, group._changing = False, threading.RLock()
        return group

    def __getstate__(self) -> dict:  # the grader's timer process gets the group pickled: a lock does not travel
        return {key: value for key, value in self.__dict__.items() if key != "_changing"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._changing = threading.RLock()

    # -- setting up --------------------------------------------------------------------------------------------------
    @staticmethod
    def delegated(root: pathlib.Path, own: str | None, is_root: bool, parent: str) -> pathlib.Path:
        """The v2 group our parent group goes in: ``root`` for root, else the grader's own cgroup ``own`` (from
        /proc/self/cgroup) -- or, once the grader was moved into its leaf ``<parent>-grader`` there, that leaf's parent."""
        if is_root or own is None:
            return root
        folder = root / own.lstrip("/")
        return folder.parent if folder.name == f"{parent}-grader" and folder != root else folder

    def _v2(self, limits: Limits, base: pathlib.Path | None) -> None:
        if base is None:
            base = self.delegated(self.root, _own_cgroup(None), os.geteuid() == 0, self.parent)
        parent, leaf = base / self.parent, base / self.parent / f"job-{self.name}"
        values = {"memory": {"memory.max": limits.memory_mb * 2**20, "memory.swap.max": 0}, "pids": {"pids.max": limits.processes}}
        wanted = {controller: values.get(controller, {}) for controller in self.V2_CONTROLLERS}
        why: dict[str, str] = {}
        try:
            parent.mkdir(exist_ok=True)
        except OSError as error:
            reason = f"no group can be made in {base} ({error.strerror}; run the grader as root, or in a delegated cgroup: " \
                     f"systemd-run --user --scope -p Delegate=yes ...)"
            self.missing = [_sentence(controller, reason) for controller in ("memory", "pids", "freezer")]
            return
        # every ancestor from the top of the hierarchy down to our parent group passes the controllers on
        chain = [self.root] + [self.root / part for part in _prefixes(base.relative_to(self.root))] + [parent]
        chain = list(dict.fromkeys(chain))
        for folder in chain:
            available = set(_read(folder / "cgroup.controllers").split())
            enabled = set(_read(folder / "cgroup.subtree_control").split())
            for controller in wanted:
                if controller in enabled or controller in why:
                    continue
                if controller not in available:
                    why[controller] = f"the {controller} controller is not available in {folder} (not delegated to the grader, " \
                                      f"or held by a cgroup v1 hierarchy)"
                    continue
                error = self._enable(folder, controller, is_base=folder == base)
                if error is not None and folder.is_relative_to(base):
                    why[controller] = f"the {controller} controller could not be enabled in {folder / 'cgroup.subtree_control'} ({error})"
        try:
            leaf.mkdir()
        except OSError as error:
            reason = f"the job's group {leaf} could not be made ({error.strerror})"
            self.missing = [_sentence(controller, reason) for controller in ("memory", "pids", "freezer")]
            return
        self.folders, self.kind = [leaf], "v2"
        present = set(_read(leaf / "cgroup.controllers").split())
        for controller, files in wanted.items():
            if controller not in present:
                why.setdefault(controller, f"the {controller} controller is not enabled for {leaf}")
                continue
            try:
                for key, value in files.items():
                    if key == "memory.max" or (leaf / key).exists():  # memory.swap.max is absent without swap accounting
                        (leaf / key).write_text(str(value))
                self.limited.append(controller)
            except OSError as error:
                why[controller] = f"{key} could not be written in {leaf} ({error.strerror})"
        if (leaf / "cgroup.freeze").exists() and (leaf / "cgroup.events").exists():
            self.freeze_file = leaf / "cgroup.freeze"
        else:
            why["freezer"] = f"{leaf} has no cgroup.freeze (a kernel before 5.2)"
        self.missing = [_sentence(controller, why[controller]) for controller in (*wanted, "freezer") if controller in why]

    def _enable(self, folder: pathlib.Path, controller: str, is_base: bool) -> str | None:
        """Write ``+controller`` to ``folder``'s subtree_control; None when done, else why not."""
        import errno

        for attempt in range(2):
            try:
                (folder / "cgroup.subtree_control").write_text(f"+{controller}")
                return None
            except OSError as error:
                # EBUSY: the group holds processes; a delegated group's own processes go into a leaf beside ours, once
                if error.errno != errno.EBUSY or not is_base or attempt or not self._evacuate(folder):
                    return error.strerror or str(error)
        return None

    def _evacuate(self, folder: pathlib.Path) -> bool:
        """Move the processes of ``folder`` (the delegated group: the grader and its neighbours) into a leaf of their own,
        ``folder/<parent>-grader``, so controllers can be enabled below ``folder``. False when that is not possible."""
        leaf = folder / f"{self.parent}-grader"
        try:
            leaf.mkdir(exist_ok=True)
            for _ in range(10):
                pids = _read(folder / "cgroup.procs").split()
                if not pids:
                    return True
                for pid in pids:
                    try:
                        (leaf / "cgroup.procs").write_text(pid)
                        self.moved.append(int(pid))
                    except OSError:
                        pass  # a process that ended, or a kernel thread
        except OSError:
            return False
        return not _read(folder / "cgroup.procs").split()

    def _v1(self, limits: Limits) -> None:
        values = {"memory": {"memory.limit_in_bytes": limits.memory_mb * 2**20}, "pids": {"pids.max": limits.processes}, "freezer": {}}
        why = {}
        for controller in V1_CONTROLLERS:
            hierarchy = self.root / controller
            if not hierarchy.is_dir():
                why[controller] = f"no cgroup v1 {controller} hierarchy is mounted at {hierarchy}"
                continue
            base = _v1_base(hierarchy, controller)
            leaf = base / self.parent / f"job-{self.name}"
            try:
                leaf.parent.mkdir(exist_ok=True)
                leaf.mkdir()
            except OSError as error:
                why[controller] = f"no group can be made in {base} ({error.strerror})"
                continue
            self.folders.append(leaf)
            try:
                for key, value in values[controller].items():
                    (leaf / key).write_text(str(value))
            except OSError as error:
                why[controller] = f"{key} could not be written in {leaf} ({error.strerror})"
                continue
            if controller == "freezer":
                self.freeze_file = leaf / "freezer.state"
            else:
                self.limited.append(controller)
        self.kind = "v1" if self.folders else "none"
        self.missing = [_sentence(controller, why[controller]) for controller in V1_CONTROLLERS if controller in why]

    # -- what holds --------------------------------------------------------------------------------------------------
    @property
    def procs(self) -> list[str]:
        """The files the job's first process writes its PID to (joining the job's groups)."""
        return [str(folder / "cgroup.procs") for folder in self.folders]

    @property
    def freezer(self) -> str:
        """``cgroup`` when a cgroup freezer (v2's cgroup.freeze, v1's freezer.state) holds every process of the job, else ``none``."""
        return "cgroup" if self.freeze_file is not None else "none"

    @property
    def holds(self) -> bool:
        """Whether `freeze` stops every process of the job, whatever it forks."""
        return self.freeze_file is not None

    @property
    def memory_limited(self) -> bool:
        return "memory" in self.limited

    # -- freezing ----------------------------------------------------------------------------------------------------
    def _state(self) -> str:
        """``frozen`` or ``thawed`` (or ``freezing`` on v1) as the kernel reports it now."""
        file = self.freeze_file
        if file.name == "cgroup.freeze":
            for line in _read(file.parent / "cgroup.events").splitlines():
                key, _, value = line.partition(" ")
                if key == "frozen":
                    return "frozen" if value.strip() == "1" else "thawed"
            return "unknown"
        return _read(file).strip().lower() or "unknown"

    def _set(self, frozen: bool, seconds: float) -> None:
        with self._changing:
            if self.ended:  # the job ended while another job's judge paused it: no process is left to stop or resume
                return
            self._set_now(frozen, seconds)

    def _set_now(self, frozen: bool, seconds: float) -> None:
        file = self.freeze_file
        if file is None:
            raise FreezeFailed("this job has no cgroup freezer: its processes cannot all be stopped (see `missing`)")
        word = ("1" if frozen else "0") if file.name == "cgroup.freeze" else ("FROZEN" if frozen else "THAWED")
        want = "frozen" if frozen else "thawed"
        if not file.parent.is_dir():
            raise FreezeFailed(f"the job's cgroup {file.parent} is gone (the job ended): nothing to {'freeze' if frozen else 'thaw'}")
        try:
            file.write_text(word)
        except OSError as error:
            raise FreezeFailed(f"could not write {word} to {file}: {error.strerror or error}") from None
        began = time.monotonic()
        wait, written = 0.0002, began
        while True:
            state = self._state()
            if state == want:
                return
            now = time.monotonic()
            if now - began > seconds:
                break
            if file.name == "freezer.state" and now - written > 0.05:  # v1: writing again retries tasks that did not stop
                try:
                    file.write_text(word)
                except OSError:
                    pass
                written = now
            time.sleep(wait)
            wait = min(wait * 2, 0.005)
        if frozen:  # never leave a job half frozen: undo, then say so
            try:
                file.write_text("0" if file.name == "cgroup.freeze" else "THAWED")
            except OSError:
                pass
        events = file.parent / ("cgroup.events" if file.name == "cgroup.freeze" else "freezer.state")
        raise FreezeFailed(f"the job's cgroup did not become {want} within {seconds:g} s ({events} says "
                           f"{' '.join(_read(events).split())!r})" + ("; the job was left running, not frozen" if frozen else ""))

    def freeze(self, seconds: float = FREEZE_SECONDS) -> None:
        """Stop every process of the job and return once the kernel says all are stopped (nothing it started runs while
        the grader times the baseline); `thaw` resumes. Raises `FreezeFailed` when that is not reached in ``seconds``."""
        self._set(True, seconds)

    def thaw(self, seconds: float = FREEZE_SECONDS) -> None:
        """Resume the job; returns once the kernel says it is thawed. Raises `FreezeFailed` otherwise."""
        self._set(False, seconds)

    # -- ending ------------------------------------------------------------------------------------------------------
    def out_of_memory(self) -> bool:
        for folder in self.folders:
            for name, word in (("memory.events", "oom_kill"), ("memory.oom_control", "oom_kill")):
                if (folder / name).exists():
                    for line in _read(folder / name).splitlines():
                        key, _, value = line.partition(" ")
                        if key == word and value.strip() not in ("", "0"):
                            return True
        return False

    def remove(self) -> None:
        """Kill every process of the job (v2: cgroup.kill, then SIGKILL to whatever is left) and remove its groups. Our
        parent group stays: another job may be starting in it. Once it has begun, freezing or thawing the job does nothing
        (`ended`), so another job's judge pausing this one as it ends neither stops the removal nor writes a note."""
        with self._changing:
            if self.freeze_file is not None:
                try:
                    self.thaw()  # a frozen task cannot die (v1)
                except FreezeFailed:
                    pass
            self.ended = True
        for folder in self.folders:
            if (folder / "cgroup.kill").exists():
                try:
                    (folder / "cgroup.kill").write_text("1")
                except OSError:
                    pass
            procs = folder / "cgroup.procs"
            for _ in range(100):
                for pid in _read(procs).split():
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except (ProcessLookupError, ValueError):
                        pass
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)
        self.folders = []
        self.freeze_file = None


def freezer_problem() -> str | None:
    """Why this machine cannot freeze a job's processes (the judge's need to time a speed check), or None when it can:
    a job's cgroup is made as `run` makes one, read, and removed. A cluster worker is checked with it when it joins."""
    group = _Cgroup(f"{os.getpid()}-probe{uuid.uuid4().hex[:8]}", Limits())
    try:
        if group.holds:
            return None
        return "; ".join(m for m in group.missing if m.startswith("freezer")) or "no cgroup freezer holds here"
    finally:
        group.remove()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: alive
    return True


def sweep_stale(root: pathlib.Path | None = None, parent: str | None = None) -> list[pathlib.Path]:
    """Remove the job groups of graders that died without cleaning up (SIGKILL, the OOM killer, a power cut): a job left
    frozen never runs again and keeps its memory. A job's groups are named ``job-<grader's pid>-<id>``; those whose
    grader is gone are thawed, their processes killed, their folders removed. Returns the folders removed."""
    root, parent = pathlib.Path(root or CGROUP_ROOT), parent or CGROUP_PARENT
    bases: list[tuple[pathlib.Path, str]] = []
    if (root / "cgroup.controllers").exists():
        bases.append((_Cgroup.delegated(root, _own_cgroup(None), os.geteuid() == 0, parent), "v2"))
    else:
        for controller in sorted(V1_CONTROLLERS, key=lambda name: name != "freezer"):  # thaw first: a frozen task cannot die
            bases.append((_v1_base(root / controller, controller), "v1"))
    removed = []
    for base, kind in bases:
        for folder in sorted((base / parent).glob("job-*-*")) if (base / parent).is_dir() else []:
            pid = folder.name.split("-")[1]
            if pid.isdigit() and not _alive(int(pid)):
                _Cgroup.adopt(folder, kind).remove()
                removed.append(folder)
    return removed


_SWEPT = threading.Event()  # stale groups are swept once per grading process, before its first job


def _prefixes(relative: pathlib.PurePath) -> list[pathlib.PurePath]:
    """``a/b/c`` -> [a, a/b, a/b/c]."""
    parts = relative.parts
    return [pathlib.PurePath(*parts[:i]) for i in range(1, len(parts) + 1)]


def _sentence(controller: str, why: str) -> str:
    return {"memory": "memory: not limited by a cgroup: ", "pids": "pids: processes and threads not limited by a cgroup: ",
            "freezer": "freezer: the job cannot be frozen, so its speed checks cannot be timed: "}.get(
        controller, f"{controller}: not enabled for the job: ") + why


def _enter(argv: list[str]) -> None:
    """Launcher (``python -m tfperf_lab.isolation.sandbox --procs F... --fsize N --cpus 0,1 -- CMD``): join the cgroups, set limits, exec CMD."""
    import resource

    split = argv.index("--")
    options, command = argv[:split], argv[split + 1:]
    procs = [options[i + 1] for i, flag in enumerate(options) if flag == "--procs"]
    for path in procs:
        with open(path, "w") as handle:
            handle.write(str(os.getpid()))
    if "--fsize" in options:
        size = int(options[options.index("--fsize") + 1])
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    if "--memory" in options:  # only where no cgroup holds it: address space is a blunt stand-in
        size = int(options[options.index("--memory") + 1])
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if "--cpus" in options:
        os.sched_setaffinity(0, {int(c) for c in options[options.index("--cpus") + 1].split(",")})
    os.execvp(command[0], command)


def _environment(data: pathlib.Path | None, isolated: bool, job: pathlib.Path) -> dict[str, str]:
    """The kernel's whole environment: nothing inherited from the instructor (no tokens, no paths to their files)."""
    inside = INSIDE if isolated else job
    env = {
        "PATH": os.pathsep.join([str(pathlib.Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(inside / "home"), "TMPDIR": "/tmp" if isolated else str(job / "tmp"), "LANG": "C.UTF-8",
        "JUPYTER_RUNTIME_DIR": str(inside / "home" / ".runtime"), "JUPYTER_PLATFORM_DIRS": "1",
        "MPLBACKEND": "Agg", "MPLCONFIGDIR": str(inside / "home" / ".matplotlib"),
        "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONWARNINGS": "ignore::DeprecationWarning", "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        "NBGRADER_EXECUTION": "autograde", "TFPERF_OFFLINE": "1",
        "TFPERF_RECORD": str(inside / "out" / "records.jsonl"),
    }
    if data is not None:
        env["TFPERF_DATA"] = "/data" if isolated else str(data)
    return env


def reference_environment(data: pathlib.Path | None) -> dict[str, str]:
    """The environment of the grader's reference process (`tfperf_lab.speed.reference`): the kernel's settings, the host's paths."""
    env = {key: value for key, value in _environment(data, False, pathlib.Path(tempfile.gettempdir())).items()
           if key not in ("HOME", "TMPDIR", "JUPYTER_RUNTIME_DIR", "MPLCONFIGDIR", "TFPERF_RECORD")}
    return env


def _job_folder(parent: pathlib.Path, nb: dict, lesson_files: pathlib.Path | None) -> pathlib.Path:
    job = pathlib.Path(tempfile.mkdtemp(prefix="job-", dir=parent))
    for sub in ("in", "out", "home/lesson", "home/.runtime", "tmp", "etc"):
        (job / sub).mkdir(parents=True, exist_ok=True)
    (job / "etc" / "passwd").write_text(f"learner:x:{os.getuid()}:{os.getgid()}:learner:{INSIDE / 'home'}:/bin/sh\n")
    (job / "etc" / "group").write_text(f"learner:x:{os.getgid()}:\n")
    if lesson_files is not None:  # the lesson's other files (none today), as nbgrader copies them beside the notebook
        for item in lesson_files.iterdir():
            if item.is_file() and item.suffix != ".ipynb":
                shutil.copy(item, job / "home" / "lesson" / item.name)
    (job / "in" / "notebook.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    return job


class NotRegular(OSError):
    """A file that untrusted code wrote or sent is a link, not a regular file, or cannot be opened; says which."""


def read_regular(path: pathlib.Path, limit: int) -> bytes:
    """At most ``limit`` + 1 bytes of ``path``, opened without following a link (a sandbox or a submitter may plant one)
    and only if it is a regular file (a FIFO would block, a device never end). The one reader of untrusted files: the
    caller decides what more than ``limit`` bytes means.

    Raises:
        NotRegular: with the reason.
    """
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        raise NotRegular(f"{path.name} cannot be read ({error.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegular(f"{path.name} is not a regular file")
        return handle.read(limit + 1)


def _read_back(path: pathlib.Path, limit: int) -> bytes | None:
    """A file the sandbox wrote, if it is a regular file within ``limit`` bytes."""
    try:
        data = read_regular(path, limit)
    except NotRegular:
        return None
    return None if len(data) > limit else data


def run(nb: dict, *, limits: Limits, chosen: Backend, scratch: pathlib.Path, data: pathlib.Path | None = None,
        lesson_files: pathlib.Path | None = None, judge=None) -> Outcome:
    """Execute ``nb`` in a fresh sandbox under ``scratch`` (removed afterwards); never raises for what the notebook does.

    With a `tfperf_lab.speed.judge.Judge`, its socket folder is mounted read-only at /grader, the kernel is told where it is,
    the judge gets the job's cgroup (to freeze it while the baseline runs) and follows the runner's cell progress.
    """
    scratch.mkdir(parents=True, exist_ok=True)
    job = _job_folder(scratch, nb, lesson_files)
    # a cgroup for every backend (--no-sandbox too): its limits, and the freezer the judge needs to time speed checks
    if not _SWEPT.is_set():
        _SWEPT.set()
        sweep_stale()
    group = _Cgroup(f"{os.getpid()}-{uuid.uuid4().hex[:12]}", limits)  # the grader's pid: see sweep_stale
    warnings = list(group.missing)
    inside = INSIDE if chosen.isolated else job
    env = _environment(data, chosen.isolated, job)
    binds: tuple = ()
    reader = writer = None
    if judge is not None:
        folder, socket_inside = judge.sandbox_binds()
        binds = ((folder, str(pathlib.PurePosixPath(socket_inside).parent)),) if chosen.isolated else ()
        env |= {"TFPERF_GRADER": socket_inside if chosen.isolated else str(judge.candidate_address), "TFPERF_GRADER_ROLE": "candidate"}
        reader, writer = os.pipe()
    inner = [sys.executable, "-I", "-m", RUNNER, str(inside / "in" / "notebook.ipynb"), str(inside / "out" / "executed.ipynb"),
             "--cell-timeout", str(limits.cell_seconds), "--startup-timeout", str(limits.startup_seconds),
             "--cwd", str(inside / "home" / "lesson")]
    if writer is not None:
        inner += ["--progress", str(writer)]
    launcher = [sys.executable, "-I", "-m", "tfperf_lab.isolation.sandbox"]
    for path in group.procs:
        launcher += ["--procs", path]
    launcher += ["--fsize", str(limits.file_mb * 2**20)]
    if not group.memory_limited and sys.platform.startswith("linux"):  # TensorFlow reserves far more address space than it uses
        launcher += ["--memory", str(limits.memory_mb * 2**20 * 4)]
        warnings.append(f"memory: an address-space limit (RLIMIT_AS) of {limits.memory_mb * 4} MiB stands in for the cgroup's "
                        f"{limits.memory_mb} MiB: a blunter limit, and a notebook over it fails with MemoryError instead")
    elif not group.memory_limited:
        warnings.append("memory: not limited at all (no cgroup, and the RLIMIT_AS stand-in is used on Linux only)")
    if limits.cpus:
        launcher += ["--cpus", ",".join(map(str, limits.cpus))]
    command = launcher + ["--", *chosen.command(job, inner, env, data, binds)]
    began = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                               env=env if not chosen.isolated else {"PATH": "/usr/bin:/bin"},
                               cwd=job / "home" / "lesson", pass_fds=(writer,) if writer is not None else ())
    if judge is not None:
        os.close(writer)
        judge.group = group if group.holds else None  # None: the judge cannot freeze the job, so it gives no speed verdict
        if not group.holds:
            judge.cannot_freeze = "; ".join(m for m in group.missing if m.startswith("freezer")) or "no cgroup freezer holds here"
        judge.progress(os.fdopen(reader, "rb"))
    timed_out, output = False, b""
    deadline = began + limits.wall_seconds
    while True:  # the notebook's time limit, plus the time other jobs' measurements kept it paused (judge.paused_seconds)
        paused = getattr(judge, "paused_seconds", 0.0) if judge is not None else 0.0
        left = deadline + paused - time.monotonic()
        try:
            output, _ = process.communicate(timeout=max(0.1, min(left, 5.0)))
            break
        except subprocess.TimeoutExpired:
            if left > 5.0:
                continue
            if getattr(judge, "paused_seconds", 0.0) > paused or getattr(judge, "_paused_at", None) is not None:
                continue  # paused now, or was while this wait ran: the limit moved on
            timed_out = True
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            break
    seconds = time.monotonic() - began
    out_of_memory = group.out_of_memory()
    group.remove()
    if not chosen.isolated:  # without a PID namespace, a process the notebook left behind is ended with its group
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    log = (output or b"").decode("utf-8", "replace")[-20000:]
    executed = _read_back(job / "out" / "executed.ipynb", EXECUTED_LIMIT)
    records = _read_back(job / "out" / "records.jsonl", RECORDS_LIMIT)
    timings = _read_back(job / "out" / "timings.json", 4096)
    shutil.rmtree(job, ignore_errors=True)
    problem = None
    if timed_out:
        problem = f"the notebook did not finish within {limits.wall_seconds:.0f} s and was stopped"
    elif out_of_memory and (process.returncode != 0 or executed is None):
        problem = f"the notebook used more than its {limits.memory_mb} MiB of memory and was stopped"
    elif process.returncode == 3 or "DeadKernelError" in log or "Kernel died" in log:
        problem = "the kernel died while running the notebook (os._exit, a crash or out of memory)"
    elif process.returncode != 0 or executed is None:
        tail = log.strip().splitlines()[-1][:300] if log.strip() else f"exit status {process.returncode}"
        problem = f"the notebook could not be run: {tail}"
    notebook = None
    if executed is not None and problem is None:
        try:
            notebook = json.loads(executed)
        except (ValueError, RecursionError):
            problem = "the executed notebook that came back is not valid JSON"
    try:
        inside = {key: float(value) for key, value in json.loads(timings or b"{}").items()}
    except (ValueError, TypeError, AttributeError):
        inside = {}
    return Outcome(notebook, (records or b"").decode("utf-8", "replace"), seconds, process.returncode, timed_out, problem, log,
                   chosen.name, inside, warnings)


if __name__ == "__main__":
    _enter(sys.argv[1:])
