"""What the sandbox itself costs per notebook: the same tiny notebook run by the runner with and without bubblewrap.

A benchmark, not a test: ROUNDS paired runs, alternating which goes first; prints the median of each and of the
per-round differences (the sandbox's own cost: namespaces, mounts, the cgroup, reading the result back).

    .venv/bin/python benchmarks/sandbox_overhead.py --rounds 10
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import tempfile

import nbformat

from tfperf_lab.isolation import backends, sandbox
from tfperf_lab.isolation.contract import Limits


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args(argv)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1)")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    data = json.loads(nbformat.writes(nb))
    ways = {"bubblewrap": backends.Bubblewrap(), "none": backends.NoSandbox()}
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.rounds):
            for name in (list(ways) if round_ % 2 == 0 else list(ways)[::-1]):
                outcome = sandbox.run(data, limits=Limits(wall_seconds=120), chosen=ways[name], scratch=pathlib.Path(scratch))
                if outcome.problem:
                    raise RuntimeError(f"{name}: {outcome.problem}\n{outcome.log}")
                seconds[name].append(outcome.seconds)
    differences = [a - b for a, b in zip(seconds["bubblewrap"], seconds["none"])]
    print(f"tiny notebook, {args.rounds} paired rounds: bubblewrap {statistics.median(seconds['bubblewrap']):.2f} s, "
          f"no sandbox {statistics.median(seconds['none']):.2f} s, sandbox overhead (median of paired differences) "
          f"{statistics.median(differences):+.2f} s [min {min(differences):+.2f}, max {max(differences):+.2f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
