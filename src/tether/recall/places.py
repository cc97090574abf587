"""Recall's channels that read the code at memories' anchors (DESIGN §4.2):

- anchor: memories anchored at or near the edit's location, and memories naming what the edit writes or the
  definition it lands in;
- place words: the query against the code around each anchor of the touched files' memories, before the edit's
  place is known;
- recent changes: the touched files' memories anchored beside the lines their last commits changed;
- beside the first pick: once the first memory to inject is known, the next few by how near their anchors are
  to its anchor.

Each resolves anchors against the file as it is now (`view`: one `FileView` per touched file per recall).
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping

from tether.anchors.locations import Location, distinctive, gap, identifiers, names, words_of
from tether.anchors.resolve import FileView, Resolution
from tether.model.memory import Memory
from tether.recall import ranking, scoring
from tether.recall.channels import Pool, competition_ranks
from tether.recall.evidence import Candidate
from tether.store.base import Store


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
            for where, span in placed(file, memory) if memory is not None else ():
                now = where.anchor
                within = file.symbol(now.within, span[0]) if now.within else None
                for edit in edits:
                    distance, side = gap(span, edit)
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
    owners: Mapping[str, list[str]],
    words: set[str],
    view: Callable[[str], FileView],
    pool: Pool,
) -> None:
    """The query against the code around each anchor of the touched files' memories (the anchor's lines and
    `scoring.PLACE_LINES` either side, resolved against the file as it is now, and the name of the
    definition holding them): a prompt about the upload retry finds the warning that sits beside, or inside,
    `retry_upload`, whatever the warning's own words. idf among
    those places, relative to the best, up to `scoring.PLACE_TEXT_MAX`; it orders a file's memories, it is
    not evidence of its own. An anchor only widened to the definition that held its lines (they were edited
    away) gets nothing, as in `recent_channel`. `memories`: the candidates, already read (the file channel found
    the touched files' own); `owners`: those with anchors by touched file (`anchored`)."""
    around: dict[str, set[str]] = {}
    for path in owners:
        file = view(path) if owners[path] else None
        if file is None or not file.exists:
            continue
        at = _lines_holding(file.lines, words)
        if not at:
            continue
        for mid in owners[path]:
            for where, span in placed(file, memories[mid], widened=False):
                now = where.anchor
                first, last = span[0] - scoring.PLACE_LINES, span[1] + scoring.PLACE_LINES
                found = {
                    w
                    for w, lines in at.items()
                    if bisect.bisect_left(lines, first) < bisect.bisect_right(lines, last)
                }
                if now.name:  # the definition holding the lines, however far above its name is
                    found |= words & words_of(now.name)
                around.setdefault(mid, set()).update(found)
    df: dict[str, int] = {}
    for found in around.values():
        for word in found:
            df[word] = df.get(word, 0) + 1
    if not df:
        return
    count = len(around)
    weights = {word: math.log(1.0 + count / n) for word, n in df.items()}
    scores = {mid: math.fsum(weights[w] for w in found) for mid, found in around.items()}
    best = max(scores.values())
    for mid, score in scores.items():
        if score > 0:
            pool.candidate(mid).magnitude.place = scoring.PLACE_TEXT_MAX * score / best


def placed(
    file: FileView, memory: Memory, widened: bool = True
) -> Iterator[tuple[Resolution, tuple[int, int]]]:
    """Where `memory`'s anchors on `file` are now, and their lines: those still found there (an anchor whose
    code is gone leaves the memory about its file only). `widened=False` leaves out too an anchor only
    widened to the definition that held its lines (they were edited away): the definition is not where it
    was, so there is no line to measure from."""
    for anchor in memory.anchors:
        if anchor.path == file.path:
            found = file.resolved(anchor)
            if (
                not found.anchor.lost
                and found.anchor.lines is not None
                and (widened or found.how != "widened")
            ):
                yield found, found.anchor.lines


def anchored(memories: Mapping[str, Memory], touched: list[str]) -> dict[str, list[str]]:
    """The active candidates with anchors, by touched file they are on (in `touched`'s order)."""
    owners: dict[str, list[str]] = {path: [] for path in touched}
    for mid, memory in memories.items():
        if memory.status == "active" and memory.anchors:
            for path in memory.files:
                if path in owners:
                    owners[path].append(mid)
    return owners


def recent_channel(
    memories: Mapping[str, Memory],
    owners: Mapping[str, list[str]],
    recent: Callable[[list[str]], Mapping[str, list[tuple[int, int]]]],
    view: Callable[[str], FileView],
    pool: Pool,
) -> None:
    """The touched files' memories by how near their anchors are to the lines the file's last commits changed
    and to its uncommitted changes (`recent`: those lines per path, `tether.repo.recent`), as the edit's place
    is measured (`scoring.anchor_distance`), up to `scoring.RECENT_MAX`: where work on the file went lately
    is where the next change often lands. It orders a file's memories, it is not evidence of its own.
    `owners`: the candidates with anchors by touched file (`anchored`)."""
    paths = [path for path, mids in owners.items() if mids][: scoring.RECENT_FILES]
    if not paths:
        return
    lines = recent(paths)
    for path in paths:
        runs = sorted(lines.get(path) or ())
        file = view(path) if runs else None
        if file is None or not file.exists:
            continue
        starts = [run[0] for run in runs]
        for mid in owners[path]:
            best = 0.0
            for where, span in placed(file, memories[mid], widened=False):
                now = where.anchor
                # The runs are git's hunks, in order and apart: the last starting at or above the anchor's
                # end and the next one are the nearest on either side.
                i = bisect.bisect_right(starts, span[1])
                for run in runs[max(i - 1, 0) : i + 1]:
                    distance, side = gap(span, run)
                    far = scoring.anchor_distance(distance, side, bool(now.symbol))
                    best = max(best, scoring.recent_closeness(far))
            c = pool.candidate(mid) if best > 0 else None
            if c is not None and best > (c.magnitude.recent or 0.0):  # its nearest file's, if on several
                c.magnitude.recent = best


def beside_first(
    ranked: Iterable[Candidate],
    touched: list[str],
    view: Callable[[str], FileView],
    eligible: Callable[[Candidate], bool],
) -> Iterator[Candidate]:
    """`ranked` with the `scoring.BESIDE_DEPTH - 1` candidates after the first `eligible` one ordered again: each
    gets up to `scoring.BESIDE_MAX` for an anchor near one of the first's in the same touched file
    (`scoring.beside_closeness`). A commit's changed lines cluster, and so do the warnings beside them: when the
    best match sits in one region of a big file, its neighbours there are likelier than an equal score
    elsewhere. The first keeps its place; a first with no anchor in a touched file changes nothing."""
    candidates = iter(ranked)
    if not scoring.BESIDE_MAX:
        yield from candidates
        return
    first = None
    for c in candidates:
        yield c
        if eligible(c):
            first = c
            break
    spans = _spans(first, touched, view) if first is not None else {}
    if first is None or not spans:
        yield from candidates
        return
    head = list(itertools.islice(candidates, scoring.BESIDE_DEPTH - 1))
    for c in head:
        near = min(
            (
                gap(span, there)[0]
                for path, at in _spans(c, touched, view).items()
                for span in at
                for there in spans.get(path, ())
            ),
            default=None,
        )
        if near is None:
            continue
        closeness = scoring.beside_closeness(near)
        c.magnitude.beside = closeness
        c.evidence.beside, c.evidence.beside_distance = first.memory_id, near
        c.score += closeness * c.multiplier
    head.sort(key=ranking.order)
    yield from head
    yield from candidates


def _spans(
    c: Candidate, touched: list[str], view: Callable[[str], FileView]
) -> dict[str, list[tuple[int, int]]]:
    """Where `c`'s anchors on the touched files are now (those still found there, not only widened)."""
    memory = c.memory
    if memory is None or not memory.anchors:
        return {}
    out: dict[str, list[tuple[int, int]]] = {}
    for path in {anchor.path for anchor in memory.anchors}.intersection(touched):
        file = view(path)
        at = [span for _, span in placed(file, memory, widened=False)] if file.exists else []
        if at:
            out[path] = at
    return out


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
    scores = {mid: math.fsum(weights[w] for w in found if w in weights) for mid, found in texts.items()}
    best = max(scores.values())
    for mid, score in scores.items():
        if score > 0:
            pool.candidate(mid).magnitude.edit = scoring.EDIT_TEXT_MAX * score / best
