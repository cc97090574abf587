"""Auto-distill (DESIGN §6): ask an LLM for at most three durable facts from an agent session.

The worker reads the transcript from where the last successful run stopped, sends a bounded, redacted
digest to the model, and hands each new, validated fact to `sink` (the store). It never writes a fact
that duplicates one the store has, never more than three, and on any error it writes nothing and keeps
its offset, so the next run retries the same part of the session.

>>> report = distill_session(  # doctest: +SKIP
...     transcript, state_dir, provider=provider_from_env(),
...     existing=store.has_hash, similar=store.has_similar, sink=store.add,
... )
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from tether.errors import ValidationError
from tether.intake.distill_state import exclusive, load_state, save_state, state_name
from tether.intake.llm import DistillError, LLMProvider
from tether.intake.transcript import DIGEST_MAX, build_digest, read_transcript
from tether.model.memory import (
    CATEGORIES,
    SCOPES,
    SUMMARY_MAX,
    Memory,
    content_hash,
    new_id,
    normalize_path,
    validate,
)
from tether.model.secrets import find_secret, redact
from tether.model.text import excerpt, fit_summary, one_line
from tether.model.timestamps import utcnow

__all__ = [
    "DEFAULT_CATEGORIES",
    "MAX_FACTS",
    "DistillError",
    "DistillReport",
    "distill_session",
    "parse_facts",
]

# DESIGN §6: at most three facts per session, across every run over it (Stop, PreCompact and SessionEnd
# each start one). More per session would outpace anyone's review of them, and the recall budget only ever
# shows three at a time anyway.
MAX_FACTS = 3
# `context` is left out by default: it is what a model produces when it has nothing durable to say
# ("the project uses FastAPI"), and the code already says it.
DEFAULT_CATEGORIES = ("pref", "decision", "gotcha")

_CATEGORY_MEANING = {
    "pref": "how the user wants work done here (tools, style, conventions they asked for or corrected)",
    "decision": "a design choice that was made, and why",
    "gotcha": "a non-obvious trap: what broke or misled, and what to do instead",
    "context": "background about the project that the code does not make evident",
}

_SYSTEM = """\
You extract durable project knowledge from a coding-agent session. Future sessions in the same \
repository will be shown what you extract, so only keep what will still be true and useful months \
from now.

Return at most {limit} facts, in these categories only:
{categories}

Rules:
- Only facts stated or demonstrated in the session. Never guess.
- Skip what the code or git history already shows, one-off task details, progress reports, and \
anything about this conversation itself.
- Never include passwords, tokens, keys or other credentials.
- summary: one line, at most {summary_max} characters, that stands on its own.
- details: one to three sentences: why, and how to apply it. May be empty.
- files: repository-relative paths the fact is about. May be empty.
- scope: one of {scopes}.
- Fewer is better. If nothing is durable, return no facts.

Reply with JSON only, no other text, in this shape:
{{"facts": [{{"summary": "...", "details": "...", "category": "{example}", "scope": "project", \
"files": ["src/app.py"]}}]}}
"""
_SCOPE_MEANING = {
    "project": '"project" for what is true of this repository (the usual case)',
    "user": '"user" for what is true of the person wherever they work (how they like to work, their tools)',
    "session": '"session" for what only matters for the rest of this session',
}
# The Acolyte article's observer tags facts `@observe project|user|session`; a model that writes the tag in
# its summary instead of the scope field means the same.
_OBSERVE = re.compile(r"^\s*@observe\s+(project|user|session)\b[\s:.-]*", re.IGNORECASE)

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)


@dataclass
class DistillReport:
    """What one run did. `dropped` pairs a proposed summary with the reason it was not written."""

    transcript: Path
    start: int
    end: int
    lines: int = 0
    skipped_lines: int = 0
    called_llm: bool = False
    proposed: int = 0
    written: list[Memory] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)
    redacted: int = 0
    note: str = ""


def distill_session(
    transcript: Path,
    state_dir: Path,
    *,
    provider: LLMProvider,
    categories: tuple[str, ...] = DEFAULT_CATEGORIES,
    existing: Callable[[str], bool],
    similar: Callable[[str], bool],
    sink: Callable[[Memory], None],
    existing_summary: Callable[[str], bool] | None = None,
    session: str | None = None,
    scopes: tuple[str, ...] = SCOPES,
    now: datetime | None = None,
    root: Path | None = None,
    on_secret: Literal["redact", "drop"] = "redact",
    max_chars: int = DIGEST_MAX,
    log: Callable[[str], None] | None = None,
) -> DistillReport:
    """Distill the part of `transcript` not yet read into at most three new memories, via `sink`.

    `existing(content_hash)` and `similar(text)` say whether the store already holds a fact, and
    `existing_summary(content_hash(summary))` whether a memory already has the fact's summary (the same
    one-line claim with other details is still a duplicate); `root` is the repository root that fact paths
    are relative to (default: the session's cwd). Each fact's scope is the model's (`project`, `user` or
    `session`; default project); session facts belong to `session` (default: the transcript's name, which
    is the session id in Claude Code); a fact in a scope not in `scopes` is dropped. The byte offset reached and the facts written so far are kept in
    `state_dir`, advanced only after every fact was handed to `sink`: the cap of `MAX_FACTS` holds for the
    session across runs. Raises `DistillError` (nothing written, offset kept) when the model cannot be used.
    """
    for category in categories:
        if category not in CATEGORIES:
            raise ValidationError(
                f"invalid distill category {category!r}: use some of {', '.join(CATEGORIES)}"
            )
    if not categories:
        raise ValidationError(f"no distill categories allowed: use some of {', '.join(CATEGORIES)}")
    state_dir.mkdir(parents=True, exist_ok=True)
    state_file = state_dir / state_name(transcript)
    with exclusive(state_file.with_suffix(".lock")) as locked:
        offset, written = load_state(state_file)
        if not locked:
            return DistillReport(transcript, offset, offset, note="another distill run holds this session")
        try:
            size = transcript.stat().st_size
        except OSError as exc:
            raise DistillError(f"cannot read transcript {transcript}: {exc.strerror or exc}") from None
        if size < offset:
            # The file was replaced or truncated: our offset means nothing in it now.
            if log is not None:
                log(f"{transcript}: shorter than the stored offset {offset}; reading it from the start")
            offset = 0
        chunk = read_transcript(transcript, offset, log=log)
        report = DistillReport(
            transcript, chunk.start, chunk.end, lines=chunk.lines, skipped_lines=chunk.skipped
        )
        if not any(event.kind in ("user", "assistant") for event in chunk.events):
            # Only tool calls (or nothing) since the last run: no one said anything to learn from.
            report.note = "nothing new but tool calls"
            save_state(state_file, transcript, chunk.end, written)
            return report
        remaining = MAX_FACTS - written
        if remaining <= 0:
            # The session already gave its facts: asking again would only spend a model call on drops.
            report.note = f"this session already has {MAX_FACTS} distilled facts"
            save_state(state_file, transcript, chunk.end, written)
            return report
        base = root if root is not None else Path(chunk.cwd) if chunk.cwd else None
        # Event texts are redacted as they are read (before any is cut to size); the digest is redacted
        # again as a whole, for what only the rendering put together.
        digest = redact(build_digest(chunk.events, max_chars=max_chars, root=str(base) if base else None))
        system = _SYSTEM.format(
            limit=remaining,
            categories="\n".join(f"- {c}: {_CATEGORY_MEANING[c]}" for c in categories),
            summary_max=SUMMARY_MAX,
            example=categories[-1],
            scopes="; ".join(_SCOPE_MEANING[s] for s in scopes),
        )
        report.called_llm = True
        reply = provider.complete(system, f"Session digest, oldest first:\n\n{digest}")
        facts = parse_facts(reply)
        report.proposed = len(facts)
        touched = set(_relative_paths(chunk.files, base))
        accepted = _accept(
            facts,
            report,
            categories=categories,
            existing=existing,
            similar=similar,
            now=now or utcnow(),
            root=base,
            touched=touched,
            on_secret=on_secret,
            limit=remaining,
            existing_summary=existing_summary,
            session=session or transcript.stem,
            scopes=scopes,
        )
        for memory in accepted:
            sink(memory)
            report.written.append(memory)
        save_state(state_file, transcript, chunk.end, written + len(accepted))
        return report


def parse_facts(reply: str) -> list[dict[str, Any]]:
    """The fact objects in a model's reply: `{"facts": [...]}` or a bare list, fences and prose tolerated.

    >>> parse_facts('```json\\n{"facts": [{"summary": "Use uv"}]}\\n```')
    [{'summary': 'Use uv'}]
    """
    text = _THINK.sub("", reply).strip()
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        raise DistillError(f"the model's reply holds no JSON: {_excerpt(reply)}")
    try:
        data, _ = json.JSONDecoder().raw_decode(text[min(starts) :])
    except json.JSONDecodeError as exc:
        raise DistillError(f"the model's reply is not valid JSON ({exc.msg}): {_excerpt(reply)}") from None
    facts = data.get("facts", data.get("memories")) if isinstance(data, dict) else data
    if not isinstance(facts, list):
        raise DistillError(f'the model\'s reply has no "facts" list: {_excerpt(reply)}')
    return [fact for fact in facts if isinstance(fact, dict)]


def _accept(
    facts: list[dict[str, Any]],
    report: DistillReport,
    *,
    categories: tuple[str, ...],
    existing: Callable[[str], bool],
    similar: Callable[[str], bool],
    now: datetime,
    root: Path | None,
    touched: set[str],
    on_secret: str,
    limit: int = MAX_FACTS,
    existing_summary: Callable[[str], bool] | None = None,
    session: str = "",
    scopes: tuple[str, ...] = SCOPES,
) -> list[Memory]:
    accepted: list[Memory] = []
    hashes: set[str] = set()
    summaries: set[str] = set()
    for fact in facts:
        summary = one_line(str(fact.get("summary") or ""))
        details = str(fact.get("details") or "").strip()
        tagged = _OBSERVE.match(summary)
        if tagged:
            summary = summary[tagged.end() :]
        if len(accepted) == limit:
            _drop(report, summary, f"over the limit of {MAX_FACTS} facts per session")
            continue
        scope = str(fact.get("scope") or (tagged.group(1) if tagged else "") or "project").strip().lower()
        if scope not in SCOPES:
            _drop(report, summary, f"scope {scope!r} is not project, user or session")
            continue
        if scope not in scopes:
            _drop(report, summary, f"{scope} facts are not kept here")
            continue
        category = str(fact.get("category") or "").strip().lower()
        if category not in categories:
            _drop(report, summary, f"category {category!r} is not allowed")
            continue
        if find_secret(f"{summary}\n{details}"):
            if on_secret == "drop":
                _drop(report, summary, "looks like it contains a credential")
                continue
            summary, details = redact(summary), redact(details)
            report.redacted += 1
        summary, overflow = fit_summary(summary)
        if overflow:  # the whole sentence stays in the details
            details = f"{overflow}\n\n{details}".strip()
        raw_files = fact.get("files")
        # A user fact is about the person, in any repository: this one's paths would name nothing there.
        files = (
            ()
            if scope == "user"
            else _fact_files(raw_files if isinstance(raw_files, list) else [], root, touched)
        )
        try:
            memory = validate(
                Memory(
                    id=new_id(),
                    summary=summary,
                    details=details,
                    category=category,
                    scope=scope,
                    files=files,
                    origin="distilled",
                    session=session if scope == "session" else None,
                    created=now,
                    updated=now,
                )
            )
        except ValidationError as exc:
            _drop(report, summary, f"invalid: {exc}")
            continue
        if memory.content_hash in hashes or existing(memory.content_hash):
            _drop(report, summary, "duplicate of an existing memory")
            continue
        summary_hash = content_hash(memory.summary)
        if summary_hash in summaries or (existing_summary is not None and existing_summary(summary_hash)):
            _drop(report, summary, "an existing memory has this summary")
            continue
        if similar(memory.text):
            _drop(report, summary, "near-duplicate of an existing memory")
            continue
        hashes.add(memory.content_hash)
        summaries.add(summary_hash)
        accepted.append(memory)
    return accepted


def _drop(report: DistillReport, summary: str, reason: str) -> None:
    # Dropped facts are printed (and so logged to .tether/logs/distill.log): redacted like the written ones,
    # whatever the reason they were dropped for.
    report.dropped.append((redact(summary), redact(reason)))


def _relative_paths(paths: list[str], root: Path | None) -> list[str]:
    out = []
    for path in paths:
        with contextlib.suppress(ValidationError):
            out.append(normalize_path(path, root))
    return out


def _fact_files(raw: list[object], root: Path | None, touched: set[str]) -> tuple[str, ...]:
    """Paths the model named, kept only if the session touched them or they exist in the repository.

    Models invent plausible paths; a memory tied to a file that never existed would never surface.
    """
    kept: dict[str, None] = {}
    for item in raw:
        if not isinstance(item, str) or not item.strip():
            continue
        try:
            path = normalize_path(item, root)
        except ValidationError:
            continue
        if path.startswith("/") or path == ".." or path.startswith("../"):
            continue  # without a repository root an absolute path cannot be made relative
        if path in touched or (root is not None and (root / path).exists()):
            kept.setdefault(path, None)
    return tuple(kept)


def _excerpt(text: str) -> str:
    """A redacted start of the model's reply, for an error message (which ends up in the distill log)."""
    return excerpt(redact(text))
