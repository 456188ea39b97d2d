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
    tfperf.env.quiet_tensorflow()
    import os

    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "3"


def test_importing_tfperf_does_not_import_tensorflow():
    import subprocess
    import sys

    code = "import sys, tfperf; print('tensorflow' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
