"""What recall derives from the memories themselves, kept between recalls while the index stands still.

Recall scores every candidate a channel brings (a few hundred per prompt at 10k memories), and most of that
work depends on the memory alone: the words of its text (`_covers`), the identifiers it names (the code
channel), its prose (a file it names, the edit's words). A long-lived process (the resident, the MCP
server) recalls again and again over the same memories: `RecallCache` keeps that work per memory.

Each entry is tied to the very `Memory` object it was made from (`Memory` is frozen): a store hands out the
same object until a write changes that memory (`SQLiteStore.memories`' memo, which drops what any process
wrote), and a changed memory is a new object whose facts are made anew, so nothing kept can be stale and
the facts of the memories a write did not touch are kept across it. The index-wide lists (the pinned
memories) are dropped when `store.version()` moves (every write, from any process, bumps it).

    >>> cache = RecallCache()
    >>> cache.check("ab:12")
    >>> cache.facts(Memory("0a1b2c3d", "Never retry uploads twice")).vocabulary.found(["retry", "download"])
    {'retry'}
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tether.anchors.locations import identifiers, words_of
from tether.model.memory import Memory
from tether.model.text import Vocabulary

# Entries kept before all are dropped and refilled: bounded memory in a long-lived process (the store's
# memo of memories has the same bound).
FACTS_MAX = 50_000
# How many of a memory's identifiers the code channel compares with the touched files' (`code_channel`).
IDENTIFIERS_MAX = 100
# How long a long-lived process trusts the project's pull rate (the store's telemetry totals: kept in step by
# SQLite, a sum over the counters in Postgres) before reading it again: every showing moves it a little, and
# its own pulls clear it at once (`forget_pull_rate`, from `Workspace.ack`); another process's are seen within
# this.
PULL_RATE_SECONDS = 30.0


class Facts:
    """What recall reads of one memory's text, each computed the first time it is asked for."""

    __slots__ = ("_identifiers", "_vocabulary", "_words", "memory", "prose")

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self.prose = f"{memory.summary}\n{memory.details}"  # what it says, without its paths and labels
        self._vocabulary: Vocabulary | None = None
        self._identifiers: tuple[str, ...] | None = None
        self._words: set[str] | None = None

    @property
    def vocabulary(self) -> Vocabulary:
        """The words of its summary, details and paths, which a query's terms are matched against."""
        if self._vocabulary is None:
            m = self.memory
            self._vocabulary = Vocabulary(f"{self.prose}\n{' '.join(m.files)}")
        return self._vocabulary

    @property
    def identifiers(self) -> tuple[str, ...]:
        """The distinctive identifiers its text names, in order (`IDENTIFIERS_MAX` at most)."""
        if self._identifiers is None:
            self._identifiers = tuple(identifiers(self.memory.text, limit=IDENTIFIERS_MAX))
        return self._identifiers

    @property
    def words(self) -> set[str]:
        """Every word and identifier part of its prose (`words_of`): what the edit's words are matched with."""
        if self._words is None:
            self._words = words_of(self.prose)
        return self._words


class RecallCache:
    """Per-memory `Facts` (per memory object), and the index-wide lists recall reads on every prompt while
    `version` holds."""

    def __init__(self, max_facts: int = FACTS_MAX) -> None:
        self.max_facts = max_facts
        self._version: str | None = None
        self._facts: dict[str, Facts] = {}
        self._pinned: list[Memory] | None = None
        self._rate: tuple[float, float] | None = None  # (pull rate, when it was summed: `time.monotonic`)

    def check(self, version: str) -> None:
        """Drop the index-wide lists when the index changed since (`Store.version()`: bumped by every write).
        The facts stay: each is checked against the memory object it is asked for."""
        if version != self._version:
            self._pinned = None
            self._rate = None
            self._version = version

    def facts(self, memory: Memory) -> Facts:
        found = self._facts.get(memory.id)
        if found is None or found.memory is not memory:
            if len(self._facts) >= self.max_facts:
                self._facts.clear()
            found = self._facts[memory.id] = Facts(memory)
        return found

    def pinned(self, find: Callable[[], list[Memory]]) -> list[Memory]:
        """The pinned memories (`find()` once per version of the index): every prompt asks for them."""
        if self._pinned is None:
            self._pinned = find()
        return self._pinned

    def pull_rate(self, find: Callable[[], float]) -> float:
        """The project's pull rate (`find()`, `Memories.pull_rate`), summed again after `PULL_RATE_SECONDS`."""
        now = time.monotonic()
        if self._rate is None or now - self._rate[1] > PULL_RATE_SECONDS:
            self._rate = (find(), now)
        return self._rate[0]

    def forget_pull_rate(self) -> None:
        """This process recorded a pull: the next recall sums the rate again."""
        self._rate = None
