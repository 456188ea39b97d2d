"""Inside the sandbox: execute one notebook with nbgrader's own `Execute` and write the executed copy.

``python -m tfperf_lab.runner IN OUT --cell-timeout N --startup-timeout N --cwd DIR``. Exit status 0 when the
notebook ran to its end (cells may have failed: that is the grade's business), 3 when the kernel died. Nothing here
is trusted by the host: the host reads OUT back with size limits and scores it itself.
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tfperf_lab.runner")
    parser.add_argument("notebook")
    parser.add_argument("out")
    parser.add_argument("--cell-timeout", type=int, default=300)
    parser.add_argument("--startup-timeout", type=int, default=120)
    parser.add_argument("--cwd", default=".")
    args = parser.parse_args(argv)

    import nbformat
    from nbclient.exceptions import DeadKernelError
    from nbgrader.preprocessors import Execute

    nb = nbformat.reads(open(args.notebook, encoding="utf-8").read(), as_version=4)
    executor = Execute(timeout=args.cell_timeout, startup_timeout=args.startup_timeout, kernel_name="python3",
                       extra_arguments=["--HistoryManager.hist_file=:memory:"])
    status = 0
    try:
        nb, _ = executor.preprocess(nb, {"metadata": {"path": args.cwd}})
    except DeadKernelError as error:
        print(f"DeadKernelError: {error}", file=sys.stderr)
        status = 3
    # a first cap here keeps a chatty notebook's copy small enough to come back; the host caps again (CapOutputs)
    from tfperf_lab.untrusted import CapOutputs

    nb, _ = CapOutputs(max_text_bytes=1024 * 1024, max_data_bytes=4 * 1024 * 1024).preprocess(nb, {})
    with open(args.out, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(nb))
    return status


if __name__ == "__main__":
    sys.exit(main())
