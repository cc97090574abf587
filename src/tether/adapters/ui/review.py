"""The pending review queue (`tether review`): what agents asked to write and only the person may allow,
each with Approve and Reject buttons, and the messages saying what either did."""

from __future__ import annotations

from tether.adapters.ui.core import Memory, Request, Waiting
from tether.adapters.ui.html import Html, html, join
from tether.adapters.ui.layout import badges, memory_link, post_button, when


def review_page(waiting: list[Waiting], csrf: str) -> Html:
    """One row per request: what (the memory to add, or the pin), who asked (origin, session), why it waits."""
    rows = [_row(w, csrf) for w in waiting]
    if not rows:
        return html(
            '<p class="empty" id="count">Nothing waits for review: agents\' pins, user memory and supersedes '
            "of a rule or of your own memory would wait here.</p>"
        )
    return html(
        '<p class="count" id="count">{} request{} waiting for review: none is recalled until approved '
        "(<code>tether review</code>)</p>"
        '<table class="pending"><thead><tr><th scope="col">request</th><th scope="col">what</th>'
        '<th scope="col">who</th><th scope="col">why it waits</th><th scope="col">decide</th></tr></thead>'
        "<tbody>{}</tbody></table>",
        len(rows),
        "" if len(rows) == 1 else "s",
        join(rows),
    )


def _row(w: Waiting, csrf: str) -> Html:
    r, m = w.request, w.memory
    return html(
        '<tr data-request="{id}" data-kind="{kind}"><td><code>{id}</code><div class="meta">{asked}</div></td>'
        '<td>{what}</td><td>{who}</td><td><ul class="reasons">{why}</ul></td>'
        '<td class="decide">{approve} {reject}</td></tr>',
        id=r.id,
        kind=r.kind,
        asked=when(r.requested),
        what=_what(r, m),
        who=join(
            [
                # Only agents' writes wait here: a pin's memory may be the person's own, the asker is not.
                html('<span class="badge origin">{}</span>', m.origin if r.kind == "add" and m else "agent"),
                html('<div class="meta">session <code>{}</code></div>', r.session) if r.session else Html(""),
            ]
        ),
        why=join(html("<li>{}</li>", reason) for reason in r.reasons),
        approve=post_button(f"/review/{r.id}/approve", "Approve", csrf),
        reject=post_button(f"/review/{r.id}/reject", "Reject", csrf, cls="danger"),
    )


def _what(r: Request, m: Memory | None) -> Html:
    if r.kind != "add":
        if m is None:
            return html('{} <code>{}</code> <span class="muted">(no such memory now)</span>', r.kind, r.id)
        return html("{} {}", r.kind, memory_link(m))
    assert m is not None  # an add request carries its memory
    flags = [f for f, on in (("pinned", m.pinned), (f"{m.scope} scope", m.scope != "project")) if on]
    return html(
        '<span class="summary">add {}</span><div class="meta">{}{}{}</div>',
        m.summary,
        badges(m),
        html(" · {}", ", ".join(flags)) if flags else Html(""),
        html(" · supersedes <code>{}</code>", m.supersedes) if m.supersedes else Html(""),
    )


def approved_flash(memory: Memory) -> Html:
    """What `tether review approve` prints, with the memory linked."""
    return html(
        '<div class="flash ok" role="status"><p><strong>approved</strong>: {}{}</p></div>',
        memory_link(memory),
        " (pinned)" if memory.pinned else "",
    )


def rejected_flash(request: Request) -> Html:
    return html(
        '<div class="flash ok" role="status"><p><strong>rejected</strong>: {} <code>{}</code>: nothing was '
        "written</p></div>",
        request.kind,
        request.id,
    )
