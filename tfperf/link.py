"""The kernel's side of a graded speed check: serve one callable to the grader, which times it with its own clock.

When a notebook is graded, ``TFPERF_GRADER`` names a Unix socket of the grader (`tfperf_lab.judge`), and
`tfperf.assert_speedup` calls `serve` instead of timing anything: the learner's kernel serves the candidate, a clean
process running the instructor's source serves the baseline. The grader sends batch requests (a seed it drew and a
number of calls); this side draws the calls' arguments in turn from ``numpy.random.default_rng(seed)`` with the
check's ``draw`` function, calls, and answers with a digest of every call's outputs. The grader times each request from
outside, compares the digests with the clean process's on the same seeds, decides, and sends the verdict back.

Nothing here is trusted by the grader: a kernel that patches this module can only answer late, answer wrong (the
digests will not match the clean process's on inputs it had never seen) or not answer (no speed points).
Introduced in lesson 01 (the self-check and the graded check are the same call).
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any, Callable

import numpy as np

GRADER_VARIABLE = "TFPERF_GRADER"  # the socket; set only while a grader runs the notebook
ROLE_VARIABLE = "TFPERF_GRADER_ROLE"  # "candidate" in the learner's kernel, "baseline" in the clean process
PROTOCOL = 1

__all__ = ["GRADER_VARIABLE", "ROLE_VARIABLE", "Verdict", "digest", "graded", "serve"]


class Verdict(dict):
    """What the grader decided for one check: ``passed``, ``summary`` (one line) and ``reason`` when it could not measure."""


def graded() -> bool:
    """True while a grader runs this notebook (the speed checks are then measured by the grader, not here)."""
    return bool(os.environ.get(GRADER_VARIABLE))


def _leaves(value: Any):
    if value is None or isinstance(value, (str, bytes)):
        return
    if isinstance(value, dict):
        for key in sorted(value, key=str):
            yield from _leaves(value[key])
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item)
    else:
        yield value.numpy() if hasattr(value, "numpy") else value


def digest(value: Any) -> list[float]:
    """Per numeric leaf of an output (tensors, arrays, numbers, nested in lists, tuples and dicts): sum, sum of squares, size.

    Both need every element, so an answer cannot compute part of its output; floats are compared with a tolerance.
    """
    numbers: list[float] = []
    for leaf in _leaves(value):
        array = np.asarray(leaf)
        if array.dtype.kind not in "biuf":
            continue
        array = array.astype(np.float64, copy=False)
        numbers += [float(array.sum()), float(np.square(array).sum()), float(array.size)]
    return numbers


def _call(fn: Callable, draw: Callable | None, observe: Callable | None, rng: np.random.Generator, wait) -> list[float]:
    args = draw(rng) if draw is not None else ()
    out = fn(*(args if isinstance(args, tuple) else (args,)))
    found = digest(observe(out) if observe is not None else out)  # copies the outputs to the host: the work is done
    if wait is not None:
        wait()
    return found


def serve(name: str, fn: Callable, *, draw: Callable | None, observe: Callable | None = None, options: dict | None = None,
          address: str | None = None) -> Verdict:
    """Serve ``fn`` to the grader for check ``name`` until it sends its verdict; returns the verdict.

    Args:
        name: The check's name (``assert_speedup(..., name=...)``).
        fn: The side this process times: the candidate in a learner's kernel, the baseline in the clean process.
        draw: ``draw(rng) -> argument tuple`` for one call (None: no arguments).
        observe: ``observe(output) -> what is compared`` (default: the output itself).
        options: The check's settings (threshold, rounds, budget, tolerances); the grader reads them from the clean
            process only, never from a learner's kernel.
        address: The grader's socket (default: ``TFPERF_GRADER``).
    """
    from .timing import device_wait

    address = address or os.environ[GRADER_VARIABLE]
    role = os.environ.get(ROLE_VARIABLE, "candidate")
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(address)
    except OSError as error:
        return Verdict(passed=False, summary="", reason=f"the grader could not be reached ({error})")
    wait = device_wait()
    with connection, connection.makefile("rwb") as stream:
        def send(message: dict) -> None:
            stream.write(json.dumps(message, default=float).encode() + b"\n")
            stream.flush()

        send({"hello": name, "role": role, "protocol": PROTOCOL, "options": options or {}})
        for line in stream:
            request = json.loads(line)
            op = request.get("op")
            if op == "batch":
                try:
                    rng = np.random.default_rng(int(request["seed"]))  # one generator per batch: both sides draw the same inputs
                    digests = [_call(fn, draw, observe, rng, wait) for _ in range(int(request["calls"]))]
                    send({"digests": digests})
                except Exception as error:  # noqa: BLE001  (the grader reports it; this side only says what happened)
                    send({"error": f"{type(error).__name__}: {error}"[:500]})
            elif op == "verdict":
                return Verdict(passed=bool(request.get("passed")), summary=str(request.get("summary", "")),
                               reason=request.get("reason"))
            else:
                send({"error": f"unknown request {op!r}"})
    return Verdict(passed=False, summary="", reason="the grader closed the connection without a verdict")
