"""The conversational-facts evaluation (benchmarks/quality/facts.py) on a conversation made here.

The real data is LoCoMo from a fetched mirror, which CI does not have: these tests keep its reading, its
project and its scores honest on a small conversation of the same shape.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "quality"))

from facts import Project, Scores, conversation, report, systems

RAW = {
    "speaker_a": "Ana",
    "speaker_b": "Ben",
    "session_1_observation": {
        "Ana": [
            ["Ana adopted a grey cat named Pixel.", "D1:2"],
            ["Ana is training for a marathon in the spring.", "D1:4"],
        ],
        "Ben": [["Ben repairs vintage bicycles in his garage.", "D1:5"]],
    },
    "session_2_observation": {
        "Ana": [
            ["Ana adopted a grey cat named Pixel.", "D2:1"],  # said again in a later session: one memory
            ["Ana's marathon training plan has four runs a week.", "D2:3"],
        ],
        "Ben": [["Ben sold a restored racing bicycle to a collector.", ["D2:6"]]],
    },
    "qa": [
        {
            "question": "What is the name of Ana's cat?",
            "answer": "Pixel",
            "evidence": ["D1:2"],
            "category": 1,
        },
        {"question": "How often does Ana train?", "answer": "4", "evidence": ["D1:4; D2:3"], "category": 4},
        {"question": "What does Ben fix?", "answer": "bikes", "evidence": [["D1:5"], "D2:6"], "category": 1},
        {
            "question": "What is Ben's cat called?",
            "evidence": ["D1:2"],
            "category": 5,
            "adversarial_answer": "x",
        },
        {"question": "Where was Ana born?", "answer": "?", "evidence": ["D9:9"], "category": 2},
    ],
}


def test_facts_are_the_observations_and_questions_keep_only_answerable_ones() -> None:
    conv = conversation("t1", RAW)
    assert len(conv.facts) == 5  # the repeated observation is one fact, with both turns
    pixel = next(f for f in conv.facts if "Pixel" in f.summary)
    assert pixel.turns == {"D1:2", "D2:1"}
    asked = [q.text for q in conv.questions]
    # Category 5 (asked of the wrong speaker) and a question whose evidence has no fact are left out.
    assert asked == ["What is the name of Ana's cat?", "How often does Ana train?", "What does Ben fix?"]
    train = conv.questions[1]
    assert train.relevant == {
        "Ana is training for a marathon in the spring.",
        "Ana's marathon training plan has four runs a week.",
    }  # evidence joined by ';' names two turns
    fix = conv.questions[2]
    assert len(fix.relevant) == 2  # nested evidence lists are read too


def test_a_long_observation_is_fitted_as_tether_add_fits_it() -> None:
    long = "Ana " + "really " * 40 + "likes tea."
    conv = conversation("t2", {"session_1_observation": {"Ana": [[long, "D1:1"]]}, "qa": []})
    (fact,) = conv.facts
    assert len(fact.summary) <= 160 and fact.summary.endswith("…")
    assert fact.details == long  # nothing lost: the whole line is in the details


def test_tether_recalls_the_fact_a_question_asks_for_in_a_real_project() -> None:
    conv = conversation("t3", RAW)
    project = Project(conv)
    try:
        ranked = project.recall("What is the name of Ana's cat?")
        assert ranked[0] == "Ana adopted a grey cat named Pixel."
        searched = project.search("bicycles Ben restored")
        assert set(searched[:2]) == {
            "Ben repairs vintage bicycles in his garage.",
            "Ben sold a restored racing bicycle to a collector.",
        }
        names = systems(conv, project, {})
        assert set(names) == {"bm25-porter", "bm25-unstemmed", "random-3", "tether", "tether:search"}
        # Porter stems: "repairing" finds "repairs", which the unstemmed index cannot.
        assert names["bm25-porter"]("repairing") == ["Ben repairs vintage bicycles in his garage."]
        assert names["bm25-unstemmed"]("repairing") == []
    finally:
        project.close()


def test_scores_are_recall_at_3_hit_at_5_and_reciprocal_rank() -> None:
    s = Scores()
    s.add(["a", "x", "y", "b"], {"a", "b"}, 1.0)  # one of two in the first three; b at rank 4
    s.add(["x", "y", "z", "w", "c"], {"c"}, 2.0)  # none in three, hit at five, first at rank 5
    s.add(["x"], {"c"}, 3.0)  # the gate showed one: nothing found
    assert s.recall3 == [0.5, 0.0, 0.0]
    assert s.hit5 == [1.0, 1.0, 0.0]
    assert s.rr == pytest.approx([1.0, 0.2, 0.0])
    assert s.shown == [3, 3, 1]


def test_the_report_pairs_every_system_with_each_baseline() -> None:
    def scores(values: list[float]) -> Scores:
        s = Scores()
        for v in values:
            s.recall3.append(v)
            s.hit5.append(v)
            s.rr.append(v)
            s.shown.append(3)
            s.ms.append(1.0)
        return s

    per = {
        "bm25-porter": [0.0, 1.0, 0.0, 1.0],
        "bm25-unstemmed": [0.0, 0.0, 0.0, 1.0],
        "random-3": [0.0, 0.0, 0.0, 0.0],
        "tether": [1.0, 1.0, 0.0, 1.0],
    }
    result = {
        "window": "dev",
        "conversations": ["c"],
        "scores": {name: {"c": scores(v), "all": scores(v)} for name, v in per.items()},
    }
    text = report(result)
    assert "Strongest baseline by Recall@3, pooled: **bm25-porter**" in text
    row = next(line for line in text.splitlines() if line.startswith("| tether | +"))
    assert row.startswith("| tether | +0.250")  # against bm25-porter: one task of four better
