"""What the commands of the `tether` CLI share: the workspace they open, the `--json` option, printing."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

import click

from tether.errors import TetherError, explain_os_error
from tether.model.display import printable, safe_json
from tether.model.memory import Memory
from tether.workspace import Workspace

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

F = TypeVar("F", bound=Callable[..., Any])


class ReportedProblem(Protocol):
    """A problem another adapter found, as plain data (`tether doctor` prints it beside its own)."""

    @property
    def kind(self) -> str: ...

    @property
    def where(self) -> str: ...

    @property
    def message(self) -> str: ...


# A check `tether doctor` runs besides the workspace's own: given the project root (None outside one).
DoctorCheck = Callable[[Path | None], Sequence[ReportedProblem]]
# Opens the workspace a command uses, given (require_project, sync_notes): the resident process passes
# its own, already open one.
WorkspaceOpener = Callable[[bool, bool], AbstractContextManager[Workspace]]


@dataclass(frozen=True)
class Extensions:
    """What the composition root (`tether.__main__`) hands the commands as click's `obj`.

    The CLI adapter does not import the others; what they add to its commands comes in here.
    """

    doctor_checks: tuple[DoctorCheck, ...] = ()
    open_workspace: WorkspaceOpener | None = None


def extensions(ctx: click.Context) -> Extensions:
    return ctx.obj if isinstance(ctx.obj, Extensions) else Extensions()


def _opener() -> WorkspaceOpener | None:
    ctx = click.get_current_context(silent=True)
    return extensions(ctx.find_root()).open_workspace if ctx is not None else None


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(func)


def json_outcome(func: F) -> F:
    """`--json` for a write or lifecycle command, which emits `{"ok": true, ...}` saying what it did. A
    failure prints `{"ok": false, "error": "..."}` too, besides the usual message on stderr and exit 1
    (a usage error is click's: exit 2, before the command runs)."""

    @functools.wraps(func)
    def run(*args: Any, as_json: bool, **kwargs: Any) -> Any:
        try:
            return func(*args, as_json=as_json, **kwargs)
        except (TetherError, click.ClickException, OSError) as exc:
            if as_json and not isinstance(exc, click.UsageError):
                emit({"ok": False, "error": error_text(exc)})
            raise

    return json_option(cast(F, run))


def error_text(exc: BaseException) -> str:
    """What `tether.adapters.cli.main` prints for an error, without its `error: ` prefix."""
    if isinstance(exc, click.ClickException):
        return exc.format_message()
    if isinstance(exc, OSError) and not isinstance(exc, TetherError):
        return explain_os_error(exc)
    return str(exc)


@contextmanager
def workspace(require_project: bool = True, sync_notes: bool = True) -> Iterator[Workspace]:
    opener = _opener()
    if opener is not None:
        with opener(require_project, sync_notes) as opened:
            yield opened
        return
    ws = Workspace.open(Path.cwd(), require_project=require_project, sync_notes=sync_notes, recover=True)
    if ws.recovered is not None:
        echo(
            f"warning: the index was damaged; moved it to {ws.recovered} and rebuilt it from the notes "
            "(memories are intact; usage counts start over)",
            err=True,
        )
    for ignored in ws.config.ignored:
        echo(f"warning: {ignored.message()}", err=True)
    try:
        if ws.last_sync is not None:
            for problem in ws.last_sync.problems:
                echo(f"warning: skipped note {problem.path}: {problem.problem}", err=True)
            _follow_renames(ws)
        yield ws
    finally:
        ws.close()


def note_outside_project(ws: Workspace) -> None:
    """Outside a project a read command sees only the user's own memory: say so, and what to do (on stderr,
    so `--json` output stays what it was)."""
    if ws.root is None:
        echo(
            f"note: no tether project here (no .tether/ from {printable(str(ws.cwd))} up to the git root): "
            "only your user memory was read; `tether init` starts one",
            err=True,
        )


def _follow_renames(ws: Workspace) -> None:
    """Every command that syncs also brings the repo map up to date, so memories follow renamed files."""
    from tether.lifecycle.housekeeping import refresh_repo

    if ws.root is None:
        return
    try:
        with progress_line() as progress:
            moved = refresh_repo(ws, progress=progress)
    except TetherError as exc:
        echo(f"warning: could not read the repository's history ({exc}); file links not refreshed", err=True)
        return
    for memory_id, old, new in moved.renamed:
        echo(f"note: memory {memory_id} now names {new} (renamed from {old})", err=True)
    for memory_id, anchor in moved.reanchored.lost:
        echo(
            f"warning: memory {memory_id} lost its anchor {anchor.label()} in {anchor.path} (the code is gone); "
            "it is about the file now (`tether list --dead-anchors`)",
            err=True,
        )


# Shell completion lists at most this many ids: past it the user types more of the id first.
COMPLETION_LIMIT = 200
# A completion's description is the summary's start: a menu line, not the note.
COMPLETION_HELP_CHARS = 70


def complete_memory_id(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Shell completion of a memory id argument: the ids starting with what was typed, each described by
    its summary (zsh and fish show it). Quiet and empty outside a project or on any failure: a completion
    must never print an error into the user's command line."""
    from click.shell_completion import CompletionItem

    from tether.store.base import Query

    typed = incomplete.strip().lower()
    try:
        with Workspace.open(Path.cwd(), require_project=False) as ws:
            found = [m for m in ws.store.find(Query(status=None)) if m.id.startswith(typed)]
    except Exception:  # a damaged index, a locked one, no project: no suggestions, never a traceback
        return []
    found.sort(key=lambda m: (m.status != "active", m.id))
    return [
        CompletionItem(m.id, help=printable(_one_line(m.summary, COMPLETION_HELP_CHARS)))
        for m in found[:COMPLETION_LIMIT]
    ]


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def memories(n: int) -> str:
    """`1 memory`, `3 memories`: counts in messages read as English."""
    return f"{n} memory" if n == 1 else f"{n} memories"


_STAGES = {
    "history": "reading git history: {done:,} commits",
    "writing": "writing the repo map",
    "index": "writing the index",
    "notes": "reading notes: {done:,}",
    "embedding": "embedding memories: {done:,}",
    "rules": "syncing rule files: {done:,}",
}


@contextmanager
def progress_line(*, quiet: bool | None = None) -> Iterator[Callable[[str, int, int | None], None] | None]:
    """A progress callback (stage, done, total or None) that rewrites one line of stderr, or None when
    stderr is not a terminal or the command prints JSON (`quiet` None: the current command's `--json`).
    The line is cleared when the block ends, so what the command prints next starts clean."""
    if quiet is None:
        ctx = click.get_current_context(silent=True)
        quiet = bool(ctx is not None and ctx.params.get("as_json"))
    if quiet or not sys.stderr.isatty():
        yield None
        return
    shown = [False]

    def show(stage: str, done: int, total: int | None) -> None:
        text = _STAGES.get(stage, stage).format(done=done)
        if total:
            text += f" of {total:,}"
        click.echo(f"\r\x1b[2K{text}", err=True, nl=False)
        shown[0] = True

    try:
        yield show
    finally:
        if shown[0]:
            click.echo("\r\x1b[2K", err=True, nl=False)


def echo(message: str = "", *, err: bool = False, nl: bool = True) -> None:
    """`click.echo` for anything that may hold memory text: control characters are shown, not obeyed."""
    click.echo(printable(message), err=err, nl=nl)


def emit(data: Any) -> None:
    echo(safe_json(data, indent=2))


def show_memory(memory: Memory, *, full: bool = True) -> None:
    flags = []
    if memory.pinned:
        flags.append("pinned")
    if memory.priority == "high":
        flags.append("high")
    if memory.status != "active":
        flags.append(memory.status)
    head = f"{memory.id}  [{memory.category}] {memory.summary}"
    echo(head + (f"  ({', '.join(flags)})" if flags else ""))
    if not full:
        return
    echo(f"  scope: {memory.scope}   origin: {memory.origin}   updated: {memory.updated:%Y-%m-%d %H:%M}")
    if memory.files:
        echo(f"  files: {', '.join(memory.files)}")
    if memory.tags:
        echo(f"  tags: {' '.join('#' + t for t in memory.tags)}")
    if memory.aliases:
        echo(f"  aliases: {'; '.join(memory.aliases)}")
    for anchor in memory.anchors:
        where = f"lines {anchor.lines[0]}-{anchor.lines[1]}" if anchor.lines else ""
        what = (
            f"{anchor.symbol} ({where})"
            if anchor.symbol
            else where + (f" in {anchor.within}" if anchor.within else "")
        )
        echo(f"  at: {anchor.path} {what}" + ("  [lost: its code is gone]" if anchor.lost else ""))
    if memory.supersedes:
        echo(f"  supersedes: {memory.supersedes}")
    if memory.details:
        echo("")
        echo(memory.details)


def read_details(details: str | None) -> str:
    if details == "-":
        return sys.stdin.read()
    return details or ""


def plural(count: int, one: str, many: str | None = None) -> str:
    """`1 memory`, `2 memories`, `0 notes`: a count with its noun in the right number.

    >>> plural(1, "memory", "memories"), plural(2, "note")
    ('1 memory', '2 notes')
    """
    return f"{count} {one if count == 1 else (many or one + 's')}"
