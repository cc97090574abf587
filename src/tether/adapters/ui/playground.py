"""The recall playground: a prompt and touched files in, what the hook would inject and why out."""

from __future__ import annotations

from typing import Any

from tether.adapters.ui.core import Playground
from tether.adapters.ui.html import Html, html, join
from tether.adapters.ui.layout import badges
from tether.recall.work import work_note

FILE_FIELDS = 4


def playground_page(
    prompt: str, files: list[str], repo_files: list[str], result: Playground | None, work: bool = False
) -> Html:
    inputs = join(
        html(
            '<input type="text" name="file" list="repo-files" value="{}" placeholder="path/from/repo/root.py" aria-label="touched file {}">',
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
        '<label><input type="checkbox" name="work" value="1"{}> Without touched files, as a session\'s first '
        "prompt: the work in progress (files changed since HEAD, or the branch's own commits) stands for them when the prompt is "
        "about it</label>"
        '<datalist id="repo-files">{}</datalist>'
        '<button type="submit">Recall</button></form>',
        prompt,
        inputs,
        Html(" checked") if work else Html(""),
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
        "{} candidates ranked · surfacings recorded before {} and after {}{}{}</p>{}"
        '<h2>Score breakdown</h2><div class="cards">{}</div></section>',
        form,
        result.query or "(none)",
        ", ".join(result.files) or "(none)",
        result.candidates,
        result.surfaced_before,
        result.surfaced_after,
        " (unchanged)" if result.surfaced_before == result.surfaced_after else "",
        work_line(result),
        block,
        cards or html('<p class="empty">No candidate at all.</p>'),
    )


def work_line(result: Playground) -> Html:
    """Which files were in progress, and whether the recall took them (asked as a session's first prompt)."""
    if result.work is None:
        return Html("")
    return html('<br><span id="work">{}</span>', work_note(result.work, result.files))


def card(e: Any) -> Html:
    """One memory's breakdown: a row per signal (rank credit, magnitude), then the evidence that fired.
    Injected memories are open; runners-up are folded."""
    signals = list(dict.fromkeys([*e.rank_credit, *e.magnitudes]))
    rows = join(
        html(
            '<tr><th scope="row">{}</th><td class="num">{}</td><td class="num">{}</td></tr>',
            name,
            f"{e.rank_credit[name]:.4f}" if name in e.rank_credit else "",
            f"{e.magnitudes[name]:+.4f}" if name in e.magnitudes else "",
        )
        for name in signals
    )
    evidence = join(
        (
            html("<span><b>{}</b> {}</span>", k, f"{v:.3f}" if isinstance(v, float) else v)
            for k, v in e.evidence.items()
        ),
        " · ",
    )
    status = (
        "injected"
        if e.injected
        else ("injectable, cut by the limit or budget" if e.rank else "not injectable (no strong evidence)")
    )
    return html(
        '<details class="card {cls}" data-id="{id}"{open}><summary><code>{id}</code> {summary} · <strong>{status}</strong>'
        " · score {score}</summary>"
        '<p class="meta">{badges} · rank {rank} · via {receipt} · <a href="/m/{id}">open</a></p>'
        '<table class="kv"><thead><tr><th>signal</th><th class="num">rank credit</th><th class="num">magnitude</th>'
        "</tr></thead><tbody>{rows}</tbody></table>"
        '<p class="meta evidence">{mult}evidence: {evidence}</p></details>',
        cls="injected" if e.injected else "runner-up",
        id=e.memory.id,
        open=Html(" open") if e.injected else Html(""),
        summary=e.memory.summary,
        badges=badges(e.memory),
        status=status,
        score=f"{e.score:.4f}",
        rank=e.rank if e.rank is not None else "—",
        receipt=e.receipt,
        rows=rows or html('<tr><td colspan="3" class="muted">no signal fired</td></tr>'),
        mult=html("priority ×{} · ", e.multiplier) if e.multiplier != 1.0 else Html(""),
        evidence=evidence or html('<span class="muted">none</span>'),
    )
