"""`tether.model.wikilinks`: the targets found in a memory's details and the key they are matched by."""

from __future__ import annotations

import pytest

from tether.model.wikilinks import keys, link_key, targets


@pytest.mark.parametrize(
    ("details", "found"),
    [
        ("See [[Deploy checklist]].", ("Deploy checklist",)),
        ("[[a|shown]] then [[ b ]] and [[a]] again", ("a", "b")),
        ("[[Title#Heading|x]]", ("Title#Heading",)),
        ("not [[ across\nlines]], not [single], not [[]]", ()),
    ],
)
def test_targets_in_order_without_repeats(details: str, found: tuple[str, ...]) -> None:
    assert targets(details) == found


@pytest.mark.parametrize(
    ("target", "key"),
    [
        ("Deploy Checklist", "deploy checklist"),
        ("  deploy \t CHECKLIST ", "deploy checklist"),
        ("Deploy checklist#Steps", "deploy checklist"),
        ("Straße", "strasse"),  # casefold, not lower
        ("3A73C0DE", "3a73c0de"),
        ("#only-a-heading", ""),
    ],
)
def test_link_key_sets_case_spacing_and_heading_aside(target: str, key: str) -> None:
    assert link_key(target) == key


def test_keys_drop_repeats_and_empty_ones() -> None:
    assert keys(("Deploy Checklist", "deploy  checklist#x", "#top", "Other")) == ("deploy checklist", "other")
