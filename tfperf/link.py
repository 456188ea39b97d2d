"""The kernel's side of a graded speed check: serve one callable to the grader, which times it with its own clock.

When a notebook is graded, ``TFPERF_GRADER`` names a Unix socket of the grader (`tfperf_lab.speed.judge`), and
`tfperf.assert_speedup` calls `serve` instead of timing anything: the learner's kernel serves the candidate, a clean
process running the instructor's source serves the baseline. The grader sends batch requests (a seed it drew and a
number of calls). This side draws each call's arguments from one ``numpy.random.default_rng(seed)`` with the check's
``draw`` function, and after each call moves that generator on by an amount taken from the call's output digest
(`advance`): call i+1's inputs do not exist until call i has answered, so no implementation can stack, thread or
precompute the calls of a batch. It answers with the digest of every call. The grader times each batch from outside;
the clean process then runs the baseline on the same inputs in the same order (``follow``: the candidate's digests
move its generator), timed too, so a training step's state stays in step on both sides, and every call's digests are
compared. (``replay`` spot-checks a batch untimed, for checks whose baseline the learner's kernel serves.)

Nothing here is trusted by the grader: a kernel that patches this module can only answer late, answer wrong (the
digests will not match the clean process's on inputs it had never seen) or not answer (no speed points); code that
patches it at all is on the review list (`tfperf_lab.grading.review`). Every message either side reads goes through `decode`:
one line of at most `LINE_LIMIT` bytes, JSON nested at most `DEPTH_LIMIT` deep, and the protocol version is checked.
Introduced in lesson 01 (the self-check and the graded check are the same call).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
from typing import Any, Callable

import numpy as np

GRADER_VARIABLE = "TFPERF_GRADER"  # the socket; set only while a grader runs the notebook
ROLE_VARIABLE = "TFPERF_GRADER_ROLE"  # "candidate" in the learner's kernel, "baseline" in the clean process
PROTOCOL = 2
LINE_LIMIT = 1 << 20  # bytes in one message: digests are three numbers per output leaf and call
DEPTH_LIMIT = 6  # nesting of one message: {"digests": [[...], ...]} is 3 deep
ROLES = ("candidate", "baseline")

__all__ = ["GRADER_VARIABLE", "ROLE_VARIABLE", "LINE_LIMIT", "PROTOCOL", "ProtocolError", "Verdict", "advance", "decode",
           "digest", "encode", "graded", "serve"]


class ProtocolError(ValueError):
    """A message that is not what the protocol allows (too long, too deep, not JSON, wrong fields or version)."""


def encode(message: dict) -> bytes:
    """One message as a line."""
    return json.dumps(message, default=float, allow_nan=True).encode() + b"\n"


def _depth(value: Any, limit: int) -> None:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            if depth > limit:
                raise ProtocolError(f"a message nested deeper than {limit}")
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))


def decode(line: bytes) -> dict:
    """One message read from the other side: a JSON object on one line of at most LINE_LIMIT bytes, nested at most
    DEPTH_LIMIT deep. Raises `ProtocolError` for anything else (never RecursionError or MemoryError)."""
    if not line:
        raise ProtocolError("no message (the other side closed the connection)")
    if len(line) > LINE_LIMIT:
        raise ProtocolError(f"a message longer than {LINE_LIMIT} bytes")
    if not line.endswith(b"\n"):
        raise ProtocolError("a message cut short (the connection closed in the middle of a line)")
    try:
        message = json.loads(line)
    except (ValueError, RecursionError, MemoryError) as error:
        raise ProtocolError(f"a message that is not JSON ({type(error).__name__})") from None
    if not isinstance(message, dict):
        raise ProtocolError("a message that is not a JSON object")
    _depth(message, DEPTH_LIMIT)
    return message


def hello(message: dict) -> tuple[str, str, dict]:
    """(check name, role, options) of a side's first message; raises `ProtocolError` unless it speaks this protocol."""
    name, role, options = message.get("hello"), message.get("role"), message.get("options", {})
    if message.get("protocol") != PROTOCOL:
        raise ProtocolError(f"protocol {message.get('protocol')!r}, not {PROTOCOL}: the course's helpers and the grader differ in version")
    if not isinstance(name, str) or not 0 < len(name) <= 200 or role not in ROLES or not isinstance(options, dict):
        raise ProtocolError("a hello without a check name, a role or options")
    return name, role, options


def digests_of(message: dict, calls: int) -> list[list[float]]:
    """The digests of an answer to a batch of ``calls`` calls; raises `ProtocolError` (or RuntimeError with the side's
    own error) for anything else."""
    if "error" in message:
        raise RuntimeError(str(message["error"])[:300])
    found = message.get("digests")
    if not isinstance(found, list) or len(found) != calls:
        raise ProtocolError(f"answered {len(found) if isinstance(found, list) else 'no'} digests for {calls} calls")
    for item in found:
        if not isinstance(item, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in item):
            raise ProtocolError("a digest that is not a list of numbers")
    return found


def advance(generator: np.random.Generator, found: list[float]) -> None:
    """Move the batch's generator on by an amount only this call's output digest gives (the next call's inputs)."""
    key = hashlib.blake2b(np.asarray(found, dtype=np.float64).tobytes(), digest_size=8).digest()
    generator.bit_generator.advance(int.from_bytes(key, "little") + 1)


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


def _batch(fn, draw, observe, wait, seed: int, calls: int) -> list[list[float]]:
    """Timed by the grader: ``calls`` calls, each on inputs drawn after the previous call's digest moved the generator."""
    rng = np.random.default_rng(seed)
    found = []
    for _ in range(calls):
        found.append(_call(fn, draw, observe, rng, wait))
        advance(rng, found[-1])
    return found


def _replay(fn, draw, observe, wait, seed: int, digests: list, positions: set[int] | None) -> dict[str, list[float]] | list:
    """Another side's batch on the same inputs, in the same order (its digests move the generator): this side's own
    digests at ``positions`` (untimed spot checks), or at every call when ``positions`` is None (the baseline's timed
    batch, which keeps a training step's state in step with the candidate's)."""
    rng = np.random.default_rng(seed)
    mine: dict[str, list[float]] = {}
    every = []
    for index, theirs in enumerate(digests):
        if positions is None:
            every.append(_call(fn, draw, observe, rng, wait))
        elif index in positions:
            mine[str(index)] = _call(fn, draw, observe, rng, wait)
        elif draw is not None:
            draw(rng)
        advance(rng, theirs)
    return every if positions is None else mine


def serve(name: str, fn: Callable, *, draw: Callable | None, observe: Callable | None = None, options: dict | None = None,
          address: str | None = None, baseline: Callable | None = None) -> Verdict:
    """Serve ``fn`` to the grader for check ``name`` until it sends its verdict; returns the verdict.

    Args:
        name: The check's name (``assert_speedup(..., name=...)``).
        fn: The side this process times: the candidate in a learner's kernel, the baseline in the clean process.
        draw: ``draw(rng) -> argument tuple`` for one call (None: no arguments).
        observe: ``observe(output) -> what is compared`` (default: the output itself).
        options: The check's settings (threshold, rounds, budget, tolerances); the grader reads them from the clean
            process only, never from a learner's kernel.
        address: The grader's socket (default: ``TFPERF_GRADER``).
        baseline: The check's other side, served too when the instructor's check compares the learner's code with
            itself (``own_baseline=True``: "does it stay flat"); the grader asks for it by name, never the kernel.
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
    with connection, connection.makefile("rb") as stream:
        def send(message: dict) -> None:  # unbuffered: nothing is left to flush into a connection the grader closed
            connection.sendall(encode(message))

        send({"hello": name, "role": role, "protocol": PROTOCOL, "options": options or {}})
        while True:
            try:
                request = decode(stream.readline(LINE_LIMIT + 1))
            except ProtocolError as error:
                return Verdict(passed=False, summary="", reason=f"the grader's connection broke ({error})")
            op = request.get("op")
            if op == "verdict":
                return Verdict(passed=bool(request.get("passed")), summary=str(request.get("summary", "")), reason=request.get("reason"))
            try:
                chosen = baseline if request.get("which") == "baseline" and baseline is not None else fn
                if op == "batch":
                    answer = {"digests": _batch(chosen, draw, observe, wait, int(request["seed"]), int(request["calls"]))}
                elif op in ("replay", "follow"):
                    positions = {int(index) for index in request["positions"]} if op == "replay" else None
                    answer = {"digests": _replay(chosen, draw, observe, wait, int(request["seed"]), list(request["digests"]), positions)}
                else:
                    answer = {"error": f"unknown request {op!r}"}
            except Exception as error:  # noqa: BLE001  (the grader reports it; this side only says what happened)
                answer = {"error": f"{type(error).__name__}: {error}"[:500]}
            try:
                send(answer)
            except OSError:  # the grader stopped this check while we worked: its verdict, if it sent one, is waiting
                return _verdict_after_close(stream)


def _verdict_after_close(stream) -> Verdict:
    """The verdict the grader sent before it closed the connection (it stopped the check), else why there is none."""
    try:
        for _ in range(1000):
            message = decode(stream.readline(LINE_LIMIT + 1))
            if message.get("op") == "verdict":
                return Verdict(passed=bool(message.get("passed")), summary=str(message.get("summary", "")), reason=message.get("reason"))
    except (OSError, ProtocolError):
        pass
    return Verdict(passed=False, summary="", reason="the grader closed the connection before this side answered (it stopped the check)")
