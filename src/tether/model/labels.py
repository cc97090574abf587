"""Tags and aliases: the two Obsidian frontmatter lists a tether note keeps as fields of its own.

A tag is one word, stored without its `#` (`deploy`, `area/billing`: Obsidian nests with `/`); an alias is
another title for the note, one line, that `[[wikilinks]]` resolve by as they do by the summary. Both come
from files other people commit, so each is bounded, one line, free of controls, and kept in the order
given with repeats (case aside) dropped.

>>> tags(["#deploy", "Deploy", "area/billing"]), aliases("Staging checklist")
(('deploy', 'area/billing'), ('Staging checklist',))
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tether.errors import ValidationError
from tether.model.display import first_control, first_line_break
from tether.model.limits import ALIASES_MAX, SUMMARY_MAX, TAG_MAX_CHARS, TAGS_MAX

__all__ = ["aliases", "keywords", "tags"]

# What Obsidian allows in a tag besides letters and digits; a space, comma or `#` ends one there.
_TAG_RE = re.compile(r"^[\w/-]+$")
# A wikilink could not name an alias holding these: `[[a|b]]` is a link to `a` shown as `b`.
_ALIAS_FORBIDDEN = ("[[", "]]", "|", "#")


def _items(name: str, value: object, *, split: str | None = None) -> list[str]:
    """A frontmatter value as a list of strings: a YAML list, or one string (split by the pattern `split`)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [p for p in (re.split(split, value) if split else [value]) if p.strip()]
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value if v.strip()]
    raise ValidationError(f"{name} must be a list of strings (- one, - two), or one string")


def _one_line(name: str, text: str) -> str:
    found = first_control(text) or first_line_break(text)
    if found:
        raise ValidationError(
            f"{name} {text!r} holds the character U+{ord(found.group()):04X}: {name} are one line of text"
        )
    return text


def tags(value: object) -> tuple[str, ...]:
    """Tags from a frontmatter value (a list, or a string of comma- or space-separated tags).

    Raises `ValidationError` naming the tag and what to do."""
    seen: dict[str, str] = {}
    for word in _items("tags", value, split=r"[\s,]+"):
        tag = word.removeprefix("#")
        _one_line("tags", tag)
        if not tag or not _TAG_RE.match(tag) or tag.isdigit():
            raise ValidationError(
                f"tag {word!r}: a tag is one word of letters, digits, _, - and / (not only digits), "
                "as Obsidian reads it"
            )
        if len(tag) > TAG_MAX_CHARS:
            raise ValidationError(
                f"tag {tag[:20]!r}... is {len(tag)} characters, the limit is {TAG_MAX_CHARS}"
            )
        seen.setdefault(tag.casefold(), tag)
    if len(seen) > TAGS_MAX:
        raise ValidationError(f"{len(seen)} tags, the limit is {TAGS_MAX}: keep the ones you search by")
    return tuple(seen.values())


def aliases(value: object) -> tuple[str, ...]:
    """Aliases from a frontmatter value (a list, or one alias as a string).

    Raises `ValidationError` naming the alias and what to do."""
    seen: dict[str, str] = {}
    for item in _items("aliases", value):
        alias = " ".join(_one_line("aliases", item).split())
        if len(alias) > SUMMARY_MAX:
            raise ValidationError(
                f"alias {alias[:30]!r}... is {len(alias)} characters, the limit is {SUMMARY_MAX}"
            )
        bad = next((c for c in _ALIAS_FORBIDDEN if c in alias), None)
        if bad:
            raise ValidationError(f"alias {alias!r} holds {bad!r}: a [[wikilink]] could not name it")
        seen.setdefault(alias.casefold(), alias)
    if len(seen) > ALIASES_MAX:
        raise ValidationError(f"{len(seen)} aliases, the limit is {ALIASES_MAX}")
    return tuple(seen.values())


def keywords(tag_list: Iterable[str], alias_list: Iterable[str]) -> str:
    """What tags and aliases add to a memory's searchable text: aliases as written, tags with their `#`."""
    return " ".join([*alias_list, *(f"#{t}" for t in tag_list)])
