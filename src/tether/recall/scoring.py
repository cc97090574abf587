"""Every constant of recall's fusion (DESIGN §4.3), each with the reason for its value.

Starting points are the numbers of the recall article (`../shared/seeds/003_*`); `benchmarks/quality`
is where a change to any of them has to earn its place.
"""

from __future__ import annotations

import math
from datetime import datetime

# Reciprocal-rank fusion constant: the standard 60 flattens the head so no single channel's first place
# decides alone.
RRF_K = 60

# A memory naming the file being edited must survive competition with weak semantic noise, not just add
# an RRF sliver: it enters with a flat magnitude this large.
FILE_HIT_FLOOR = 0.25
# Rarity premium on top of the floor: sole owner of the path gets 0.40 in all, a 46-way share 0.28
# (0.25 + 0.15 / (1 + ln 46)). A premium, never a discount below the floor.
FILE_RARITY_PREMIUM = 0.15
# A directory ref (`src/auth/`) is a claim about many files at once: weaker than naming the file itself.
# Scope is applicability (issue 17, failure class 1): a directory's rules are eligible for its files, and
# should not outweigh what the prompt and the code say. Dev (with the code channel and PATH_TEXT_MAX 0.30):
# 0.8 rules with files 0.370, 0.4 0.387, 0.2 0.389 (tensorzero up, gitbutler down); file-tied unchanged.
DIR_HIT_FACTOR = 0.4
# Scope is applicability (issue 17, failure class 1): once files are touched, a memory whose paths are all
# elsewhere (no file or co-change hit) is about other code; its score is multiplied by this. A memory with
# no paths (a root rule, a general preference) is unaffected. Dev window, with files: rules 0.236 -> 0.248
# (0.5 and 0.25 alike; langfuse and gemini-cli up, nothing down), file-tied 0.493 -> 0.504.
OUT_OF_SCOPE_FACTOR = 0.5
# Breadth (issue 17, failure class 3): a memory naming more than this many paths is discounted on each (a
# sweeping commit's lesson tied to 110 files is weak evidence for any one of them). The dev windows hold no
# such memory (4 to 16 changes nothing there): a rule about what specific means, not a fitted value.
BREADTH_FILES = 5

# A memory whose text names a touched file ("`render.tsx` wraps providers") is about that file even when
# its `files` don't say so: weaker than a file ref, stronger than a shared word.
NAMED_FILE_HIT = 0.15
# Words of the touched files' names and directories found in a memory's text (bm25 relative to the best
# such match), up to this magnitude. It is no evidence on its own (a memory is not injected for it), but
# it orders the memories that do have evidence: among the twenty rules of a directory, the ones that talk
# about tests when tests are touched. Tuned on the dev window (prompt plus files, Recall@3): 0 → 0.216,
# 0.05 → 0.242, 0.10 → 0.266, 0.20 → 0.300, 0.30 → 0.312, 0.40 → 0.301 (with the next switch on). Issue 17
# (failure class 2: inside a crowded scope path words decided; with the code channel and DIR_HIT_FACTOR 0.4):
# 0.30 → 0.387, 0.15 → 0.468 (gitbutler 0.144 → 0.441, langfuse 0.643 → 0.571); the hand-judged sample
# 0.245 → 0.318 needed (30 tasks); file-tied unchanged.
PATH_TEXT_MAX = 0.15
# A memory tied to no file (a root rule, a general preference) applies everywhere: once files are touched,
# the touched paths' words in its text ("Run tests with `cargo nextest`" when `src/tests.rs` is touched) are
# what ties it to this work, as scope-BM25 ties a root rule by adding the path words to its query. It is
# evidence on its own (the memory may be injected), where before only text, code or semantic evidence could
# admit a root rule, however well the paths matched. Dev window (rules with files; hand-judged, round 3,
# needed / needed+helpful): off 0.460, 0.201 / 0.170; on 0.478, 0.201 / 0.265 (scope-bm25 0.302), the same
# for any path magnitude from 0.1 to 0.8 of the best path match (only the best one: 0.182). Gotchas unchanged
# (every comment is tied to its file); prompt-only unchanged (nothing is touched).
ROOT_PATH_EVIDENCE = True
# Path words say where a memory applies; a memory naming the touched file itself already says so (it gets
# the full path magnitude), and among a file's own memories path words only add noise: the prompt decides. Dev window: the
# file-tied evaluation 0.421 -> 0.493 (25+ bucket 0.172 -> 0.355), the rule evaluation unchanged.
PATH_ON_EXACT_FILE = False
# The semantic query also carries the touched files' path terms (dev: +0.006 to +0.014 on top of the above).
SEMANTIC_WITH_PATH_TERMS = True

# Co-change neighbours: at most 2 per touched file and 6 in all, entered at rank 5 and about 3x weaker
# than a direct hit, because a neighbour is a guess about where the work goes next.
COCHANGE_PER_FILE = 2
COCHANGE_TOTAL = 6
COCHANGE_RANK = 5
COCHANGE_HIT = FILE_HIT_FLOOR / 3

# Score the prompt against every candidate another channel brought, not only the repository's top 50 text
# matches (issue 17, failure class 4: in a crowded directory most memories were never scored at all).
SCORE_EVERY_CANDIDATE = True

# Full text: bm25 relative to the best hit, times the share of query terms the memory contains, up to
# this magnitude. What the agent asks is worth as much as where it works: a full match about a file hit's
# floor (0.25). At half that (0.14, the first value), a directory's rules and identifier mentions decided
# the top 3 before the prompt could: on the hand-judged dev sample (issue 17, labels not defined by
# identifiers) tether's needed-or-helpful Recall@3 was 0.205 against scope-BM25's 0.368. Dev window
# (benchmarks/quality/tune_both.py; rules prompt / with files, judged needed / needed+helpful, gotchas
# all / 25+): 0.14 0.094 / 0.459, 0.255 / 0.205, 0.533 / 0.381; 0.21 0.101 / 0.452, 0.255 / 0.212;
# 0.28 0.101 / 0.460, 0.255 / 0.221, 0.545 / 0.401; 0.35 0.101 / 0.458, 0.286 / 0.221, 0.541 / 0.401;
# 0.42 0.101 / 0.451, 0.286 / 0.216. 0.28: every figure up or level, and the gotchas best.
TEXT_MAX = 0.28
# The query coverage's weight in the text magnitude (1: times the share of the query's terms the memory
# holds; 0: the bm25 share alone).
TEXT_COVERAGE_POWER = 1.0
# A "real" text match for the evidence gate: this share of the query's terms (at least two of them, or
# the only one), so one shared common word is not evidence.
TEXT_EVIDENCE_COVERAGE = 0.34
TEXT_EVIDENCE_MIN_TERMS = 2
# ... or be among this many best bm25 matches with that many terms. Tuned on the dev window of
# benchmarks/quality (commit-message prompts): the coverage rule alone kept half the relevant rules out
# (Recall@3 0.042 vs 0.081 ungated); admitting the top 5 recovers it (0.088) while still injecting less
# on tasks with no relevant rule (2.59 vs 2.91 memories).
TEXT_EVIDENCE_TOP_RANK = 5
# ... or at least half of one clause of two or more terms (a compound question has several answers).
CLAUSE_EVIDENCE_COVERAGE = 0.5

# Semantic: below this cosine the (hashed) embedding only says "shared topic": rank credit, no magnitude,
# no evidence. Ungated, that noise outscored file hits on vague queries.
SEM_GATE = 0.30
# A static model (model2vec: the mean of per-token vectors) puts every two texts nearer each other than a
# transformer does, since they share the direction of common words: on benchmarks/quality/meaning.py (with
# full-text stopwords left out, as the packaged model does) an off-topic question's best cosine has a median
# of 0.23 where hashed's is 0.13 and MiniLM's 0.12, and an answer's 0.45. Tuned on the dev window of the rule
# evaluation (benchmarks/quality/tune.py, R@3 prompt / prompt+files, memories injected on tasks with no
# relevant rule): 0.30 0.096 / 0.256 (2.90), 0.40 0.115 / 0.253 (2.84), 0.45 0.127 / 0.243 (2.80),
# 0.50 0.121 / 0.240 (2.72).
STATIC_SEM_GATE = 0.45
SEM_MAX = 0.14
SEM_CANDIDATES = 50

# Blast radius: a gotcha on a file 60 others import matters more than one on a leaf; log-scaled, small.
BLAST_MAX = 0.05
BLAST_SATURATION = 64

# Recency anchored on the last action (or creation), never on the last showing: being shown keeps
# nothing fresh. Half-life in days.
RECENCY_MAX = 0.04
RECENCY_HALF_LIFE_DAYS = 60.0

# Feedback: surfaced this many times with no follow-up starts a penalty that grows to the cap, or more times
# where the project's agent follows up less often (`ignored_after`). An agent that reads what the hooks inject
# and never pulls leaves every memory without a follow-up: in the online replay of the rule evaluation's dev
# window (`benchmarks/quality/online.py`, session 13), surfacings recorded and nothing pulled, a fixed 4 had
# the penalty and the archive demote the memories shown most because they were the relevant ones, Recall@3
# with files -0.045 [-0.09, -0.01] against recording nothing (langfuse 0.714 -> 0.357), and -0.023 where a third
# of the relevant memories were pulled; at the pull rate +0.000 and +0.031 [+0.01, +0.05], no repository below.
IGNORED_AFTER = 4
IGNORED_STEP = 0.03
IGNORED_CAP = 0.12
# Acted-on memories earn a small log-scaled bonus.
ACTED_BONUS = 0.02
ACTED_CAP = 0.06

# `priority: high` multiplies (never adds: an additive boost lets a weak match jump a relevant one).
HIGH_PRIORITY_FACTOR = 1.15

# -- The edit's location against anchors (issue 10): which of a file's memories are about *this* place. --
# Tuned on the gotcha evaluation's dev window (benchmarks/quality/GOTCHAS.md, edit mode, Recall@3, the
# first hunk of each file as the location): the constants below gave 0.618 against nearest-to-edit's 0.510
# (issue 10b, with closeness over the whole file and issue 17's constants: 0.636).
# An anchor on the edited lines enters with this magnitude, more than a file hit's rarity premium, so among
# one file's memories the ones at the edit come first (0.20 → 0.551, 0.30 → 0.590, 0.45 → 0.590: its
# scale against the file hit hardly matters, its presence does).
ANCHOR_MAX = 0.30
# Lines from the anchor to the edit at which that halves: a warning three lines above a change is still
# about it, one a screen away much less (3 → 0.559, 6 → 0.590, 12 → 0.588).
ANCHOR_SCALE = 6.0
# An anchor below the edit counts this many times as far: comments are about the code that follows them.
# (Dev: x1 0.594, x1.5 0.615 vs 0.610, x2 0.590, x4 0.574. Kept at 2: the evaluation's location is always
# the file's topmost change, so a warning below it is often about a later change of the same commit, which
# favours a symmetric distance there and says nothing about an agent's edits.)
ANCHOR_BELOW_FACTOR = 2.0
# A symbol anchor the edit is outside of counts this many times as far: the memory is about that function,
# and the edit is in another one (the next function is related, not the same). Not measured (the
# evaluation's memories are comments: line anchors); set so the neighbouring function's gotcha ranks below
# a line anchor at the same distance.
ANCHOR_SYMBOL_OUTSIDE_FACTOR = 4.0
# Distance is a magnitude over the whole file, with no cut-off and no penalty (issue 10b): beyond this many
# lines an anchor is only no longer "near" (the receipt does not name it, it is no anchor evidence), while
# closeness keeps ordering the file's memories and gives rank credit. Until 10b, an anchor past 40 lines got
# a flat -0.05 and no rank credit, so the file's far memories were ordered by everything but distance: the
# prompt's and the edit's words, a file's rarity (on multi-file commits, another file's memories hundreds of
# lines from its edit came first). Dev window (with the adapter's anchors of repeated comments): 40 lines and
# -0.05 0.622 (25+ 0.527), 80 0.630, 80 and no penalty 0.639 (0.546), 160 0.635, no cut-off 0.636 (0.553);
# a log-scaled closeness added over the whole file (0.04 / 0.10 / 0.20 / 0.35) 0.624 / 0.608 / 0.609 / 0.617.
ANCHOR_NEAR = 40
# The edit lands inside the definition an anchor is on or in (`within`): the same function's warnings
# (0 → 0.570, 0.05 → 0.590; with the two below: 0.05 → 0.618, 0.10 → 0.618).
ANCHOR_WITHIN = 0.10
# A memory naming an identifier the edit writes, or the definition the edit lands in (`ModelRetry`)
# (0 → 0.585, 0.06 → 0.590, 0.12 → 0.602; 0.20 no better).
IDENT_HIT = 0.12
# The words of the edit (the lines it replaces and what it writes) as a query over the edited files' own
# memories, idf-weighted among them, relative to the best, up to this magnitude: the code being changed
# says what it is about (0.05 → 0.598, 0.15 → 0.608, 0.25 → 0.610, 0.35 → 0.611).
EDIT_TEXT_MAX = 0.25
# The query's words in the code around an anchor of a touched file's memory (its lines and this many either
# side), idf among those places, relative to the best, up to this magnitude (issue 17: what the prompt says of
# the code a warning sits beside, when the edit's place is not known yet).
PLACE_LINES = 5
PLACE_TEXT_MAX = 0.20


# Where work on a touched file went lately (`tether.repo.recent`): the lines its last `RECENT_COMMITS`
# commits changed (among HEAD's last `RECENT_HORIZON`, a bound on git's walk) and its uncommitted changes,
# a soft place for the file's memories before the edit's own place is known (issue 17: code that just
# changed is where the next change often lands; the 25+ bucket needed evidence other than the prompt's
# words). Distance as for the edit's place (`anchor_distance`, `ANCHOR_SCALE`), up to `RECENT_MAX`. Dev
# window (prompt+files, Recall@3 all / 25+, from 0.585 / 0.461, measured on the lines at each task's
# parent): 0.05 0.599 / 0.496, 0.08 0.602 / 0.509, 0.10 0.600 / 0.509, 0.15 0.597 / 0.496; scale 3 / 6 / 12
# alike; the last 2 / 3 / 5 commits 0.590 / 0.600 / 0.600 (1 / 3 / 5 / 8 with a first distance rule: 0.593 /
# 0.604 / 0.605 / 0.590); a symmetric distance 0.597 (offline, over a dump of the candidates). In the product, with the gotcha harness at each task's
# parent: dev 0.578 -> 0.588 (25+ 0.442 -> 0.477); held out once, 0.505 -> 0.535 (25+ 0.407 -> 0.394).
# It orders a file's memories, it is not evidence of its own.
RECENT_COMMITS = 3
RECENT_HORIZON = 1000
RECENT_MAX = 0.10
# Touched files whose recent lines are read per recall (two git processes for all of them, then one each):
# the first ones with anchored memories.
RECENT_FILES = 8

# Beside the first pick (issue 17, session 12): a commit's changed lines cluster, and so do the warnings beside
# them. Once the first memory to inject is known and it is anchored in a touched file, the next
# `BESIDE_DEPTH - 1` candidates are ordered again with up to `BESIDE_MAX` for an anchor near the first one's in
# the same file (halving `ANCHOR_SCALE` lines away, as the edit's place is measured; either side alike), so
# the second and third slots favour the region the best match points at over another region's equal score.
# Only before the edit's place is known (the anchor channel places memories then). It orders, it is not
# evidence. Dev window of the file-tied evaluation (prompt+files, Recall@3 all / 25+, from 0.595 / 0.495;
# re-ranking a dump of the first 30): 0.05 0.599 / 0.495, 0.10 0.600 / 0.495, 0.20 0.607 / 0.515, 0.30 0.611 /
# 0.515, 0.40 0.604 / 0.515 (session 10's scratch run gave the same); depth 6 / 12 / 30 0.604 / 0.607 / 0.607;
# scale 3 / 6 / 12 / 24 0.602 / 0.607 / 0.609 / 0.604. 0.20 and 12 were the values chosen before these runs
# (session 10's lead); 0.30 is no clearer a gain than noise.
BESIDE_MAX = 0.20
BESIDE_DEPTH = 12

# Identifiers the touched files' code uses (`retry_count`, `ModelRetry`) that a memory names: the code says
# what the memory is about, whatever the prompt says (issue 17 §3). At most this many distinct identifiers
# are read from the touched files (in order of first use), and the memories naming them are looked up in the
# word index, the strongest `CODE_CANDIDATES` kept.
CODE_IDENTIFIERS = 200
CODE_CANDIDATES = 50
# A memory naming one of them gets `CODE_HIT`, each further one `CODE_MORE`, up to `CODE_MAX`. Dev window
# (rules with files / gotchas; off 0.273 / 0.520): 0.05 0.302, 0.10 0.341 / 0.533, 0.15 0.370 / 0.533,
# 0.20 0.398 / 0.528. The rule labels are themselves defined by identifiers, so the rules' gain rises with the
# magnitude partly by construction: 0.15 is the largest that costs the gotchas nothing.
CODE_HIT = 0.15
CODE_MORE = 0.03
CODE_MAX = 0.24
# A memory on the touched file itself is about that code already: its code credit would only reorder the
# file's own memories by how many names each repeats, which says nothing about the edit (off: every
# memory on an exact file hit gets none).
CODE_ON_EXACT_FILE = False
# Naming this many of them is evidence on its own (it lets the memory past the injection's gate).
CODE_EVIDENCE_NAMES = 1


def anchor_distance(distance: int, side: str, symbol: bool) -> float:
    """How far an anchor `distance` lines from the edit, on `side` (at, above, below) of it, counts."""
    far = distance * (ANCHOR_BELOW_FACTOR if side == "below" else 1.0)
    return far * (ANCHOR_SYMBOL_OUTSIDE_FACTOR if symbol else 1.0)


def anchor_closeness(far: float) -> float:
    """Magnitude of an anchor whose distance to the edit counts `far` lines (`anchor_distance`)."""
    return ANCHOR_MAX / (1.0 + far / ANCHOR_SCALE)


def recent_closeness(far: float) -> float:
    """Magnitude of an anchor whose distance to a recently changed line counts `far` lines.

    >>> recent_closeness(0.0), round(recent_closeness(6.0), 3)
    (0.1, 0.05)
    """
    return RECENT_MAX / (1.0 + far / ANCHOR_SCALE)


def beside_closeness(distance: int) -> float:
    """Magnitude of an anchor `distance` lines from the first pick's anchor (`BESIDE_MAX`).

    >>> beside_closeness(0), round(beside_closeness(6), 3)
    (0.2, 0.1)
    """
    return BESIDE_MAX / (1.0 + distance / ANCHOR_SCALE)


def rrf(rank: int) -> float:
    """Reciprocal-rank credit for a 1-based rank."""
    return 1.0 / (RRF_K + rank)


def file_hit(owners: int, is_dir: bool = False) -> float:
    """Magnitude of a file-affinity hit on a path shared by `owners` memories (this one included)."""
    owners = max(owners, 1)
    magnitude = FILE_HIT_FLOOR + FILE_RARITY_PREMIUM / (1.0 + math.log(owners))
    return magnitude * DIR_HIT_FACTOR if is_dir else magnitude


def text_magnitude(bm25: float, best: float, coverage: float) -> float:
    if best <= 0.0:
        return 0.0
    return float(TEXT_MAX * min(bm25 / best, 1.0) * coverage**TEXT_COVERAGE_POWER)


def breadth(files: int) -> float:
    """How specific a memory naming `files` paths is about any one of them: 1 up to `BREADTH_FILES` paths,
    then falling as the square root (a 110-file sweep's lesson is weak evidence for each of its files)."""
    if not BREADTH_FILES or files <= BREADTH_FILES:
        return 1.0
    return float((BREADTH_FILES / files) ** 0.5)


def sem_gate(embedder_id: str) -> float:
    """The cosine above which `embedder_id`'s similarity is evidence (below: shared topic, rank credit).

    >>> sem_gate("hashed-v2-384"), sem_gate("static:minilm-l6-128i8")
    (0.3, 0.45)
    """
    return STATIC_SEM_GATE if embedder_id.startswith(("static:", "model2vec:")) else SEM_GATE


def sem_magnitude(cosine: float, gate: float = SEM_GATE) -> float:
    if cosine < gate:
        return 0.0
    return min(SEM_MAX, SEM_MAX * (cosine - gate) / (1.0 - gate) * 2.0)


def blast(fan_in: int) -> float:
    if fan_in <= 0:
        return 0.0
    return BLAST_MAX * min(1.0, math.log1p(fan_in) / math.log1p(BLAST_SATURATION))


def recency(anchor: datetime, now: datetime) -> float:
    days = max(0.0, (now - anchor).total_seconds() / 86400.0)
    return float(RECENCY_MAX * 0.5 ** (days / RECENCY_HALF_LIFE_DAYS))


def ignored_after(pull_rate: float, floor: int = IGNORED_AFTER) -> int | None:
    """Showings without a follow-up that make a memory ignored, where the project's agent follows up
    `pull_rate` of what it is shown (acted per surfaced over every memory, `Memories.pull_rate`): `floor`, or
    as many as it takes at that rate to expect one follow-up if more; None (never) while nothing was ever
    acted on. An agent that pulls one memory in fifty leaves a memory shown ten times unpulled by chance.

    >>> ignored_after(1.0), ignored_after(0.5), ignored_after(0.02), ignored_after(0.0)
    (4, 4, 50, None)
    """
    if pull_rate <= 0.0:
        return None
    return max(floor, math.ceil(1.0 / pull_rate - 1e-9))


def feedback(surfaced: int, acted: int, pull_rate: float = 1.0) -> float:
    """Penalty for being ignored (`ignored_after` at the project's `pull_rate`), or bonus for being used.

    >>> feedback(6, 0), feedback(6, 0, pull_rate=0.0), feedback(6, 0, pull_rate=0.2), feedback(6, 1, 0.0)
    (-0.09, 0.0, -0.06, 0.02)
    """
    if acted > 0:
        return min(ACTED_CAP, ACTED_BONUS * math.log1p(acted) / math.log(2))
    after = ignored_after(pull_rate)
    if after is not None and surfaced >= after:
        return -min(IGNORED_CAP, IGNORED_STEP * (surfaced - after + 1))
    return 0.0


def code_hit(named: int) -> float:
    """The magnitude of a memory naming `named` identifiers the touched files use.

    >>> code_hit(0), code_hit(1), round(code_hit(2), 2), code_hit(9)
    (0.0, 0.15, 0.18, 0.24)
    """
    if named <= 0:
        return 0.0
    return min(CODE_MAX, CODE_HIT + CODE_MORE * (named - 1))
