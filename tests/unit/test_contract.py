"""The contracts between the sandbox and the judge (`tfperf_lab.isolation.contract`), held against the code: `sandbox.run`
deals with its judge only through the `Watcher` methods; what crosses into the grader's timer process is a public value
(`tfperf_lab.isolation.cgroups.Freezer`), which freezes a real cgroup from another process; a freeze that fails is the
judge's note, never its end. Seconds: one tiny notebook, no TensorFlow.
"""

from __future__ import annotations

import io
import json
import pathlib
import pickle
import shutil
import socket
import threading
import types

import nbformat
import pytest

from tfperf import timing
from tfperf_lab.course import notebook
from tfperf_lab.isolation import backends, cgroups, contract, sandbox
from tfperf_lab.speed import judge, timer

PROTOCOL = {name for name in vars(contract.Watcher) if not name.startswith("_")}


class Recorder:
    """A judge that answers only the `Watcher` methods: it records each name read from it and each call, and refuses
    (and records) any attribute written on it once made."""

    def __init__(self, folder: pathlib.Path):
        object.__setattr__(self, "_log", {"folder": folder, "read": [], "written": [], "calls": []})

    def __getattribute__(self, name):
        log = object.__getattribute__(self, "_log")
        if name not in ("_log", "_called"):  # its own bookkeeping
            log["read"].append(name)
        return object.__getattribute__(self, name)

    def __setattr__(self, name, value):
        object.__getattribute__(self, "_log")["written"].append(name)
        raise AttributeError(f"sandbox.run wrote {name!r} on its judge")

    def _called(self, *call):
        object.__getattribute__(self, "_log")["calls"].append(call)

    def sandbox_binds(self):
        self._called("sandbox_binds")
        return self._log["folder"], "/grader/candidate.sock"

    def host_address(self):
        self._called("host_address")
        return str(self._log["folder"] / "candidate.sock")

    def use_freezer(self, freezer, why):
        self._called("use_freezer", freezer, why)

    def progress(self, stream):
        self._called("progress")
        threading.Thread(target=stream.read, daemon=True).start()

    def seconds_paused(self):
        self._called("seconds_paused")
        return 0.0


def test_the_sandbox_deals_with_its_judge_only_through_the_watcher_methods(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    watcher = Recorder(tmp_path / "grader")
    outcome = sandbox.run(json.loads(nbformat.writes(nb)), limits=contract.Limits(wall_seconds=120), chosen=backends.NoSandbox(),
                          scratch=tmp_path / "jobs", judge=watcher)
    log = object.__getattribute__(watcher, "_log")
    assert outcome.problem is None, outcome.log[-2000:]
    assert outcome.notebook["cells"][0]["outputs"][0]["data"]["text/plain"] == "2"
    assert log["written"] == [], f"sandbox.run wrote on its judge: {log['written']}"
    assert set(log["read"]) == PROTOCOL, f"read beyond the protocol, or a method never used: {set(log['read']) ^ PROTOCOL}"
    calls = log["calls"]
    names = [call[0] for call in calls]
    assert names[:4] == ["sandbox_binds", "host_address", "use_freezer", "progress"] and names[-1] == "use_freezer", names
    given, taken_back = calls[2], calls[-1]
    frozen_here = isinstance(given[1], cgroups.Freezer) and given[2] is None
    assert frozen_here or (given[1] is None and given[2].startswith("freezer:")), given
    assert taken_back == ("use_freezer", None, None), "the job's freezer is taken back before its cgroup goes"
    assert set(names[4:-1]) == {"seconds_paused"}, names


class PublicOnly(pickle.Unpickler):
    """An unpickler that refuses every private name: what the timer process gets must be the project's public values."""

    def find_class(self, module, name):
        if name.startswith("_") or any(part.startswith("_") for part in module.split(".")):
            raise pickle.UnpicklingError(f"a private name crossed into the timer process: {module}.{name}")
        return super().find_class(module, name)


def _fake_v2(folder: pathlib.Path, frozen: str = "0") -> pathlib.Path:
    folder.mkdir(parents=True)
    (folder / "cgroup.freeze").write_text("0\n")
    (folder / "cgroup.events").write_text(f"populated 1\nfrozen {frozen}\n")
    (folder / "cgroup.procs").write_text("")
    return folder


def test_the_timer_process_gets_a_freezer_and_only_public_classes(tmp_path, monkeypatch):
    group = cgroups.Cgroup.adopt(_fake_v2(tmp_path / "job-fake"), "v2")
    sent = {}

    def timer_process(command, *, input, **options):
        sent["command"], sent["job"] = command, input
        return types.SimpleNamespace(stdout=json.dumps({"failed": "stopped by the test"}).encode(), stderr=b"", returncode=0)

    monkeypatch.setattr(timer.subprocess, "run", timer_process)
    pairs = [socket.socketpair() for _ in range(2)]
    try:
        sides = [timer.Side(ours, {"hello": "tiny"}) for ours, _ in pairs]
        with pytest.raises(timer.Failed, match="stopped by the test"):
            timer.measure(sides[0], sides[1], timing.CheckOptions(threshold=2.0), group.freezer, cpus=(0,))
    finally:
        for ours, theirs in pairs:
            ours.close()
            theirs.close()
    assert sent["command"][-2:] == ["-m", "tfperf_lab.speed.timer"]
    job = PublicOnly(io.BytesIO(sent["job"])).load()
    assert type(job["freezer"]) is cgroups.Freezer and job["freezer"] == group.freezer, job
    assert job["freezer"].file == tmp_path / "job-fake" / "cgroup.freeze"
    assert isinstance(job["options"], timing.CheckOptions) and job["cpus"] == (0,)


def test_a_freeze_that_fails_is_the_judges_note_and_never_stops_it_and_an_ended_job_is_not_paused(tmp_path):
    source = notebook.write({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, tmp_path / "tiny.ipynb")
    referee = judge.Judge(source, environment={}, executed={"cells": []})
    try:
        gone = cgroups.Freezer(tmp_path / "gone" / "cgroup.freeze")  # its group was removed: freezing it raises FreezeFailed
        with pytest.raises(cgroups.FreezeFailed):
            gone.freeze()
        referee.use_freezer(gone, None)
        referee._pause()  # as another job's judge pauses this one while it measures
        assert referee.seconds_paused() > 0, "a pause in progress counts"
        referee._resume()
        assert [note.split(" (")[0] for note in referee.notes] == ["pausing this job while another measured failed",
                                                                   "resuming this job failed"], referee.notes
        assert referee.cannot_freeze is None, "a failed pause is a note, not a machine that cannot freeze"
        paused = referee.seconds_paused()
        assert paused > 0 and referee.seconds_paused() == paused, "no pause in progress once resumed"
        referee.use_freezer(None, None)  # the job ended: its group goes; another job's pause must not touch it
        referee._pause()
        referee._resume()
        assert len(referee.notes) == 2 and referee.cannot_freeze is None, referee.notes
    finally:
        shutil.rmtree(referee.folder, ignore_errors=True)
