"""Recall's channels (DESIGN §4.2): each adds the memories it finds to the pool, with rank credit and evidence.

- file affinity: memories naming a touched file or a directory holding it, among paths that exist;
- path words: memories whose text mentions the touched files' names and directories (orders, not evidence);
- co-change: memories on the files that change together with the touched ones in git;
- text: two full-text indexes (words, trigrams);
- semantic: cosine of the query's embedding with the memories';
- pinned;
- code: memories naming identifiers the touched files' current content uses.

The channels that read the code at anchors (the edit's place, the place words) are in `tether.recall.places`.
"""

from __future__ import annotations

import stat
from collections.abc import Callable, Sequence
from pathlib import Path

from tether.anchors.locations import identifiers
from tether.embed.base import Embedder
from tether.fs import read_limited
from tether.model.memory import Memory
from tether.recall import scoring
from tether.recall.evidence import Candidate
from tether.repo.map import RepoMap
from tether.store.base import Query, Store


class Pool(dict[str, Candidate]):
    """The candidates of one recall, by memory id."""

    def candidate(self, memory_id: str) -> Candidate:
        found = self.get(memory_id)
        if found is None:
            found = self[memory_id] = Candidate(memory_id)
        return found


def file_channel(
    store: Store, repo: RepoMap | None, exists: Callable[[str], bool], touched: list[str], pool: Pool
) -> None:
    refs: dict[str, str] = {}  # ref path → touched file it matches
    for path in touched:
        for ref in refs_naming(path):
            refs.setdefault(ref, path)
    hits: dict[str, tuple[float, str]] = {}
    for ref, mids in store.owners(list(refs)).items():
        if not exists(ref):
            continue  # a dead reference loses the file signal at once
        magnitude = scoring.file_hit(len(mids), is_dir=ref.endswith("/"))
        for mid in mids:
            if mid not in hits or hits[mid][0] < magnitude:
                hits[mid] = (magnitude, ref)
    # One fan-in lookup per touched file, however many memories name it.
    blast = {path: scoring.blast(repo.fan_in(path)) for path in set(refs.values())} if repo else {}
    ranks = competition_ranks({mid: magnitude for mid, (magnitude, _) in hits.items()})
    for mid, (magnitude, ref) in hits.items():
        c = pool.candidate(mid)
        c.rrf["file"] = scoring.rrf(ranks[mid])
        c.magnitude.file = magnitude
        c.evidence.file = ref
        if blast:
            c.magnitude.blast = blast[refs[ref]]


def cochange_channel(store: Store, repo: RepoMap | None, touched: list[str], pool: Pool) -> None:
    if repo is None:
        return
    neighbours: dict[str, str] = {}
    for path in touched:
        for other, _ in repo.neighbours(path, scoring.COCHANGE_PER_FILE):
            if other not in touched and other not in neighbours and len(neighbours) < scoring.COCHANGE_TOTAL:
                neighbours[other] = path
    if not neighbours:
        return
    for path, mids in store.owners(list(neighbours)).items():
        for mid in mids:
            existing = pool.get(mid)
            if existing is not None and existing.evidence.file is not None:
                continue
            c = pool.candidate(mid)
            c.rrf["cochange"] = scoring.rrf(scoring.COCHANGE_RANK)
            c.magnitude.cochange = scoring.COCHANGE_HIT
            c.evidence.cochange = path


def path_channel(store: Store, touched_terms: list[str], pool: Pool) -> None:
    """Memories whose text mentions the touched files' names and directories ("when editing render.tsx")."""
    hits = [h for h in store.text(touched_terms, limit=50, trigram=False) if h.words]
    if not hits:
        return
    best = max(h.words for h in hits)
    ranks = competition_ranks({h.id: h.words for h in hits})
    for hit in hits:
        c = pool.candidate(hit.id)
        c.rrf["path"] = scoring.rrf(ranks[hit.id])
        if scoring.PATH_TEXT_MAX:
            c.magnitude.path = scoring.PATH_TEXT_MAX * min(1.0, hit.words / best)


def text_channel(store: Store, words: list[str], pool: Pool) -> None:
    hits = store.text(words, limit=50)
    if not hits:
        return
    best = max(h.words for h in hits)
    for rank, hit in enumerate(sorted((h for h in hits if h.words), key=lambda h: -h.words), 1):
        c = pool.candidate(hit.id)
        c.rrf["text"] = scoring.rrf(rank)
        c.evidence.text = hit.words
        c.evidence.text_rank = rank
        c.evidence.text_best = best
    for rank, hit in enumerate(sorted((h for h in hits if h.trigram), key=lambda h: -h.trigram), 1):
        c = pool.candidate(hit.id)
        c.rrf["trigram"] = scoring.rrf(rank)
        if c.evidence.text is None:
            c.evidence.text = 0.0
        c.evidence.text_best = best


def text_among(store: Store, words: list[str], pool: Pool) -> None:
    """The prompt scored against every candidate another channel brought (a file or co-change hit, a path
    word) that the repository-wide text search did not reach: among 60 rules of one directory, the prompt
    must still decide, not only for the few that made the repository's top 50."""
    unscored = [mid for mid, c in pool.items() if c.evidence.text is None]
    if not unscored:
        return
    best = max((c.evidence.text_best or 0.0 for c in pool.values()), default=0.0)
    for hit in store.text(words, limit=len(unscored), trigram=False, among=unscored):
        if hit.words:
            c = pool[hit.id]
            c.evidence.text = hit.words
            c.evidence.text_best = max(best, hit.words)


def code_channel(
    store: Store,
    code: Callable[[str], list[str]],
    touched: list[str],
    pool: Pool,
    named_in: Callable[[Memory], Sequence[str]] | None = None,
) -> None:
    """Memories naming an identifier the touched files use (`code(path)`: the file's distinctive
    identifiers, in order of first use), each credited by how many it names (`scoring.code_hit`).
    `named_in(memory)`: the identifiers a memory names, in order (`RecallCache` keeps them).

    The word index finds the memories that may name one (a phrase per identifier); the memory's own
    identifiers decide, case-sensitively, so `ModelRetry` is not `model retry`."""
    used: dict[str, None] = {}
    for path in touched:
        for name in code(path):
            used.setdefault(name, None)
            if len(used) >= scoring.CODE_IDENTIFIERS:
                break
    if not used:
        return
    hits = store.text(list(used), scoring.CODE_CANDIDATES, trigram=False)
    memories = store.memories(hit.id for hit in hits if hit.words)
    for mid, memory in memories.items():
        own = named_in(memory) if named_in is not None else identifiers(memory.text, limit=100)
        named = tuple(name for name in own if name in used)
        if named:
            c = pool.candidate(mid)
            c.evidence.code = named
            c.magnitude.code = scoring.code_hit(len(named))


def semantic_channel(store: Store, embedder: Embedder, query: str, pool: Pool) -> None:
    query_vector = embedder.embed([query])[0]
    gate = scoring.sem_gate(embedder.id)
    for rank, (mid, cosine) in enumerate(store.nearest(embedder.id, query_vector, scoring.SEM_CANDIDATES), 1):
        if cosine <= 0.05:
            break  # orthogonal: not even a shared topic
        c = pool.candidate(mid)
        c.rrf["semantic"] = scoring.rrf(rank)
        c.evidence.sem = cosine
        c.evidence.sem_gate = gate
        c.magnitude.sem = scoring.sem_magnitude(cosine, gate)


def pinned(store: Store) -> list[Memory]:
    """The pinned memories, the most recently updated first: the pinned channel's ranking."""
    return sorted(store.find(Query(pinned=True)), key=lambda m: m.updated, reverse=True)


def pinned_channel(pinned: list[Memory], pool: Pool) -> None:
    """`pinned`: the pinned memories as `pinned(store)` ranks them."""
    for rank, memory in enumerate(pinned, 1):
        c = pool.candidate(memory.id)
        c.rrf["pinned"] = scoring.rrf(rank)
        c.evidence.pinned = True


def refs_naming(path: str) -> list[str]:
    """The file refs a memory can use to name `path`: the path itself and each directory above it.

    >>> refs_naming("src/auth/routes.py")
    ['src/auth/routes.py', 'src/', 'src/auth/']
    """
    parts = path.split("/")[:-1]
    return [path, *("/".join(parts[:depth]) + "/" for depth in range(1, len(parts) + 1))]


def competition_ranks(scores: dict[str, float]) -> dict[str, int]:
    """1-based ranks, best first, where equal scores share a rank: a tie must not be broken by id order.

    >>> competition_ranks({"a": 0.5, "b": 0.9, "c": 0.5})
    {'a': 2, 'b': 1, 'c': 2}
    """
    ordered = sorted(scores.values(), reverse=True)
    first: dict[float, int] = {}
    for index, value in enumerate(ordered, 1):
        first.setdefault(value, index)
    return {key: first[value] for key, value in scores.items()}


# A file's identifiers by (path, size, mtime): a session's hooks touch the same few files again and again.
_CODE_CACHE: dict[Path, tuple[int, int, list[str]]] = {}
# Past this size a file is generated or data, not code someone edits by hand: it is not read.
CODE_FILE_MAX = 1 << 20


def code_identifiers(path: Path) -> list[str]:
    """The distinctive identifiers (`tether.anchors.locations.identifiers`) of the file at `path`."""
    try:
        info = path.stat()
    except OSError:
        return []
    if not stat.S_ISREG(info.st_mode) or info.st_size > CODE_FILE_MAX:
        return []
    cached = _CODE_CACHE.get(path)
    if cached is not None and cached[:2] == (info.st_size, info.st_mtime_ns):
        return cached[2]
    try:
        data = read_limited(path, CODE_FILE_MAX)  # never blocks, whatever replaced the file since
    except OSError:
        return []
    found = (
        [] if b"\0" in data[:8192] else identifiers(data.decode("utf-8", "replace"), scoring.CODE_IDENTIFIERS)
    )
    if len(_CODE_CACHE) > 256:
        _CODE_CACHE.clear()
    _CODE_CACHE[path] = (info.st_size, info.st_mtime_ns, found)
    return found
