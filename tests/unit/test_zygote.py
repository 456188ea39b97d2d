"""Reference processes forked from a zygote (`tfperf_lab.speed.zygote`) run as a plain process would: the judge's
environment, folder, log and a session of their own, a fresh namespace and random state, and TensorFlow not imported
again; a zygote that cannot serve makes the judge start the plain process instead."""

from __future__ import annotations

import json
import os
import time

import pytest

from tfperf_lab.speed import judge, zygote

# A fixture cell that writes what the child sees, and a speed test cell (it never reaches a judge here: no socket).
PROBE = r'''
import json, os, random, sys, tempfile, time
began = time.monotonic()
import tensorflow as tf
seen = {"pid": os.getpid(), "sid": os.getsid(0), "cwd": os.getcwd(), "home": os.environ.get("HOME"),
        "marker": os.environ.get("TFPERF_TEST_MARKER"), "tmp": tempfile.gettempdir(), "random": random.random(),
        "tf_seconds": time.monotonic() - began, "tf_ok": float(tf.reduce_sum(tf.ones([3])).numpy()),
        "leaked": "PROBE_LEFT_HERE" in globals()}
PROBE_LEFT_HERE = True
open("seen.json", "w").write(json.dumps(seen))
'''
CHECK = "# tfperf.assert_speedup(..., name='probe') would serve its baseline here\nraise RuntimeError('no judge in this test')\n"
BASE = {"PATH": os.environ["PATH"], "TF_CPP_MIN_LOG_LEVEL": "3", "LANG": "C.UTF-8", "MPLBACKEND": "Agg"}


def _notebook(path):
    cells = [{"cell_type": "code", "id": "probe", "metadata": {"tags": ["speed-fixture"]}, "source": PROBE, "outputs": [],
              "execution_count": None},
             {"cell_type": "code", "id": "probe_check", "metadata": {"nbgrader": {"grade": True, "grade_id": "probe_check", "points": 1,
              "solution": False, "locked": True}}, "source": CHECK, "outputs": [], "execution_count": None}]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def _run(tmp_path, name, env):
    folder = tmp_path / name
    folder.mkdir()
    child = zygote.spawn([str(_notebook(tmp_path / "probe.ipynb"))], env=env, cwd=folder, log=folder / "log")
    child.communicate(timeout=120)
    assert child.poll() is not None
    return child, json.loads((folder / "seen.json").read_text()), (folder / "log").read_text()


def test_a_forked_reference_sees_the_judges_environment_and_folder_in_a_session_of_its_own(tmp_path):
    runs = []
    for name in ("first", "second"):
        home = tmp_path / f"{name}-home"
        home.mkdir()
        env = BASE | {"HOME": str(home), "TMPDIR": str(home), "TFPERF_TEST_MARKER": name}
        runs.append(_run(tmp_path, name, env))
    for (child, seen, log), name in zip(runs, ("first", "second")):
        assert seen["pid"] == child.pid == seen["sid"] != os.getpid(), seen  # its own session, not the host's
        assert seen["cwd"] == str(tmp_path / name) and seen["home"] == str(tmp_path / f"{name}-home"), seen
        assert seen["marker"] == name and seen["tmp"] == str(tmp_path / f"{name}-home"), seen  # not the zygote's
        assert seen["tf_ok"] == 3.0 and not seen["leaked"], seen
        assert "[reference] cell 0: ok" in log and "[reference] cell 1: FAILED" in log, log  # its own log, as the pipe was
    assert runs[0][1]["random"] != runs[1][1]["random"]  # reseeded, not the zygote's shared state
    assert max(run[1]["tf_seconds"] for run in runs) < 0.5, [run[1]["tf_seconds"] for run in runs]  # imported once, before


def test_kill_ends_a_forked_reference_and_its_log_is_kept(tmp_path):
    long = tmp_path / "long.ipynb"
    nb = json.loads(_notebook(long).read_text())
    nb["cells"][0]["source"] = "import time\nprint('sleeping', flush=True)\ntime.sleep(120)\n"
    long.write_text(json.dumps(nb))
    folder = tmp_path / "run"
    folder.mkdir()
    child = zygote.spawn([str(long)], env=BASE | {"HOME": str(folder)}, cwd=folder, log=folder / "log")
    deadline = time.monotonic() + 60
    while not ((folder / "log").exists() and "sleeping" in (folder / "log").read_text()):
        assert time.monotonic() < deadline and child.poll() is None
        time.sleep(0.1)
    child.kill()
    log = child.communicate(timeout=10)[0].decode()
    assert child.poll() is not None and "sleeping" in log


def test_the_judge_starts_the_plain_process_when_no_zygote_can_serve(tmp_path, monkeypatch):
    def unavailable(*args, **kwargs):
        raise zygote.Unavailable("test: no zygote")

    monkeypatch.setattr(zygote, "spawn", unavailable)
    source = _notebook(tmp_path / "probe.ipynb")
    referee = judge.Judge(source, environment=BASE, executed=json.loads(source.read_text()))
    with referee:
        assert referee._ensure_reference() is None
        assert isinstance(referee._reference, judge.subprocess.Popen), referee._reference
    assert referee._reference.poll() is not None  # and stopped with the grading, as before


@pytest.mark.parametrize("broken", ["exit", "garbage"])
def test_a_zygote_that_dies_or_misspeaks_is_unavailable_and_not_tried_again(tmp_path, monkeypatch, broken):
    monkeypatch.setattr(zygote, "_ZYGOTES", {})
    monkeypatch.setattr(zygote, "_FAILED", {})
    script = "import sys; sys.exit(0)" if broken == "exit" else "print('not ready', flush=True); import time; time.sleep(30)"
    real = zygote.subprocess.Popen

    def fake(argv, **kwargs):
        return real([argv[0], "-c", script], **kwargs)

    monkeypatch.setattr(zygote.subprocess, "Popen", fake)
    env = {"PATH": os.environ["PATH"], "TFPERF_TEST_MARKER": broken}
    began = time.monotonic()
    with pytest.raises(zygote.Unavailable):
        zygote.spawn(["x"], env=env, cwd=tmp_path, log=tmp_path / "log")
    with pytest.raises(zygote.Unavailable):  # remembered: no second start
        zygote.spawn(["x"], env=env, cwd=tmp_path, log=tmp_path / "log")
    assert time.monotonic() - began < 10
