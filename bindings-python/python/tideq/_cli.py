"""The ``tideq`` command installed with the package: the same command line as the Rust binary
(``cargo install --path cli``), run from the extension module. ``tideq worker`` starts its worker
processes as fresh interpreters running ``tideq._worker`` (never forked from this one)."""

import sys

from tideq._tideq import _run_cli

# One worker process of `tideq worker`: this interpreter, afresh, on the child module.
WORKER_CHILD = [sys.executable, "-m", "tideq._worker"]


def main() -> None:
    """Run ``tideq`` on the process's arguments and exit with its code."""
    sys.exit(_run_cli(["tideq", *sys.argv[1:]], WORKER_CHILD))


if __name__ == "__main__":
    main()
