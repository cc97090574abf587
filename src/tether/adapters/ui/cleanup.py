"""The cleanup page: stale memories pre-ranked by age and disuse, archived in bulk."""

from __future__ import annotations

from typing import Any

from tether.adapters.ui.html import Html, html, join
from tether.adapters.ui.layout import badges, csrf_field


def cleanup_page(candidates: list[Any], csrf: str) -> Html:
    if not candidates:
        return html(
            '<h1>Cleanup</h1><p class="empty">Nothing looks stale: no active, unpinned project memory is ignored, '
            "names only deleted files or went unused for 90 days.</p>"
        )
    rows = join(
        html(
            '<tr><td><input type="checkbox" name="id" value="{id}" id="c-{id}" aria-label="archive {id}"></td>'
            '<td class="num">{rank}</td><td><label for="c-{id}"><a href="/m/{id}"><code>{id}</code></a> {summary}</label>'
            '<div class="meta">{badges}</div></td><td>{reasons}</td><td class="num">{idle}</td><td class="num">{unanswered}</td>'
            '<td class="num">{score}</td></tr>',
            id=c.memory.id,
            rank=rank,
            summary=c.memory.summary,
            badges=badges(c.memory),
            reasons=join(html("<div>{}</div>", r) for r in c.reasons),
            idle=c.idle_days,
            unanswered=c.unanswered,
            score=f"{c.score:.1f}",
        )
        for rank, c in enumerate(candidates, 1)
    )
    return html(
        "<h1>Cleanup</h1><p>{n} stale memor{y}, worst first: score = idle days / 30 + showings since last use"
        " + 6 when every file it names is gone. Pinned memories never appear. Archiving is reversible "
        "(Restore on the memory's page).</p>"
        '<form method="post" action="/cleanup" id="cleanup-form">{csrf}'
        '<div class="actions"><button type="button" class="secondary js-only" data-select-all="id">Select all</button> '
        '<button type="submit">Archive selected</button></div>'
        '<table class="memories"><thead><tr><th></th><th>rank</th><th>memory</th><th>why</th><th>idle days</th>'
        "<th>unanswered</th><th>score</th></tr></thead><tbody>{rows}</tbody></table></form>",
        n=len(candidates),
        y="y" if len(candidates) == 1 else "ies",
        csrf=csrf_field(csrf),
        rows=rows,
    )


def archived_flash(archived: list[Any]) -> Html:
    items = join(
        html('<li><a href="/m/{}"><code>{}</code></a> {}</li>', m.id, m.id, m.summary) for m in archived
    )
    return html(
        '<div class="flash ok" role="status"><p><strong>archived {}</strong> (restore any from its page)</p><ul>{}</ul></div>',
        len(archived),
        items,
    )
