"""Edits of Codex's `config.toml` with tomlkit: tether owns `[mcp_servers.tether]` and nothing else.

tomlkit keeps every comment, blank line and spelling of the rest of the file. `tomllib` parses the result of
each edit, and the edit is refused unless it is exactly the old content plus (or minus) tether's keys.
"""

from __future__ import annotations

import copy
import re
import tomllib
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any

from tether.adapters.install.jsonconf import Problem
from tether.adapters.install.specs import SERVER_NAME, is_tether_server


def parse(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise Problem(f"is not valid TOML ({exc})") from None


def _servers(data: dict[str, Any]) -> dict[str, Any]:
    servers = data.get("mcp_servers", {})
    if not isinstance(servers, dict):
        raise Problem("`mcp_servers` should be a table")
    return servers


def _without_empty_servers(data: dict[str, Any]) -> dict[str, Any]:
    if data.get("mcp_servers") == {}:
        data = dict(data)
        del data["mcp_servers"]
    return data


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _line_endings(new: str, like: str) -> str:
    """tomlkit writes the lines it adds with `\\n`: give them the file's own line ending."""
    return re.sub(r"(?<!\r)\n", "\r\n", new) if _newline(like) == "\r\n" else new


def _end_like(new: str, old: str) -> str:
    """No more blank lines at the end of the file than it had (tomlkit leaves the separator tether added)."""
    trail = len(old) - len(old.rstrip("\r\n"))
    if len(new) - len(new.rstrip("\r\n")) > max(trail, 1) or (not old.strip() and not new.strip()):
        stripped = new.rstrip("\r\n")
        return stripped + _newline(old or new) if stripped else ""
    return new


@dataclass
class TomlMcpEditor:
    """Codex `config.toml`: add, update or remove `[mcp_servers.tether]`."""

    entry: dict[str, Any]

    def parse(self, text: str | None) -> dict[str, Any]:
        return parse(text)

    def install(self, text: str | None) -> str:
        import tomlkit
        from tomlkit.items import InlineTable, Table

        text = text or ""
        data = parse(text)
        existing = _servers(data).get(SERVER_NAME)
        if existing is not None and not is_tether_server(existing):
            raise Problem(
                f"already has `[mcp_servers.{SERVER_NAME}]` that does not run `tether mcp`; "
                "rename or remove it, then install again"
            )
        if text and not text.endswith("\n"):
            text += _newline(text)  # tomlkit would put the new table right after the last line
        doc = tomlkit.parse(text)
        if "mcp_servers" not in doc:
            doc["mcp_servers"] = tomlkit.table(is_super_table=True)
        servers = doc["mcp_servers"]  # a Table, an InlineTable, or tomlkit's proxy of a table split in parts
        assert isinstance(servers, MutableMapping)
        if SERVER_NAME in servers:
            table = servers[SERVER_NAME]
            assert isinstance(table, MutableMapping)
            for key, value in self._updates(existing).items():
                table[key] = value  # in place: the user's other keys, comments and order stay
        else:
            new: Table | InlineTable = (
                tomlkit.inline_table() if isinstance(servers, InlineTable) else tomlkit.table()
            )
            new.update(self.entry)
            if isinstance(new, Table):
                new.add(tomlkit.nl())  # a blank line before whatever table follows
            servers[SERVER_NAME] = new
        out = _end_like(_line_endings(tomlkit.dumps(doc), text), text)
        expected = copy.deepcopy(data)
        expected.setdefault("mcp_servers", {}).setdefault(SERVER_NAME, {}).update(self._updates(existing))
        self._verify(out, expected)
        return out

    def _updates(self, existing: dict[str, Any] | None) -> dict[str, Any]:
        """What to set: the command always; an option (`required`, a timeout) only where the user set none."""
        if existing is None:
            return dict(self.entry)
        return {k: v for k, v in self.entry.items() if k in ("command", "args") or k not in existing}

    def uninstall(self, text: str) -> str:
        import tomlkit
        from tomlkit.items import Table

        data = parse(text)
        if not is_tether_server(_servers(data).get(SERVER_NAME)):
            return text
        doc = tomlkit.parse(text)
        servers = doc["mcp_servers"]
        assert isinstance(servers, MutableMapping)
        kept = _trailing_comments(servers[SERVER_NAME])
        names = list(servers)
        following = names[names.index(SERVER_NAME) + 1 :]
        del servers[SERVER_NAME]
        if kept and following:
            # Comments after tether's last key introduce the table below it (`# other servers below`):
            # they stay, in front of that table's header.
            nxt = servers[following[0]]
            if isinstance(nxt, Table):
                nxt.trivia.indent = kept + nxt.trivia.indent
        if isinstance(servers, Table) and servers.is_super_table() and not servers:
            del doc["mcp_servers"]  # the implicit `mcp_servers` tether's table made
        out = _end_like(tomlkit.dumps(doc), text)
        expected = copy.deepcopy(data)
        del expected["mcp_servers"][SERVER_NAME]
        self._verify(out, _without_empty_servers(expected), prune=True)
        return out

    @staticmethod
    def _verify(new: str, expected: dict[str, Any], prune: bool = False) -> None:
        try:
            got = tomllib.loads(new)
        except tomllib.TOMLDecodeError:
            got = None
        if got is not None and prune:
            got = _without_empty_servers(got)
        if got != expected:
            raise Problem(
                f"could not be edited safely: changing `[mcp_servers.{SERVER_NAME}]` would alter other "
                "settings; edit the file by hand"
            )

    def equivalent(self, a: str, b: str) -> bool:
        try:
            return _without_empty_servers(parse(a)) == _without_empty_servers(parse(b))
        except Problem:
            return False

    def is_blank(self, text: str) -> bool:
        return not text.strip()


def _trailing_comments(table: Any) -> str:
    """The comment lines after the last key of `table` (or of its last sub-table), as text."""
    from tomlkit.items import Comment, Table, Whitespace

    body = table.value.body if isinstance(table, Table) else []
    while body and isinstance(body[-1][1], Table):  # [mcp_servers.tether.env] and the like
        body = body[-1][1].value.body
    lines: list[str] = []
    for key, item in reversed(body):
        if key is None and isinstance(item, Comment | Whitespace):
            lines.append(item.as_string())
            continue
        break
    text = "".join(reversed(lines))
    return text.lstrip("\r\n") if "#" in text else ""
