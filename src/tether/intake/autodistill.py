"""Auto-distill for a workspace (DESIGN §6): a session transcript in, at most three `distilled` memories out.

`tether.intake.distill` asks the model and checks its answer; this module supplies the workspace's side:
the provider from configuration, the duplicate checks, where offsets are kept, and the writes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tether.config import Config
from tether.embed import HashedEmbedder
from tether.errors import TetherError, ValidationError
from tether.intake.distill import DistillReport, distill_session
from tether.intake.llm import LLMProvider
from tether.memories import Memories
from tether.model.memory import CATEGORIES, Memory, content_hash
from tether.store.base import Query

# Near-duplicate gate for distilled facts. Measured with the default hashed embedder: a word inserted
# into a fact scores 0.93, a word swapped 0.86-0.93 (shorter facts lower), a reworded sentence 0.84, while
# different facts sharing most words ("run ruff format before committing" vs "... ruff check ...") score
# 0.81. The gap is thin, so the gate sits high: a missed duplicate costs a `tether purge` or `tether rm`,
# a wrongly dropped fact is lost without anyone seeing it.
NEAR_DUPLICATE_COSINE = 0.9
# A near-duplicate is a matter of wording, which is what the hashed embedder measures. A model of meaning
# cannot judge it: the static model puts "Staging listens on port 6443" and "... port 8443" at 0.97, and
# "cached for five minutes" and "... ten minutes" at 0.99 (hashed: 0.79 and 0.77). So the workspace's
# embedder finds the nearest few memories (a reworded duplicate is near in every space) and the hashed
# embedder's cosine decides.
NEAR_DUPLICATE_CANDIDATES = 20


def near_duplicate(ws: Memories, text: str, threshold: float = NEAR_DUPLICATE_COSINE) -> Memory | None:
    """The active memory worded most like `text` when their hashed cosine is at least `threshold`, else None."""
    embedder = ws.embedder
    found = ws.store.nearest(embedder.id, embedder.embed([text])[0], NEAR_DUPLICATE_CANDIDATES)
    candidates = [m for m in (ws.store.get(mid) for mid, _ in found) if m is not None]
    if not candidates:
        return None
    words = HashedEmbedder()
    query, *vectors = words.embed([text, *(m.text for m in candidates)])
    cosine, best = max(
        (
            (sum(a * b for a, b in zip(query, v, strict=True)), m)
            for v, m in zip(vectors, candidates, strict=True)
        ),
        key=lambda pair: pair[0],
    )
    return best if cosine >= threshold else None


def distill_provider(config: Config, env: Mapping[str, str] | None = None) -> LLMProvider:
    """The LLM client that `distill.*` configuration (then `TETHER_DISTILL_*` env, then defaults) asks for.

    A key left at its default defers to the environment variable, so `TETHER_DISTILL_PROVIDER=ollama`
    works without touching the config. API keys only ever come from the environment.
    """
    from tether.config import DEFAULTS
    from tether.intake.llm import provider_from_env

    env = os.environ if env is None else env

    def pick(key: str, env_name: str) -> str | None:
        value = str(config.value(key))
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

    report: DistillReport
    stored: list[Memory] = field(default_factory=list)


def distill_state_dir(ws: Memories) -> Path:
    """`.tether/distill/`: per-transcript offsets. Local state, so it ignores itself in git."""
    state = ws.paths.tether_dir / "distill"
    state.mkdir(parents=True, exist_ok=True)
    ignore = state / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# distill offsets are local to this machine\n*\n", encoding="utf-8")
    return state


def run_distill(
    ws: Memories,
    transcript: Path,
    *,
    session: str | None = None,
    provider: LLMProvider | None = None,
    log: Callable[[str], None] | None = None,
) -> DistillRun:
    """Distill one session transcript into at most three `distilled` memories (DESIGN §6).

    Exact duplicates (content hash, or the same summary, in the store, any status: an archived fact stays
    unwanted) and near duplicates (cosine ≥ `NEAR_DUPLICATE_COSINE` to an active memory) are dropped. Facts
    are written in the scope the model gave them (project or user; session facts are dropped: distill runs
    when the session has ended).
    """
    if ws.root is None:
        raise TetherError("distill writes project memory: run `tether init` at the repository root first")
    categories = tuple(c.strip() for c in ws.config.text("distill.categories").split(",") if c.strip())
    for category in categories:
        if category not in CATEGORIES:
            raise ValidationError(
                f"distill.categories has {category!r}: use some of {', '.join(CATEGORIES)} "
                "(`tether config distill.categories pref,gotcha`)"
            )
    stored: list[Memory] = []

    def sink(memory: Memory) -> None:
        stored.append(
            ws.add(
                memory.summary,
                details=memory.details,
                category=memory.category,
                files=ws.absolute(memory.files, memory.scope),
                scope=memory.scope,
                session=memory.session,
                origin="distilled",
            ).memory
        )

    summaries: list[set[str]] = []

    def existing_summary(digest: str) -> bool:
        # Built once per run, on the first fact that gets this far: a summary index the store does not keep.
        if not summaries:
            summaries.append({content_hash(m.summary) for m in ws.find(Query(status=None))})
        return digest in summaries[0]

    def logger(message: str) -> None:
        ws.log(f"distill{f' {session}' if session else ''}: {message}")
        if log is not None:
            log(message)

    report = distill_session(
        transcript,
        distill_state_dir(ws),
        provider=provider if provider is not None else distill_provider(ws.config),
        categories=categories,
        existing=lambda digest: bool(ws.store.by_hash(digest)),
        similar=lambda text: near_duplicate(ws, text) is not None,
        sink=sink,
        existing_summary=existing_summary,
        session=session,
        # The worker runs when the session ends, after its session memory was dropped: a session fact
        # would outlive the session it is about, so the model is offered project and user only.
        scopes=("project", "user"),
        now=ws.clock(),
        root=ws.root,
        log=logger,
    )
    return DistillRun(report, stored)
