"""A disposable sandbox per submission: the only place a learner's code runs when graded.

`run` copies one notebook into a fresh job folder, executes it there with `tfperf_lab.isolation.runner` inside a backend
(`tfperf_lab.isolation.backends`), and returns the executed notebook and the measurement records, read back by the host
with size limits (`read_regular`). Inside the bubblewrap backend (Linux, the default) the kernel sees: the Python
environment and the course's learner library read-only, the data folder read-only, its own notebook copy and a private
``/tmp`` writable; nothing else of the host (no ``solutions/``, gradebook, work folder, other students or instructor
home), a clean environment, no network, its own PID namespace (every process it starts ends with it), and limits on
memory and process count (the job's cgroup, `tfperf_lab.isolation.cgroups`, where one is writable), file size, CPU
cores and wall time.

The job's first process is this module's launcher (``python -I -m tfperf_lab.isolation.sandbox``, `_enter`): it joins
the job's cgroup, sets the limits no cgroup holds, pins the cores, then becomes the backend's command. Where memory is
not limited by a cgroup, an address-space limit (RLIMIT_AS, four times the memory limit) stands in; what does not hold
is in `Outcome.warnings` (written to the run's ``run.json``).

A judge takes part only through the `tfperf_lab.isolation.contract.Watcher` methods: the socket it mounts, the job's
freezer, the runner's progress, and the time the job spent paused.
"""

from __future__ import annotations

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

from ..course.config import DATA_VARIABLE, DEFAULTS, GRADER_VARIABLE, OFFLINE_VARIABLE, RECORD_VARIABLE, ROLE_VARIABLE
from .backends import INSIDE, Backend
from .cgroups import Cgroup, sweep_stale
from .contract import Limits, Outcome, Watcher
from .runner import KERNEL_DIED, NOTEBOOK_LIMIT, STARTED

RUNNER = "tfperf_lab.isolation.runner"
RECORDS_LIMIT = 4 * 1024 * 1024
_SWEPT = threading.Event()  # stale groups are swept once per grading process, before its first job


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
        "NBGRADER_EXECUTION": "autograde", OFFLINE_VARIABLE: "1",
        RECORD_VARIABLE: str(inside / "out" / "records.jsonl"),
    }
    if data is not None:
        env[DATA_VARIABLE] = "/data" if isolated else str(data)
    return env


def reference_environment(data: pathlib.Path | None) -> dict[str, str]:
    """The environment of the grader's reference process (`tfperf_lab.speed.reference`): the kernel's settings, the host's paths."""
    env = {key: value for key, value in _environment(data, False, pathlib.Path(tempfile.gettempdir())).items()
           if key not in ("HOME", "TMPDIR", "JUPYTER_RUNTIME_DIR", "MPLCONFIGDIR", RECORD_VARIABLE)}
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
        lesson_files: pathlib.Path | None = None, judge: Watcher | None = None) -> Outcome:
    """Execute ``nb`` in a fresh sandbox under ``scratch`` (removed afterwards); never raises for what the notebook does.

    With a judge (a `Watcher`: `tfperf_lab.speed.judge.Judge`), its socket folder is mounted read-only at /grader, the
    kernel is told where it is, the judge gets the job's freezer (to freeze it while the baseline runs) and follows the
    runner's cell progress, and the time the job spent paused is added to its wall-clock limit.

    The runner holds that limit itself, a few seconds short of it (`tfperf_lab.isolation.runner.Budget`): the cell it
    runs out in is stopped, and the notebook comes back with every cell that ran before. Killing the whole sandbox at
    the limit (nothing comes back: ``problem`` says so) is the backstop. A notebook whose kernel died comes back too,
    its cells saying where; ``stopped`` says what stopped either early.
    """
    scratch.mkdir(parents=True, exist_ok=True)
    job = _job_folder(scratch, nb, lesson_files)
    # a cgroup for every backend (--no-sandbox too): its limits, and the freezer the judge needs to time speed checks
    if not _SWEPT.is_set():
        _SWEPT.set()
        sweep_stale()
    group = Cgroup(f"{os.getpid()}-{uuid.uuid4().hex[:12]}", limits)  # the grader's pid: see sweep_stale
    warnings = list(group.missing)
    inside = INSIDE if chosen.isolated else job
    env = _environment(data, chosen.isolated, job)
    binds: tuple = ()
    reader = writer = None
    if judge is not None:
        folder, socket_inside = judge.sandbox_binds()
        binds = ((folder, str(pathlib.PurePosixPath(socket_inside).parent)),) if chosen.isolated else ()
        env |= {GRADER_VARIABLE: socket_inside if chosen.isolated else judge.host_address(), ROLE_VARIABLE: "candidate"}
        reader, writer = os.pipe()
    inner = [sys.executable, "-I", "-m", RUNNER, str(inside / "in" / "notebook.ipynb"), str(inside / "out" / "executed.ipynb"),
             "--limits", limits.to_json(), "--cwd", str(inside / "home" / "lesson")]
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
        # None: the judge cannot freeze the job, so it gives no speed verdict
        judge.use_freezer(group.freezer, None if group.holds else
                          "; ".join(m for m in group.missing if m.startswith("freezer")) or "no cgroup freezer holds here")
        judge.progress(os.fdopen(reader, "rb"))
    timed_out, output = False, b""
    deadline = began + limits.wall_seconds
    while True:  # the notebook's time limit, plus the time other jobs' measurements kept it paused (judge.seconds_paused)
        paused = judge.seconds_paused() if judge is not None else 0.0
        left = deadline + paused - time.monotonic()
        try:
            output, _ = process.communicate(timeout=max(0.1, min(left, 5.0)))
            break
        except subprocess.TimeoutExpired:
            if left > 5.0:
                continue
            if judge is not None and judge.seconds_paused() > paused:
                continue  # paused now, or was while this wait ran: the limit moved on
            timed_out = True
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            break
    seconds = time.monotonic() - began
    out_of_memory = group.out_of_memory()
    if judge is not None:
        judge.use_freezer(None, None)  # the job ends: from now on no other job's measurement pauses it
    group.remove()
    if not chosen.isolated:  # without a PID namespace, a process the notebook left behind is ended with its group
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    log = (output or b"").decode("utf-8", "replace")[-20000:]
    executed = _read_back(job / "out" / "executed.ipynb", DEFAULTS.executed_bytes)
    records = _read_back(job / "out" / "records.jsonl", RECORDS_LIMIT)
    timings = _read_back(job / "out" / "timings.json", 4096)
    started = (job / "out" / STARTED).is_file()
    shutil.rmtree(job, ignore_errors=True)
    problem = stopped = machine = None
    died = "the kernel died while running the notebook (os._exit, a crash or out of memory)"
    if timed_out:  # the backstop: the runner stops a notebook at its limit itself (runner.Budget), keeping what ran
        problem = f"the notebook did not finish within {limits.wall_seconds:.0f} s and was stopped"
    elif out_of_memory and (process.returncode != 0 or executed is None):
        problem = f"the notebook used more than its {limits.memory_mb} MiB of memory and was stopped"
    elif process.returncode == 3 and executed is not None:  # the cells that ran before the crash keep what they did
        stopped = died
    elif process.returncode == 3 or (executed is None and ("DeadKernelError" in log or "Kernel died" in log)):
        problem = died
    elif not started and executed is None:  # the sandbox never started the runner: nothing of the learner's ran
        tail = log.strip().splitlines()[-1][:300] if log.strip() else f"exit status {process.returncode}"
        problem = machine = f"the sandbox ({chosen.name}) could not start on this machine: {tail}"
    elif process.returncode != 0 or executed is None:
        tail = log.strip().splitlines()[-1][:300] if log.strip() else f"exit status {process.returncode}"
        problem = f"the notebook could not be run: {tail}"
    notebook = None
    if executed is not None and problem is None:
        try:
            notebook = json.loads(executed)
        except (ValueError, RecursionError):
            problem = "the executed notebook that came back is not valid JSON"
    if notebook is not None:
        stopped = _stopped(notebook, stopped)
    try:
        inside = {key: float(value) for key, value in json.loads(timings or b"{}").items()}
    except (ValueError, TypeError, AttributeError):
        inside = {}
    return Outcome(notebook, (records or b"").decode("utf-8", "replace"), seconds, process.returncode, timed_out, problem, log,
                   chosen.name, inside, warnings, stopped, machine)


def _stopped(notebook: dict, stopped: str | None) -> str | None:
    """What stopped the notebook before its end, as the runner wrote it into the cells (``NotebookTimeLimit``,
    ``KernelDied``: `tfperf_lab.isolation.runner`), naming the cell; ``stopped`` (the host's own word) when none says so.
    A report for people only: the points come from the cells' outputs, scored on the host."""
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    for index, cell in enumerate(cells if isinstance(cells, list) else []):
        if not isinstance(cell, dict):
            continue
        outputs = cell.get("outputs")
        for output in outputs if isinstance(outputs, list) else []:
            ename = output.get("ename") if isinstance(output, dict) else None
            if ename in (NOTEBOOK_LIMIT, KERNEL_DIED):
                meta = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
                nbgrader = meta.get("nbgrader") if isinstance(meta.get("nbgrader"), dict) else {}
                name = str(nbgrader.get("grade_id") or cell.get("id") or f"#{index}")[:100]
                if ename == KERNEL_DIED:
                    return f"the kernel died while cell {name} ran (os._exit, a crash or out of memory)"
                return f"the notebook's time limit ran out in cell {name}: it was stopped and the cells after it were not run"
    return stopped


if __name__ == "__main__":
    _enter(sys.argv[1:])
