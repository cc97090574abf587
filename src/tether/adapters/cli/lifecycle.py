"""CLI commands for the memory lifecycle and intake: stats, cleanup, maintain, repomap, rules, distill, purge
(seed and import are `tether.adapters.cli.intake`). Registered on the main group by `tether.adapters.cli.main`
(`for c in COMMANDS: cli.add_command(c)`).

Thin adapters over `tether.lifecycle` and `tether.intake.rules`; like the other command modules, this one imports
`tether.adapters.cli.common` and never `tether.adapters.cli.main`, which imports it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tether import lifecycle
from tether.adapters.cli.common import echo, emit, json_option, memories, progress_line, workspace
from tether.errors import ValidationError
from tether.intake import autodistill
from tether.model.memory import Memory, check_origin, to_dict
from tether.store.base import Query


def _line(memory: Memory) -> str:
    return f"{memory.id}  [{memory.category}] {memory.summary}"


# -- stats ----------------------------------------------------------------------------------------------


@click.command()
@click.option("--top", type=click.IntRange(1, 100), default=5, show_default=True, help="Memories per list.")
@json_option
def stats(top: int, as_json: bool) -> None:
    """Per category: active, archived, superseded, surfaced, acted and follow-through (the share of
    memories shown at least once that were acted on), plus the most ignored and most used memories."""
    with workspace(require_project=False) as ws:
        data = lifecycle.stats(ws, top=top)
    if as_json:
        emit(data)
        return
    header = (
        f"{'category':<10} {'active':>6} {'archived':>8} {'supersd':>7} {'surfaced':>8} {'acted':>6}  follow"
    )
    echo(header)
    for name, row in [*data["categories"].items(), ("total", data["total"])]:
        rate = "—" if row["follow_through"] is None else f"{row['follow_through']:.0%}"
        echo(
            f"{name:<10} {row['active']:>6} {row['archived']:>8} {row['superseded']:>7} "
            f"{row['surfaced']:>8} {row['acted']:>6}  {rate}"
        )
    for title, key in (("most ignored (shown, never used)", "most_ignored"), ("most used", "most_used")):
        echo(f"\n{title}:")
        for item in data[key]:
            echo(
                f"  {item['id']}  shown {item['surfaced']}, used {item['acted']}  [{item['category']}] "
                f"{item['summary']}"
            )
        if not data[key]:
            echo("  (none)")


# -- cleanup and maintain -------------------------------------------------------------------------------


def _parse_selection(text: str, count: int) -> list[int]:
    """`1 3 5-7`, `1,3`, `all` or empty → 0-based indexes. Raises ValidationError on anything else."""
    text = text.strip().lower()
    if not text or text == "none":
        return []
    if text == "all":
        return list(range(count))
    chosen: dict[int, None] = {}
    for token in text.replace(",", " ").split():
        low, sep, high = token.partition("-")
        try:
            first = int(low)
            last = int(high) if sep else first
        except ValueError:
            raise ValidationError(f"{token!r} is not a number or a range like 3-5") from None
        if not (1 <= first <= last <= count):
            raise ValidationError(f"{token!r} is out of range: choose between 1 and {count}")
        for number in range(first, last + 1):
            chosen.setdefault(number - 1, None)
    return list(chosen)


@click.command()
@click.option("--yes", "-y", is_flag=True, help="Archive every candidate without asking.")
@json_option
def cleanup(yes: bool, as_json: bool) -> None:
    """Review stale memories (ignored, naming only deleted files, unused for 90+ days), worst first,
    and archive the ones you choose (reversible with `tether restore`). Pinned memories never appear.

    --json only lists them. Otherwise the pass is recorded, which resets the session-start hint."""
    with workspace() as ws:
        candidates = lifecycle.cleanup_candidates(ws)
        if as_json:
            emit([c.to_json() for c in candidates])
            return
        if not candidates:
            lifecycle.mark_cleanup_pass(ws)
            echo("no stale memories: nothing to clean up")
            return
        for number, candidate in enumerate(candidates, 1):
            echo(f"{number:>3}. {_line(candidate.memory)}")
            echo(f"      {'; '.join(candidate.reasons)}")
        chosen = list(range(len(candidates))) if yes else _ask(len(candidates))
        archived = lifecycle.cleanup(ws, [candidates[i].memory.id for i in chosen])
    echo(f"archived {len(archived)} of {len(candidates)} candidates (`tether restore ID` brings one back)")


def _ask(count: int) -> list[int]:
    for attempt in range(3):
        answer = click.prompt(
            "Archive which? numbers like 1 3 5-7, 'all', or Enter for none",
            default="",
            show_default=False,
        )
        try:
            return _parse_selection(str(answer), count)
        except ValidationError as exc:
            if attempt == 2:
                raise
            echo(f"{exc}", err=True)
    return []


@click.command()
@click.option(
    "--background",
    is_flag=True,
    help="What a session start leaves to the background: the note scan, repo map refresh and the due "
    "passes, quietly, what they find kept for the next session start; nothing when one is running.",
)
@json_option
def maintain(background: bool, as_json: bool) -> None:
    """Run what session start runs: repo map refresh, rename following, soft-archive of ignored
    memories, rule file re-sync and the cleanup check; print what it did."""
    from tether.lifecycle.housekeeping import maintain as run_maintain

    if background:
        from tether.lifecycle.housekeeping import run_background

        with workspace(sync_notes=False) as ws:  # the scan, and the renames it follows, are the pass's
            ran = run_background(ws, lambda: ws.sync(full=True))
        if as_json:
            emit({"ran": ran})
        return
    with workspace() as ws:
        report = run_maintain(ws)
    if as_json:
        emit(
            {
                "renamed": [{"id": mid, "from": old, "to": new} for mid, old, new in report.renamed],
                "archived": [to_dict(m) for m in report.archived],
                "hints": report.hints,
            }
        )
        return
    for mid, old, new in report.renamed:
        echo(f"followed rename: {mid} {old} → {new}")
    for memory in report.archived:
        echo(f"archived (ignored): {_line(memory)}")
    for hint in report.hints:
        echo(hint)
    if not (report.renamed or report.archived or report.hints):
        echo("nothing to do")


@click.command()
@click.option(
    "--if-idle",
    is_flag=True,
    help="Do nothing when another build of this checkout is running (what hooks start in the background).",
)
@json_option
def repomap(if_idle: bool, as_json: bool) -> None:
    """Build or refresh the repo map now (files, renames, co-change, fan-in), showing progress on a
    terminal. Hooks start this in the background when the map was never built or many commits are new."""
    from tether.lifecycle.housekeeping import refresh_repo
    from tether.lifecycle.mapbuild import build_lock

    with workspace(sync_notes=False) as ws, build_lock(ws, wait=not if_idle) as held:
        if not held:
            if as_json:
                emit({"built": False, "reason": "another build is running"})
            return
        ws.sync()
        with progress_line() as progress:
            report = refresh_repo(ws, locked=True, progress=progress)
        repo = ws.repo_map()
        state = repo.tables.state() if repo is not None else {}
    last = state.get("last_commit")
    if as_json:
        emit({"built": True, "last_commit": last, "renamed": len(report.renamed)})
        return
    for mid, old, new in report.renamed:
        echo(f"followed rename: {mid} {old} → {new}")
    echo(f"repo map up to date at {(last or 'no commit')[:12]}")


# -- rule files -----------------------------------------------------------------------------------------


@click.group()
def rules() -> None:
    """Rule files (AGENTS.md, CLAUDE.md, GEMINI.md, .cursor/rules/*.mdc, .github/copilot-instructions.md)
    as memory: one memory per rule, scoped to the file's directory."""


@rules.command(name="sync")
@json_option
def rules_sync(as_json: bool) -> None:
    """Import every rule file: new rules are added, edited ones updated, removed ones archived.

    Re-running changes nothing. Session start does this by itself when a rule file changed."""
    from tether.intake.rules import sync_rules

    with workspace() as ws, progress_line() as progress:  # on a terminal, without --json
        report = sync_rules(ws, progress=progress)
    if as_json:
        emit(report.to_json())
    else:
        for entry in report.files:
            if entry.error:
                continue
            echo(
                f"{entry.path}: {len(entry.added)} added, {len(entry.updated)} updated, "
                f"{len(entry.archived)} archived, {len(entry.restored)} restored, {entry.unchanged} unchanged"
                + (f", {len(entry.moved)} moved here from a renamed file" if entry.moved else "")
            )
        for entry in report.removed_files:
            echo(f"{entry.path}: gone, {len(entry.archived)} archived")
        if not report.files and not report.removed_files:
            echo("no rule files found", err=True)
    for entry in report.files:
        for warning in entry.warnings:
            echo(f"warning: {warning}", err=True)
    for error in report.errors:
        echo(f"error: {error}", err=True)
    if report.errors:
        sys.exit(1)


# -- intake ---------------------------------------------------------------------------------------------


@click.command()
@click.option(
    "--transcript",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The session transcript (JSON lines).",
)
@click.option("--session", help="The session id (for the log).")
@json_option
def distill(transcript: Path, session: str | None, as_json: bool) -> None:
    """Ask the configured LLM for at most 3 durable facts from a session transcript (origin distilled).

    What the SessionEnd hook starts when `distill.enabled` is true. Provider, model, base URL and
    categories come from `distill.*` config; API keys from the environment (ANTHROPIC_API_KEY,
    OPENAI_API_KEY). Duplicates and near-duplicates of existing memories are dropped."""
    with workspace() as ws:
        run = autodistill.run_distill(
            ws, transcript, session=session, log=lambda m: echo(f"note: {m}", err=True)
        )
    report = run.report
    if as_json:
        emit(
            {
                "transcript": str(report.transcript),
                "lines": report.lines,
                "skipped_lines": report.skipped_lines,
                "called_llm": report.called_llm,
                "proposed": report.proposed,
                "written": [to_dict(m) for m in run.stored],
                "dropped": [{"summary": s, "reason": r} for s, r in report.dropped],
                "redacted": report.redacted,
                "note": report.note,
            }
        )
        return
    echo(
        f"read {report.lines} transcript lines ({report.skipped_lines} skipped as unreadable); "
        f"{report.proposed} facts proposed, {len(run.stored)} written"
        + (f" ({report.note})" if report.note else "")
    )
    for memory in run.stored:
        echo(f"  + {_line(memory)}")
    for summary, reason in report.dropped:
        echo(f"  - {summary}: {reason}")


@click.command()
@click.option(
    "--origin", required=True, help="Which memories: distilled, seed, agent, user, or rules:<path>."
)
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@json_option
def purge(origin: str, yes: bool, as_json: bool) -> None:
    """Delete every memory of one origin for good (notes included, any status), after confirmation.

    `tether purge --origin distilled` undoes auto-distill wholesale. With --json the list and the question
    go to stderr, and what was deleted to stdout."""
    origin = check_origin(origin)
    with workspace(require_project=False) as ws:
        doomed = [m for m in ws.find(Query(status=None, origin=origin)) if m.scope != "session"]
        if not doomed:
            if as_json:
                emit({"origin": origin, "deleted": []})
            else:
                echo(f"no memories with origin {origin}")
            return
        for memory in doomed[:20]:
            echo(f"  {_line(memory)}", err=as_json)
        if len(doomed) > 20:
            echo(f"  … and {len(doomed) - 20} more", err=as_json)
        if not yes:
            click.confirm(f"Delete these {memories(len(doomed))} for good?", abort=True, err=as_json)
        deleted = lifecycle.purge_origin(ws, origin)
    if as_json:
        emit({"origin": origin, "deleted": [to_dict(m) for m in deleted]})
        return
    echo(f"deleted {memories(len(deleted))} with origin {origin}")


COMMANDS: list[click.Command] = [stats, cleanup, maintain, repomap, rules, distill, purge]
