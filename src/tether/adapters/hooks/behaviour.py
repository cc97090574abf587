"""What tether does at each point of an agent session, independent of which agent it is.

Agent adapters (`tether.adapters.hooks.agents`) turn each agent's JSON into a `HookEvent` and a `Reply` back into
that agent's JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tether.adapters.hooks.session import session_state
from tether.errors import ValidationError
from tether.model.memory import Memory, normalize_path
from tether.recall.block import FALLBACK, PINNED_HEADER, block
from tether.recall.channels import refs_naming
from tether.store.base import Event, Query
from tether.workspace import Workspace

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
    from tether.lifecycle.housekeeping import session_start_housekeeping

    warm_up(ws)  # first, so the model loads while the rest of session start runs
    ws.sync(full=True)  # notes edited in place since the last command (hooks otherwise trust dir mtimes)
    hints = session_start_housekeeping(ws)
    pinned = [m for m in ws.find(Query(pinned=True)) if m.scope != "session" or m.session == event.session]
    lines: list[str] = []
    shown: list[str] = []
    budget = ws.config.integer("recall.budget")
    used = 0
    with session_state(ws.store, event.session, ws.clock()) as state:
        for memory in sorted(pinned, key=lambda m: m.updated, reverse=True):
            line = f"★ [{memory.category}] {memory.id} — {memory.summary} (via pinned)"
            if used + len(line) + 2 > budget:  # as injected: "- " and the line
                break
            used += len(line) + 3
            lines.append(line)
            shown.append(memory.id)
            state.seen[memory.id] = state.turn
    ws.store.record(
        Event(mid, "surfaced", ws.clock(), event.session, 0, {"receipt": "pinned"}) for mid in shown
    )
    parts: list[str] = []
    if lines:
        parts.append(block(lines, PINNED_HEADER))
    parts.extend(hints)
    return Reply("\n\n".join(parts))


def prompt(ws: Workspace, event: HookEvent) -> Reply:
    with session_state(ws.store, event.session, ws.clock()) as state:
        state.turn += 1
        touched = list(state.touched[-5:])
        turn = state.turn
    try:
        result = ws.recaller().recall(event.prompt, touched, session=event.session, turn=turn)
    except Exception:
        ws.log("recall failed; injected the fallback", exc=True)
        return Reply(FALLBACK)
    finally:
        warm_up(ws)  # the warm process may have gone idle during a long pause in the session
        build_map_if_missing(ws)
    if not result.memories:
        if ws.store.count(Query()) == 0:
            return Reply(FALLBACK)
        return Reply()
    with session_state(ws.store, event.session, ws.clock()) as state:
        for r in result.memories:
            state.seen[r.memory.id] = state.turn
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


def gotchas_for(ws: Workspace, path: str) -> list[Memory]:
    """Active gotchas naming `path` or a directory containing it, pinned and high priority first."""
    ids = {mid for mids in ws.store.owners(refs_naming(path)).values() for mid in mids}
    if not ids:
        return []
    found = ws.find(Query(ids=tuple(sorted(ids)), category="gotcha"))
    return sorted(found, key=lambda m: (not m.pinned, m.priority != "high", m.created))


def gotcha_line(memory: Memory) -> str:
    star = "★ " if memory.pinned or memory.priority == "high" else ""
    return f'· {star}gotcha "{memory.summary}" [{memory.id}] — review before editing'


def after_tool(ws: Workspace, event: HookEvent) -> Reply:
    paths = _relative(ws, event)
    lines: list[str] = []
    cooldown = ws.config.integer("recall.cooldown_turns")
    budget = ws.config.integer("hints.session_budget")
    shown: list[Memory] = []
    with session_state(ws.store, event.session, ws.clock()) as state:
        if event.tool_kind == "memory":
            state.tools_used = True
        state.touch([p for p in paths if event.tool_kind in ("read", "edit")])
        if event.tool_kind == "read":
            for path in paths:
                for memory in gotchas_for(ws, path):
                    if state.recently_seen(memory.id, cooldown) or memory in shown:
                        continue
                    if not memory.pinned and (state.tools_used or state.hints >= budget):
                        continue  # the agent is using memory itself, or the hint budget is spent
                    shown.append(memory)
                    state.seen[memory.id] = state.turn
                    if not memory.pinned:
                        state.hints += 1
                    lines.append(gotcha_line(memory))
        turn = state.turn
    if shown:
        ws.store.record(
            Event(m.id, "surfaced", ws.clock(), event.session, turn, {"receipt": f"read {paths[0]}"})
            for m in shown
        )
    return Reply("\n".join(lines))


def before_edit(ws: Workspace, event: HookEvent) -> Reply:
    mode = ws.config.text("guard.mode")
    if mode == "off":
        return Reply()
    paths = _relative(ws, event)
    with session_state(ws.store, event.session, ws.clock()) as state:
        unseen: list[Memory] = []
        for path in paths:
            unseen.extend(m for m in gotchas_for(ws, path) if m.id not in state.seen and m not in unseen)
        if not unseen:
            return Reply()
        strong = any(m.pinned or m.priority == "high" for m in unseen)
        deny = mode == "deny-once" or (mode == "auto" and strong)
        first_edit = not any(path in state.denied for path in paths)
        for memory in unseen:
            state.seen[memory.id] = state.turn
        turn = state.turn
        if deny and first_edit:
            state.denied.extend(paths)
    ws.store.record(
        Event(m.id, "surfaced", ws.clock(), event.session, turn, {"receipt": f"edit {paths[0]}"})
        for m in unseen
    )
    lines = "\n".join(gotcha_line(m) for m in unseen)
    if deny and first_edit:
        return Reply(
            # Claude Code tells its model that a denied call means "the user declined: adjust, don't retry
            # verbatim"; say plainly that this is a one-time pause and that retrying unchanged is fine.
            deny=f"tether: {paths[0]} has known gotchas:\n{lines}\n"
            "This is a one-time pause from project memory, not a refusal: if the edit already respects them, "
            "issue the same edit again (it will go through); otherwise adjust it first."
        )
    return Reply(context=lines)


def session_end(ws: Workspace, event: HookEvent) -> Reply:
    from tether.lifecycle.housekeeping import end_session

    end_session(ws, event.session, event.transcript)
    return Reply()


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
