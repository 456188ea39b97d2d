import pytest

import tfperf


@pytest.mark.parametrize(
    "variables, expected",
    [({}, "full"), ({"NBGRADER_EXECUTION": "autograde"}, "reduced"), ({"CI": "true"}, "reduced"),
     ({"CI": "true", "TFPERF_PROFILE": "full"}, "full"), ({"TFPERF_PROFILE": "Reduced"}, "reduced")],
)
def test_profile_is_full_for_learners_and_reduced_under_grading_or_ci(monkeypatch, variables, expected):
    for name in ("NBGRADER_EXECUTION", "CI", "TFPERF_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert tfperf.env.profile() == expected
    assert tfperf.env.choose(full=1, reduced=2) == (1 if expected == "full" else 2)


def test_unknown_profile_is_rejected(monkeypatch):
    monkeypatch.setenv("TFPERF_PROFILE", "huge")
    with pytest.raises(ValueError, match="TFPERF_PROFILE must be one of"):
        tfperf.env.profile()


def test_hosted_detects_colab_and_kaggle(monkeypatch):
    monkeypatch.delenv("COLAB_RELEASE_TAG", raising=False)
    monkeypatch.delenv("KAGGLE_KERNEL_RUN_TYPE", raising=False)
    assert tfperf.env.hosted() is None
    monkeypatch.setenv("KAGGLE_KERNEL_RUN_TYPE", "Interactive")
    assert tfperf.env.hosted() == "kaggle"
    monkeypatch.setenv("COLAB_RELEASE_TAG", "release-colab")
    assert tfperf.env.hosted() == "colab"


def test_fingerprint_names_versions_and_hardware():
    env = tfperf.env.fingerprint()
    assert {"tensorflow", "keras", "python", "cpu_count", "gpus", "hosted", "profile"} <= set(env)
    assert env["cpu_count"] >= 1 and env["tensorflow"].startswith("2.")


def test_quiet_tensorflow_sets_the_log_level_before_import(monkeypatch):
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    monkeypatch.setattr(tfperf.env, "_FILTER", object())  # no descriptor filter inside pytest
    tfperf.env.quiet_tensorflow()
    import os

    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "3"


def test_importing_tfperf_does_not_import_tensorflow():
    import subprocess
    import sys

    code = "import sys, tfperf; print('tensorflow' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_quiet_tensorflow_overrides_a_level_the_learner_set(monkeypatch):
    import os

    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")
    monkeypatch.delenv("TFPERF_TF_LOGS", raising=False)
    monkeypatch.setattr(tfperf.env, "_FILTER", object())  # no descriptor filter inside pytest
    tfperf.env.quiet_tensorflow()
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "3"
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")
    monkeypatch.setenv("TFPERF_TF_LOGS", "1")  # the way to keep TensorFlow's own logs
    tfperf.env.quiet_tensorflow()
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "0"


@pytest.mark.parametrize("line", [
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "I0000 00:00:1796077339.744898   26285 port.cc:153] oneDNN custom operations are on. You may see slightly different",
    "I0000 00:00:1796077339.745340   26285 cudart_stub.cc:31] Could not find cuda drivers on your machine, GPU will not be used.",
    "E0000 00:00:1796077344.889377   26389 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)",
    "I0000 00:00:1796077344.940004   26389 service.cc:153] XLA service 0x556568021450 initialized for platform Host (this does not guarantee",
    "I0000 00:00:1796077344.963301   26389 device_compiler.h:208] Compiled cluster using XLA!  This line is logged at most once",
    # TF 2.18.1 on a CPU-only machine (measured): TSL's own format and absl's, the duplicate factory registrations
    "2026-11-30 22:25:11.723384: E external/local_xla/xla/stream_executor/cuda/cuda_fft.cc:477] Unable to register cuFFT factory: Attempting",
    "E0000 00:00:1796077511.749945   29001 cuda_dnn.cc:8310] Unable to register cuDNN factory: Attempting to register factory for plugin cuDNN",
    "E0000 00:00:1796077511.757900   29001 cuda_blas.cc:1418] Unable to register cuBLAS factory: Attempting to register factory for plugin",
    "2026-11-30 22:25:11.780201: I tensorflow/core/platform/cpu_feature_guard.cc:210] This TensorFlow binary is optimized to use available",
    "To enable the following instructions: AVX2 AVX512F FMA, in other operations, rebuild TensorFlow with the appropriate compiler flags.",
    "2026-11-30 22:25:14.322720: E external/local_xla/xla/stream_executor/cuda/cuda_driver.cc:152] failed call to cuInit: INTERNAL: CUDA error",
])
def test_native_lines_that_mean_nothing_to_a_learner_are_harmless(line):
    assert tfperf.env.harmless(line)


@pytest.mark.parametrize("line", [
    "E0000 00:00:1796077344.889377   26389 gpu_device.cc:2020] Failed to allocate memory: OUT_OF_MEMORY",
    "F0000 00:00:1796077344.889377   26389 check.cc:1] Check failed: x == y",
    "Traceback (most recent call last):",
    "AttributeError: 'MessageFactory' object has no attribute 'GetPrototype'",
])
def test_real_errors_are_not_harmless(line):
    assert not tfperf.env.harmless(line)


def test_setup_prints_no_native_log_line_even_when_the_learner_asked_for_every_level(tmp_path):
    import os
    import subprocess
    import sys

    code = ("import os, tfperf\ntfperf.env.setup(verbose=False)\nimport tensorflow as tf\n"
            "tf.function(lambda x: x * 2, jit_compile=True)(tf.ones(2))\nos.write(2, b'a real error\\n')\n")
    environment = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="0", TFPERF_PROFILE="reduced")
    environment.pop("TFPERF_TF_LOGS", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "a real error\n"  # the XLA I0000 lines, cuInit and oneDNN notices are gone; real lines pass


def test_gpu_names_waits_for_tensorflow_and_is_not_stuck_at_none(monkeypatch):
    import sys

    monkeypatch.setattr(tfperf.env, "_GPUS", None)
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    assert tfperf.env.gpu_names() is None
    monkeypatch.undo()
    import tensorflow  # noqa: F401

    monkeypatch.setattr(tfperf.env, "_GPUS", None)
    assert tfperf.env.gpu_names() == ()  # looked up once TensorFlow is there (no GPU on the course machines)


def test_busy_seconds_counts_the_machines_busy_cpu_time():
    import time

    from tfperf import env

    before, began = env.busy_seconds(), time.process_time()
    while time.process_time() - began < 0.3:  # 0.3 s of this process's CPU: the machine was busy at least that long
        pass
    assert env.busy_seconds() - before >= 0.25
