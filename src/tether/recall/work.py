"""A session's first prompts, before the agent has touched anything: the work in progress in the tree stands for
the touched files when the prompt is about it (DESIGN §5).

    recall_with_work(ws.recaller(), "continue with the retries", in_progress(ws.root), session=s, turn=1)
"""

from __future__ import annotations

from collections.abc import Sequence

from tether.recall.evidence import RecallResult
from tether.recall.recaller import Recaller

# How far down the prompt's own ranking a memory the work would inject may sit and still say the prompt is about
# the work. 3 and 10 were tried on the dev windows of both quality evaluations: 10 kept more of the gain with the
# task's own work in the tree (+0.05 on both), and cost 0.023 with another task's on the file-tied one
# (benchmarks/quality/README.md, "Work in progress in the tree").
AGREE_DEPTH = 10
UNBUDGETED = 10**9


def recall_with_work(
    recaller: Recaller,
    prompt: str,
    work: Sequence[str],
    *,
    session: str | None = None,
    turn: int | None = None,
    record: bool = True,
    limit: int | None = None,
    budget: int | None = None,
) -> RecallResult:
    """A prompt's recall with `work` (the work in progress, relative to the project's root, as
    `tether.repo.worktree.in_progress` lists it, whatever directory the agent runs in) as the touched files
    when the prompt is about it: some memory the work would inject is among the prompt's own ten best, or the
    prompt alone finds nothing. Otherwise the prompt alone: work left in the tree that is not what
    the prompt asks about must not take the slots of what it asks (the file-tied evaluation's dev tasks with the
    previous commit's files in the tree: 0.033 Recall@3 against the prompt's 0.285). `record`: whether the
    memories returned are recorded as surfaced (a static evaluation records nothing); `limit`, `budget`: the
    injection's, as `Recaller.recall` takes them."""
    if work and recaller.root is not None:
        touched = [str(recaller.root / path) for path in work]
        both = recaller.recall(
            prompt, touched, session=session, turn=turn, limit=limit, budget=budget, record=False
        )
        alone = recaller.recall(
            prompt, [], session=session, turn=turn, limit=AGREE_DEPTH, budget=UNBUDGETED, record=False
        )
        ahead = {r.memory.id for r in alone.memories}
        if both.memories and (not ahead or any(r.memory.id in ahead for r in both.memories)):
            if record:
                recaller.record(both, session, turn)
            return both
    return recaller.recall(prompt, [], session=session, turn=turn, limit=limit, budget=budget, record=record)


def work_note(work: Sequence[str], taken: Sequence[str]) -> str:
    """What a first prompt's recall did with the work in progress, for a person: `work` the files changed,
    `taken` the touched files the recall took (`RecallResult.files`: the work's, or none)."""
    if not work:
        return "work in progress: none"
    return (
        f"work in progress: {', '.join(work)} ({'used' if taken else 'not used: the prompt is not about it'})"
    )
