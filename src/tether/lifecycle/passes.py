"""Memory that keeps itself honest (DESIGN §6): soft-archive, cleanup, stats, and the intake wiring.

Every decision here reads the telemetry and the event log (`Store.telemetry`, `Store.events`) and the
workspace clock (`ws.clock`), so tests can run the calendar forward and the same data always gives the
same answer.

>>> archived = archive_pass(ws)  # doctest: +SKIP
>>> [c.memory.id for c in cleanup_candidates(ws)][:3]  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from tether.errors import TetherError, ValidationError
from tether.model.memory import CATEGORIES, Memory
from tether.recall.scoring import IGNORED_AFTER
from tether.store.base import Query, Telemetry
from tether.workspace import Workspace

__all__ = [
    "ARCHIVE_MIN_DAYS",
    "ARCHIVE_MIN_SURFACED",
    "NEAR_DUPLICATE_COSINE",
    "Candidate",
    "DistillRun",
    "Streak",
    "archive_candidates",
    "archive_pass",
    "cleanup",
    "cleanup_candidates",
    "cleanup_hint",
    "distill_provider",
    "distill_state_dir",
    "ignored_streak",
    "import_claude_memory",
    "mark_cleanup_pass",
    "near_duplicate",
    "purge_origin",
    "run_distill",
    "seed",
    "stats",
]

# DESIGN §6: shown 6+ times over 45+ days and never followed up. Six showings is twice the per-prompt
# budget of three, so an agent had real chances to use it; 45 days spans several work cycles, so one busy
# week of a memory that doesn't apply to it cannot archive it.
ARCHIVE_MIN_SURFACED = 6
ARCHIVE_MIN_DAYS = 45

# DESIGN §6 cleanup hint: enough sessions that the statistics mean something, enough memories that
# pruning matters, enough stale ones to be worth a person's minute.
CLEANUP_MIN_SESSIONS = 20
CLEANUP_MIN_ACTIVE = 30
CLEANUP_MIN_CANDIDATES = 10
# A memory nobody acted on for three months (two recency half-lives in `scoring`) has stopped helping.
UNUSED_DAYS = 90
# Ranking weight of a dead reference, in "unanswered showings": a memory about files that are all gone is
# as stale as one ignored six times (the archive threshold).
DEAD_REF_WEIGHT = 6.0
# Ranking weight of idleness: one point per 30 days without use, so a year idle ≈ 12 ignored showings.
IDLE_DAYS_PER_POINT = 30.0

META_LAST_PASS = "cleanup.last_pass"  # ISO time of the last `tether cleanup` (absent: never)
META_HINTED = "cleanup.hinted"  # the value of META_LAST_PASS the hint was given for

# Near-duplicate gate for distilled facts. Measured with the default hashed embedder: a word inserted
# into a fact scores 0.93, a word swapped 0.86-0.93 (shorter facts lower), a reworded sentence 0.84, while
# different facts sharing most words ("run ruff format before committing" vs "... ruff check ...") score
# 0.81. The gap is thin, so the gate sits high: a missed duplicate costs a `tether purge` or `tether rm`,
# a wrongly dropped fact is lost without anyone seeing it.
NEAR_DUPLICATE_COSINE = 0.9


# -- soft-archive -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Streak:
    """Showings since the memory was last acted on (or restored): how long it has been ignored."""

    count: int
    first: datetime | None
    last: datetime | None

    @property
    def days(self) -> float:
        if self.first is None or self.last is None:
            return 0.0
        return (self.last - self.first).total_seconds() / 86400.0


def ignored_streak(ws: Workspace, memory_id: str) -> Streak:
    """Surfacings of `memory_id` after its last `acted` or `restored` event, from the event log.

    A restore resets the streak: a person who brings a memory back has vouched for it, and must not see
    it archived again at the next session start for the same old showings.
    """
    count = 0
    first: datetime | None = None
    last: datetime | None = None
    for event in ws.store.events(memory_id, limit=1_000_000):
        if event.event in ("acted", "restored"):
            break
        if event.event == "surfaced":
            count += 1
            first = event.at if first is None or event.at < first else first
            last = event.at if last is None or event.at > last else last
    return Streak(count, first, last)


def _may_be_ignored(tel: Telemetry, min_count: int, min_days: float) -> bool:
    """Cheap necessary condition from the counters, so the event log is read only for real suspects."""
    if tel.surfaced < min_count or tel.last_surfaced is None or tel.first_surfaced is None:
        return False
    start = tel.first_surfaced
    if tel.last_acted is not None:
        if tel.last_acted >= tel.last_surfaced:
            return False
        start = max(start, tel.last_acted)
    return (tel.last_surfaced - start).total_seconds() / 86400.0 >= min_days


def _lifecycle_pool(ws: Workspace) -> list[Memory]:
    """Memories the statistics may act on: active project memories that are not pinned.

    User memory is left alone: its telemetry is per project index, and a memory ignored in this
    repository may be the one that matters in the next. Pinned memories are the person's veto.
    """
    return [m for m in ws.find(Query(status=("active",), scope="project")) if not m.pinned]


def archive_candidates(ws: Workspace) -> list[tuple[Memory, Streak]]:
    """Active, unpinned project memories shown 6+ times over 45+ days since anyone last acted on them."""
    pool = _lifecycle_pool(ws)
    telemetry = ws.store.telemetry([m.id for m in pool])
    out = []
    for memory in pool:
        tel = telemetry.get(memory.id)
        if tel is None or not _may_be_ignored(tel, ARCHIVE_MIN_SURFACED, ARCHIVE_MIN_DAYS):
            continue
        streak = ignored_streak(ws, memory.id)
        if streak.count >= ARCHIVE_MIN_SURFACED and streak.days >= ARCHIVE_MIN_DAYS:
            out.append((memory, streak))
    return out


def archive_pass(ws: Workspace) -> list[Memory]:
    """Soft-archive every ignored memory (session start, `tether maintain`). Reversible: `tether restore`."""
    archived = []
    for memory, streak in archive_candidates(ws):
        reason = f"ignored: shown {streak.count} times over {streak.days:.0f} days, never acted on"
        archived.append(ws.archive(memory.id, reason=reason))
    if archived:
        ws.log(f"archived {len(archived)} ignored memories: {', '.join(m.id for m in archived)}")
    return archived


# -- cleanup ------------------------------------------------------------------------------------------


@dataclass
class Candidate:
    """A memory proposed for cleanup, with why and how stale it is (higher `score` is staler)."""

    memory: Memory
    reasons: list[str]
    idle_days: int  # since last acted on, or since created when never
    unanswered: int  # showings since last acted on
    dead: bool
    score: float

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.memory.id,
            "summary": self.memory.summary,
            "category": self.memory.category,
            "origin": self.memory.origin,
            "reasons": self.reasons,
            "idle_days": self.idle_days,
            "unanswered": self.unanswered,
            "dead_reference": self.dead,
            "score": round(self.score, 2),
        }


def cleanup_candidates(ws: Workspace) -> list[Candidate]:
    """Stale memories, worst first: ignored, naming only files that are gone, or long unused.

    Ranked by `score` = idle days / 30 + showings since the last use + 6 for a dead reference; pinned
    memories never appear.
    """
    now = ws.clock()
    pool = _lifecycle_pool(ws)
    telemetry = ws.store.telemetry([m.id for m in pool])
    dead = {m.id: files for m, files in ws.dead_refs()}
    out: list[Candidate] = []
    for memory in pool:
        tel = telemetry.get(memory.id) or Telemetry()
        reasons: list[str] = []
        unanswered = 0
        if _may_be_ignored(tel, IGNORED_AFTER, 0.0):
            unanswered = ignored_streak(ws, memory.id).count
            if unanswered >= IGNORED_AFTER:
                reasons.append(f"shown {unanswered} times since last used")
        if memory.id in dead:
            reasons.append(f"every file it names is gone ({', '.join(dead[memory.id])})")
        anchor = tel.last_acted or memory.created
        idle = max(0, int((now - anchor).total_seconds() // 86400))
        if idle >= UNUSED_DAYS:
            reasons.append(f"not used for {idle} days")
        if not reasons:
            continue
        score = idle / IDLE_DAYS_PER_POINT + unanswered + (DEAD_REF_WEIGHT if memory.id in dead else 0.0)
        out.append(Candidate(memory, reasons, idle, unanswered, memory.id in dead, score))
    out.sort(key=lambda c: (-c.score, c.memory.created, c.memory.id))
    return out


def _pass_marker(ws: Workspace) -> str:
    return ws.store.get_meta(META_LAST_PASS) or ""


def cleanup_hint(ws: Workspace) -> str | None:
    """The one-time nudge to run `tether cleanup`, or None.

    Given when 20+ sessions started since the last cleanup pass, 30+ memories are active and 10+ are
    stale; then not again until `tether cleanup` marks a new pass.
    """
    marker = _pass_marker(ws)
    if ws.store.get_meta(META_HINTED) == (marker or "never"):
        return None
    since = datetime.fromisoformat(marker) if marker else None
    sessions = ws.store.session_count(since)
    if sessions < CLEANUP_MIN_SESSIONS:
        return None
    active = [m for m in ws.find(Query(status=("active",))) if m.scope != "session"]
    if len(active) < CLEANUP_MIN_ACTIVE:
        return None
    candidates = cleanup_candidates(ws)
    if len(candidates) < CLEANUP_MIN_CANDIDATES:
        return None
    with ws.store.transaction():
        if ws.store.get_meta(META_HINTED) == (marker or "never"):
            return None  # another session start said it first
        ws.store.set_meta(META_HINTED, marker or "never")
    worst = "; ".join(f"{c.memory.id} {c.memory.summary[:60]} ({c.reasons[0]})" for c in candidates[:3])
    return (
        f"tether: {len(candidates)} of {len(active)} memories look stale after {sessions} sessions "
        f"(worst: {worst}). Ask the user to run `tether cleanup` to review and archive them."
    )


def mark_cleanup_pass(ws: Workspace) -> None:
    """Record that a cleanup pass happened now: session counting for the hint starts over."""
    with ws.store.transaction():
        ws.store.set_meta(META_LAST_PASS, ws.clock().isoformat())


def cleanup(ws: Workspace, ids: list[str]) -> list[Memory]:
    """Archive the chosen candidates and mark the pass. Reversible with `tether restore`."""
    archived = [ws.archive(mid, reason="cleanup") for mid in ids]
    mark_cleanup_pass(ws)
    return archived


# -- stats --------------------------------------------------------------------------------------------


def stats(ws: Workspace, top: int = 5) -> dict[str, Any]:
    """Per category: active, archived, superseded, surfaced, acted and follow-through; the most ignored
    and most used memories.

    Follow-through is the share of the memories shown at least once that were acted on at least once
    (None when none was shown). Session memory is left out: it expires with its session.
    """
    memories = [m for m in ws.find(Query(status=None)) if m.scope != "session"]
    telemetry = ws.store.telemetry([m.id for m in memories])
    rows: dict[str, dict[str, Any]] = {}
    for category in (*CATEGORIES, "all"):
        rows[category] = {"active": 0, "archived": 0, "superseded": 0, "surfaced": 0, "acted": 0}
        rows[category].update({"_shown": 0, "_followed": 0})
    for memory in memories:
        tel = telemetry.get(memory.id) or Telemetry()
        for key in (memory.category, "all"):
            row = rows[key]
            row[memory.status] += 1
            row["surfaced"] += tel.surfaced
            row["acted"] += tel.acted
            if tel.surfaced:
                row["_shown"] += 1
                row["_followed"] += int(tel.acted > 0)
    for row in rows.values():
        shown, followed = row.pop("_shown"), row.pop("_followed")
        row["follow_through"] = round(followed / shown, 3) if shown else None

    def entry(memory: Memory) -> dict[str, Any]:
        tel = telemetry.get(memory.id) or Telemetry()
        return {
            "id": memory.id,
            "summary": memory.summary,
            "category": memory.category,
            "status": memory.status,
            "surfaced": tel.surfaced,
            "acted": tel.acted,
        }

    def count(mid: str, name: str) -> int:
        tel = telemetry.get(mid)
        return getattr(tel, name) if tel else 0

    active = [m for m in memories if m.status == "active"]
    ignored = sorted(
        (m for m in active if count(m.id, "surfaced") > 0 and count(m.id, "acted") == 0),
        key=lambda m: (-count(m.id, "surfaced"), m.id),
    )
    used = sorted(
        (m for m in memories if count(m.id, "acted") > 0),
        key=lambda m: (-count(m.id, "acted"), -count(m.id, "surfaced"), m.id),
    )
    total = rows.pop("all")
    return {
        "categories": rows,
        "total": total,
        "most_ignored": [entry(m) for m in ignored[:top]],
        "most_used": [entry(m) for m in used[:top]],
    }


# -- intake: seeds and Claude Code's memory -----------------------------------------------------------


def _absolute(ws: Workspace, memory: Memory) -> list[str]:
    """A memory's repo-relative paths made absolute, so `Workspace.add` does not re-base them on the cwd."""
    if memory.scope == "user" or ws.root is None:
        return list(memory.files)
    return [str(ws.root / path) + ("/" if path.endswith("/") else "") for path in memory.files]


def _store(ws: Workspace, memory: Memory, *, allow_secret: bool = False) -> bool:
    """Add a parsed memory through the workspace (dedup by content). Returns whether it was new."""
    return ws.add(
        memory.summary,
        details=memory.details,
        category=memory.category,
        files=_absolute(ws, memory),
        scope=memory.scope,
        pinned=memory.pinned,
        priority=memory.priority,
        origin=memory.origin,
        allow_secret=allow_secret,
    ).created


def seed(ws: Workspace, path: Path, *, allow_secret: bool = False) -> tuple[int, int]:
    """Load a seed file (`intake.parse_seed_file`): validated whole before anything is written.

    Idempotent: an entry whose content the store already has is counted as present, not added again.
    Returns (new, already present).
    """
    from tether.intake.seeds import parse_seed_file

    memories = parse_seed_file(path, root=ws.root, allow_secrets=allow_secret)
    if ws.root is None and any(m.scope == "project" for m in memories):
        raise TetherError(
            f"{path}: has project memories but there is no .tether/ here: run `tether init` first"
        )
    new = sum(_store(ws, m, allow_secret=allow_secret) for m in memories)
    return new, len(memories) - new


def import_claude_memory(
    ws: Workspace, directory: Path, *, log: Callable[[str], None] | None = None
) -> tuple[int, int]:
    """Import Claude Code's memory notes from `directory` (origin agent). Returns (new, already present)."""
    from tether.intake.seeds import parse_claude_memory

    memories = parse_claude_memory(directory, log=log)
    if ws.root is None:
        skipped = [m for m in memories if m.scope == "project"]
        if skipped and log is not None:
            log(f"skipped {len(skipped)} project notes: no .tether/ here (run `tether init` first)")
        memories = [m for m in memories if m.scope != "project"]
    new = sum(_store(ws, m) for m in memories)
    return new, len(memories) - new


# -- intake: auto-distill -----------------------------------------------------------------------------


def near_duplicate(ws: Workspace, text: str, threshold: float = NEAR_DUPLICATE_COSINE) -> Memory | None:
    """The active memory most similar to `text` when its cosine is at least `threshold`, else None."""
    ids, blob, dim = ws.store.vectors(ws.embedder.id)
    if not ids:
        return None
    import numpy as np

    matrix = np.frombuffer(blob, dtype=np.float32).reshape(len(ids), dim)
    vector = np.asarray(ws.embedder.embed([text])[0], dtype=np.float32)
    if vector.shape[0] != dim or not vector.any():
        return None
    cosines = matrix @ vector
    best = int(np.argmax(cosines))
    if float(cosines[best]) < threshold:
        return None
    return ws.store.get(ids[best])


def distill_provider(config: Any, env: Mapping[str, str] | None = None) -> Any:
    """The LLM client that `distill.*` configuration (then `TETHER_DISTILL_*` env, then defaults) asks for.

    A key left at its default defers to the environment variable, so `TETHER_DISTILL_PROVIDER=ollama`
    works without touching the config. API keys only ever come from the environment.
    """
    from tether.config import DEFAULTS
    from tether.intake.llm import provider_from_env

    env = os.environ if env is None else env

    def pick(key: str, env_name: str) -> str | None:
        value = str(config[key])
        if value != DEFAULTS[key][0]:
            return value or None
        return env.get(env_name) or value or None

    provider = pick("distill.provider", "TETHER_DISTILL_PROVIDER")
    model = pick("distill.model", "TETHER_DISTILL_MODEL")
    if provider != "anthropic" and model == DEFAULTS["distill.model"][0]:
        model = None  # the default model name is Anthropic's; other providers pick their own default
    base_url = pick("distill.base_url", "TETHER_DISTILL_BASE_URL")
    return provider_from_env(env, provider=provider, model=model, base_url=base_url)


@dataclass
class DistillRun:
    """A `distill_session` report plus the memories as stored (ids are the store's)."""

    report: Any
    stored: list[Memory] = field(default_factory=list)


def distill_state_dir(ws: Workspace) -> Path:
    """`.tether/distill/`: per-transcript offsets. Local state, so it ignores itself in git."""
    state = ws.paths.tether_dir / "distill"
    state.mkdir(parents=True, exist_ok=True)
    ignore = state / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# distill offsets are local to this machine\n*\n", encoding="utf-8")
    return state


def run_distill(
    ws: Workspace,
    transcript: Path,
    *,
    session: str | None = None,
    provider: Any = None,
    log: Callable[[str], None] | None = None,
) -> DistillRun:
    """Distill one session transcript into at most three `distilled` memories (DESIGN §6).

    Exact duplicates (content hash in the store, any status: an archived fact stays unwanted) and near
    duplicates (cosine ≥ `NEAR_DUPLICATE_COSINE` to an active memory) are dropped.
    """
    from tether.intake.distill import distill_session

    if ws.root is None:
        raise TetherError("distill writes project memory: run `tether init` at the repository root first")
    categories = tuple(c.strip() for c in str(ws.config["distill.categories"]).split(",") if c.strip())
    for category in categories:
        if category not in CATEGORIES:
            raise ValidationError(
                f"distill.categories has {category!r}: use some of {', '.join(CATEGORIES)} "
                "(`tether config distill.categories pref,gotcha`)"
            )
    run = DistillRun(report=None)

    def sink(memory: Memory) -> None:
        run.stored.append(
            ws.add(
                memory.summary,
                details=memory.details,
                category=memory.category,
                files=_absolute(ws, memory),
                origin="distilled",
            ).memory
        )

    def logger(message: str) -> None:
        ws.log(f"distill{f' {session}' if session else ''}: {message}")
        if log is not None:
            log(message)

    run.report = distill_session(
        transcript,
        distill_state_dir(ws),
        provider=provider if provider is not None else distill_provider(ws.config),
        categories=categories,
        existing=lambda digest: bool(ws.store.by_hash(digest)),
        similar=lambda text: near_duplicate(ws, text) is not None,
        sink=sink,
        now=ws.clock(),
        root=ws.root,
        log=logger,
    )
    return run


def purge_origin(ws: Workspace, origin: str) -> list[Memory]:
    """Delete every memory of `origin` for good, notes included (any status)."""
    doomed = [m for m in ws.find(Query(status=None, origin=origin)) if m.scope != "session"]
    return [ws.delete(m.id) for m in doomed]
