"""A disposable sandbox per submission: the only place a learner's code runs when graded.

`run` copies one notebook into a fresh job folder, executes it there with `tfperf_lab.runner` inside a backend, and
returns the executed notebook and the measurement records, read back by the host with size limits. Inside the
bubblewrap backend (Linux, the default) the kernel sees: the Python environment and the course's learner library
read-only, the data folder read-only, its own notebook copy and a private ``/tmp`` writable; nothing else of the
host (no ``solutions/``, gradebook, work folder, other students or instructor home), a clean environment, no
network, its own PID namespace (every process it starts ends with it), and limits on memory and process count
(a cgroup, where one is writable), file size, CPU cores and wall time.

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
import time
import uuid

RUNNER = "tfperf_lab.runner"
EXECUTED_LIMIT = 64 * 1024 * 1024  # bytes of executed notebook read back
RECORDS_LIMIT = 4 * 1024 * 1024
INSIDE = pathlib.PurePosixPath("/job")


class SandboxUnavailable(RuntimeError):
    """No sandbox backend works on this machine (the message says why and what to install)."""


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one submission may use. ``wall_seconds`` bounds the whole notebook, ``cell_seconds`` each cell."""

    wall_seconds: float = 600.0
    cell_seconds: int = 300
    startup_seconds: int = 120
    memory_mb: int = 6144
    processes: int = 512  # threads count too: TensorFlow starts dozens
    file_mb: int = 256
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


def _python_paths() -> list[pathlib.Path]:
    """Folders the runner's Python needs: the interpreter, the environment, and the learner library and tool if installed editable."""
    import tfperf

    paths = {pathlib.Path(sys.base_prefix).resolve(), pathlib.Path(sys.prefix).resolve(),
             pathlib.Path(tfperf.__file__).resolve().parent, pathlib.Path(__file__).resolve().parent}
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


class _Cgroup:
    """Memory and process limits for one job: a cgroup (v2, or v1's memory and pids controllers) where one is writable."""

    def __init__(self, name: str, limits: Limits):
        self.folders: list[pathlib.Path] = []
        self.kind = "none"
        base = pathlib.Path("/sys/fs/cgroup")
        settings = {}
        if (base / "cgroup.controllers").exists():
            controllers = (base / "cgroup.controllers").read_text().split()
            if {"memory", "pids"} <= set(controllers):
                settings = {base: {"memory.max": limits.memory_mb * 2**20, "memory.swap.max": 0, "pids.max": limits.processes}}
                self.kind = "v2"
        elif (base / "memory").is_dir() and (base / "pids").is_dir():
            settings = {base / "memory": {"memory.limit_in_bytes": limits.memory_mb * 2**20}, base / "pids": {"pids.max": limits.processes}}
            if (base / "freezer").is_dir():
                settings[base / "freezer"] = {}
            self.kind = "v1"
        try:
            for controller, values in settings.items():
                folder = controller / f"tfperf-{name}"
                folder.mkdir()
                self.folders.append(folder)
                for key, value in values.items():
                    if (folder / key).exists():
                        (folder / key).write_text(str(value))
        except OSError:
            self.remove()
            self.kind = "none"

    @property
    def procs(self) -> list[str]:
        return [str(folder / "cgroup.procs") for folder in self.folders]

    @property
    def freezer(self) -> str:
        """How `freeze` stops the job: ``cgroup`` (v2's cgroup.freeze or v1's freezer), ``signals`` (SIGSTOP to its processes)."""
        return "cgroup" if self._freeze_file() is not None else ("signals" if self.folders else "none")

    def _freeze_file(self) -> pathlib.Path | None:
        for folder in self.folders:
            for name in ("cgroup.freeze", "freezer.state"):
                if (folder / name).exists():
                    return folder / name
        return None

    def _pids(self) -> list[int]:
        found = set()
        for folder in self.folders:
            try:
                found |= {int(pid) for pid in (folder / "cgroup.procs").read_text().split()}
            except (OSError, ValueError):
                pass
        return sorted(found)

    def freeze(self) -> None:
        """Stop every process of the job (nothing it started runs while the grader times the baseline); `thaw` resumes."""
        file = self._freeze_file()
        if file is None:
            _signal(self._pids(), signal.SIGSTOP)
            return
        file.write_text("1" if file.name == "cgroup.freeze" else "FROZEN")
        if file.name == "freezer.state":
            for _ in range(200):  # v1 freezes asynchronously: wait until every task is stopped
                if file.read_text().strip() == "FROZEN":
                    break
                time.sleep(0.001)

    def thaw(self) -> None:
        file = self._freeze_file()
        if file is None:
            _signal(self._pids(), signal.SIGCONT)
            return
        file.write_text("0" if file.name == "cgroup.freeze" else "THAWED")

    def out_of_memory(self) -> bool:
        for folder in self.folders:
            for name, word in (("memory.events", "oom_kill"), ("memory.oom_control", "oom_kill")):
                if (folder / name).exists():
                    for line in (folder / name).read_text().splitlines():
                        key, _, value = line.partition(" ")
                        if key == word and value.strip() not in ("", "0"):
                            return True
        return False

    def remove(self) -> None:
        if self._freeze_file() is not None:
            self.thaw()  # a frozen task cannot die
        for folder in self.folders:
            procs = folder / "cgroup.procs"
            for _ in range(50):
                left = procs.read_text().split() if procs.exists() else []
                for pid in left:
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except (ProcessLookupError, ValueError):
                        pass
                try:
                    folder.rmdir()
                    break
                except OSError:
                    time.sleep(0.05)
        self.folders = []


def _signal(pids: list[int], number: int) -> None:
    """Send a signal to each process that still exists (freezing without a cgroup freezer)."""
    for pid in pids:
        try:
            os.kill(pid, number)
        except ProcessLookupError:
            pass


class _ProcessTree:
    """Freezing without a cgroup: SIGSTOP and SIGCONT to every process descended from the job's first one."""

    freezer = "signals"

    def __init__(self, root: int):
        self.root = root

    def _pids(self) -> list[int]:
        parents = {}
        for entry in pathlib.Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, ValueError, IndexError):
                    pass
        found, frontier = set(), {self.root}
        while frontier:
            found |= frontier
            frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        return sorted(found - {self.root})

    def freeze(self) -> None:
        _signal(self._pids(), signal.SIGSTOP)

    def thaw(self) -> None:
        _signal(self._pids(), signal.SIGCONT)


def _enter(argv: list[str]) -> None:
    """Launcher (``python -m tfperf_lab.sandbox --procs F... --fsize N --cpus 0,1 -- CMD``): join the cgroups, set limits, exec CMD."""
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
    """The environment of the grader's reference process (`tfperf_lab.reference`): the kernel's settings, the host's paths."""
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


def _read_back(path: pathlib.Path, limit: int) -> bytes | None:
    """A file the sandbox wrote, if it is a regular file within ``limit`` bytes (never following a link it planted)."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = handle.read(limit + 1)
    return None if len(data) > limit else data


def run(nb: dict, *, limits: Limits, chosen: Backend, scratch: pathlib.Path, data: pathlib.Path | None = None,
        lesson_files: pathlib.Path | None = None, judge=None) -> Outcome:
    """Execute ``nb`` in a fresh sandbox under ``scratch`` (removed afterwards); never raises for what the notebook does.

    With a `tfperf_lab.judge.Judge`, its socket folder is mounted read-only at /grader, the kernel is told where it is,
    the judge gets the job's cgroup (to freeze it while the baseline runs) and follows the runner's cell progress.
    """
    scratch.mkdir(parents=True, exist_ok=True)
    job = _job_folder(scratch, nb, lesson_files)
    group = _Cgroup(uuid.uuid4().hex[:12], limits) if chosen.isolated else None
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
    launcher = [sys.executable, "-I", "-m", "tfperf_lab.sandbox"]
    for path in (group.procs if group else []):
        launcher += ["--procs", path]
    launcher += ["--fsize", str(limits.file_mb * 2**20)]
    if chosen.isolated and (group is None or group.kind == "none"):
        launcher += ["--memory", str(limits.memory_mb * 2**20 * 4)]  # TensorFlow reserves far more address space than it uses
    if limits.cpus:
        launcher += ["--cpus", ",".join(map(str, limits.cpus))]
    command = launcher + ["--", *chosen.command(job, inner, env, data, binds)]
    began = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                               env=env if not chosen.isolated else {"PATH": "/usr/bin:/bin"},
                               cwd=job / "home" / "lesson", pass_fds=(writer,) if writer is not None else ())
    if judge is not None:
        os.close(writer)
        judge.group = group if group is not None and group.folders else _ProcessTree(process.pid)
        judge.progress(os.fdopen(reader, "rb"))
    timed_out = False
    try:
        output, _ = process.communicate(timeout=limits.wall_seconds)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
    seconds = time.monotonic() - began
    out_of_memory = bool(group and group.out_of_memory())
    if group:
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
                   chosen.name, inside)


if __name__ == "__main__":
    _enter(sys.argv[1:])
