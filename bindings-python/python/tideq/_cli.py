"""The ``tideq`` command installed with the package: the same command line as the Rust binary
(``cargo install --path cli``), run from the extension module."""

import sys

from tideq._tideq import _run_cli


def main() -> None:
    """Run ``tideq`` on the process's arguments and exit with its code."""
    sys.exit(_run_cli(["tideq", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
