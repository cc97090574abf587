"""The graph page: memories, files and wikilinks on a canvas (`static/graph.js`), with type filters and
connected clusters, laid out by `graph.layout`; the clusters are also listed as links, without script."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tether.adapters.ui.core import CATEGORIES
from tether.adapters.ui.graph import layout
from tether.adapters.ui.html import Html, html, join, json_data

KINDS = ("file", "wikilink", "supersedes")
STATUSES = ("active", "archived", "superseded")
LISTED_CLUSTERS = 12


def signature(data: dict[str, Any]) -> str:
    """What the layout depends on: the nodes and edges (labels and flags change no position)."""
    text = json.dumps([[n["id"] for n in data["nodes"]], data["edges"]], separators=(",", ":"))
    return hashlib.sha1(text.encode()).hexdigest()


def payload(data: dict[str, Any]) -> dict[str, Any]:
    """The graph with positions and clusters, as `graph.js` reads it (short keys: 2,000+ nodes)."""
    nodes = data["nodes"]
    edges = data["edges"]
    positions, found = layout(len(nodes), edges)
    cluster_of = {node: c.index for c in found for node in c.members}
    out_nodes = []
    for i, n in enumerate(nodes):
        x, y = positions[i]
        item: dict[str, Any] = {
            "i": n["id"],
            "k": n["kind"][0],
            "l": n["label"][:120],
            "x": x,
            "y": y,
            "c": cluster_of[i],
        }
        if n["kind"] == "memory":
            item.update(cat=n["category"], o=n["origin"], s=n["status"])
            if n["pinned"]:
                item["p"] = 1
        elif not n["exists"]:
            item["gone"] = 1
        out_nodes.append(item)
    return {
        "nodes": out_nodes,
        "edges": [[a, b, KINDS.index(kind)] for a, b, kind in edges],
        "kinds": list(KINDS),
        "refine": [c.index for c in found if c.refine],
        "clusters": len(found),
        "singletons": sum(1 for c in found if len(c.members) == 1),
    }


def graph_page(data: dict[str, Any], graph: dict[str, Any], origins: list[str]) -> Html:
    memories = sum(1 for n in data["nodes"] if n["kind"] == "memory")
    files = len(data["nodes"]) - memories

    def boxes(group: str, values: list[str] | tuple[str, ...]) -> Html:
        return join(
            html(
                '<label class="check"><input type="checkbox" name="{}" value="{}" checked> <span class="sw {}-{}"></span>{}</label>',
                group,
                v,
                group,
                v.rstrip(":"),
                v,
            )
            for v in values
        )

    return html(
        "<h1>Graph</h1>"
        '<p class="muted">{m} memories, {f} files, {e} links: {c} connected clusters and {single} unconnected nodes. Click a memory to open it; '
        "click a file to highlight its cluster; drag to pan, wheel to zoom.</p>"
        '<form class="graph-filters" id="graph-filters">'
        "<fieldset><legend>Category</legend>{cats}</fieldset>"
        "<fieldset><legend>Origin</legend>{origins}</fieldset>"
        "<fieldset><legend>State</legend>{states}</fieldset>"
        "<fieldset><legend>Link kind</legend>{kinds}</fieldset>"
        '<fieldset><legend>Find</legend><input type="search" id="graph-find" placeholder="id or words" '
        'aria-label="find a memory or file"> <label class="check"><input type="checkbox" id="graph-files" checked> files</label>'
        "</fieldset></form>"
        '<div class="graph-wrap"><canvas id="graph" tabindex="0" aria-label="memory graph" width="1200" height="720"></canvas>'
        '<div id="graph-tip" class="tip" hidden></div></div>'
        '<p class="muted" id="graph-status">Needs JavaScript to draw; the clusters are listed below.</p>'
        "{data}<h2>Largest clusters</h2>{clusters}",
        m=memories,
        f=files,
        e=len(data["edges"]),
        c=graph["clusters"] - graph["singletons"],
        single=graph["singletons"],
        cats=boxes("cat", CATEGORIES),
        origins=boxes("o", origins),
        states=boxes("s", STATUSES),
        kinds=boxes("kind", KINDS),
        data=json_data("graph-data", graph),
        clusters=cluster_list(data, graph),
    )


def cluster_list(data: dict[str, Any], graph: dict[str, Any]) -> Html:
    groups: dict[int, list[int]] = {}
    for i, n in enumerate(graph["nodes"]):
        groups.setdefault(n["c"], []).append(i)
    out = []
    for cluster in sorted(groups, key=lambda c: (-len(groups[c]), c))[:LISTED_CLUSTERS]:
        members = groups[cluster]
        if len(members) < 2:
            break
        nodes = [data["nodes"][i] for i in members]
        mems = [n for n in nodes if n["kind"] == "memory"]
        paths = [n for n in nodes if n["kind"] == "file"]
        items = join(
            html('<li><a href="/m/{}"><code>{}</code></a> {}</li>', n["id"], n["id"], n["label"])
            for n in mems[:20]
        )
        more = html('<li class="muted">… {} more</li>', len(mems) - 20) if len(mems) > 20 else Html("")
        out.append(
            html(
                "<details><summary>cluster {} · {} memories · files: {}</summary><ul>{}{}</ul></details>",
                cluster + 1,
                len(mems),
                ", ".join(n["id"] for n in paths[:6]) + (" …" if len(paths) > 6 else "") or "none",
                items,
                more,
            )
        )
    return join(out) or html(
        '<p class="empty">No two memories are connected yet (by a file, a link or a supersede).</p>'
    )
