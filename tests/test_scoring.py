"""`tether.recall.scoring`: the fusion's magnitudes keep the bounds and orders their comments promise."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tether.recall import scoring


def test_rarity_is_a_premium_never_a_discount() -> None:
    assert scoring.file_hit(1) == pytest.approx(0.40)
    assert scoring.file_hit(46) == pytest.approx(0.28, abs=0.005)
    assert all(scoring.file_hit(n) >= scoring.FILE_HIT_FLOOR for n in (1, 10, 1000, 10**6))
    assert scoring.file_hit(0) == scoring.file_hit(1)
    assert scoring.file_hit(5, is_dir=True) == pytest.approx(scoring.file_hit(5) * scoring.DIR_HIT_FACTOR)


def test_rrf_and_cochange_are_weaker_than_a_direct_hit() -> None:
    assert scoring.rrf(1) == pytest.approx(1 / 61) and scoring.rrf(1) > scoring.rrf(2)
    assert pytest.approx(scoring.FILE_HIT_FLOOR / 3) == scoring.COCHANGE_HIT


def test_text_and_semantic_magnitudes_are_bounded() -> None:
    assert scoring.text_magnitude(5.0, 10.0, 1.0) == pytest.approx(scoring.TEXT_MAX / 2)
    assert scoring.text_magnitude(20.0, 10.0, 1.0) == pytest.approx(scoring.TEXT_MAX)
    assert scoring.text_magnitude(1.0, 0.0, 1.0) == 0.0
    assert scoring.sem_magnitude(scoring.SEM_GATE - 0.01) == 0.0  # below the gate: rank credit only
    assert 0 < scoring.sem_magnitude(0.5) <= scoring.SEM_MAX == scoring.sem_magnitude(1.0)


def test_blast_is_small_and_saturates() -> None:
    assert scoring.blast(0) == 0.0
    assert 0 < scoring.blast(1) < scoring.blast(10) < scoring.blast(64) == pytest.approx(scoring.BLAST_MAX)
    assert scoring.blast(10_000) == pytest.approx(scoring.BLAST_MAX)


def test_recency_halves_every_half_life() -> None:
    now = datetime(2026, 6, 1, tzinfo=UTC)
    assert scoring.recency(now, now) == pytest.approx(scoring.RECENCY_MAX)
    later = now + timedelta(days=scoring.RECENCY_HALF_LIFE_DAYS)
    assert scoring.recency(now, later) == pytest.approx(scoring.RECENCY_MAX / 2)
    assert scoring.recency(later, now) == pytest.approx(scoring.RECENCY_MAX)  # a future anchor is "now"


def test_feedback_penalty_grows_to_its_cap_and_use_earns_a_bonus() -> None:
    assert scoring.feedback(scoring.IGNORED_AFTER - 1, 0) == 0.0
    assert scoring.feedback(scoring.IGNORED_AFTER, 0) == pytest.approx(-scoring.IGNORED_STEP)
    assert scoring.feedback(100, 0) == pytest.approx(-scoring.IGNORED_CAP)
    assert scoring.feedback(100, 1) == pytest.approx(scoring.ACTED_BONUS)
    assert scoring.feedback(0, 1000) == pytest.approx(scoring.ACTED_CAP)
