"""Inside the sandbox: execute one notebook as nbgrader's ``Execute`` does and write the executed copy.

``python -m tfperf_lab.isolation.runner IN OUT --limits JSON --cwd DIR`` (the job's `Limits`, as the sandbox was given them). Exit status 0 when the
notebook ran to its end (cells may have failed: that is the grade's business), 3 when the kernel died. Nothing here
is trusted by the host: the host reads OUT back with size limits, caps and sanitizes it, and scores it itself.

It drives nbclient directly with nbgrader's execution settings (errors allowed, a cell interrupted at its time limit
gets a ``CellTimeoutError`` output, an error reply with no error output gets one, history in memory) instead of
importing nbgrader: a second less of start-up in every sandbox.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time

from typing import Callable

from . import outputs
from .contract import Limits

# nbgrader's Execute.error_on_timeout, so the host reads a timed-out cell the same way
TIMEOUT_ERROR = {"ename": "CellTimeoutError", "evalue": "",
                 "traceback": ["\x1b[0;31mCellTimeoutError\x1b[0m: No reply from kernel before timeout"]}


def _record_unreported_error(cell, execute_reply, **_) -> None:
    """nbgrader's Execute.on_cell_executed: an error reply whose error has no output (a timeout) gets one."""
    content = execute_reply.get("content", {})
    if content.get("status") == "error" and not any(o.get("output_type") == "error" and o.get("ename") == content.get("ename")
                                                    for o in cell.get("outputs", [])):
        cell.setdefault("outputs", []).append({"output_type": "error", "ename": content.get("ename", "Error"),
                                               "evalue": content.get("evalue", ""), "traceback": content.get("traceback") or []})


def execute(nb, *, limits: Limits, cwd: str, env: dict | None = None,
            on_start: Callable[[int], None] | None = None, on_end: Callable[[int, dict], None] | None = None) -> int:
    """Execute ``nb`` (a NotebookNode) in place, every cell in order, in a Python kernel of its own started in ``cwd``
    (with ``env``, else this process's environment): the one way the tool runs a notebook.

    nbgrader's execution settings: errors allowed, a cell interrupted at ``limits.cell_seconds`` gets a ``CellTimeoutError``
    output, an error reply without an error output gets one, the kernel's history kept in memory. ``on_start(index)``
    and ``on_end(index, cell)`` are called around each cell. Returns 0, or 3 when the kernel died.
    """
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    def started(cell, cell_index, **_):
        if on_start is not None:
            on_start(cell_index)

    def executed(cell, cell_index, execute_reply, **_):
        _record_unreported_error(cell, execute_reply)
        if on_end is not None:
            on_end(cell_index, cell)

    client = NotebookClient(nb, timeout=limits.cell_seconds, startup_timeout=limits.startup_seconds, kernel_name="python3",
                            allow_errors=True, interrupt_on_timeout=True, raise_on_iopub_timeout=True,
                            # a cell's outputs may arrive after its reply: under load, or when the job was paused while
                            # another measured (nbclient's own 4 s failed a whole notebook in CI); a cell's limit, not 4 s
                            iopub_timeout=limits.cell_seconds,
                            error_on_timeout=TIMEOUT_ERROR, extra_arguments=["--HistoryManager.hist_file=:memory:"],
                            on_cell_execute=started, on_cell_executed=executed, resources={"metadata": {"path": cwd}})
    try:
        client.execute(**({"env": env} if env is not None else {}))
    except DeadKernelError as error:
        print(f"DeadKernelError: {error}", file=sys.stderr)
        return 3
    return 0


def _not_traceable() -> None:
    """No process of the same user may trace this one or read its memory and descriptors (Linux PR_SET_DUMPABLE 0)."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
        except (OSError, AttributeError):
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tfperf_lab.isolation.runner")
    parser.add_argument("notebook")
    parser.add_argument("out")
    parser.add_argument("--limits", type=Limits.from_json, required=True, help="the job's Limits (Limits.to_json)")
    parser.add_argument("--cwd", default=".")
    parser.add_argument("--progress", type=int, default=None, help="a pipe to the grader: 'start N' / 'end N' around each cell")
    args = parser.parse_args(argv)
    _not_traceable()

    began = time.monotonic()
    import nbformat

    __import__("nbclient")  # here, so the timings below split the imports from the kernel's run

    imported = time.monotonic()
    nb = nbformat.reads(pathlib.Path(args.notebook).read_text(encoding="utf-8"), as_version=4)
    on_start = on_end = None
    if args.progress is not None:
        progress = open(args.progress, "w", buffering=1, encoding="ascii")
        os.set_inheritable(args.progress, False)  # the kernel this runner starts must not write to it
        on_start = lambda index: progress.write(f"start {index}\n")  # noqa: E731
        on_end = lambda index, cell: progress.write(f"end {index}\n")  # noqa: E731
    status = execute(nb, limits=args.limits, cwd=args.cwd,
                     on_start=on_start, on_end=on_end)
    executed = time.monotonic()
    outputs.cap(nb, text_bytes=args.limits.sandbox_text_bytes, data_bytes=args.limits.sandbox_data_bytes, by="in the sandbox")
    pathlib.Path(args.out).write_text(json.dumps(nb), encoding="utf-8")
    pathlib.Path(args.out).with_name("timings.json").write_text(
        json.dumps({"runner_imports": imported - began, "kernel_and_cells": executed - imported}), encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main())
