"""`tether hook AGENT EVENT`, attached to the CLI by `tether.__main__` (which also runs hooks without click)."""

from __future__ import annotations

import sys

import click


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("agent", type=click.Choice(("claude", "codex", "cursor", "gemini")))
@click.argument("event")
def hook(agent: str, event: str) -> None:
    """Run one agent hook: the agent's JSON on stdin, context or a decision on stdout.

    Installed by `tether install`; fails open (exit 0, no output, a line in .tether/logs/hooks.log).
    """
    from tether.adapters.hooks import main as hook_main

    sys.exit(hook_main([agent, event], hard=True))


COMMANDS = (hook,)
