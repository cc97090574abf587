"""What a warm store's quiet moments make ready for the next searches: every active memory, every path's
owners, and the postings of the index's most common words.

A term's first search after a write is one FTS5 query with bm25 per index, and its cost grows with the rows
that hold it: a word a sixth of the memories hold costs 2-5 ms per index at 10,000 memories, a rare one
0.05. The common words are few and are the ones prompts keep using (a project's own vocabulary), so a
long-lived process (the resident, between requests) fetches theirs ahead: the first sight of any other term
costs at most what the least common of them would have. Which words: those of a sample of the active
memories (`SAMPLE` rows, spread over the table) held by at least `COMMON_SHARE` of it, most common first, at
most `COMMON_MAX`, found once per process (the choice only decides what is fetched ahead: a stale one costs
speed, never a result). The postings are fetched again after each write that changed the full-text indexes.

    >>> Prefetch().step(store, postings, owners, 0.01)  # doctest: +SKIP
    False
"""

from __future__ import annotations

import time
from collections import Counter
from typing import TYPE_CHECKING

from tether.model.text import terms
from tether.store.sqlite.owners import PathOwners
from tether.store.sqlite.postings import TRIGRAM, WORDS, TermPostings

if TYPE_CHECKING:
    from tether.store.sqlite.store import SQLiteStore

# Rows read to find the common words (every n-th active one): a word held by 2% of them is common in the
# whole with near certainty, and 2,000 rows are counted in ~20 ms.
SAMPLE = 2_000
# A word held by this share of the sampled memories is fetched ahead...
COMMON_SHARE = 0.02
# ... and at most this many of them, most common first (at 10,000 memories, ~100 words of ~1,000 rows
# each: ~0.4 s of fetching per write, spread over the quiet moments).
COMMON_MAX = 150


class Prefetch:
    """The quiet moments' work for one warm store: where it got to, for which version of the index."""

    def __init__(self) -> None:
        self.common: list[str] | None = None
        self._done: str | None = None  # the version everything was made ready for

    def step(self, store: SQLiteStore, postings: TermPostings, owners: PathOwners, seconds: float) -> bool:
        """Make ready what fits in about `seconds`; True when everything is, for the index as it is now."""
        until = time.monotonic() + seconds
        version = store.version()
        if version == self._done:
            return True
        store.memories(())  # every active memory, read at once (`tether.store.sqlite.memo`)
        owners.load_all(version=version)
        if self.common is None:
            self.common = common_words(store)
        if not postings.prefetch(WORDS, self.common, version=version, until=until):
            return False
        grams = [word for word in self.common if len(word) >= 3]  # what the trigram index is asked for
        if not postings.prefetch(TRIGRAM, grams, version=version, until=until):
            return False
        self._done = version
        return True


def common_words(store: SQLiteStore) -> list[str]:
    """The search terms (`tether.model.text.terms`) held by `COMMON_SHARE` of a sample of the active
    memories, most common first (ties alphabetically)."""
    conn = store.conn
    count = conn.execute("SELECT count(*) FROM memories WHERE status = 'active'").fetchone()[0]
    stride = max(1, count // SAMPLE)
    held: Counter[str] = Counter()
    rows = 0
    for summary, details, files in conn.execute(
        "SELECT summary, details, files FROM memories WHERE status = 'active' AND rowid % ? = 0", (stride,)
    ):
        held.update(terms(f"{summary}\n{details}\n{files}"))  # `terms` gives each word once
        rows += 1
    least = max(2, rows * COMMON_SHARE)
    ranked = sorted((word for word, n in held.items() if n >= least), key=lambda w: (-held[w], w))
    return ranked[:COMMON_MAX]
