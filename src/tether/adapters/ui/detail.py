"""One memory: the detail page, and the forms that change it (edit, new, supersede, delete)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from tether.adapters.ui.core import CATEGORIES, PRIORITIES, SUMMARY_MAX, AnchorState, Detail, Memory
from tether.adapters.ui.html import Html, attrs, esc, html, join, url
from tether.adapters.ui.layout import badges, csrf_field, memory_link, options, percent, post_button, when

# The wikilink syntax of the memory record (`[[target]]` or `[[target|label]]`).
WIKILINK = re.compile(r"\[\[([^\[\]\n|]+?)(?:\|[^\[\]\n]*)?\]\]")


def details_text(details: str, targets: Mapping[str, str]) -> Html:
    """The details as escaped text (line breaks kept by CSS), with resolved wikilinks as links."""
    out: list[Html] = []
    last = 0
    for match in WIKILINK.finditer(details):
        out.append(esc(details[last : match.start()]))
        target = match.group(1).strip()
        mid = targets.get(target)
        if mid is not None:
            out.append(html('<a class="wikilink" href="/m/{}">{}</a>', mid, match.group(0)))
        else:
            out.append(
                html(
                    '<span class="wikilink unresolved" title="no memory by this name">{}</span>',
                    match.group(0),
                )
            )
        last = match.end()
    out.append(esc(details[last:]))
    return join(out)


def anchor_item(state: AnchorState) -> Html:
    """One anchor: its place (`path::symbol`, `path:lines`), the definition holding it, and where it is now."""
    a, now = state.anchor, state.now
    within = html(' <span class="muted">in</span> <code>{}()</code>', a.within) if a.within else Html("")
    if state.lost:
        where = html('<span class="badge gone lost">lost</span> <span class="muted">{}</span>', _LOST)
    elif now is None:
        where = html('<span class="muted">not resolved here (no work tree)</span>')
    else:
        at = _lines(now.lines)
        how = _HOW.get(state.how, "")
        if now.symbol and now.symbol != a.symbol:
            how = f"{how}, as {now.symbol}" if how else f"as {now.symbol}"
        where = html(
            '<span class="badge exists found">found</span> {}{}',
            at,
            html(' <span class="muted">({})</span>', how) if how else Html(""),
        )
    return html('<li class="anchor"><code>{}</code>{} {}</li>', a.spec(), within, where)


def _lines(lines: tuple[int, int] | None) -> str:
    if lines is None:
        return ""
    return f"line {lines[0]}" if lines[0] == lines[1] else f"lines {lines[0]}-{lines[1]}"


# How an anchor was found again (`Resolution.how`), said to a person; "same" needs no words.
_HOW = {
    "symbol": "by its symbol",
    "moved": "moved: found by its fingerprint",
    "renamed": "renamed: found by its fingerprint",
    "widened": "its lines are gone: widened to the definition holding them",
    "fingerprinted": "fingerprinted now",
}
_LOST = "its code is gone: the memory is about its file only"


def detail_page(d: Detail, csrf: str) -> Html:
    m, t = d.memory, d.telemetry
    actions = [html('<a class="button" href="/m/{}/edit">Edit</a>', m.id)]
    actions.append(
        post_button(f"/m/{m.id}/{'unpin' if m.pinned else 'pin'}", "Unpin" if m.pinned else "Pin", csrf)
    )
    if m.status == "active":
        actions.append(post_button(f"/m/{m.id}/archive", "Archive", csrf))
    else:
        actions.append(post_button(f"/m/{m.id}/restore", "Restore", csrf))
    actions.append(
        html(
            '<a class="button" href="{}">Explain in recall</a>',
            url("/recall", {"prompt": m.summary, "file": list(m.files[:3])}),
        )
    )
    actions.append(html('<a class="button danger" href="/m/{}/delete">Delete…</a>', m.id))
    files = join(
        html(
            '<li><code>{}</code> <span class="badge {}">{}</span> <a href="{}" class="muted">memories on it</a></li>',
            path,
            "exists" if exists else "gone",
            "exists" if exists else "gone",
            url("/", {"file": path, "state": "all"}),
        )
        for path, exists in d.files
    )
    links = []
    for label, group in (("links to", d.links_out), ("linked from", d.links_in)):
        items = join(html("<li>{}</li>", memory_link(other)) for other in group)
        links.append(
            html(
                "<h3>{} ({})</h3><ul>{}</ul>",
                label.capitalize(),
                len(group),
                items or html('<li class="muted">none</li>'),
            )
        )
    if d.unresolved:
        items = join(html("<li><code>[[{}]]</code></li>", target) for target in d.unresolved)
        links.append(html('<h3>Unresolved links</h3><ul class="muted">{}</ul>', items))
    chain = join(
        html(
            '<li>{} {} <span class="badge status-{}">{}</span></li>',
            relation,
            memory_link(other),
            other.status,
            other.status,
        )
        for relation, other in d.chain
    )
    events = join(
        html(
            '<tr><td>{}</td><td><span class="ev ev-{}">{}</span></td><td>{}</td><td>{}</td><td class="receipts">{}</td></tr>',
            when(e.at),
            e.event,
            e.event,
            e.session or "",
            "" if e.turn is None else e.turn,
            receipts(e.receipts),
        )
        for e in d.events
    )
    tel = html(
        '<dl class="telemetry"><dt>surfaced</dt><dd id="surfaced">{}</dd><dt>acted</dt><dd id="acted">{}</dd>'
        "<dt>follow-through</dt><dd>{}</dd><dt>first surfaced</dt><dd>{}</dd><dt>last surfaced</dt><dd>{}</dd>"
        "<dt>last acted</dt><dd>{}</dd></dl>",
        t.surfaced,
        t.acted,
        percent(None if not t.surfaced else min(1.0, t.acted / t.surfaced)),
        when(t.first_surfaced),
        when(t.last_surfaced),
        when(t.last_acted),
    )
    supersede = html(
        '<form method="post" action="/m/{id}/supersede" class="row">{csrf}'
        '<label>Replaced by memory <input name="new_id" required pattern="[0-9a-fA-F]{{8}}" size="10" placeholder="8-hex id"></label>'
        '<button type="submit">Supersede</button> <a href="{new}">or write its replacement</a></form>',
        id=m.id,
        csrf=csrf_field(csrf),
        new=url("/new", {"supersedes": m.id, "category": m.category, "file": list(m.files)}),
    )
    return html(
        '<article class="memory" data-id="{id}"><h1 class="summary">{summary}</h1>'
        '<p class="meta"><code>{id}</code> {badges}</p>'
        '<p class="meta">scope {scope} · origin {origin} · priority {priority} · created {created} · updated {updated}</p>'
        '<p class="meta">note <code>{note}</code></p>'
        '<div class="actions">{actions}</div>'
        '<section><h2>Details</h2><div class="details" id="details">{details}</div></section>'
        '<section><h2>Files</h2><ul class="files">{files}</ul></section>'
        '<section><h2>Anchors</h2><ul class="anchors" id="anchors">{anchors}</ul></section>'
        '<section class="links"><h2>Links</h2>{links}</section>'
        '<section><h2>Supersede chain</h2><ul class="chain">{chain}</ul>{supersede}</section>'
        "<section><h2>Telemetry</h2>{tel}</section>"
        '<section><h2>Event log</h2><table class="events"><thead><tr><th>when</th><th>event</th><th>session</th>'
        "<th>turn</th><th>receipts</th></tr></thead><tbody>{events}</tbody></table></section></article>",
        id=m.id,
        summary=m.summary,
        badges=badges(m),
        scope=m.scope,
        origin=m.origin,
        priority=m.priority,
        created=when(m.created),
        updated=when(m.updated),
        note=d.note_path or "(session memory: no note)",
        actions=join(actions, " "),
        details=details_text(m.details, d.link_targets)
        if m.details
        else html('<span class="muted">no details</span>'),
        files=files or html('<li class="muted">no files</li>'),
        anchors=join(anchor_item(a) for a in d.anchors)
        or html('<li class="muted">no anchors: about whole files</li>'),
        links=join(links),
        chain=chain or html('<li class="muted">neither replaces nor was replaced</li>'),
        supersede=supersede if m.status == "active" else Html(""),
        tel=tel,
        events=events or html('<tr><td colspan="5" class="muted">no events yet</td></tr>'),
    )


def receipts(data: Mapping[str, object]) -> Html:
    """An event's receipts (`via file, sem 0.59`, the score, a reason) as key/value text."""
    parts = []
    for key, value in data.items():
        shown = (
            f"{value:.3f}"
            if isinstance(value, float)
            else value
            if isinstance(value, str)
            else json.dumps(value)
        )
        parts.append(html("<span><b>{}</b> {}</span>", key, shown))
    return join(parts, " · ")


def memory_form(
    action: str,
    csrf: str,
    values: Mapping[str, str],
    *,
    title: str,
    submit: str,
    error: str = "",
    new: bool = False,
    anchors: tuple[str, ...] = (),
) -> Html:
    """The edit form (and the new-memory form): the same fields and limits as `tether edit` / `tether add`."""
    scope = (
        html(
            '<label>Scope <select name="scope">{}</select></label>',
            options([("project", "project"), ("user", "user")], values.get("scope", "project")),
        )
        if new
        else Html("")
    )
    supersedes = (
        html(
            '<label>Supersedes <input name="supersedes" value="{}" pattern="[0-9a-fA-F]{{8}}" size="10"></label>',
            values.get("supersedes", ""),
        )
        if new
        else Html("")
    )
    problem = (
        html('<div class="flash error" role="alert" id="form-error">{}</div>', error) if error else Html("")
    )
    allow = values.get("allow_secret") == "1"
    kept = (
        html(
            '<p class="muted" id="form-anchors">Anchors, kept as they are (an anchor goes with its file): {}</p>',
            join((html("<code>{}</code>", spec) for spec in anchors), " "),
        )
        if anchors
        else Html("")
    )
    return html(
        "<h1>{title}</h1>{problem}"
        '<form method="post" action="{action}" class="memory-form">{csrf}'
        '<label>Summary <input name="summary" value="{summary}" required maxlength="{max}" class="wide"></label>'
        '<label>Details (markdown) <textarea name="details" rows="10" class="wide">{details}</textarea></label>'
        '<div class="row"><label>Category <select name="category">{cats}</select></label>'
        '<label>Priority <select name="priority">{prios}</select></label>{scope}{supersedes}</div>'
        "<label>Files, one per line, from the repository root (a directory ends in /)"
        '<textarea name="files" rows="4" class="wide">{files}</textarea></label>{kept}'
        '<label class="check"><input type="checkbox" name="allow_secret" value="1"{allow}> store text that looks like a '
        "credential anyway (it is not a real secret)</label>"
        '<div class="actions"><button type="submit">{submit}</button> <a class="button secondary" href="{back}">Cancel</a></div></form>',
        title=title,
        problem=problem,
        action=action,
        csrf=csrf_field(csrf),
        summary=values.get("summary", ""),
        max=SUMMARY_MAX,
        details=values.get("details", ""),
        cats=options(((c, c) for c in CATEGORIES), values.get("category", "context")),
        prios=options(((p, p) for p in PRIORITIES), values.get("priority", "normal")),
        scope=scope,
        supersedes=supersedes,
        files=values.get("files", ""),
        kept=kept,
        allow=attrs(checked=allow),
        submit=submit,
        back=action.rsplit("/", 1)[0] if not new else "/",
    )


def form_values(memory: Memory) -> dict[str, str]:
    return {
        "summary": memory.summary,
        "details": memory.details,
        "category": memory.category,
        "priority": memory.priority,
        "files": "\n".join(memory.files),
    }


def delete_page(memory: Memory, note: str | None, csrf: str) -> Html:
    return html(
        '<h1>Delete this memory?</h1><article class="memory confirm"><p class="summary">{}</p><p class="meta"><code>{}</code> {}</p>'
        "<p>Deleting removes the note <code>{}</code> for good (commit history aside); its telemetry stays "
        "in the index. Archiving instead hides it from recall and can be undone.</p>"
        '<div class="actions">{}{}<a class="button secondary" href="/m/{}">Cancel</a></div></article>',
        memory.summary,
        memory.id,
        badges(memory),
        note or "(session memory: no note)",
        post_button(
            f"/m/{memory.id}/delete", "Delete for good", csrf, cls="danger", fields={"confirm": memory.id}
        ),
        post_button(f"/m/{memory.id}/archive", "Archive instead", csrf)
        if memory.status == "active"
        else Html(""),
        memory.id,
    )
