"""The page shell every UI page shares (navigation, flash message), and the small pieces pages reuse."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from tether.adapters.ui.core import Change, Memory
from tether.adapters.ui.html import Html, attrs, esc, html, join

NAV = (
    ("/", "Memories"),
    ("/graph", "Graph"),
    ("/stats", "Stats"),
    ("/cleanup", "Cleanup"),
    ("/recall", "Recall"),
    ("/new", "New"),
)


def page(
    title: str,
    body: Html,
    *,
    project: str,
    active: str = "",
    flash: Html | None = None,
    scripts: Iterable[str] = ("ui.js",),
) -> str:
    nav = join(
        html('<a href="{}"{}>{}</a>', href, attrs(aria_current="page" if href == active else None), label)
        for href, label in NAV
    )
    tags = join(html('<script src="/static/{}" defer></script>', name) for name in scripts)
    return html(
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>{title} · tether · {project}</title>"
        '<link rel="stylesheet" href="/static/ui.css">'
        '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">{tags}</head>'
        '<body><header><a class="brand" href="/">tether</a><span class="project">{project}</span>'
        "<nav>{nav}</nav></header>"
        '<main id="main">{flash}{body}</main></body></html>\n',
        title=title,
        project=project,
        tags=tags,
        nav=nav,
        flash=flash or Html(""),
        body=body,
    )


def csrf_field(token: str) -> Html:
    return html('<input type="hidden" name="csrf" value="{}">', token)


def post_button(
    action: str, label: str, token: str, *, cls: str = "", fields: dict[str, str] | None = None
) -> Html:
    """A one-button form: every state change is a POST with the CSRF token."""
    hidden = join(html('<input type="hidden" name="{}" value="{}">', k, v) for k, v in (fields or {}).items())
    return html(
        '<form method="post" action="{}" class="inline">{}{}<button type="submit"{}>{}</button></form>',
        action,
        csrf_field(token),
        hidden,
        attrs(class_=cls or None),
        label,
    )


def flash_change(change: Change) -> Html:
    """What an action did, field by field (old → new)."""
    m = change.memory
    head = html(
        '<p><strong>{}</strong>: <a href="/m/{}">{}</a> {}</p>',
        change.verb,
        m.id,
        m.id,
        m.summary,
    )
    if change.verb == "deleted":
        head = html("<p><strong>deleted</strong>: {} {} (its note is gone)</p>", m.id, m.summary)
    rows = join(
        html('<tr><th scope="row">{}</th><td class="old">{}</td><td class="new">{}</td></tr>', name, old, new)
        for name, old, new in change.diff
    )
    table = html(
        '<table class="diff"><thead><tr><th>field</th><th>before</th><th>after</th></tr></thead>{}</table>',
        rows,
    )
    return html('<div class="flash ok" role="status">{}{}</div>', head, table if change.diff else Html(""))


def flash_text(text: str, *, error: bool = False) -> Html:
    return html(
        '<div class="flash {}" role="{}">{}</div>',
        "error" if error else "ok",
        "alert" if error else "status",
        text,
    )


def when(moment: datetime | None) -> Html:
    if moment is None:
        return html('<span class="muted">never</span>')
    return html('<time datetime="{}">{}</time>', moment.isoformat(), moment.strftime("%Y-%m-%d %H:%M"))


def badges(memory: Memory) -> Html:
    out = [html('<span class="cat cat-{}">{}</span>', memory.category, memory.category)]
    if memory.pinned:
        out.append(html('<span class="badge pin" title="pinned">★ pinned</span>'))
    if memory.priority == "high":
        out.append(html('<span class="badge high">high</span>'))
    if memory.status != "active":
        out.append(html('<span class="badge status-{}">{}</span>', memory.status, memory.status))
    if memory.origin != "user":
        # Agent-originated memories are marked as such wherever they are shown (DESIGN §8).
        out.append(html('<span class="badge origin">{}</span>', memory.origin))
    if memory.scope != "project":
        out.append(html('<span class="badge scope">{}</span>', memory.scope))
    return join(out, " ")


def memory_link(memory: Memory) -> Html:
    return html('<a href="/m/{}"><code>{}</code></a> {}', memory.id, memory.id, memory.summary)


def percent(value: float | None) -> Html:
    return html('<span class="muted">—</span>') if value is None else esc(f"{value:.0%}")


def options(choices: Iterable[tuple[str, str]], selected: str) -> Html:
    return join(
        html('<option value="{}"{}>{}</option>', value, attrs(selected=value == selected), label)
        for value, label in choices
    )
