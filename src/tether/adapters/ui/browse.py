"""The browse page: every memory, searched, filtered, sorted and paged."""

from __future__ import annotations

from dataclasses import asdict, replace

from tether.adapters.ui.core import CATEGORIES, STATE_LABELS, STATES, Filters, Listing
from tether.adapters.ui.html import Html, attrs, html, join, url
from tether.adapters.ui.layout import badges, options, percent

SORT_LABELS = (
    ("relevance", "relevance (with a search)"),
    ("created", "created"),
    ("updated", "updated"),
    ("surfaced", "surfaced"),
    ("acted", "acted"),
    ("follow", "follow-through"),
    ("age", "age"),
)


def params(f: Filters, **changes: object) -> dict[str, object]:
    """The query string of `f` (with `changes`), defaults left out so addresses stay short."""
    data = asdict(replace(f, **changes))  # type: ignore[arg-type]
    defaults = asdict(Filters())
    out = {k: v for k, v in data.items() if v != defaults[k] and k != "per_page"}
    if "desc" in out:
        out["desc"] = "0"
    return out


def filter_form(f: Filters, origins: list[str], sort: str) -> Html:
    any_ = [("", "any")]
    return html(
        '<form method="get" action="/" class="filters" role="search">'
        '<label class="grow">Search <input type="search" name="q" value="{q}" placeholder="words or a question" autofocus></label>'
        '<label>Category <select name="category">{cats}</select></label>'
        '<label>Scope <select name="scope">{scopes}</select></label>'
        '<label>Origin <select name="origin">{origins}</select></label>'
        '<label>State <select name="state">{states}</select></label>'
        '<label>File <input type="text" name="file" value="{file}" placeholder="src/app.py or src/"></label>'
        '<label>Sort <select name="sort">{sorts}</select></label>'
        '<label class="check"><input type="checkbox" name="desc" value="0"{asc}> ascending</label>'
        '<button type="submit">Apply</button> <a href="/" class="button secondary">Reset</a></form>',
        q=f.q,
        cats=options([*any_, *((c, c) for c in CATEGORIES)], f.category),
        scopes=options(
            [("", "project + user"), ("project", "project"), ("user", "user"), ("session", "session")],
            f.scope,
        ),
        origins=options([*any_, *((o, o) for o in origins)], f.origin),
        states=options([(s, STATE_LABELS.get(s, s)) for s in STATES], f.state),
        file=f.file,
        sorts=options(list(SORT_LABELS), sort),
        asc=attrs(checked=not f.desc),
    )


def sort_header(f: Filters, listing: Listing, key: str, label: str) -> Html:
    current = listing.sort == key
    desc = not f.desc if current else True
    arrow = (" ▼" if f.desc else " ▲") if current else ""
    href = url("/", params(f, sort=key, desc=desc, page=1))
    return html(
        '<th scope="col"{}><a href="{}">{}{}</a></th>',
        attrs(aria_sort=("descending" if f.desc else "ascending") if current else None),
        href,
        label,
        arrow,
    )


def browse_page(f: Filters, listing: Listing, origins: list[str]) -> Html:
    rows = []
    for row in listing.rows:
        m, t = row.memory, row.telemetry
        files = join((html("<code>{}</code>", p) for p in m.files[:3]), " ")
        if len(m.files) > 3:
            files = html('{} <span class="muted">+{}</span>', files, len(m.files) - 3)
        rows.append(
            html(
                '<tr data-id="{id}"><td><a href="/m/{id}"><code>{id}</code></a></td>'
                '<td><a class="summary" href="/m/{id}">{summary}</a><div class="meta">{badges}</div></td>'
                '<td class="files">{files}</td><td class="num">{surfaced}</td><td class="num">{acted}</td>'
                '<td class="num">{follow}</td><td class="num">{created}</td>{score}</tr>',
                id=m.id,
                summary=m.summary,
                badges=badges(m),
                files=files,
                surfaced=t.surfaced,
                acted=t.acted,
                follow=percent(row.follow_through),
                created=m.created.strftime("%Y-%m-%d"),
                score=html('<td class="num">{}</td>', f"{row.score:.3f}") if f.q else Html(""),
            )
        )
    headers = join(
        [
            html('<th scope="col">id</th><th scope="col">summary</th><th scope="col">files</th>'),
            sort_header(f, listing, "surfaced", "surfaced"),
            sort_header(f, listing, "acted", "acted"),
            sort_header(f, listing, "follow", "follow-through"),
            sort_header(f, listing, "age", "created"),
            sort_header(f, listing, "relevance", "score") if f.q else Html(""),
        ]
    )
    body = (
        html(
            '<table class="memories"><thead><tr>{}</tr></thead><tbody>{}</tbody></table>', headers, join(rows)
        )
        if rows
        else html(
            '<p class="empty">No memories match. <a href="/">Show all active memories</a> or <a href="/new">add one</a>.</p>'
        )
    )
    count = html(
        '<p class="count" id="count">{} memor{}{}</p>',
        listing.total,
        "y" if listing.total == 1 else "ies",
        f" · page {listing.page} of {listing.pages}" if listing.pages > 1 else "",
    )
    notice = html('<p class="muted">{}</p>', listing.notice) if listing.notice else Html("")
    return join(
        [
            html("<h1>Memories</h1>"),
            filter_form(f, origins, listing.sort),
            count,
            notice,
            body,
            pager(f, listing),
        ]
    )


def pending_page(f: Filters, origins: list[str], queue: Html) -> Html:
    """The browse page in state `pending review`: the filters (to leave it) over the review queue."""
    return join([html("<h1>Pending review</h1>"), filter_form(f, origins, f.sort or "created"), queue])


def pager(f: Filters, listing: Listing) -> Html:
    if listing.pages <= 1:
        return Html("")
    links = []
    if listing.page > 1:
        links.append(
            html('<a rel="prev" href="{}">← previous</a>', url("/", params(f, page=listing.page - 1)))
        )
    pages = sorted(
        {1, listing.pages, *range(max(1, listing.page - 2), min(listing.pages, listing.page + 2) + 1)}
    )
    last = 0
    for number in pages:
        if number - last > 1:
            links.append(html('<span class="muted">…</span>'))
        if number == listing.page:
            links.append(html('<span aria-current="page">{}</span>', number))
        else:
            links.append(html('<a href="{}">{}</a>', url("/", params(f, page=number)), number))
        last = number
    if listing.page < listing.pages:
        links.append(html('<a rel="next" href="{}">next →</a>', url("/", params(f, page=listing.page + 1))))
    return html('<nav class="pager" aria-label="pages">{}</nav>', join(links, " "))


def filters_from(query: dict[str, str]) -> Filters:
    def number(value: str, default: int) -> int:
        try:
            return int(value)
        except ValueError:
            return default

    return Filters(
        q=query.get("q", "").strip(),
        category=query.get("category", "") if query.get("category", "") in CATEGORIES else "",
        scope=query.get("scope", "") if query.get("scope", "") in ("project", "user", "session") else "",
        origin=query.get("origin", "").strip(),
        state=query.get("state", "active") if query.get("state", "active") in STATES else "active",
        file=query.get("file", "").strip(),
        sort=query.get("sort", ""),
        desc=query.get("desc", "1") != "0",
        page=max(1, number(query.get("page", "1"), 1)),
    )
