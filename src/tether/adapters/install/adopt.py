"""`tether rules adopt [--undo]`: stop the agent loading the rule files natively, where it allows that.

Only Claude Code has a per-file switch: `claudeMdExcludes` in its settings, glob patterns matched against
absolute paths. It goes in `.claude/settings.local.json`, the personal, git-ignored layer: adopting is one
person's choice on one machine (absolute paths are machine-specific too), never a committed change that
would silence the rule files for a teammate without tether. The other agents (README "Adopting rule
files"): Codex has no per-file switch (`project_doc_max_bytes` caps every project's AGENTS.md at once),
Gemini CLI's `context.fileName` renames what it loads for every directory, Cursor loads its rules and
AGENTS.md with no exclusion; adopt does not touch them.

Undo restores the settings file byte for byte (or removes it, and the `.claude/` it made) when nothing else
changed the file since; otherwise it removes only the entries adopt added and says so.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import click

from tether.adapters.install import jsonconf
from tether.errors import TetherError, ValidationError
from tether.fs import read_limited, write_atomic
from tether.intake import adopt as adoption
from tether.intake.rulefiles import find_rule_files
from tether.model.display import printable

__all__ = ["COMMANDS", "adopt_claude", "undo"]

EXCLUDES = "claudeMdExcludes"
SETTINGS = Path(".claude") / "settings.local.json"
# What Claude Code loads natively among the rule files tether syncs (it reads AGENTS.md only through an
# `@AGENTS.md` import in a CLAUDE.md, which the exclusion of that CLAUDE.md takes along).
CLAUDE_FILES = ("CLAUDE.md",)


# A Claude Code settings file is a few kilobytes; anything this large is not one.
SETTINGS_MAX_BYTES = 1 << 20


def _read(path: Path) -> str | None:
    """The settings file's text, None when absent. Never a FIFO's wait or a symlink's target elsewhere:
    the clone may hold anything under that name."""
    try:
        return read_limited(path, SETTINGS_MAX_BYTES, inside=path.parent.parent).decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:  # RefusedFile too
        raise ValidationError(f"{path}: cannot read it ({exc}); fix or remove it, then adopt again") from exc


def _load(path: Path, text: str | None) -> dict[str, Any]:
    try:
        return jsonconf.load(text)
    except jsonconf.Problem as exc:
        raise ValidationError(f"{path} {exc}") from exc


def adopt_claude(ws: Any) -> adoption.Adoption:
    """Exclude the project's CLAUDE.md files in Claude Code's local settings; record how to undo it."""
    root: Path = ws.root
    excluded = [str(root / p) for p in find_rule_files(root) if Path(p).name in CLAUDE_FILES]
    path = root / SETTINGS
    previous = next((a for a in adoption.load(ws) if a.agent == "claude"), None)
    current = _read(path)
    data = _load(path, current)
    entries = data.get(EXCLUDES, [])
    if not isinstance(entries, list):
        raise ValidationError(
            f"{path}: `{EXCLUDES}` should be a list of paths or globs; fix it, then adopt again"
        )
    data[EXCLUDES] = [*entries, *(e for e in excluded if e not in entries)]
    created = [] if path.parent.exists() else [str(path.parent)]
    after = jsonconf.dump(data, current)
    if after != current:
        write_atomic(path, after)
    core = [m.id for m in adoption.choose_core(ws)]
    record = adoption.Adoption(
        agent="claude",
        settings=str(path),
        before=previous.before if previous else current,
        after=after,
        excluded=sorted({*(previous.excluded if previous else []), *excluded}),
        created_dirs=previous.created_dirs if previous else created,
        core=core,
    )
    adoption.save(ws, [*(a for a in adoption.load(ws) if a.agent != "claude"), record])
    return record


def undo(ws: Any) -> list[str]:
    """Undo every adoption of this project; returns what was done, one line each."""
    done = []
    for record in adoption.load(ws):
        path = Path(record.settings)
        current = _read(path)
        if current == record.after:
            if record.before is None:
                path.unlink(missing_ok=True)
                for directory in record.created_dirs:
                    with contextlib.suppress(OSError):  # only if empty: something may live there now
                        Path(directory).rmdir()
                done.append(f"{path}: removed (adopt had created it)")
            else:
                write_atomic(path, record.before)
                done.append(f"{path}: restored as it was before adopt")
        elif current is not None:
            data = _load(path, current)
            entries = data.get(EXCLUDES)
            if isinstance(entries, list):
                kept = [e for e in entries if e not in record.excluded]
                if kept:
                    data[EXCLUDES] = kept
                else:
                    data.pop(EXCLUDES)
                write_atomic(path, jsonconf.dump(data, current))
            done.append(
                f"{path}: changed since adopt; removed only the {len(record.excluded)} entries adopt added"
            )
        else:
            done.append(f"{path}: gone already; nothing to restore")
    adoption.save(ws, [])
    return done


@click.command(name="adopt")
@click.option("--undo", "undo_", is_flag=True, help="Let the agent load the rule files again, as before.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def adopt_command(undo_: bool, as_json: bool) -> None:
    """Have tether deliver the rule files instead of the agent (opt-in, on this machine, reversible).

    The rule files stay the source (`rules sync` keeps reading them). Claude Code stops loading the
    project's CLAUDE.md files (`claudeMdExcludes` in .claude/settings.local.json); recall injects the rules
    a prompt needs, and a short core (rules marked `<!-- tether: core -->`, then the root files' gotchas)
    is injected at every session start. Run it again after adding a rule file."""
    from tether.intake.rules import sync_rules
    from tether.workspace import Workspace

    try:
        with Workspace.open(Path.cwd()) as ws:
            if undo_:
                lines = undo(ws)
                if as_json:
                    click.echo(json.dumps({"undone": lines}))
                else:
                    for line in lines or ["nothing was adopted here"]:
                        click.echo(printable(line))
                return
            sync_rules(ws)  # the core is chosen among the memories of the files as they are now
            record = adopt_claude(ws)
            core = [ws.store.get(mid) for mid in record.core]
    except TetherError as exc:
        raise click.ClickException(str(exc)) from exc
    chars = sum(len(m.summary) for m in core if m is not None)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "agent": "claude",
                    "settings": record.settings,
                    "excluded": record.excluded,
                    "core": record.core,
                    "core_chars": chars,
                }
            )
        )
        return
    click.echo(printable(f"Claude Code: {record.settings} excludes {len(record.excluded)} rule file(s)"))
    click.echo(f"core: {len(record.core)} rule(s), {chars} characters, injected at session start")
    click.echo("Codex, Gemini CLI and Cursor still load their rule files (they have no per-file switch).")
    click.echo("Undo with `tether rules adopt --undo`.")


COMMANDS = (adopt_command,)
