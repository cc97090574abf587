"""HTML built from templates where every value is escaped unless it is already `Html`.

Memory text is data (DESIGN §8): a note from someone else's commit can hold `<script>` or an `onerror=`
attribute. Pages are assembled only with `html(...)`, whose arguments are escaped for text and attribute
context alike (quotes included), so forgetting to escape is not possible by construction; `Html` marks a
fragment this module already built.

>>> html("<p title={}>{}</p>", '"x"', "<b>")
Html('<p title=&quot;x&quot;>&lt;b&gt;</p>')
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from html import escape
from typing import Any
from urllib.parse import urlencode

from tether.adapters.ui.core import printable


class Html(str):
    """A fragment of markup that is safe to insert as is."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Html({str.__repr__(self)})"


def esc(value: Any) -> Html:
    """`value` as text for an element or a quoted attribute; `Html` passes through, `None` is empty.

    Control characters (terminal escapes, direction overrides) are shown as visible escapes, as the CLI
    shows them."""
    if isinstance(value, Html):
        return value
    if value is None:
        return Html("")
    return Html(escape(printable(str(value)), quote=True))


def html(template: str, *args: Any, **kwargs: Any) -> Html:
    """`template.format(...)` with every argument escaped (`Html` arguments inserted as they are).

    Attribute values must be quoted in the template (`href="{}"`): an unquoted one could be split by a space.
    """
    return Html(template.format(*(esc(a) for a in args), **{k: esc(v) for k, v in kwargs.items()}))


def join(parts: Iterable[Any], sep: str = "") -> Html:
    return Html(esc(sep).join(esc(p) for p in parts))


def attrs(**values: Any) -> Html:
    """` name="value"` pairs; a value of True is a bare attribute, False or None leaves it out.

    >>> attrs(checked=True, name="q", disabled=False)
    Html(' checked name="q"')
    """
    out = []
    for key, value in values.items():
        name = key.rstrip("_").replace("_", "-")
        if value is True:
            out.append(html(" {}", Html(name)))
        elif value is not None and value is not False:
            out.append(html(' {}="{}"', Html(name), value))
    return join(out)


def url(path: str, params: Mapping[str, Any] | None = None) -> str:
    """`path?k=v&...` with empty values left out (the result still needs `esc` in an attribute)."""
    if not params:
        return path
    pairs: list[tuple[str, str]] = []
    for key, value in params.items():
        if isinstance(value, list | tuple):
            pairs.extend((key, str(v)) for v in value if v not in (None, ""))
        elif value not in (None, "", False):
            pairs.append((key, str(value)))
    return f"{path}?{urlencode(pairs)}" if pairs else path


_SCRIPT_BREAKERS = re.compile(r"[<>&\u2028\u2029]")


def json_data(element_id: str, value: Any) -> Html:
    """`value` in a `<script type="application/json">` data block (not executable, so CSP allows it).

    `<`, `>` and `&` are written as `\\u` escapes, so no string in the data can close the element or
    start a comment; the JSON decodes to exactly `value`."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    text = _SCRIPT_BREAKERS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return Html(html('<script type="application/json" id="{}">', element_id) + text + "</script>")
