"""The recall playground: a prompt and touched files in, what the hook would inject and why out."""

from __future__ import annotations

from typing import Any

from tether.adapters.ui.core import Playground
from tether.adapters.ui.html import Html, html, join
from tether.adapters.ui.layout import badges

FILE_FIELDS = 4


def playground_page(prompt: str, files: list[str], repo_files: list[str], result: Playground | None) -> Html:
    inputs = join(
        html(
            '<input type="text" name="file" list="repo-files" value="{}" placeholder="src/app.py" aria-label="touched file {}">',
            files[i] if i < len(files) else "",
            i + 1,
        )
        for i in range(max(FILE_FIELDS, len(files) + 1))
    )
    datalist = join(html('<option value="{}">', path) for path in repo_files)
    form = html(
        "<h1>Recall playground</h1><p>What the prompt hook would inject for this prompt and these files, "
        "with every score broken down. Nothing is recorded: no memory counts as surfaced.</p>"
        '<form method="get" action="/recall" class="playground">'
        '<label>Prompt <textarea name="prompt" rows="3" class="wide" placeholder="why does upload retry?">{}</textarea></label>'
        '<fieldset class="files"><legend>Touched files</legend>{}</fieldset>'
        '<datalist id="repo-files">{}</datalist>'
        '<button type="submit">Recall</button></form>',
        prompt,
        inputs,
        datalist,
    )
    if result is None:
        return form
    block = (
        html('<pre class="block" id="block">{}</pre>', result.block)
        if result.block
        else html(
            '<p class="empty" id="block">Nothing would be injected: no memory has strong enough evidence (an empty block is a good answer).</p>'
        )
    )
    cards = join(card(e) for e in result.explained)
    return html(
        '{}<section class="result"><h2>Injected block</h2><p class="muted">query after sanitizing: <code>{}</code> · files: {} · '
        "{} candidates ranked · surfacings before {} and after {} (unchanged)</p>{}"
        '<h2>Score breakdown</h2><div class="cards">{}</div></section>',
        form,
        result.query or "(none)",
        ", ".join(result.files) or "(none)",
        result.candidates,
        result.surfaced_before,
        result.surfaced_after,
        block,
        cards or html('<p class="empty">No candidate at all.</p>'),
    )


def card(e: Any) -> Html:
    def table(values: dict[str, Any]) -> Html:
        rows = join(
            html("<tr><th>{}</th><td>{}</td></tr>", k, f"{v:.4f}" if isinstance(v, float) else v)
            for k, v in values.items()
        )
        return html('<table class="kv">{}</table>', rows or html('<tr><td class="muted">none</td></tr>'))

    status = (
        "injected"
        if e.injected
        else ("injectable, cut by the limit or budget" if e.rank else "not injectable (no strong evidence)")
    )
    return html(
        '<article class="card {cls}" data-id="{id}"><h3><a href="/m/{id}"><code>{id}</code></a> {summary}</h3>'
        '<p class="meta">{badges} · <strong>{status}</strong> · score {score} · rank {rank} · via {receipt}</p>'
        '<div class="kvs"><div><h4>rank credit</h4>{rrf}</div><div><h4>magnitudes</h4>{mag}</div>'
        "<div><h4>evidence</h4>{ev}</div></div>{mult}</article>",
        cls="injected" if e.injected else "runner-up",
        id=e.memory.id,
        summary=e.memory.summary,
        badges=badges(e.memory),
        status=status,
        score=f"{e.score:.4f}",
        rank=e.rank if e.rank is not None else "—",
        receipt=e.receipt,
        rrf=table(e.rank_credit),
        mag=table(e.magnitudes),
        ev=table(e.evidence),
        mult=html('<p class="meta">priority multiplier ×{}</p>', e.multiplier)
        if e.multiplier != 1.0
        else Html(""),
    )
