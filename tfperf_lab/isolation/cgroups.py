"""Each job's cgroup: its memory and process limits, and the freezer the judge stops the whole job with.

Every job gets a cgroup of its own (`Cgroup`, with every sandbox backend, ``--no-sandbox`` included), made by
`tfperf_lab.isolation.sandbox.run` before the job starts and removed once it ends:

- cgroup v2 (``/sys/fs/cgroup/cgroup.controllers`` exists): under the delegated subtree (the hierarchy's root when the
  grader runs as root, else the grader's own cgroup, e.g. a ``systemd-run --user --scope -p Delegate=yes`` scope) a
  parent group ``tfperf-lab`` that never holds a process, and each job in a leaf ``tfperf-lab/job-ID``. The memory and
  pids controllers are enabled in each ancestor's ``cgroup.subtree_control`` we may write; if the delegated group
  itself holds processes (a container's root), they move to a leaf ``tfperf-lab-grader`` first. Freezing (the core
  ``cgroup.freeze``, no controller needed) holds on any kernel from 5.2; the memory and pids limits hold only where
  those controllers reach the job's leaf.
- cgroup v1: a leaf ``tfperf-lab/job-ID`` in each of the memory, pids and freezer hierarchies.
- `Freezer`, the job's freezer as a picklable value (one file's path), is what the judge and its timer process get.
  `Freezer.freeze` returns only once the kernel reports the job frozen (v2 ``cgroup.events`` ``frozen 1``, v1
  ``freezer.state`` FROZEN), within 2 s, else it thaws the job and raises `FreezeFailed`; `thaw` likewise.
  `Cgroup.freeze` and `thaw` use it. Whether the job has ended, and one freeze or thaw at a time, is the judge's rule
  (`tfperf_lab.speed.judge.Judge.use_freezer`: it drops the freezer before the group is removed), kept in one place.

What does not hold is never silent: `Cgroup.missing` has a sentence for each of memory, pids and freezer that is not
there, and `run` returns them in its `Outcome.warnings`. Where no freezer holds (no writable cgroup: a grader that is
neither root nor delegated a cgroup), nothing stops the job's processes: there is no signal-based stand-in, since a
process that forks faster than a scan of /proc escapes it; the judge gets no freezer and gives no speed verdict.
`freezer_problem` says whether this machine can freeze a job; `sweep_stale` removes the groups of graders that died.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import signal
import time
import uuid

from .contract import Limits

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


@dataclasses.dataclass(frozen=True)
class Freezer:
    """The freezer of one job's cgroup: v2's ``cgroup.freeze`` (its state read in ``cgroup.events``) or v1's
    ``freezer.state``, the one file it holds. A value: pickled, it freezes and thaws the same job from another process
    (the grader's timer). It does not know whether the job has ended: the judge holding it does."""

    file: pathlib.Path

    def state(self) -> str:
        """``frozen`` or ``thawed`` (or ``freezing`` on v1) as the kernel reports it now."""
        file = self.file
        if file.name == "cgroup.freeze":
            for line in _read(file.parent / "cgroup.events").splitlines():
                key, _, value = line.partition(" ")
                if key == "frozen":
                    return "frozen" if value.strip() == "1" else "thawed"
            return "unknown"
        return _read(file).strip().lower() or "unknown"

    def freeze(self, seconds: float = FREEZE_SECONDS) -> None:
        """Stop every process of the job and return once the kernel says all are stopped (nothing it started runs while
        the grader times the baseline); `thaw` resumes. Raises `FreezeFailed` when that is not reached in ``seconds``
        (the job is then thawed again: never left half frozen)."""
        self._set(True, seconds)

    def thaw(self, seconds: float = FREEZE_SECONDS) -> None:
        """Resume the job; returns once the kernel says it is thawed. Raises `FreezeFailed` otherwise."""
        self._set(False, seconds)

    def _set(self, frozen: bool, seconds: float) -> None:
        file = self.file
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
            state = self.state()
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


class Cgroup:
    """One job's cgroup: its memory and process limits and its freezer, set up as systemd and nsjail do it.

    cgroup v2 (``root/cgroup.controllers`` exists): the delegated subtree is ``root`` itself when the grader runs as root,
    else the grader's own cgroup (from /proc/self/cgroup). Below it, a parent group of ours (``parent``) that never holds
    a process, and each job in a leaf of its own (v2's no-internal-process rule). The memory and pids controllers are
    enabled in every ancestor's ``cgroup.subtree_control`` we may write (from the top down); where the delegated group
    itself holds processes (a container's root, a ``Delegate=yes`` scope), they are first moved into a leaf beside ours,
    as Docker's and systemd's nesting rule asks. The leaf's ``cgroup.controllers`` then says what really holds.
    cgroup v1: a leaf ``parent/job-NAME`` in each of the memory, pids and freezer hierarchies.

    ``missing`` has one sentence per limit or freezer that does not hold (never silent); ``memory_limited`` says whether
    the run needs the address-space stand-in; ``holds`` whether `freeze` can stop every process of the job. It stays in
    the grading process (its lock does not travel): its `freezer` is what another process gets.
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
        if (self.root / "cgroup.controllers").exists():
            self._v2(limits, base)
        elif any((self.root / controller).is_dir() for controller in V1_CONTROLLERS):
            self._v1(limits)
        else:
            self.missing = [_sentence(controller, f"no cgroup file system at {self.root}") for controller in ("memory", "pids", "freezer")]

    @classmethod
    def adopt(cls, folder: pathlib.Path, kind: str) -> "Cgroup":
        """A group over an existing job folder (``kind`` "v2" or "v1" freezer), nothing created: for tests and tools."""
        group = cls.__new__(cls)
        group.root, group.parent, group.name = folder.parent, folder.parent.name, folder.name
        group.folders, group.kind, group.limited, group.missing, group.moved = [folder], kind, [], [], []
        file = folder / ("cgroup.freeze" if kind == "v2" else "freezer.state")
        group.freeze_file = file if file.exists() else None
        return group

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
    def freezer(self) -> Freezer | None:
        """The job's `Freezer` (what the judge and its timer process freeze the job with), or None where none holds."""
        return Freezer(self.freeze_file) if self.freeze_file is not None else None

    @property
    def freezer_kind(self) -> str:
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
    def _held(self) -> Freezer:
        freezer = self.freezer
        if freezer is None:
            raise FreezeFailed("this job has no cgroup freezer: its processes cannot all be stopped (see `missing`)")
        return freezer

    def freeze(self, seconds: float = FREEZE_SECONDS) -> None:
        """`Freezer.freeze` of this job's freezer (`FreezeFailed` where none holds)."""
        self._held().freeze(seconds)

    def thaw(self, seconds: float = FREEZE_SECONDS) -> None:
        """`Freezer.thaw`, likewise."""
        self._held().thaw(seconds)

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
        parent group stays: another job may be starting in it. The judge timing this job has dropped its freezer before
        (`tfperf_lab.isolation.sandbox.run` calls ``use_freezer(None, None)`` first), so no one pauses it meanwhile."""
        if self.freeze_file is not None:
            try:
                self.thaw()  # a frozen task cannot die (v1)
            except FreezeFailed:
                pass
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
    group = Cgroup(f"{os.getpid()}-probe{uuid.uuid4().hex[:8]}", Limits())
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
        bases.append((Cgroup.delegated(root, _own_cgroup(None), os.geteuid() == 0, parent), "v2"))
    else:
        for controller in sorted(V1_CONTROLLERS, key=lambda name: name != "freezer"):  # thaw first: a frozen task cannot die
            bases.append((_v1_base(root / controller, controller), "v1"))
    removed = []
    for base, kind in bases:
        for folder in sorted((base / parent).glob("job-*-*")) if (base / parent).is_dir() else []:
            pid = folder.name.split("-")[1]
            if pid.isdigit() and not _alive(int(pid)):
                Cgroup.adopt(folder, kind).remove()
                removed.append(folder)
    return removed


def _prefixes(relative: pathlib.PurePath) -> list[pathlib.PurePath]:
    """``a/b/c`` -> [a, a/b, a/b/c]."""
    parts = relative.parts
    return [pathlib.PurePath(*parts[:i]) for i in range(1, len(parts) + 1)]


def _sentence(controller: str, why: str) -> str:
    return {"memory": "memory: not limited by a cgroup: ", "pids": "pids: processes and threads not limited by a cgroup: ",
            "freezer": "freezer: the job cannot be frozen, so its speed checks cannot be timed: "}.get(
        controller, f"{controller}: not enabled for the job: ") + why
