"""Recall's channels (DESIGN §4.2): each adds the memories it finds to the pool, with rank credit and evidence.

- file affinity: memories naming a touched file or a directory holding it, among paths that exist;
- path words: memories whose text mentions the touched files' names and directories (orders, not evidence);
- co-change: memories on the files that change together with the touched ones in git;
- text: two full-text indexes (words, trigrams);
- semantic: cosine of the query's embedding with the memories';
- pinned;
- anchor: memories anchored at or near the edit's location, and memories naming what the edit writes;
- code: memories naming identifiers the touched files' current content uses;
- place words: the query against the code around each anchor of the touched files' memories.
"""

from __future__ import annotations

import bisect
import math
import stat
from collections.abc import Callable, Mapping
from pathlib import Path

from tether.anchors.locations import Location, distinctive, gap, identifiers, names, words_of
from tether.anchors.resolve import FileView, resolve
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


def code_channel(store: Store, code: Callable[[str], list[str]], touched: list[str], pool: Pool) -> None:
    """Memories naming an identifier the touched files use (`code(path)`: the file's distinctive
    identifiers, in order of first use), each credited by how many it names (`scoring.code_hit`).

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
        named = tuple(name for name in identifiers(memory.text, limit=100) if name in used)
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


def pinned_channel(store: Store, pool: Pool) -> None:
    pinned = sorted(store.find(Query(pinned=True)), key=lambda m: m.updated, reverse=True)
    for rank, memory in enumerate(pinned, 1):
        c = pool.candidate(memory.id)
        c.rrf["pinned"] = scoring.rrf(rank)
        c.evidence.pinned = True


def anchor_channel(store: Store, places: list[Location], view: Callable[[str], FileView], pool: Pool) -> None:
    """Memories anchored at or near where the edit lands, by distance (`scoring.anchor_closeness`), anchors
    resolved against the file as it is now (`view`); and memories naming an identifier the edit writes or the
    definition it lands in: a rule naming `ModelRetry` comes with an edit inside `class ModelRetry`."""
    spans: dict[str, list[tuple[int, int]]] = {}
    written: dict[str, None] = {}
    defined: dict[str, None] = {}
    edit_words: set[str] = set()
    for place in places:
        file = view(place.path)
        span = place.lines
        if span is None and place.symbol:
            found = file.symbol(place.symbol)
            span = (found.start, found.end) if found is not None else None
        if span is not None:
            spans.setdefault(place.path, []).append(span)
            old = "\n".join(file.lines[span[0] - 1 : span[1]])
            edit_words |= words_of(f"{old}\n{place.text}")
            for definition in file.definitions() or []:
                if (
                    definition.start <= span[0]
                    and span[1] <= definition.end
                    and distinctive(definition.short)
                ):
                    defined.setdefault(definition.short, None)
        written.update(dict.fromkeys(identifiers(place.text)))
    owners = store.owners(list(spans))
    memories = store.memories(mid for mids in owners.values() for mid in mids)
    hits: dict[str, tuple[float, int, str]] = {}  # memory id → (magnitude, distance, label)
    for path, edits in spans.items():
        file = view(path)
        for mid in owners.get(path, []):
            memory = memories.get(mid)
            for anchor in memory.anchors if memory is not None else ():
                if anchor.path != path:
                    continue
                now = resolve(anchor, file).anchor
                if now.lost or now.lines is None:
                    continue  # the code is gone: the memory is about its file only
                within = file.symbol(now.within, now.lines[0]) if now.within else None
                for edit in edits:
                    distance, side = gap(now.lines, edit)
                    far = scoring.anchor_distance(distance, side, bool(now.symbol))
                    # Distance is a magnitude over the whole file, with no cut-off: a memory 60 lines away
                    # is likelier about this edit than one 600 lines away (`scoring.ANCHOR_NEAR`).
                    magnitude = scoring.anchor_closeness(far)
                    if within is not None and within.start <= edit[0] and edit[1] <= within.end:
                        magnitude += scoring.ANCHOR_WITHIN
                    if mid not in hits or hits[mid][0] < magnitude:
                        hits[mid] = (magnitude, distance if far <= scoring.ANCHOR_NEAR else -1, now.label())
    if scoring.EDIT_TEXT_MAX and edit_words:
        _edit_text(memories, edit_words, pool)
    ranks = competition_ranks({mid: hit[0] for mid, hit in hits.items()})
    for mid, (magnitude, distance, label) in hits.items():
        c = pool.candidate(mid)
        c.magnitude.anchor = magnitude
        c.rrf["anchor"] = scoring.rrf(ranks[mid])
        if distance >= 0:  # near enough to say so: the receipt names the place, and it is evidence
            c.evidence.anchor = label
            c.evidence.anchor_distance = distance
    idents = list(dict.fromkeys([*defined, *written]))
    if not idents:
        return
    # Memories naming them: the touched files' own, and any other the word index finds (checked word for word).
    matched = {h.id for h in store.text([i.lower() for i in idents], limit=50, trigram=False)}
    others = store.memories(matched - set(memories))
    defining: dict[str, float] = {}
    for mid, memory in {**memories, **others}.items():
        text = f"{memory.summary}\n{memory.details}"
        own = mid in memories  # a memory of an edited file
        # A plain word (`render`, the function being edited) says something only in an edited file's memory.
        named_here = [i for i in idents if names(text, i) and (own or i in written or distinctive(i))]
        if not named_here:
            continue
        c = pool.candidate(mid)
        c.evidence.ident = named_here[0]
        c.magnitude.ident = scoring.IDENT_HIT
        # A memory tied to no file of its own (a rule, a repository-wide decision) naming the definition the
        # edit lands in is anchored there, as if it were a symbol anchor on it: `ModelRetry`'s rule comes
        # with an edit inside `class ModelRetry`. A memory about other files stays about them.
        named = next((i for i in named_here if i in defined and distinctive(i)), "")
        if named and not own and all(f.endswith("/") for f in memory.files):
            c.evidence.ident, c.evidence.ident_defined = named, True
            c.magnitude.ident += scoring.FILE_HIT_FLOOR + scoring.ANCHOR_MAX
            defining[mid] = c.magnitude.ident
    for mid, rank in competition_ranks(defining).items():
        pool.candidate(mid).rrf["anchor"] = scoring.rrf(rank)


def place_channel(
    memories: Mapping[str, Memory],
    touched: list[str],
    words: set[str],
    view: Callable[[str], FileView],
    pool: Pool,
) -> None:
    """The query against the code around each anchor of the touched files' memories (the anchor's lines and
    `scoring.PLACE_LINES` either side, resolved against the file as it is now): a prompt about the upload
    retry finds the warning that sits beside `retry_upload`, whatever the warning's own words. idf among
    those places, relative to the best, up to `scoring.PLACE_TEXT_MAX`; it orders a file's memories, it is
    not evidence of its own. `memories`: the candidates, already read (the file channel found the touched
    files' own)."""
    owners: dict[str, list[str]] = {path: [] for path in touched}
    for mid, memory in memories.items():
        if memory.status == "active" and memory.anchors:
            for path in memory.files:
                if path in owners:
                    owners[path].append(mid)
    around: dict[str, set[str]] = {}
    for path in touched:
        file = view(path) if owners.get(path) else None
        if file is None or not file.exists:
            continue
        at = _lines_holding(file.lines, words)
        if not at:
            continue
        for mid in owners[path]:
            for anchor in memories[mid].anchors:
                if anchor.path != path:
                    continue
                now = resolve(anchor, file).anchor
                if now.lost or now.lines is None:
                    continue
                first, last = now.lines[0] - scoring.PLACE_LINES, now.lines[1] + scoring.PLACE_LINES
                found = {
                    w
                    for w, lines in at.items()
                    if bisect.bisect_left(lines, first) < bisect.bisect_right(lines, last)
                }
                around.setdefault(mid, set()).update(found)
    df: dict[str, int] = {}
    for found in around.values():
        for word in found:
            df[word] = df.get(word, 0) + 1
    if not df:
        return
    count = len(around)
    weights = {word: math.log(1.0 + count / n) for word, n in df.items()}
    scores = {mid: sum(weights[w] for w in found) for mid, found in around.items()}
    best = max(scores.values())
    for mid, score in scores.items():
        if score > 0:
            pool.candidate(mid).magnitude.place = scoring.PLACE_TEXT_MAX * score / best


def _lines_holding(lines: list[str], words: set[str]) -> dict[str, list[int]]:
    """For each of `words`, the lines (1-based, ascending) whose `words_of` holds it: a substring test first,
    so only the few lines that may hold a word are split into words."""
    lowered = [line.lower() for line in lines]
    split: dict[int, set[str]] = {}
    out: dict[str, list[int]] = {}
    for word in words:
        for number, line in enumerate(lowered, 1):
            if word in line:
                if number not in split:
                    split[number] = words_of(lines[number - 1])
                if word in split[number]:
                    out.setdefault(word, []).append(number)
    return out


def _edit_text(memories: dict[str, Memory], edit_words: set[str], pool: Pool) -> None:
    """The edit's words as a query over the edited files' memories: idf among them, relative to the best."""
    texts = {mid: words_of(f"{m.summary}\n{m.details}") for mid, m in memories.items()}
    df: dict[str, int] = {}
    for found in texts.values():
        for word in found & edit_words:
            df[word] = df.get(word, 0) + 1
    if not df:
        return
    count = len(texts)
    weights = {word: math.log(1.0 + count / n) for word, n in df.items()}
    scores = {mid: sum(weights[w] for w in found if w in weights) for mid, found in texts.items()}
    best = max(scores.values())
    for mid, score in scores.items():
        if score > 0:
            pool.candidate(mid).magnitude.edit = scoring.EDIT_TEXT_MAX * score / best


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
