"""The memory graph's clusters and layout, computed on the server so the page is usable at once.

Connected clusters are the components of memories, files and links. Each small cluster gets a finished
force layout here (Fruchterman-Reingold, exact, numpy); a large one gets a cheap seed (a spiral in
breadth-first order, smoothed toward its neighbours) and is refined in the browser by `static/graph.js`
with a Barnes-Hut simulation, a few milliseconds per frame, so a page of 2,000+ memories is interactive
before the layout has settled. Clusters are packed in rows, largest first.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any

# Up to this many nodes a cluster is laid out exactly here: n² pairs per step stay under ~0.1 M, about
# 2 ms a step with numpy, 60 steps. Larger clusters are refined incrementally in the browser.
EXACT_MAX = 300
STEPS = 60
SPACING = 30.0  # the ideal edge length, in layout units (pixels at zoom 1)
GOLDEN = math.pi * (3.0 - math.sqrt(5.0))


@dataclass
class Cluster:
    index: int
    members: list[int]  # node indexes
    refine: bool  # laid out roughly here; the browser refines it


def clusters(count: int, edges: list[tuple[int, int, str]]) -> list[Cluster]:
    """Connected components (union-find), largest first; ties by their first node, so stable."""
    parent = list(range(count))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a, b, _ in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for node in range(count):
        groups.setdefault(find(node), []).append(node)
    ordered = sorted(groups.values(), key=lambda g: (-len(g), g[0]))
    return [Cluster(i, g, len(g) > EXACT_MAX) for i, g in enumerate(ordered)]


def layout(count: int, edges: list[tuple[int, int, str]]) -> tuple[list[tuple[float, float]], list[Cluster]]:
    """Positions for `count` nodes and the clusters they form."""
    import numpy as np

    found = clusters(count, edges)
    neighbours: list[list[int]] = [[] for _ in range(count)]
    for a, b, _ in edges:
        if a != b:
            neighbours[a].append(b)
            neighbours[b].append(a)
    local: list[Any] = []
    for cluster in found:
        members = cluster.members
        if len(members) == 1:
            local.append(np.zeros((1, 2)))
            continue
        order = _bfs(members, neighbours)
        where = {node: i for i, node in enumerate(order)}
        pairs = np.array(
            [(where[a], where[b]) for a in order for b in neighbours[a] if where[b] > where[a]],
            dtype=np.int64,
        ).reshape(-1, 2)
        pos = _spiral(len(order))
        pos = _smooth(pos, pairs, len(order)) if cluster.refine else _force(pos, pairs)
        # Back to the members' order.
        local.append(pos[[where[node] for node in members]])
    positions: list[tuple[float, float]] = [(0.0, 0.0)] * count
    for cluster, pos, (cx, cy) in zip(found, local, _pack([_radius(p) for p in local]), strict=True):
        for node, (x, y) in zip(cluster.members, pos.tolist(), strict=True):
            positions[node] = (round(cx + x, 1), round(cy + y, 1))
    return positions, found


def _bfs(members: list[int], neighbours: list[list[int]]) -> list[int]:
    """Members in breadth-first order from the best-connected one: neighbours land near each other."""
    start = max(members, key=lambda n: (len(neighbours[n]), -n))
    seen = {start}
    order = [start]
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for other in sorted(neighbours[node], key=lambda n: -len(neighbours[n])):
            if other not in seen:
                seen.add(other)
                order.append(other)
                queue.append(other)
    return order


def _spiral(n: int) -> Any:
    import numpy as np

    i = np.arange(n, dtype=np.float64)
    r = SPACING * 0.8 * np.sqrt(i)
    return np.stack([r * np.cos(i * GOLDEN), r * np.sin(i * GOLDEN)], axis=1)


def _smooth(pos: Any, pairs: Any, n: int, rounds: int = 8) -> Any:
    """Pull each node toward the mean of its neighbours (keeps the spiral's spread): a seed, O(edges)."""
    import numpy as np

    if not len(pairs):
        return pos
    spread = float(np.abs(pos).max()) or 1.0
    degree = np.bincount(pairs.ravel(), minlength=n).astype(np.float64)[:, None]
    for _ in range(rounds):
        total = np.zeros_like(pos)
        np.add.at(total, pairs[:, 0], pos[pairs[:, 1]])
        np.add.at(total, pairs[:, 1], pos[pairs[:, 0]])
        mean = np.where(degree > 0, total / np.maximum(degree, 1), pos)
        pos = 0.6 * pos + 0.4 * mean
        pos *= spread / (float(np.abs(pos).max()) or 1.0)
    return pos


def _force(pos: Any, pairs: Any) -> Any:
    """Fruchterman-Reingold with exact repulsion and a cooling step size."""
    import numpy as np

    k = SPACING
    temperature = k * math.sqrt(len(pos))
    for _ in range(STEPS):
        delta = pos[:, None, :] - pos[None, :, :]
        dist2 = (delta**2).sum(-1) + 0.01
        push = (delta * (k * k / dist2)[..., None]).sum(1)
        if len(pairs):
            d = pos[pairs[:, 0]] - pos[pairs[:, 1]]
            length = np.sqrt((d**2).sum(-1))[:, None] + 1e-9
            pull = d * (length / k)
            np.add.at(push, pairs[:, 0], -pull)
            np.add.at(push, pairs[:, 1], pull)
        size = np.sqrt((push**2).sum(-1))[:, None] + 1e-9
        pos = pos + push / size * np.minimum(size, temperature)
        temperature = max(temperature * 0.92, k * 0.05)
    return pos - pos.mean(0)


def _radius(pos: Any) -> float:
    import numpy as np

    if len(pos) == 1:
        return SPACING * 0.5
    return float(np.sqrt((pos**2).sum(-1)).max()) + SPACING * 0.5


def _pack(radii: list[float]) -> list[tuple[float, float]]:
    """Centers for circles of these radii (largest first) in rows about as wide as the whole is tall."""
    if not radii:
        return []
    width = max(max(radii) * 2, math.sqrt(sum((2 * r) ** 2 for r in radii)) * 1.1)
    out: list[tuple[float, float]] = []
    x = y = row = 0.0
    for r in radii:
        if x > 0 and x + 2 * r > width:
            x, y, row = 0.0, y + row, 0.0
        out.append((x + r, y + r))
        x += 2 * r
        row = max(row, 2 * r)
    cx, cy = width / 2, (y + row) / 2
    return [(px - cx, py - cy) for px, py in out]
