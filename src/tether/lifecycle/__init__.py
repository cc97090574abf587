"""Memory that keeps itself honest (DESIGN §6): soft-archive, cleanup, stats, doctor, session housekeeping,
anchors following the code (`reanchor`).

Sees the store only through `tether.store.base`'s protocols, and writes through `tether.memories`;
may import `tether.intake` (session start re-syncs rule files) and `tether.anchors`, never
`tether.workspace` or an adapter.
"""

from tether.lifecycle.archive import (
    ARCHIVE_MIN_DAYS,
    ARCHIVE_MIN_SURFACED,
    Streak,
    archive_candidates,
    archive_pass,
    ignored_streak,
)
from tether.lifecycle.cleanup import (
    META_LAST_PASS,
    Candidate,
    cleanup,
    cleanup_candidates,
    cleanup_hint,
    mark_cleanup_pass,
    purge_origin,
)
from tether.lifecycle.doctor import Doctor, Problem, dead_refs, doctor
from tether.lifecycle.stats import stats

__all__ = [
    "ARCHIVE_MIN_DAYS",
    "ARCHIVE_MIN_SURFACED",
    "META_LAST_PASS",
    "Candidate",
    "Doctor",
    "Problem",
    "Streak",
    "archive_candidates",
    "archive_pass",
    "cleanup",
    "cleanup_candidates",
    "cleanup_hint",
    "dead_refs",
    "doctor",
    "ignored_streak",
    "mark_cleanup_pass",
    "purge_origin",
    "stats",
]
