"""CLI commands that rank memories for a context: search, recall, explain.

Registered on the main group by `tether.adapters.cli.main`.
"""

from __future__ import annotations

from typing import Any

import click

from tether.adapters.cli.common import (
    complete_memory_id,
    echo,
    emit,
    json_option,
    note_outside_project,
    workspace,
)
from tether.model.memory import CATEGORIES
from tether.recall.named import take_named


@click.command()
@click.argument("query")
@click.option("--file", "-f", "files", multiple=True, help="Files being worked on, to rank by too.")
@click.option("--category", "-c", type=click.Choice(CATEGORIES), help="Only this category.")
@click.option(
    "--limit", "-k", type=click.IntRange(1, 200), default=10, show_default=True, help="Most results."
)
@json_option
def search(query: str, files: tuple[str, ...], category: str | None, limit: int, as_json: bool) -> None:
    """Search memories by meaning and words (the recall fusion), best first, each marked strong or weak.

    Not gated like injection: the nearest memories come back even when none would be injected, marked
    `weak`. Records nothing."""
    with workspace(require_project=False) as ws:
        results = ws.search(query, files=files, category=category, limit=limit)
        note_outside_project(ws)
    if as_json:
        emit([r.to_json() for r in results])
        return
    for r in results:
        echo(f"{r.score:5.3f}  {r.confidence:6}  {r.line()}")
    if not results:
        echo("no matches", err=True)
    elif all(r.confidence == "weak" for r in results):
        echo("no strong match: these are only the nearest memories", err=True)


@click.command()
@click.option("--prompt", "-p", default="", help="What the agent was asked.")
@click.option(
    "--file",
    "-f",
    "files",
    multiple=True,
    help="A file being touched, or the place in it being edited (path:123, path:120-140, path::Symbol). Repeatable.",
)
@click.option("--session", help="Session id (for cooldown and recording).")
@click.option("--turn", type=int, help="Turn number in the session.")
@click.option("--limit", "-k", type=click.IntRange(0, 50), help="Most memories (default: recall.limit).")
@click.option("--budget", type=click.IntRange(0), help="Most characters (default: recall.budget).")
@click.option("--no-record", is_flag=True, help="Dry run: do not count this as a surfacing.")
@click.option(
    "--work",
    is_flag=True,
    help="As a session's first prompt: the files changed since HEAD (in a clean tree, the branch's own commits) "
    "stand for the touched files when the prompt is about them (what the prompt hook does before the agent "
    "touches a file). Files the prompt names come first: with any, the work is not asked.",
)
@json_option
def recall(
    prompt: str,
    files: tuple[str, ...],
    session: str | None,
    turn: int | None,
    limit: int | None,
    budget: int | None,
    no_record: bool,
    work: bool,
    as_json: bool,
) -> None:
    """What an agent would be given for this prompt and these files, with receipts.

    Files the prompt names (`src/billing/charge.py`, `@docs/api.md`, `charge.py` when few files have that name)
    count as touched, as the prompt hook counts them."""
    if work and files:
        raise click.UsageError("--work stands for the touched files: give --work or --file, not both")
    with workspace(require_project=False) as ws:
        options: dict[str, Any] = {"session": session, "turn": turn, "limit": limit, "budget": budget}
        named, taken = take_named(prompt, ws.root, ws.repo_map(), files)  # as the prompt hook takes them
        if named:
            files = tuple(taken)
            if not as_json:  # JSON says it in `files`
                echo(f"named in the prompt: {', '.join(named)} (taken as touched)", err=True)
        if work and not named and ws.root is not None:
            from tether.recall.work import recall_with_work, work_note
            from tether.repo.worktree import in_progress

            changed = in_progress(ws.root)
            result = recall_with_work(ws.recaller(), prompt, changed, record=not no_record, **options)
            if not as_json:  # JSON says it in `files`: the touched files the recall took
                echo(work_note(changed, result.files), err=True)
        else:
            result = ws.recaller().recall(prompt, files, record=not no_record, **options)
        note_outside_project(ws)
    if as_json:
        emit(result.to_json())
        return
    for r in result.memories:
        echo(f"{r.score:5.3f}  {r.line()}")
    if not result.memories:
        echo("nothing to recall for this context", err=True)


@click.command()
@click.argument("memory_id", shell_complete=complete_memory_id)
@click.option("--prompt", "-p", default="", help="The prompt to explain against.")
@click.option(
    "--file",
    "-f",
    "files",
    multiple=True,
    help="A file being touched, or a place in it (path:123, path::Symbol). Repeatable.",
)
@json_option
def explain(memory_id: str, prompt: str, files: tuple[str, ...], as_json: bool) -> None:
    """The full score breakdown of one memory for a context, and its rank (files the prompt names count as
    touched, as in `tether recall`)."""
    from tether.recall.evidence import receipt

    with workspace(require_project=False) as ws:
        candidate, rank = ws.explain(ws.resolve(memory_id), prompt, files)
    data = {
        "id": candidate.memory_id,
        "rank": rank,
        "score": round(candidate.score, 4),
        **candidate.breakdown(),
        "receipt": receipt(candidate),
        "injectable": rank is not None,
    }
    if as_json:
        emit(data)
        return
    echo(f"{candidate.memory_id}: score {data['score']}, rank {rank if rank else '— (not injectable)'}")
    sections: dict[str, dict[str, Any]] = {
        "rank credit": data["rank_credit"],
        "magnitude": data["magnitudes"],
        "evidence": data["evidence"],
    }
    for section, values in sections.items():
        for key, value in values.items():
            echo(f"  {section}: {key} = {value}")
    if candidate.multiplier != 1.0:
        echo(f"  multiplier: priority high x{candidate.multiplier}")
    echo(f"  receipt: via {data['receipt']}")


COMMANDS = (search, recall, explain)
