"""Memories proposed from the warning comments already in the code (`tether anchors scan`), each anchored to
its lines, for the user to accept one by one: nothing is written by a scan.

A warning comment is a comment block (consecutive line comments alone on their lines, or one block comment)
holding a tag (`NOTE:`, `WARNING:`, `HACK:`, `SAFETY:`, `IMPORTANT:`, `FIXME:`, `XXX:`, `CAUTION:`, Rust's
`# Safety`) or an imperative ("do not", "don't", "must", "never", "make sure", "careful", "beware").
Comments are read from the syntax tree (tree-sitter), so a `//` inside a string is never one. Left out:
license headers, commented-out code, generated and vendored files.

    for proposal in scan(root, ["src/"]):
        print(proposal.id, proposal.anchor.spec(), proposal.summary)
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tether.anchors.resolve import FileView, make
from tether.anchors.symbols import language_of, parser_for
from tether.errors import ValidationError
from tether.model.anchor import Anchor
from tether.model.memory import SUMMARY_MAX

_TAG_RE = re.compile(
    r"(?:^|\s)(?:NOTE|NB|WARNING|WARN|HACK|SAFETY|IMPORTANT|CAUTION|FIXME|XXX)(?::|\(|\s*$)|"
    r"(?:^|\s)(?:Note|Warning|Safety|Important|Caution):|^#\s*Safety\b",
    re.M,
)
_WORDS_RE = re.compile(r"\b(?:do not|don['’]t|must(?:n['’]t)?|never|make sure|careful(?:ly)?|beware)\b", re.I)
_LICENSE_RE = re.compile(r"\b(?:copyright|licen[cs]e[ds]?|spdx)\b", re.I)
_GENERATED_RE = re.compile(r"code generated|@generated|generated (?:file|code)|do not edit", re.I)
_VENDORED = ("node_modules/", "vendor/", "third_party/", "dist/", "generated/", "__generated__/")
_CODE_LINE_RE = re.compile(
    r"[;{}]\s*$|^\s*(?:import|from|return|if|for|while|def|fn|func|let|const|var)\b.*[(=:{]"
)
_MARKERS_RE = re.compile(r"^\s*(?:///?!?|#!?|/\*+|\*+/?|--)\s?")
_SENTENCE_RE = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)(?<!\bvs)[.!?](?=\s)")
# Files larger than this are generated or data: not scanned.
MAX_BYTES = 1_000_000


@dataclass(frozen=True)
class Proposal:
    """A memory the scan proposes: a gotcha with the comment's first sentence, anchored to its lines."""

    id: str  # stable (path, first line, text): the memory id it gets when accepted
    summary: str
    details: str
    anchor: Anchor
    trigger: str  # what made it a warning (the tag or the words)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "summary": self.summary,
            "details": self.details,
            "at": self.anchor.spec() if self.anchor.symbol else f"{self.anchor.path}:{_lines(self.anchor)}",
            "within": self.anchor.within,
            "trigger": self.trigger,
        }


def scan(root: Path, paths: Sequence[str], files: Sequence[str]) -> Iterator[Proposal]:
    """Proposals from `files` (repo-relative, e.g. the repo map's list) under any of `paths` ("" = all)."""
    prefixes = [p.rstrip("/") for p in paths if p.strip("./")] or [""]
    for path in files:
        if not any(path == p or path.startswith(p + "/") or not p for p in prefixes):
            continue
        if language_of(path) is None or any(part in path for part in _VENDORED):
            continue
        try:
            if os.path.getsize(root / path) > MAX_BYTES:
                continue
        except OSError:
            continue
        yield from propose(FileView.read(root, path))


def propose(view: FileView) -> list[Proposal]:
    """The warning comments of one file as proposals."""
    language = language_of(view.path)
    parser = parser_for(language) if language else None
    if parser is None or not view.exists:
        return []
    text = "\n".join(view.lines)
    if _GENERATED_RE.search("\n".join(view.lines[:10])):
        return []
    tree = parser.parse(text.encode("utf-8", "surrogateescape"))
    out: list[Proposal] = []
    for first, last, body in _comments(tree.root_node, view.lines):
        trigger = _trigger(body)
        if not trigger or _LICENSE_RE.search(body) or _looks_like_code(body):
            continue
        summary, details = _summary(body)
        try:
            anchor = make(view, "", (first, last))
        except ValidationError:
            continue
        key = hashlib.sha256(f"{view.path}\0{view.lines[first - 1].strip()}\0{body}".encode()).hexdigest()
        out.append(Proposal(key[:8], summary, details, anchor, trigger))
    return out


def _comments(root: Any, lines: list[str]) -> list[tuple[int, int, str]]:
    """(first line, last line, text without markers) of each comment block, in order."""
    nodes: list[Any] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in ("comment", "line_comment", "block_comment"):
            nodes.append(node)
        else:
            stack.extend(reversed(node.named_children))
    nodes.sort(key=lambda n: n.start_point)
    blocks: list[list[Any]] = []
    for node in nodes:
        row, column = node.start_point
        alone = lines[row][:column].strip() == "" if row < len(lines) else False
        previous = blocks[-1][-1] if blocks else None
        if (
            previous is not None
            and alone
            and previous.end_point[0] == row - 1
            and _is_line_comment(previous)
            and _is_line_comment(node)
            and not _opens_with_tag(_strip(_text(node)))
        ):
            blocks[-1].append(node)
        else:
            blocks.append([node])
    out = []
    for block in blocks:
        body = "\n".join(_strip(_text(n)) for n in block).strip()
        if body:
            out.append((block[0].start_point[0] + 1, block[-1].end_point[0] + 1, body))
    return out


def _is_line_comment(node: Any) -> bool:
    return node.start_point[0] == node.end_point[0] and not _text(node).startswith("/*")


def _text(node: Any) -> str:
    return str(node.text.decode("utf-8", "replace")) if node.text is not None else ""


def _strip(comment: str) -> str:
    lines = [_MARKERS_RE.sub("", line).rstrip() for line in comment.splitlines()]
    if lines and lines[-1].endswith("*/"):
        lines[-1] = lines[-1][:-2].rstrip()
    return "\n".join(line for line in lines).strip()


def _opens_with_tag(text: str) -> bool:
    return bool(re.match(r"(?:TODO|NOTE|NB|WARNING|WARN|HACK|SAFETY|IMPORTANT|CAUTION|FIXME|XXX)\b", text))


def _trigger(body: str) -> str:
    tag = _TAG_RE.search(body)
    if tag:
        return tag.group().strip(" (:#")
    word = _WORDS_RE.search(body)
    return word.group().lower() if word else ""


def _looks_like_code(body: str) -> bool:
    lines = [line for line in body.splitlines() if line.strip()]
    return sum(1 for line in lines if _CODE_LINE_RE.search(line)) * 2 > len(lines)


def _summary(body: str) -> tuple[str, str]:
    """The first sentence (at most `SUMMARY_MAX` characters) and the rest; the whole comment stays."""
    paragraph = " ".join(body.split("\n\n")[0].split())
    cut = _SENTENCE_RE.search(paragraph)
    summary = paragraph[: cut.start() + 1] if cut else paragraph
    if len(summary) > SUMMARY_MAX:
        summary = summary[: SUMMARY_MAX - 1].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"
    rest = body if summary != " ".join(body.split()) else ""
    return summary, rest


def _lines(anchor: Anchor) -> str:
    assert anchor.lines is not None
    first, last = anchor.lines
    return str(first) if first == last else f"{first}-{last}"
