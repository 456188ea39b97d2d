"""Where the code runs: quiet TensorFlow logging, the run profile and the environment fingerprint.

Everything a lesson's setup cell needs lives here, so no notebook copies setup code. Nothing in this
module imports TensorFlow at import time: `quiet_tensorflow()` has to run before the first import.
Introduced in lesson 01 (setup section); every lesson calls `setup()`.
"""

from __future__ import annotations

import functools
import importlib.metadata
import logging
import os
import platform
import sys
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
    "hosted",
    "profile",
    "quiet_tensorflow",
    "setup",
]


def quiet_tensorflow() -> None:
    """Silence TensorFlow's C++ and Python logging.

    Call it before the first ``import tensorflow``: the C++ log level is read once, at import.
    Lines TensorFlow prints before its logger starts (oneDNN, CUDA stubs) still appear; the
    autograder filters those (see ``autograder/nbgrader_config.py``).
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
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
    explicit = os.environ.get("TFPERF_PROFILE", "").strip().lower()
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


def hosted() -> str | None:
    """Name the hosted notebook service this runs on (``"colab"``, ``"kaggle"``) or None locally."""
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


@functools.lru_cache(maxsize=1)
def _gpus() -> tuple[str, ...] | None:
    tf = sys.modules.get("tensorflow")
    if tf is None:  # never import TensorFlow from here: logging must be quieted first
        return None
    return tuple(d.name for d in tf.config.list_physical_devices("GPU"))


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def fingerprint() -> dict:
    """Describe this machine and software in a flat dict, stored with every measurement.

    GPUs are listed only once TensorFlow has been imported (``None`` before).
    """
    gpus = _gpus()
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
    }


def _check_versions() -> None:
    found = _version("tensorflow") or _version("tensorflow-cpu")
    if found is None:
        raise ImportError("TensorFlow is not installed: run `pip install -e .` in the course folder (see README).")
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
