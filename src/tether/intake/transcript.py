"""Reading Claude Code transcripts (JSONL) incrementally, and boiling them down to a digest for an LLM.

The transcript format is not a stable API (agent-integrations §1.9), so every field is optional here:
unknown entry types are ignored, lines that are not JSON are skipped and counted, and a last line that is
still being written (no newline yet) is left for the next read.

>>> chunk = read_transcript(Path("session.jsonl"), 0)  # doctest: +SKIP
>>> digest = build_digest(chunk.events, max_chars=12_000)  # doctest: +SKIP
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tether.model.secrets import redact
from tether.model.text import one_line

__all__ = ["Event", "TranscriptChunk", "build_digest", "read_transcript"]

# Per-event caps: a pasted log or a long plan must not crowd out the rest of the session. User prompts get
# the most room because that is where preferences and corrections are stated.
USER_MAX = 1_200
ASSISTANT_MAX = 700
TOOL_ERROR_MAX = 300
# About 3k tokens: enough for the gist of a session, cheap enough to run at every session end.
DIGEST_MAX = 12_000

# Tools whose input names the file they act on.
_FILE_KEYS = ("file_path", "notebook_path", "path")
_FILE_TOOLS = {"Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "Glob", "Grep", "LS"}
_EDIT_TOOLS = {"Write", "Edit", "MultiEdit", "NotebookEdit"}
# Text the harness (or tether itself) injected: learning from it would feed memories back as new ones.
_INJECTED = re.compile(
    r"<system-reminder>.*?</system-reminder>|<command-[a-z-]+>.*?</command-[a-z-]+>"
    r"|<local-command-stdout>.*?</local-command-stdout>",
    re.DOTALL,
)
_OWN_BLOCK = "=== Project memory (auto-recalled) ==="


@dataclass(frozen=True)
class Event:
    """One thing that happened: a user prompt, assistant text, a tool use on a file, or a tool error."""

    kind: str  # "user" | "assistant" | "tool" | "tool_error"
    text: str
    tool: str = ""
    path: str = ""


@dataclass
class TranscriptChunk:
    """What one incremental read found between `start` and `end` (byte offsets)."""

    path: Path
    start: int
    end: int
    events: list[Event] = field(default_factory=list)
    lines: int = 0
    skipped: int = 0
    session_id: str | None = None
    cwd: str | None = None

    @property
    def files(self) -> list[str]:
        """Paths the session's tools touched, edited ones first, each once."""
        edited = [e.path for e in self.events if e.kind == "tool" and e.tool in _EDIT_TOOLS and e.path]
        other = [e.path for e in self.events if e.kind == "tool" and e.path]
        return list(dict.fromkeys(edited + other))


def read_transcript(path: Path, offset: int, *, log: Callable[[str], None] | None = None) -> TranscriptChunk:
    """Read complete lines of `path` from byte `offset`; `chunk.end` is where the next read starts.

    A last line without its newline is not consumed: Claude Code may still be writing it. Lines that are
    not JSON objects are skipped, counted in `chunk.skipped` and reported through `log`.
    """
    chunk = TranscriptChunk(path=path, start=offset, end=offset)
    with path.open("rb") as handle:
        handle.seek(offset)
        position = offset
        while True:
            raw = handle.readline()
            if not raw or not raw.endswith(b"\n"):
                break  # end of file, or a partial line still being written
            line_start, position = position, position + len(raw)
            chunk.end = position
            if not raw.strip():
                continue
            chunk.lines += 1
            try:
                entry = json.loads(raw)
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                entry, problem = None, str(exc)
            else:
                problem = "not a JSON object"
            if not isinstance(entry, dict):
                chunk.skipped += 1
                if log is not None:
                    log(f"{path}: skipped the line at byte {line_start}: {problem}")
                continue
            _take_entry(chunk, entry)
    return chunk


def _take_entry(chunk: TranscriptChunk, entry: dict[str, Any]) -> None:
    kind = entry.get("type")
    if kind not in ("user", "assistant"):
        return  # system, summary, attachment, progress, snapshots, and whatever comes next
    if isinstance(entry.get("sessionId"), str):
        chunk.session_id = entry["sessionId"]
    if isinstance(entry.get("cwd"), str):
        chunk.cwd = entry["cwd"]
    if entry.get("isMeta"):
        return
    message = entry.get("message")
    if not isinstance(message, dict):
        return
    content = message.get("content")
    blocks: list[Any] = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
    if not isinstance(blocks, list):
        return
    for block in blocks:
        if isinstance(block, dict):
            event = _event(kind, block)
            if event is not None:
                chunk.events.append(event)


def _event(kind: str, block: dict[str, Any]) -> Event | None:
    """The event a content block records, its text redacted (DESIGN §8).

    Redacted here, before any text is cut to size: a token cut in half by a length cap no longer looks
    like a token, and half a token is still half a secret.
    """
    block_type = block.get("type")
    if block_type == "text" and isinstance(block.get("text"), str):
        text = _clean(block["text"])
        if not text or _OWN_BLOCK in text:
            return None
        return Event(kind, redact(text))
    if block_type == "tool_use" and kind == "assistant":
        name = str(block.get("name", ""))
        tool_input = block.get("input")
        path = ""
        if isinstance(tool_input, dict) and name in _FILE_TOOLS:
            for key in _FILE_KEYS:
                if isinstance(tool_input.get(key), str):
                    path = tool_input[key].replace("\\", "/")
                    break
        if isinstance(tool_input, dict) and name in ("Bash", "PowerShell"):
            command = tool_input.get("command")
            return Event("tool", one_line(redact(str(command or "")))[:200], tool=name)
        return Event("tool", "", tool=name, path=path)
    if block_type == "tool_result" and block.get("is_error"):
        # Failed commands and edits are where gotchas come from; successful output is mostly file text.
        text = _flatten(block.get("content"))
        return Event("tool_error", one_line(redact(text))[:TOOL_ERROR_MAX]) if text else None
    return None  # thinking, images, successful tool results


def _flatten(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


def _clean(text: str) -> str:
    return _INJECTED.sub("", text).strip()


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    # Keep the head and the tail: a prompt's question is often at its end, after pasted context.
    head = limit * 2 // 3
    return f"{text[:head]} […] {text[-(limit - head - 5) :]}"


def _render(event: Event, root: str | None) -> str:
    if event.kind == "user":
        return "USER: " + _shorten(event.text, USER_MAX)
    if event.kind == "assistant":
        return "ASSISTANT: " + _shorten(event.text, ASSISTANT_MAX)
    if event.kind == "tool_error":
        return "TOOL ERROR: " + event.text
    target = _relative(event.path, root) if event.path else event.text
    return f"[{event.tool} {target}]".replace(" ]", "]")


def _relative(path: str, root: str | None) -> str:
    if root and path.startswith(root.rstrip("/") + "/"):
        return path[len(root.rstrip("/")) + 1 :]
    return path


def build_digest(events: list[Event], *, max_chars: int = DIGEST_MAX, root: str | None = None) -> str:
    """A compact, chronological account of `events` in at most `max_chars` characters.

    When the session is too long, the most recent events are kept, and a quarter of the budget is held
    back for older user prompts: a preference stated at the start of a long session is worth more than the
    middle of its tool calls. Paths under `root` are shown relative to it.
    """
    files = list(dict.fromkeys(_relative(e.path, root) for e in events if e.kind == "tool" and e.path))
    header = ""
    if files:
        header = "Files touched: " + ", ".join(files[:40]) + (" …" if len(files) > 40 else "") + "\n\n"
    budget = max_chars - len(header)
    lines = [_render(e, root) for e in events]
    # Consecutive identical tool lines ("[Read a.py]" five times) say nothing new.
    keep: set[int] = set()
    used = 0
    reserve = budget // 4
    for index in range(len(lines) - 1, -1, -1):
        if index + 1 < len(lines) and lines[index] == lines[index + 1] and events[index].kind == "tool":
            continue
        cost = len(lines[index]) + 1
        if used + cost > budget - reserve:
            break
        keep.add(index)
        used += cost
    for index in range(len(lines) - 1, -1, -1):
        if index in keep or events[index].kind != "user":
            continue
        cost = len(lines[index]) + 1
        if used + cost > budget:
            continue
        keep.add(index)
        used += cost
    digest = header + _assemble(lines, keep)
    # The omission markers cost a little; drop the oldest kept lines until it all fits.
    while len(digest) > max_chars and keep:
        keep.discard(min(keep))
        digest = header + _assemble(lines, keep)
    return digest[:max_chars]


def _assemble(lines: list[str], keep: set[int]) -> str:
    body: list[str] = []
    omitted = 0
    for index, line in enumerate(lines):
        if index in keep:
            if omitted:
                body.append(f"[… {omitted} earlier entries omitted …]")
                omitted = 0
            body.append(line)
        else:
            omitted += 1
    if omitted:
        body.append(f"[… {omitted} entries omitted …]")
    return "\n".join(body)
