"""The stats page: surfaced vs acted per category and over time, follow-through, most ignored and used."""

from __future__ import annotations

from typing import Any

from tether.adapters.ui.charts import bar_chart, line_chart
from tether.adapters.ui.core import CATEGORIES
from tether.adapters.ui.html import Html, html, join
from tether.adapters.ui.layout import percent


def stats_page(data: dict[str, Any]) -> Html:
    cats = data["categories"]
    total = data["total"]
    shown = bar_chart(
        "Surfaced vs acted per category",
        list(CATEGORIES),
        [
            ("surfaced", "s-surfaced", [cats[c]["surfaced"] for c in CATEGORIES]),
            ("acted", "s-acted", [cats[c]["acted"] for c in CATEGORIES]),
        ],
    )
    follow = bar_chart(
        "Follow-through per category (share of shown memories acted on)",
        list(CATEGORIES),
        [("follow-through", "s-follow", [cats[c]["follow_through"] or 0.0 for c in CATEGORIES])],
        percent=True,
    )
    tl = data["timeline"]
    if tl["buckets"]:
        over_time = line_chart(
            f"Surfaced and acted per {tl['unit']}",
            tl["buckets"],
            [("surfaced", "s-surfaced", tl["all"]["surfaced"]), ("acted", "s-acted", tl["all"]["acted"])],
            width=1200,
        )
        small = join(
            html(
                '<figure class="small">{}<figcaption>{}</figcaption></figure>',
                line_chart(
                    f"{c}: surfaced and acted per {tl['unit']}",
                    tl["buckets"],
                    [
                        ("surfaced", "s-surfaced", tl["categories"][c]["surfaced"]),
                        ("acted", "s-acted", tl["categories"][c]["acted"]),
                    ],
                    small=True,
                ),
                c,
            )
            for c in CATEGORIES
        )
    else:
        over_time = html('<p class="empty">No memory has been surfaced or acted on yet.</p>')
        small = Html("")
    rows = join(
        html(
            '<tr><th scope="row"><a href="/?category={c}&amp;state=all">{c}</a></th><td class="num">{a}</td><td class="num">{ar}</td>'
            '<td class="num">{su}</td><td class="num">{s}</td><td class="num">{ac}</td><td class="num">{f}</td></tr>',
            c=c,
            a=row["active"],
            ar=row["archived"],
            su=row["superseded"],
            s=row["surfaced"],
            ac=row["acted"],
            f=percent(row["follow_through"]),
        )
        for c, row in [*((c, cats[c]) for c in CATEGORIES), ("all", total)]
    )
    table = html(
        '<table class="stats"><thead><tr><th>category</th><th>active</th><th>archived</th><th>superseded</th>'
        "<th>surfaced</th><th>acted</th><th>follow-through</th></tr></thead><tbody>{}</tbody></table>",
        rows,
    )
    return html(
        "<h1>Stats</h1>"
        '<div class="charts"><figure>{}</figure><figure>{}</figure></div>'
        '<h2>Over time</h2><figure class="wide">{}</figure><div class="charts four">{}</div>'
        "<h2>Per category</h2>{}"
        '<div class="two"><section><h2>Most ignored</h2><p class="muted">Shown, never acted on: candidates to '
        "rewrite, re-scope or archive.</p>{}</section>"
        '<section><h2>Most used</h2><p class="muted">Acted on most.</p>{}</section></div>',
        shown,
        follow,
        over_time,
        small,
        table,
        ranking(data["most_ignored"], "ignored"),
        ranking(data["most_used"], "used"),
    )


def ranking(entries: list[dict[str, Any]], name: str) -> Html:
    if not entries:
        return html('<p class="empty">none yet</p>')
    items = join(
        html(
            '<li><a href="/m/{id}"><code>{id}</code> {summary}</a> <span class="cat cat-{cat}">{cat}</span>'
            ' <span class="muted">surfaced {s}, acted {a}</span></li>',
            id=e["id"],
            summary=e["summary"],
            cat=e["category"],
            s=e["surfaced"],
            a=e["acted"],
        )
        for e in entries
    )
    return html('<ol class="ranking" id="most-{}">{}</ol>', name, items)
