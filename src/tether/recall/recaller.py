"""Recall (DESIGN §4): rank memories by what the agent touches and asks, with a receipt for each.

Channels (`tether.recall.channels`) each give a ranked list; reciprocal-rank fusion adds their rank credit,
bounded magnitudes add how strong each hit was, and feedback, recency, blast radius and priority adjust.
The constants live in `tether.recall.scoring`; what is known of each candidate in `tether.recall.evidence`.

A `Recaller` sees the store through its protocols, the repo map, an embedder (or none: no semantic channel)
and the clock; `Workspace.recaller()` makes one.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from tether.anchors.locations import Location, split_places
from tether.anchors.resolve import FileView
from tether.config import Config
from tether.embed.base import Embedder
from tether.errors import NotFoundError, ValidationError
from tether.model.memory import check_id, normalize_path
from tether.model.prompt import clauses, path_terms, sanitize
from tether.model.text import terms
from tether.recall import channels as ch
from tether.recall import places as places_ch
from tether.recall import ranking, scoring
from tether.recall.cache import RecallCache
from tether.recall.evidence import CHANNELS, Candidate, Recalled, RecallResult, covers, names_file
from tether.repo.map import RepoMap
from tether.repo.recent import recent_lines
from tether.store.base import Event, Store, Telemetry, pull_rate


@dataclass(frozen=True)
class RecallSettings:
    """The injection's budget: the `recall.*` config keys (their meaning and defaults are in `tether.config`)."""

    limit: int
    budget: int
    cooldown_turns: int

    @classmethod
    def from_config(cls, config: Config) -> RecallSettings:
        return cls(
            config.integer("recall.limit"),
            config.integer("recall.budget"),
            config.integer("recall.cooldown_turns"),
        )


class Recaller:
    """Recall over one store. Cheap to create; one per request is fine."""

    def __init__(
        self,
        store: Store,
        *,
        root: Path | None,
        cwd: Path,
        clock: Callable[[], datetime],
        embedder: Embedder | None = None,
        repo: RepoMap | None = None,
        settings: RecallSettings | None = None,
        cache: RecallCache | None = None,
    ) -> None:
        """`cache`: what recall keeps between recalls over the same index (a long-lived process passes one
        `RecallCache` to each of its recallers); without it, a cache of this recaller's own."""
        self.store = store
        self.root = root
        self.cwd = cwd
        self.clock = clock
        self.embedder = embedder
        self.repo = repo
        self.settings = settings or RecallSettings.from_config(Config.load())
        self.cache = cache if cache is not None else RecallCache()

    # -- public -----------------------------------------------------------------------------------

    def recall(
        self,
        prompt: str = "",
        files: Sequence[str] = (),
        *,
        session: str | None = None,
        turn: int | None = None,
        limit: int | None = None,
        budget: int | None = None,
        record: bool = True,
        channels: Collection[str] = CHANNELS,
        require_evidence: bool = True,
        locations: Sequence[Location] = (),
    ) -> RecallResult:
        """Rank memories for a prompt and the files being touched, filter, budget, and record surfacings.

        A file may carry the place being edited (`src/upload.py:120`, `src/upload.py::retry`), or `locations`
        say it: memories anchored there rank first among the file's.

        >>> ws.recaller().recall("why does upload retry?", ["src/upload.py:40"]).memories  # doctest: +SKIP
        """
        unknown = set(channels) - set(CHANNELS)
        if unknown:
            raise ValidationError(
                f"unknown channel(s) {', '.join(sorted(unknown))}: use {', '.join(CHANNELS)}"
            )
        limit = self.settings.limit if limit is None else limit
        budget = self.settings.budget if budget is None else budget
        query = sanitize(prompt or "")
        touched, places = self.places(files, locations)
        views: dict[str, FileView] = {}
        ordered = self._rank(query, touched, session, channels, places=places, views=views)
        ranked = self._beside_first(ordered, touched, places, views, require_evidence)
        quiet: set[str] = set()
        if session and turn is not None:
            quiet = self.store.surfaced_in_session(session, turn - self.settings.cooldown_turns)
        chosen: list[Recalled] = []
        used = 0
        slots = 0
        for candidate in ranked:
            if slots >= limit:
                break
            # Pinned memories pierce the budget but do not crowd out evidence: on their own they are what
            # session start shows, not what every prompt gets.
            if require_evidence and not candidate.relevant:
                continue
            if candidate.memory_id in quiet:
                # Shown a few turns ago: it keeps its slot, quietly. Weaker matches do not move up to fill
                # it (the best answer for this prompt is already in the agent's context).
                slots += 1
                continue
            recalled = Recalled.of(candidate, len(chosen) + 1)
            cost = len(recalled.line()) + 1
            if used + cost > budget and not recalled.memory.pinned:
                continue
            used += cost
            slots += 1
            chosen.append(recalled)
        result = RecallResult(query, touched, chosen, len(ordered))
        if record:
            self.record(result, session, turn)
        return result

    def record(self, result: RecallResult, session: str | None, turn: int | None) -> None:
        """Record that `result`'s memories surfaced (a recall made with `record=False`, then chosen)."""
        if result.memories:
            now = self.clock()
            self.store.record(
                Event(r.memory.id, "surfaced", now, session, turn, {"receipt": r.receipt, "score": r.score})
                for r in result.memories
            )

    def search(
        self,
        query: str,
        *,
        files: Sequence[str] = (),
        limit: int = 10,
        category: str | None = None,
        weak: bool = True,
    ) -> list[Recalled]:
        """The best matches for an asked-for search, with the recall fusion. Nothing is recorded.

        Not gated like injection: whoever asks gets the nearest memories, each marked `strong` (it would
        pass the injection's gate) or `weak` (only ranked near), strong first; `weak=False` keeps the strong
        alone. Memories found only for being pinned are left out: pinning says nothing about this query."""
        touched, places = self.places(files)
        ranked = self._rank(sanitize(query) or query, touched, None, CHANNELS, places=places)
        found = [
            c
            for c in ranked
            if (not category or (c.memory is not None and c.memory.category == category))
            and (c.relevant or (weak and bool(set(c.rrf) - {"pinned"})))
        ]
        found.sort(key=lambda c: not c.relevant)  # stable: strong first, each in rank order
        return [Recalled.of(c, rank) for rank, c in enumerate(found[:limit], 1)]

    def order(
        self, prompt: str, files: Sequence[str], among: Sequence[str], locations: Sequence[Location] = ()
    ) -> list[str]:
        """`among` (memory ids) in the order recall ranks them for `prompt` and `files`, ungated and unrecorded;
        the ones it does not reach (inactive, or found by no channel) keep their given order after it.

        A read's hint lists a file's gotchas by it, so that the first few it shows are the ones recall would
        pick among them: the prompt, the code at their anchors, the file's recent changes and past follow-ups."""
        wanted = dict.fromkeys(among)
        touched, places = self.places(files, locations)
        views: dict[str, FileView] = {}
        ranked = self._rank(sanitize(prompt or ""), touched, None, CHANNELS, places=places, views=views)
        found: list[str] = []
        for candidate in self._beside_first(ranked, touched, places, views, require_evidence=False):
            if candidate.memory_id in wanted:
                found.append(candidate.memory_id)
                if len(found) == len(wanted):
                    break
        reached = set(found)
        return found + [mid for mid in wanted if mid not in reached]

    def explain(
        self, memory_id: str, prompt: str = "", files: Sequence[str] = (), session: str | None = None
    ) -> tuple[Candidate, int | None]:
        """The full score breakdown of one memory for this context, and its rank among those injectable."""
        mid = check_id(memory_id)
        memory = self.store.get(mid)
        if memory is None:
            raise NotFoundError(f"no memory {mid}: `tether list --all` shows every id")
        touched, places = self.places(files)
        views: dict[str, FileView] = {}
        query = sanitize(prompt or "")
        ordered = self._rank(query, touched, session, CHANNELS, include=memory.id, places=places, views=views)
        ranked = self._beside_first(ordered, touched, places, views, require_evidence=True)
        rank = 0
        for candidate in ranked:
            if candidate.has_evidence:
                rank += 1
            if candidate.memory_id == memory.id:
                return candidate, (rank if candidate.has_evidence else None)
        return Candidate(memory.id, memory=memory), None

    def normalize(self, files: Sequence[str]) -> list[str]:
        """Touched files as repo-relative paths; files outside the repository say nothing and are dropped."""
        out: dict[str, None] = {}
        for path in files:
            try:
                out.setdefault(normalize_path(path, self.root, self.cwd).rstrip("/"), None)
            except ValidationError:
                continue
        return list(out)

    def places(
        self, files: Sequence[str], locations: Sequence[Location] = ()
    ) -> tuple[list[str], list[Location]]:
        """Touched files and the places in them (`path:123`, `path::Symbol`, `locations`), repo-relative."""
        paths, places = split_places(files, lambda raw: self.root is not None and (self.root / raw).exists())
        found = [replace(p, path=rel[0]) for p in [*places, *locations] if (rel := self.normalize([p.path]))]
        return self.normalize([*paths, *(p.path for p in found)]), found

    # -- ranking ----------------------------------------------------------------------------------

    def _rank(
        self,
        query: str,
        touched: list[str],
        session: str | None,
        channels: Collection[str],
        include: str | None = None,
        places: Sequence[Location] = (),
        views: dict[str, FileView] | None = None,
    ) -> Collection[Candidate]:
        """Every candidate, best first (`Ranking`: each scored as the order reaches it). `views`: the touched
        files as anchors see them, read once per recall (the caller's, to read them again after)."""
        self.cache.check(self.store.version())
        pool = ch.Pool()
        words = terms(query)
        parts = clauses(query)
        touched_terms = path_terms(touched) if touched else []
        if "file" in channels and touched:
            self._file_channel(touched, pool)
        if "path" in channels and touched:
            self._path_channel(touched_terms, pool)
        if "cochange" in channels and touched:
            ch.cochange_channel(self.store, self.repo, touched, pool)
        if "text" in channels and words:
            ch.text_channel(self.store, words, pool)
            if scoring.SCORE_EVERY_CANDIDATE:
                ch.text_among(self.store, words, pool)
        if "semantic" in channels and query.strip() and self.embedder is not None:
            sem_query = query
            if scoring.SEMANTIC_WITH_PATH_TERMS and touched:
                sem_query = f"{query} {' '.join(touched_terms)}"
            ch.semantic_channel(self.store, self.embedder, sem_query, pool)
        if "pinned" in channels:
            ch.pinned_channel(self.cache.pinned(lambda: ch.pinned(self.store)), pool)
        views = {} if views is None else views
        if "anchor" in channels and places:
            self._anchor_channel(list(places), pool, views)
        if "code" in channels and touched and self.root is not None:
            ch.code_channel(self.store, self._code, touched, pool, lambda m: self.cache.facts(m).identifiers)
        if include:
            pool.candidate(include)
        if not pool:
            return ()
        memories = self.store.memories(pool)
        if "anchor" in channels and touched and self.root is not None:
            owners, file = places_ch.anchored(memories, touched), lambda path: self._view(path, views)
            if words and scoring.PLACE_TEXT_MAX:
                places_ch.place_channel(memories, owners, set(words), file, pool)
            if scoring.RECENT_MAX and self.repo:
                places_ch.recent_channel(memories, owners, self._recent, file, pool)
        telemetry = self.store.telemetry(list(memories))
        # How readily the agent follows up what it is shown, the ignored penalty's scale (`scoring.ignored_after`):
        # the store's telemetry totals (`RecallCache.pull_rate`), read only when some candidate could be penalized
        # (shown the floor's number of times, never acted on); otherwise any rate scores the same.
        rate = 1.0
        if any(t.acted == 0 and t.surfaced >= scoring.IGNORED_AFTER for t in telemetry.values()):
            rate = self.cache.pull_rate(lambda: pull_rate(*self.store.feedback_totals()))
        now = self.clock()
        unused = Telemetry()  # read only: a memory never surfaced
        kept: list[Candidate] = []
        for mid, c in pool.items():
            memory = memories.get(mid)
            if memory is None:
                continue
            if memory.status != "active" and mid != include:
                continue
            if memory.scope == "session" and memory.session != session:
                continue
            if memory.pinned and memory.files and not any(self._exists(p) for p in memory.files):
                continue  # pinned to files that are all gone: a dead reference, not a standing order
            c.memory = memory
            kept.append(c)

        def score(c: Candidate) -> None:
            self._score(c, touched, words, parts, telemetry.get(c.memory_id, unused), now, rate)

        def bound(c: Candidate) -> float:  # recency and feedback as `_adjust` makes them
            t, created = telemetry.get(c.memory_id, unused), c.memory.created  # type: ignore[union-attr]
            recency, feedback = (
                scoring.recency(t.last_acted or created, now),
                scoring.feedback(t.surfaced, t.acted, rate),
            )
            return ranking.bound(c, bool(touched), recency, feedback)

        return ranking.Ranking(kept, score, bound, include=include)

    def _score(
        self,
        c: Candidate,
        touched: list[str],
        words: list[str],
        parts: list[list[str]],
        telemetry: Telemetry,
        now: datetime,
        rate: float,
    ) -> None:
        """Score one candidate in full: what its channels found, its coverage of the query, recency,
        feedback (at the project's pull `rate`) and priority. It may only lower what `ranking.bound` allows
        (the ranking relies on it)."""
        memory = c.memory
        assert memory is not None
        e, m = c.evidence, c.magnitude
        if m.file is not None:
            m.file *= scoring.breadth(len(memory.files))
            exact_file = ranking.exact_file(c)
            if exact_file and not scoring.PATH_ON_EXACT_FILE:
                # It names the place itself: as much as path words can say, for each of the file's
                # memories alike, so they never reorder them (and never favour a mere mention).
                m.path = scoring.PATH_TEXT_MAX
                c.rrf.pop("path", None)
            if exact_file and not scoring.CODE_ON_EXACT_FILE:
                m.code = None
        if e.text is not None:
            e.text_match = covers(c, self.cache.facts(memory).vocabulary.found(words), words, parts)
        if "path" in c.rrf:
            if scoring.ROOT_PATH_EVIDENCE and not memory.files and m.path:
                e.paths = True  # it applies everywhere, and the touched paths' words tie it here
            named = names_file(memory, touched, self.cache.facts(memory).prose)
            if named:
                e.names = named
                m.names = scoring.NAMED_FILE_HIT
        self._adjust(c, telemetry, now, rate)
        if touched and memory.files and e.file is None and e.cochange is None:
            c.score *= scoring.OUT_OF_SCOPE_FACTOR

    def _beside_first(
        self,
        ranked: Iterable[Candidate],
        touched: list[str],
        places: Sequence[Location],
        views: dict[str, FileView],
        require_evidence: bool,
    ) -> Iterable[Candidate]:
        """The injection's order: the few after the first pick favour its neighbours (`places.beside_first`)."""
        if places or not touched or self.root is None:  # with the edit's place, the anchor channel orders
            return ranked
        view = lambda path: self._view(path, views)  # noqa: E731
        return places_ch.beside_first(ranked, touched, view, lambda c: c.relevant or not require_evidence)

    # Channels a variant may override (the quality benchmark's tuning variants do).

    def _file_channel(self, touched: list[str], pool: ch.Pool) -> None:
        ch.file_channel(self.store, self.repo, self._exists, touched, pool)

    def _path_channel(self, touched_terms: list[str], pool: ch.Pool) -> None:
        ch.path_channel(self.store, touched_terms, pool)

    def _anchor_channel(self, places: list[Location], pool: ch.Pool, views: dict[str, FileView]) -> None:
        places_ch.anchor_channel(self.store, places, lambda path: self._view(path, views), pool)

    def _view(self, path: str, views: dict[str, FileView]) -> FileView:
        if path not in views:
            views[path] = FileView.read(self.root, path) if self.root else FileView(path, None)
        return views[path]

    def _recent(self, paths: list[str]) -> dict[str, list[tuple[int, int]]]:
        """The lines of the touched files their last commits changed, and what is not committed yet."""
        assert self.root is not None
        if self.repo is None or not self.repo.is_git():
            return {}
        # The map's rows hold paths from its own root: of use only when that is recall's.
        tables = self.repo.tables if self.repo.root == self.root else None
        return recent_lines(self.root, paths, scoring.RECENT_COMMITS, scoring.RECENT_HORIZON, tables)

    def _code(self, path: str) -> list[str]:
        """The distinctive identifiers of a touched file as it is on disk (none for a directory, a missing
        or binary file), cached by size and modification time."""
        assert self.root is not None
        return ch.code_identifiers(self.root / path)

    def _adjust(self, c: Candidate, telemetry: Telemetry, now: datetime, rate: float) -> None:
        """Recency (anchored on the last use, not the last showing), feedback (at the project's pull `rate`,
        `scoring.ignored_after`), then priority's multiplier."""
        memory = c.memory
        assert memory is not None
        anchor = telemetry.last_acted or memory.created
        c.magnitude.recency = scoring.recency(anchor, now)
        feedback = scoring.feedback(telemetry.surfaced, telemetry.acted, rate)
        if feedback:
            c.magnitude.feedback = feedback
        base = sum(c.rrf.values()) + c.magnitude.total()
        c.multiplier = scoring.HIGH_PRIORITY_FACTOR if memory.priority == "high" and base > 0 else 1.0
        c.score = base * c.multiplier

    def _exists(self, ref: str) -> bool:
        if self.repo is not None and self.repo.exists(ref):
            return True
        return self.root is not None and (self.root / ref).exists()
