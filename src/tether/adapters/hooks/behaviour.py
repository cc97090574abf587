"""What tether does at each point of an agent session, independent of which agent it is.

Agent adapters (`tether.adapters.hooks.agents`) turn each agent's JSON into a `HookEvent` and a `Reply` back into
that agent's JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tether.adapters.hooks.gotchas import (
    Gotchas,
    gotcha_line,
    gotchas_at,
    gotchas_for,
    gotchas_read,
    more_line,
)
from tether.adapters.hooks.session import session_state
from tether.errors import ValidationError
from tether.model.limits import PROMPT_TAIL
from tether.model.memory import Memory, normalize_path
from tether.model.prompt import may_hold_secret, sanitize
from tether.recall.block import FALLBACK, PINNED_HEADER, block
from tether.recall.evidence import memory_line
from tether.recall.named import take_named
from tether.recall.work import recall_with_work
from tether.repo.worktree import in_progress
from tether.store.base import Event, Query
from tether.workspace import Workspace

if TYPE_CHECKING:
    from tether.anchors.edits import Edit
    from tether.anchors.locations import Location

# The anchors (tree-sitter's loader, the edit's diff) and the recall channels load in the hooks that use them
# (an edit, a read), not in a session start or a prompt answered without them.

# Tools whose use means the agent is reading memory on its own: hints go quiet after that.
MEMORY_TOOLS = ("memory_search", "memory_get", "memory_pin", "memory_add", "memory_links", "memory_remove")


@dataclass
class HookEvent:
    """One agent hook call, normalized."""

    kind: str  # session_start | prompt | before_edit | after_tool | stop | session_end | other
    session: str
    cwd: Path
    prompt: str = ""
    tool: str = ""  # the agent's tool name
    tool_kind: str = ""  # read | edit | memory | other
    paths: list[str] = field(default_factory=list)  # absolute or cwd-relative paths the tool touches
    transcript: str = ""
    source: str = ""
    # Whether the agent shows this event's context to its model: Gemini's BeforeTool and Cursor's
    # preToolUse drop it (agent-integrations.md §4.3, §3.2); only a deny reaches the model there.
    shows_context: bool = True
    edits: list[Edit] = field(default_factory=list)  # what a before-edit tool call changes, where it says
    read_lines: tuple[int, int] | None = None  # the lines a read of one file asked for (None: all of it)
    # An edit done, by an agent that drops pre-edit context (Gemini, Cursor): its gotchas are listed as a read's.
    unwarned_edit: bool = False


@dataclass
class Reply:
    context: str = ""  # text for the model
    deny: str = ""  # reason to refuse the tool call (before_edit only)


def handle(ws: Workspace, event: HookEvent) -> Reply:
    handlers = {
        "session_start": session_start,
        "prompt": prompt,
        "before_edit": before_edit,
        "after_tool": after_tool,
        "session_end": session_end,
    }
    handler = handlers.get(event.kind)
    return handler(ws, event) if handler else Reply()


def session_start(ws: Workspace, event: HookEvent) -> Reply:
    from tether.intake.adopt import CORE_HEADER, core_lines
    from tether.lifecycle.housekeeping import session_start_housekeeping

    warm_up(ws)  # first, so the model loads while the rest of session start runs
    for ignored in ws.config.ignored:  # once a session, where a person reads the log
        ws.log(f"config: {ignored.message()}")
    hints = session_start_housekeeping(ws, later=[] if scan_notes(ws) else ["note scan"])
    repo = ws.repo_map()
    pinned = [
        m
        for m in ws.find(Query(pinned=True))
        if (m.scope != "session" or m.session == event.session)
        # Pinned to files that are all gone: a dead reference (`tether doctor` lists it), not an order.
        and not (m.files and repo is not None and not any(repo.exists(path) for path in m.files))
    ]
    lines: list[str] = []
    shown: list[str] = []
    budget = ws.config.integer("recall.budget")
    used = 0
    with session_state(ws.store, event.session, ws.clock()) as state:
        for memory in sorted(pinned, key=lambda m: m.updated, reverse=True):
            line = memory_line(memory, "pinned")
            if used + len(line) + 2 > budget:  # as injected: "- " and the line
                break
            used += len(line) + 3
            lines.append(line)
            shown.append(memory.id)
            state.seen[memory.id] = state.turn
    ws.store.record(
        Event(mid, "surfaced", ws.clock(), event.session, 0, {"receipt": "pinned"}) for mid in shown
    )
    # Adopted rule files (`tether rules adopt`): the agent no longer loads them, so their core comes here.
    core = core_lines(ws, skip=set(shown))
    parts: list[str] = []
    if lines:
        parts.append(block(lines, PINNED_HEADER))
    if core:
        parts.append(block(core, CORE_HEADER))
    parts.extend(hints)
    return Reply("\n\n".join(parts))


def scan_notes(ws: Workspace) -> bool:
    """Scan every note for ones edited in place (hooks otherwise trust the directories' mtimes, which
    tether's own writes keep in step). Past `HOOK_MAX_NOTES` notes, a session start in its own process
    trusts a scan any process made under `SCAN_EVERY` ago, and otherwise leaves it to the background
    (False: `tether.lifecycle.background`). The resident process's watch scans every 15 s while idle: it
    trusts its scans for `SCAN_EVERY` too, which allows for a busy stretch."""
    from tether.lifecycle.background import HOOK_MAX_NOTES, SCAN_EVERY, large

    if ws.passes_between_requests:
        ws.sync(full=True, fresh_within=SCAN_EVERY)
    elif not large(ws, HOOK_MAX_NOTES):
        ws.sync(full=True)
    elif not ws.index.scanned_within(SCAN_EVERY):
        return False  # opening the workspace synced what the directories' mtimes show
    return True


def prompt(ws: Workspace, event: HookEvent) -> Reply:
    query = sanitize(event.prompt[-PROMPT_TAIL:])
    if may_hold_secret(query):  # the detector takes tens of ms to import: only for a prompt that may need it
        from tether.model.secrets import find_secret

        query = "" if find_secret(query) else query  # the index keeps no credential, not even here
    with session_state(ws.store, event.session, ws.clock()) as state:
        state.turn += 1
        state.query = query
        touched = list(state.touched[-5:])
        found = state.in_progress
        turn = state.turn
    work = found
    if not touched and ws.root is not None:
        # Nothing touched yet (a session's first prompts): the work in progress in the tree may say what the
        # session is about, as the files it touches do later. Asked of git once a session.
        work = in_progress(ws.root) if work is None else work
    try:
        text = event.prompt[-PROMPT_TAIL:]
        # Files the prompt names are where the work goes now: before the tree's work or the last files touched.
        _, touched = take_named(text, ws.root, ws.repo_map(), touched)
        if touched or not work:
            result = ws.recaller().recall(text, touched, session=event.session, turn=turn)
        else:
            result = recall_with_work(ws.recaller(), text, work, session=event.session, turn=turn)
    except Exception:
        ws.log("recall failed; injected the fallback", exc=True)
        return Reply(FALLBACK)
    finally:
        warm_up(ws)  # the warm process may have gone idle during a long pause in the session
        build_map_if_missing(ws)
    if result.memories or work != found:
        with session_state(ws.store, event.session, ws.clock()) as state:
            state.in_progress = work
            for r in result.memories:
                state.seen[r.memory.id] = state.turn
    if not result.memories:
        if ws.store.count(Query()) == 0:
            return Reply(FALLBACK)
        return Reply()
    return Reply(block([r.line() for r in result.memories]))


def build_map_if_missing(ws: Workspace) -> None:
    """A fresh clone used only through an agent: the first prompt starts the repo map's build in the
    background (recall meanwhile goes without co-change and fan-in). One indexed read when it exists."""
    repo = ws.repo_map()
    if repo is not None and not repo.built():
        from tether.lifecycle.mapbuild import start_build

        start_build(ws)  # even a small one: a prompt hook has no business reading history


def warm_up(ws: Workspace) -> None:
    """Launch the warm embedding process when a real model is configured and none answers.

    The model loads in the background (seconds): until it is ready, prompts are recalled without the
    semantic channel. Never raises: a hook must not fail over an optimization.
    """
    if not (ws.model_via_warm_process and ws.config.flag("embed_server.enabled")) or ws.semantic_available:
        return
    try:
        from tether.embed.warm.client import start_server

        spec = ws.config.text("embedder")
        if start_server(ws.paths.index, spec, cwd=ws.root or ws.cwd, log=ws.paths.logs / "embed-server.log"):
            ws.log(f"started the warm embedding process for {spec!r}")
    except Exception:
        ws.log("could not start the warm embedding process", exc=True)


def after_tool(ws: Workspace, event: HookEvent) -> Reply:
    paths = _relative(ws, event)
    cooldown = ws.config.integer("recall.cooldown_turns")
    budget = ws.config.integer("hints.session_budget")
    with session_state(ws.store, event.session, ws.clock()) as state:
        if event.tool_kind == "memory":
            state.tools_used = True
        state.touch([p for p in paths if event.tool_kind in ("read", "edit")])
        query, quiet = state.query, state.tools_used or state.hints >= budget
    if event.tool_kind != "read" and not event.unwarned_edit:
        return Reply()
    # Ranked outside the session's write transaction: a recall must not hold up parallel hooks.
    found = {
        path: gotchas_read(ws, path, query, event.read_lines)
        if not quiet
        else Gotchas(file=gotchas_for(ws, path))
        for path in paths
    }
    per_read = ws.config.integer("hints.per_read")
    lines: list[str] = []
    shown: list[Memory] = []
    with session_state(ws.store, event.session, ws.clock()) as state:
        for path, gotchas in found.items():
            listed = 0
            more = 0
            for memory, where in [*gotchas.here, *((m, "") for m in gotchas.file)]:
                if state.recently_seen(memory.id, cooldown) or memory in shown:
                    continue
                if not memory.pinned and (state.tools_used or state.hints >= budget):
                    continue  # the agent is using memory itself, or the hint budget is spent
                if not memory.pinned and listed >= per_read:
                    more += 1  # the best few are shown; the rest are a search away
                    continue
                shown.append(memory)
                state.seen[memory.id] = state.turn
                if not memory.pinned:
                    state.hints += 1
                    listed += 1
                lines.append(gotcha_line(memory, where))
            if listed or more:  # outside the lines read: counted with the rest, never listed
                more += sum(1 for m in gotchas.elsewhere if not state.recently_seen(m.id, cooldown))
            if more:
                lines.append(more_line(more, path))
        turn = state.turn
    if shown:
        ws.store.record(
            Event(
                m.id,
                "surfaced",
                ws.clock(),
                event.session,
                turn,
                {"receipt": f"{event.tool_kind} {paths[0]}"},
            )
            for m in shown
        )
    return Reply("\n".join(lines))


def before_edit(ws: Workspace, event: HookEvent) -> Reply:
    mode = ws.config.text("guard.mode")
    if mode == "off":
        return Reply()
    paths = _relative(ws, event)
    if not any(gotchas_for(ws, path) for path in paths):
        return Reply()  # nothing to warn about: the edited files are not even read
    places = _places(ws, event)
    # Ranked outside the session's write transaction (a recall must not hold up parallel hooks), by what the
    # session's latest prompt asked.
    query = str((ws.store.session_state(event.session) or {}).get("query") or "")
    found = [gotchas_at(ws, path, places, query) for path in paths]
    per_read = ws.config.integer("hints.per_read")
    with session_state(ws.store, event.session, ws.clock()) as state:
        here: list[tuple[Memory, str]] = []  # unseen gotchas of the edited places
        whole: list[Memory] = []  # unseen gotchas of the edited files as a whole, the best few
        listed = 0  # of them, not pinned (pinned ones pierce the cap)
        more = 0  # the rest of them: listed by the next edits, best first
        elsewhere = 0
        for gotchas in found:
            here.extend(
                (m, w) for m, w in gotchas.here if m.id not in state.seen and all(m != o for o, _ in here)
            )
            for m in gotchas.file:
                if m.id in state.seen or m in whole or any(m == o for o, _ in here):
                    continue
                if not m.pinned and listed >= per_read:
                    more += 1
                    continue
                whole.append(m)
                if not m.pinned:
                    listed += 1
            elsewhere += sum(1 for m in gotchas.elsewhere if m.id not in state.seen)
        unseen = [m for m, _ in here] + whole
        if not unseen:
            return Reply()
        strong = any(m.pinned or m.priority == "high" for m in unseen)
        deny = mode == "deny-once" or (mode == "auto" and strong)
        # Deny-once pauses once per file for its file-wide gotchas, and once for each place's own.
        first_edit = not any(path in state.denied for path in paths) or bool(here)
        if not (deny and first_edit) and not event.shows_context:
            # The agent would drop this context: nothing was shown, so nothing is marked seen or surfaced
            # (the gotchas arrive with the edit's after-tool hook instead: `HookEvent.unwarned_edit`).
            return Reply()
        for memory in unseen:
            state.seen[memory.id] = state.turn
        turn = state.turn
        if deny and first_edit:
            state.denied.extend(p for p in paths if p not in state.denied)
    line = places[0].lines[0] if places and places[0].lines and places[0].path == paths[0] else None
    where = f"{paths[0]}:{line}" if line else paths[0]
    ws.store.record(
        Event(m.id, "surfaced", ws.clock(), event.session, turn, {"receipt": f"edit {where}"}) for m in unseen
    )
    lines = [gotcha_line(m, w) for m, w in here]
    lines += [gotcha_line(m) for m in whole]
    if more:
        lines.append(
            more_line(more, paths[0]) if len(paths) == 1 else f"· (+{more} more gotchas on these files)"
        )
    if elsewhere:
        lines.append(
            f"· (+{elsewhere} more gotcha{'s' if elsewhere > 1 else ''} anchored elsewhere in "
            f"{paths[0] if len(paths) == 1 else 'these files'}: shown when an edit lands there)"
        )
    text = "\n".join(lines)
    if deny and first_edit:
        return Reply(
            # Claude Code tells its model that a denied call means "the user declined: adjust, don't retry
            # verbatim"; say plainly that this is a one-time pause and that retrying unchanged is fine.
            deny=f"tether: {paths[0]} has known gotchas{f' at line {line}' if line else ''}:\n{text}\n"
            "This is a one-time pause from project memory, not a refusal: if the edit already respects them, "
            "issue the same edit again (it will go through); otherwise adjust it first."
        )
    return Reply(context=text)


def session_end(ws: Workspace, event: HookEvent) -> Reply:
    from tether.lifecycle.housekeeping import end_session

    end_session(ws, event.session, event.transcript)
    return Reply()


def _places(ws: Workspace, event: HookEvent) -> list[Location]:
    """Where the edits land, repo-relative, located in the files as they are on disk."""
    from tether.anchors.edits import locations
    from tether.anchors.locations import Location
    from tether.anchors.resolve import FileView

    if ws.root is None or not event.edits:
        return []
    root = ws.root
    relative: dict[str, str] = {}
    for edit in event.edits:
        try:
            relative[edit.path] = normalize_path(edit.path.replace("\\", "/"), root, event.cwd).rstrip("/")
        except ValidationError:
            continue

    def read(path: str) -> str | None:
        view = FileView.read(root, relative[path])
        return "\n".join(view.lines) if view.exists else None

    found = locations([e for e in event.edits if e.path in relative], read)
    return [Location(relative[p.path], p.lines, p.symbol, p.text) for p in found]


def _relative(ws: Workspace, event: HookEvent) -> list[str]:
    out: list[str] = []
    for raw in event.paths:
        try:
            path = normalize_path(raw.replace("\\", "/"), ws.root, event.cwd)
        except ValidationError:
            continue
        if path not in out:
            out.append(path.rstrip("/"))
    return out
