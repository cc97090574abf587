"""Edits of JSON config files (settings.json, hooks.json, mcp.json): add tether's entries, take them out again.

Every other key, hook and server is kept in place and in order. The file is re-serialised with the indent it
already had; uninstall gives back the original bytes when the content is the original's (see `files.py`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tether.adapters.install import jsonc
from tether.adapters.install.specs import (
    SERVER_NAME,
    HookSpec,
    hook_command,
    is_tether_hook,
    is_tether_server,
)


class Problem(Exception):
    """What is wrong with a config file, worded to follow its path (`files.py` adds the path)."""


def _kind(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def load(text: str | None, *, comments: bool = False) -> dict[str, Any]:
    """Parse a JSON config (with `comments`, JSONC); a missing or whitespace-only file is an empty object."""
    if text is None or not text.strip():
        return {}
    try:
        data = jsonc.loads(text, comments=comments)
    except jsonc.Invalid as exc:
        kind = "JSON (comments allowed)" if comments else "JSON"
        raise Problem(f"is not valid {kind} ({exc})") from None
    if not isinstance(data, dict):
        raise Problem(f"should hold a JSON object at the top level, found {_kind(data)}")
    return data


_INDENT = re.compile(r"\n([ \t]+)\S")


def dump(data: dict[str, Any], like: str | None, *, comments: bool = False) -> str:
    """`like` (the file's current text) changed to hold `data`: only what changed is rewritten (`jsonc`).

    A new file gets 2-space indents. A file the in-place rewrite cannot handle is re-serialised with its
    indent and final newline, unless it has comments, which would be lost: then it is refused.
    """
    if like and like.strip():
        try:
            return jsonc.rewrite(like, data, comments=comments)
        except jsonc.CannotEdit:
            if comments and jsonc.blank_comments(like) != like:
                raise Problem(
                    "could not be edited without losing its comments; add tether's entries by hand "
                    "(`tether install --dry-run` shows them)"
                ) from None
    indent: str | int = 2
    if like:
        match = _INDENT.search(like)
        if match:
            found = match.group(1)
            indent = "\t" if found.startswith("\t") else len(found)
    text = json.dumps(data, indent=indent, ensure_ascii=False)
    newline = not like or like.endswith("\n")
    return text + "\n" if newline else text


class Part(Protocol):
    """One thing tether owns inside a JSON file (its hooks, or its MCP server)."""

    def apply(self, data: dict[str, Any]) -> None: ...

    def remove(self, data: dict[str, Any], keep: bool) -> None:
        """Take tether's entries out; with `keep`, leave emptied containers that `apply` is about to refill."""
        ...


def _hooks_table(data: dict[str, Any], create: bool) -> dict[str, Any] | None:
    hooks = data.get("hooks")
    if hooks is None:
        if not create:
            return None
        hooks = data["hooks"] = {}
    if not isinstance(hooks, dict):
        raise Problem(f"`hooks` should be an object, found {_kind(hooks)}")
    return hooks


def _event_list(hooks: dict[str, Any], event: str) -> list[Any]:
    entries = hooks[event]
    if not isinstance(entries, list):
        raise Problem(f"`hooks.{event}` should be a list, found {_kind(entries)}")
    return entries


@dataclass
class _Hooks:
    """tether's hooks in `hooks.<event> = [entry, ...]`; subclasses say what one entry looks like."""

    agent: str
    specs: Sequence[HookSpec]
    command: Sequence[str] | None  # None: the committed guard (`guard.hook_command`)

    def entry(self, spec: HookSpec) -> dict[str, Any]:
        raise NotImplementedError

    def strip(self, event: str, entries: list[Any]) -> list[Any]:
        """The entries of `hooks.<event>` to keep once tether's handlers are taken out."""
        raise NotImplementedError

    def apply(self, data: dict[str, Any]) -> None:
        hooks = _hooks_table(data, create=True)
        assert hooks is not None
        for spec in self.specs:
            hooks.setdefault(spec.event, [])
            _event_list(hooks, spec.event).append(self.entry(spec))

    def remove(self, data: dict[str, Any], keep: bool) -> None:
        hooks = _hooks_table(data, create=False)
        if hooks is None:
            return
        ours = {spec.event for spec in self.specs} if keep else set()
        removed = False
        for event in list(hooks):
            entries = _event_list(hooks, event)
            kept = self.strip(event, entries)
            if len(kept) != len(entries):
                removed = True
                entries[:] = kept
                if not kept and event not in ours:
                    del hooks[event]
        if removed and not hooks and not keep:
            del data["hooks"]


@dataclass
class NestedHooks(_Hooks):
    """Claude Code, Codex and Gemini: `hooks.<Event> = [{matcher?, hooks: [{type, command, timeout}]}]`."""

    named: bool = False  # Gemini handlers carry a `name` (shown in /hooks, used to disable one)

    def entry(self, spec: HookSpec) -> dict[str, Any]:
        handler: dict[str, Any] = {}
        if self.named:
            handler["name"] = f"tether-{spec.event}"
        handler.update(
            type="command", command=hook_command(self.command, self.agent, spec.event), timeout=spec.timeout
        )
        group: dict[str, Any] = {} if spec.matcher is None else {"matcher": spec.matcher}
        group["hooks"] = [handler]
        return group

    def strip(self, event: str, entries: list[Any]) -> list[Any]:
        kept: list[Any] = []
        for i, group in enumerate(entries):
            if not isinstance(group, dict):
                raise Problem(f"`hooks.{event}[{i}]` should be an object, found {_kind(group)}")
            handlers = group.get("hooks")
            if handlers is None:
                kept.append(group)
                continue
            if not isinstance(handlers, list):
                raise Problem(f"`hooks.{event}[{i}].hooks` should be a list, found {_kind(handlers)}")
            others = [h for h in handlers if not is_tether_hook(h)]
            if len(others) == len(handlers):
                kept.append(group)
            elif others:  # someone put their own handler into tether's group: keep theirs
                group["hooks"] = others
                kept.append(group)
        return kept


@dataclass
class FlatHooks(_Hooks):
    """Cursor: `{"version": 1, "hooks": {"<event>": [{command, matcher?, timeout}]}}`."""

    def entry(self, spec: HookSpec) -> dict[str, Any]:
        entry: dict[str, Any] = {"command": hook_command(self.command, self.agent, spec.event)}
        if spec.matcher is not None:
            entry["matcher"] = spec.matcher
        entry["timeout"] = spec.timeout
        return entry

    def strip(self, event: str, entries: list[Any]) -> list[Any]:
        return [e for e in entries if not is_tether_hook(e)]

    def apply(self, data: dict[str, Any]) -> None:
        if "version" not in data:  # Cursor requires `"version": 1` in hooks files; put it first
            rest = dict(data)
            data.clear()
            data["version"] = 1
            data.update(rest)
        super().apply(data)


@dataclass
class McpServer:
    """`mcpServers.tether`. An existing tether entry keeps the user's extra keys (env, timeout...)."""

    entry: dict[str, Any]
    container: str = "mcpServers"

    def _servers(self, data: dict[str, Any], create: bool) -> dict[str, Any] | None:
        servers = data.get(self.container)
        if servers is None:
            if not create:
                return None
            servers = data[self.container] = {}
        if not isinstance(servers, dict):
            raise Problem(f"`{self.container}` should be an object, found {_kind(servers)}")
        return servers

    def apply(self, data: dict[str, Any]) -> None:
        servers = self._servers(data, create=True)
        assert servers is not None
        existing = servers.get(SERVER_NAME)
        if existing is None:
            servers[SERVER_NAME] = dict(self.entry)
        elif is_tether_server(existing):
            existing.update(self.entry)
        else:
            shown = json.dumps(existing, ensure_ascii=False)[:200]
            raise Problem(
                f"already has an MCP server named {SERVER_NAME!r} that does not run `tether mcp` ({shown}); "
                "rename or remove it, then install again"
            )

    def remove(self, data: dict[str, Any], keep: bool) -> None:
        if keep:  # about to apply: `apply` updates the entry where it is, keeping its place and extra keys
            return
        servers = self._servers(data, create=False)
        if servers is None or not is_tether_server(servers.get(SERVER_NAME)):
            return
        del servers[SERVER_NAME]
        if not servers:
            del data[self.container]


def _object(data: dict[str, Any], key: str, where: str, create: bool) -> dict[str, Any] | None:
    value = data.get(key)
    if value is None:
        if not create:
            return None
        value = data[key] = {}
    if not isinstance(value, dict):
        raise Problem(f"`{where}` should be an object, found {_kind(value)}")
    return value


@dataclass
class AllowTools:
    """A list of allowed tool names among the user's own, in place: tether's MCP tools.

    Claude Code's `permissions.allow` (the default `where`), Gemini CLI's `tools.allowed`.
    """

    tools: Sequence[str]  # the names this install allows
    ours: frozenset[str]  # every name tether may have put there
    where: tuple[str, str] = ("permissions", "allow")

    def _allow(self, data: dict[str, Any], create: bool) -> list[Any] | None:
        table, key = self.where
        parent = _object(data, table, table, create)
        if parent is None:
            return None
        allow = parent.get(key)
        if allow is None:
            if not create:
                return None
            allow = parent[key] = []
        if not isinstance(allow, list):
            raise Problem(f"`{table}.{key}` should be a list, found {_kind(allow)}")
        return allow

    def apply(self, data: dict[str, Any]) -> None:
        allow = self._allow(data, create=bool(self.tools))
        if allow is None:
            return
        kept = [rule for rule in allow if rule not in self.ours or rule in self.tools]
        allow[:] = kept + [tool for tool in self.tools if tool not in kept]

    def remove(self, data: dict[str, Any], keep: bool) -> None:
        if keep:  # `apply` reconciles in place, keeping the order of what stays
            return
        allow = self._allow(data, create=False)
        if allow is None or not any(rule in self.ours for rule in allow):
            return
        allow[:] = [rule for rule in allow if rule not in self.ours]
        if not allow:
            table, key = self.where
            del data[table][key]
            if not data[table]:
                del data[table]


@dataclass
class EnvVar:
    """One variable in a settings file's `env` object (Claude Code applies it to hooks and MCP servers)."""

    name: str
    value: str | None  # None: the variable should not be set

    def apply(self, data: dict[str, Any]) -> None:
        if self.value is not None:
            env = _object(data, "env", "env", create=True)
            assert env is not None
            env[self.name] = self.value  # in place when it is there already

    def remove(self, data: dict[str, Any], keep: bool) -> None:
        if keep and self.value is not None:
            return
        env = _object(data, "env", "env", create=False)
        if env is None or self.name not in env:
            return
        del env[self.name]
        if not env:
            del data["env"]


def _pruned(data: dict[str, Any], containers: Sequence[str]) -> dict[str, Any]:
    """`data` without empty hook lists and empty containers: what tether may leave behind or take away."""
    out = dict(data)
    for key in containers:
        value = out.get(key)
        if isinstance(value, dict):
            value = {k: v for k, v in value.items() if v != []}
            if value:
                out[key] = value
            else:
                del out[key]
    return out


@dataclass
class JsonEditor:
    """The parts tether owns in one JSON file. `skeleton` is what a file tether created holds once emptied."""

    parts: Sequence[Part]
    skeleton: dict[str, Any] = field(default_factory=dict)
    containers: Sequence[str] = ("hooks", "mcpServers", "permissions", "env")
    comments: bool = False  # JSONC: Gemini CLI reads settings.json with `//` and `/* */` comments

    def parse(self, text: str | None) -> dict[str, Any]:
        return load(text, comments=self.comments)

    def install(self, text: str | None) -> str:
        data = self.parse(text)
        before = json.dumps(data)
        for part in self.parts:
            part.remove(data, keep=True)
        for part in self.parts:
            part.apply(data)
        if text is not None and json.dumps(data) == before:
            return text
        return dump(data, text, comments=self.comments)

    def uninstall(self, text: str) -> str:
        data = self.parse(text)
        before = json.dumps(data)
        for part in self.parts:
            part.remove(data, keep=False)
        if json.dumps(data) == before:
            return text
        return dump(data, text, comments=self.comments)

    def equivalent(self, a: str, b: str) -> bool:
        try:
            return _pruned(self.parse(a), self.containers) == _pruned(self.parse(b), self.containers)
        except Problem:
            return False

    def is_blank(self, text: str) -> bool:
        return _pruned(self.parse(text), self.containers) in ({}, self.skeleton)
