"""`tether` and `python -m tether` start here."""

from __future__ import annotations

import sys


def main() -> None:
    from tether.cli import main as cli_main

    cli_main(sys.argv[1:])


if __name__ == "__main__":
    main()
