"""Where the code runs: quiet TensorFlow logging, the run profile and the environment fingerprint.

Everything a lesson's setup cell needs lives here, so no notebook copies setup code. Nothing in this
module imports TensorFlow at import time: `quiet_tensorflow()` has to run before the first import.
Introduced in lesson 01 (setup section); every lesson calls `setup()`.
"""

from __future__ import annotations

import atexit
import importlib.metadata
import logging
import os
import platform
import re
import sys
import threading
import warnings

FULL = "full"
REDUCED = "reduced"
PROFILES = (FULL, REDUCED)
MIN_TENSORFLOW = (2, 16)

__all__ = [
    "FULL",
    "REDUCED",
    "choose",
    "fingerprint",
    "gpu_names",
    "hosted",
    "profile",
    "quiet_tensorflow",
    "setup",
]


PROFILE_VARIABLE = "TFPERF_PROFILE"  # full or reduced workloads
KEEP_LOGS = "TFPERF_TF_LOGS"  # set to 1 to see TensorFlow's own log lines (debugging TensorFlow itself)

# Native lines that mean nothing to a learner: absl/TSL INFO and WARNING lines (oneDNN notice, CUDA
# stubs, cpu_feature_guard, XLA's "service ... initialized"), absl's note about InitializeLog, and the
# ERROR lines a CPU-only or a Colab machine prints at import (no CUDA driver; TF 2.17-2.19's duplicate
# cuDNN/cuFFT/cuBLAS factory registration). Any other line, an ERROR or a crash, still reaches the notebook.
_HARMLESS = re.compile(
    r"^(?:WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR"
    r"|[IW]\d{4} \d\d:\d\d:\d+\.\d+ +\d+ \S+:\d+\] "
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IW] \S+:\d+\] "
    r"|To enable the following instructions: .*rebuild TensorFlow with the appropriate compiler flags\."
    r"|(?:E\d{4} \d\d:\d\d:\d+\.\d+ +\d+|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: E) \S+:\d+\] "
    r"(?:failed call to cuInit|Unable to register cu(?:DNN|FFT|BLAS) factory|computation placer already registered))")
_LOG_START = re.compile(rb"^(?:[IWEF]\d|\d{4}-|WARNING: All|To enable)")


def harmless(line: str) -> bool:
    """True for a native TensorFlow log line a learner should not see (see ``_HARMLESS``)."""
    return bool(_HARMLESS.match(line))


class _StderrFilter:
    """Sits on file descriptor 2 and drops `harmless` lines; everything else goes on unchanged.

    C++ code writes its logs to descriptor 2 directly, below Python and ``TF_CPP_MIN_LOG_LEVEL``'s
    reach for lines printed before TensorFlow's logger starts (and, on TF 2.16-2.19, for XLA's absl
    lines), and Jupyter shows descriptor 2 in red. A pipe takes its place; a thread reads whole lines
    and passes the others to the original descriptor (in Jupyter: ipykernel's own pipe).
    """

    def __init__(self):
        self.original = os.dup(2)
        read, write = os.pipe()
        os.dup2(write, 2)
        os.close(write)
        self.thread = threading.Thread(target=self._pump, args=(read,), name="tfperf-stderr-filter", daemon=True)
        self.thread.start()
        atexit.register(self.close)

    def _pump(self, read: int) -> None:
        pending = b""
        while chunk := os.read(read, 65536):
            *lines, pending = (pending + chunk).split(b"\n")
            kept = [line for line in lines if not harmless(line.decode("utf-8", "replace"))]
            if pending and not _LOG_START.match(pending):  # a partial line that is no log line: pass it on now
                kept, pending = kept + [pending], b""
                os.write(self.original, b"\n".join(kept))
            elif kept:
                os.write(self.original, b"\n".join(kept) + b"\n")
        if pending:
            os.write(self.original, pending)
        os.close(read)

    def close(self) -> None:
        """Give descriptor 2 back (the pipe's last writer closes, so the thread drains it and stops)."""
        os.dup2(self.original, 2)
        self.thread.join(timeout=2.0)


_FILTER: _StderrFilter | None = None


def quiet_tensorflow() -> None:
    """Silence TensorFlow's C++ and Python logging, and filter the native lines nothing else silences.

    Call it before the first ``import tensorflow``: the C++ log level is read once, at import. The
    level is set to 3 even when the learner set another one (a lower level shows a red ``E0000 ...
    failed call to cuInit`` line on every CPU-only machine); set ``TFPERF_TF_LOGS=1`` to keep your own
    level and every native line. Lines printed before TensorFlow's logger starts (oneDNN, CUDA stubs,
    TF 2.17-2.19's "Unable to register cuDNN factory") and XLA's ``I0000`` lines ignore the level:
    a filter on file descriptor 2 drops those (see `harmless`) and lets every other line through.
    """
    global _FILTER
    keep = os.environ.get(KEEP_LOGS, "").strip() not in ("", "0")
    if not keep:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
        if _FILTER is None:
            _FILTER = _StderrFilter()
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"(tensorflow|keras|tf_keras)")
    if "tensorflow" in sys.modules:
        sys.modules["tensorflow"].get_logger().setLevel(logging.ERROR)


def profile() -> str:
    """Return the run profile: ``"full"`` for a learner, ``"reduced"`` under grading or CI.

    ``TFPERF_PROFILE`` (``full`` or ``reduced``) wins; otherwise nbgrader's ``NBGRADER_EXECUTION``
    or a ``CI`` variable selects the reduced profile, so every lesson fits its grading budget.

    Raises:
        ValueError: ``TFPERF_PROFILE`` holds something else.
    """
    explicit = os.environ.get(PROFILE_VARIABLE, "").strip().lower()
    if explicit:
        if explicit not in PROFILES:
            raise ValueError(f"TFPERF_PROFILE must be one of {PROFILES}; got {explicit!r}")
        return explicit
    if os.environ.get("NBGRADER_EXECUTION") or os.environ.get("CI"):
        return REDUCED
    return FULL


def choose(*, full, reduced):
    """Pick a workload size for the current profile, e.g. ``STEPS = choose(full=600, reduced=60)``."""
    return full if profile() == FULL else reduced


def hosted():
    """Name the hosted notebook service this runs on: "colab", "kaggle", or None on any other machine.

    The one predicate of the course: the setup cell of every lesson carries a copy of this function's
    source (stamped by ``tfperf-lab release``), because it runs before the course is installed.
    """
    if "google.colab" in sys.modules or os.environ.get("COLAB_RELEASE_TAG"):
        return "colab"
    if os.environ.get("KAGGLE_KERNEL_RUN_TYPE"):
        return "kaggle"
    return None


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


_GPUS: tuple[str, ...] | None = None


def gpu_names() -> tuple[str, ...] | None:
    """Names of the physical GPUs TensorFlow sees; None while TensorFlow is not imported yet.

    Never imports TensorFlow (logging must be quieted first). The list is looked up once, after the
    import, and kept: `tfperf.timing` asks for it on every measurement.
    """
    global _GPUS
    if _GPUS is None:
        tf = sys.modules.get("tensorflow")
        if tf is None or not hasattr(tf, "config"):
            return None
        _GPUS = tuple(d.name for d in tf.config.list_physical_devices("GPU"))
    return _GPUS


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return None


def _cgroup_cpu() -> tuple[str | None, int]:
    """This process's cgroup folder that holds cpu.stat, and the cgroup version (2: the unified tree; 1: the cpu
    controller's tree; (None, 0) outside Linux or without one)."""
    text = _read("/proc/self/cgroup") or ""
    if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        for line in text.splitlines():
            if line.startswith("0::"):
                return "/sys/fs/cgroup" + line[3:].strip().rstrip("/"), 2
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and "cpu" in parts[1].split(","):
            for root in ("/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"):
                if os.path.isdir(root):
                    return root + parts[2].strip().rstrip("/"), 1
    return None, 0


def busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy since boot (/proc/stat: every state but idle and iowait); 0.0 where
    there is no /proc/stat. The difference of two readings is what a run cost the machine (benchmarks, the test run's
    class)."""
    stat = (_read("/proc/stat") or "").splitlines()
    if not stat or not stat[0].startswith("cpu "):
        return 0.0
    fields = [int(v) for v in stat[0].split()[1:8]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def cpu_times() -> dict:
    """Cumulative CPU figures a share is computed from (`machine_state` of two readings): the whole machine's jiffies
    and the share of them a hypervisor stole (/proc/stat), and this cgroup's throttling (cpu.stat: periods throttled,
    microseconds throttled). Missing figures are absent."""
    out: dict = {}
    stat = (_read("/proc/stat") or "").splitlines()
    if stat and stat[0].startswith("cpu "):
        fields = [int(v) for v in stat[0].split()[1:]]
        out["jiffies"] = sum(fields[:8])
        out["steal"] = fields[7] if len(fields) > 7 else 0
    folder, version = _cgroup_cpu()
    for line in ((_read(f"{folder}/cpu.stat") or "") if folder else "").splitlines():
        key, _, value = line.partition(" ")
        if not value.strip().isdigit():
            continue
        if key in ("nr_periods", "nr_throttled", "throttled_usec"):
            out[key] = int(value)
        elif key == "throttled_time" and version == 1:  # v1 counts nanoseconds
            out["throttled_usec"] = int(value) // 1000
    return out


def machine_state(before: dict | None = None) -> dict:
    """What the machine was doing, stored with every measurement beside `fingerprint`: the CPU model, the frequency
    governor, the cgroup's CPU quota (cpu.max), the 1-minute load average against the cores, and, given an earlier
    `cpu_times` reading, the share of CPU time a hypervisor stole and the periods this cgroup was throttled since.
    Introduced with `tfperf-lab doctor`."""
    info = _read("/proc/cpuinfo") or ""
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith(("model name", "Model"))), None)
    governor = (_read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") or "").strip() or None
    folder, version = _cgroup_cpu()
    if version == 1:  # cfs quota and period in microseconds, -1: no quota
        quota = f"{(_read(f'{folder}/cpu.cfs_quota_us') or '').strip()} {(_read(f'{folder}/cpu.cfs_period_us') or '').strip()}".strip()
        quota = "max" + quota[2:] if quota.startswith("-1") else quota
    else:
        quota = (_read(f"{folder}/cpu.max") or "").strip() if folder else ""
    state = {"cpu_model": model or platform.processor() or None, "governor": governor, "cpu_max": quota or None,
             "load1": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None, "cores": _cpu_count()}
    if before is not None:
        now = cpu_times()
        if "jiffies" in now and "jiffies" in before:
            spent = now["jiffies"] - before["jiffies"]
            state["steal_share"] = round((now["steal"] - before["steal"]) / spent, 4) if spent > 0 else 0.0
        if "nr_periods" in now and "nr_periods" in before:
            periods = now["nr_periods"] - before["nr_periods"]
            state["throttled_share"] = round((now["nr_throttled"] - before["nr_throttled"]) / periods, 4) if periods else 0.0
            state["throttled_seconds"] = round((now["throttled_usec"] - before["throttled_usec"]) / 1e6, 3)
    return state


def fingerprint(before: dict | None = None) -> dict:
    """Describe this machine and software in a flat dict, stored with every measurement (``machine``: what the
    machine was doing, `machine_state`, since ``before``, a `cpu_times` reading taken when the measurement began).

    GPUs are listed only once TensorFlow has been imported (``None`` before).
    """
    gpus = gpu_names()
    return {
        "tensorflow": _version("tensorflow") or _version("tensorflow-cpu"),
        "keras": _version("keras"),
        "numpy": _version("numpy"),
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "cpu_count": _cpu_count(),
        "gpus": list(gpus) if gpus is not None else None,
        "hosted": hosted(),
        "profile": profile(),
        "machine": machine_state(before),
    }


def _check_versions() -> None:
    found = _version("tensorflow") or _version("tensorflow-cpu")
    if found is None:
        raise ImportError('TensorFlow is not installed: run `pip install -e ".[learn]"` in the course folder (see README).')
    major_minor = tuple(int(part) for part in found.split(".")[:2])
    if major_minor < MIN_TENSORFLOW:
        wanted = ".".join(map(str, MIN_TENSORFLOW))
        raise ImportError(f"TensorFlow {wanted} or newer is needed (Keras 3); found {found}. Upgrade with `pip install -U tensorflow`.")


def _device_advice(env: dict) -> str:
    if env["gpus"]:
        return f"GPU: {', '.join(env['gpus'])}."
    advice = {
        "colab": "No GPU: Runtime > Change runtime type > T4 GPU, then run all cells again (optional: every lesson runs on CPU).",
        "kaggle": "No GPU: Settings > Accelerator > GPU, then restart (optional: every lesson runs on CPU).",
    }
    return advice.get(env["hosted"], "No GPU: every lesson is sized for a CPU; measured ratios will differ on a GPU.")


def setup(*, seed: int | None = 0, verbose: bool = True) -> dict:
    """Prepare a lesson: quiet logs, check versions, import TensorFlow, seed, report the device.

    Args:
        seed: Seed for Python, NumPy and TensorFlow (``None`` leaves them alone).
        verbose: Print a two-line report of versions, device and profile.

    Returns:
        The environment fingerprint (see ``fingerprint``).

    Raises:
        ImportError: TensorFlow is missing or older than 2.16.

    Example:
        >>> ENV = tfperf.env.setup()  # first code cell of every lesson
    """
    quiet_tensorflow()
    _check_versions()
    import tensorflow as tf  # noqa: F401  (imported here, after the log level is set)

    quiet_tensorflow()
    if seed is not None:
        tf.keras.utils.set_random_seed(seed)
    from . import selfcheck

    selfcheck.install()  # test cells report passed/failed as they run (see tfperf.selfcheck)
    env = fingerprint()
    if verbose:
        print(
            f"TensorFlow {env['tensorflow']} (Keras {env['keras']}), Python {env['python']}, "
            f"{env['cpu_count']} CPU cores, {env['hosted'] or 'local'}, profile: {env['profile']}"
        )
        print(_device_advice(env))
    return env
