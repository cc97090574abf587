"""`tether` and `python -m tether` start here."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:2] == ["hook"]:
        # Hooks run on every prompt and tool call: skip the CLI framework's import.
        from tether.hooks import main as hook_main

        sys.exit(hook_main(sys.argv[2:]))
    from tether.cli import main as cli_main

    cli_main(sys.argv[1:])


if __name__ == "__main__":
    main()
