"""Bar and line charts as inline SVG, drawn on the server (no script, no inline style: classes only).

>>> "<svg" in bar_chart("Shown", ["pref"], [("surfaced", "s-surfaced", [3.0])])
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tether.adapters.ui.html import Html, html, join

Series = tuple[str, str, Sequence[float]]  # (name, css class, values)

WIDTH = 640
HEIGHT = 240
LEFT, RIGHT, TOP, BOTTOM = 44, 12, 28, 40


def nice_max(value: float) -> float:
    """A round upper bound for an axis: 1, 2 or 5 times a power of ten, at least `value`."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if value <= step * power:
            return float(step * power)
    return float(10 * power)  # pragma: no cover - the loop always returns


def _fmt(value: float) -> str:
    return f"{value:.0%}" if 0 < value < 1 and value != int(value) else f"{value:g}"


def _axis(top: float, percent: bool, width: int = WIDTH) -> Html:
    ticks = []
    for i in range(5):
        value = top * i / 4
        y = TOP + (HEIGHT - TOP - BOTTOM) * (1 - i / 4)
        label = f"{value:.0%}" if percent else f"{value:g}"
        ticks.append(
            html(
                '<line class="grid" x1="{}" x2="{}" y1="{}" y2="{}"/><text class="tick" x="{}" y="{}" text-anchor="end">{}</text>',
                LEFT,
                width - RIGHT,
                f"{y:.1f}",
                f"{y:.1f}",
                LEFT - 6,
                f"{y + 4:.1f}",
                label,
            )
        )
    return join(ticks)


def _legend(series: Sequence[Series]) -> Html:
    items = []
    x = LEFT
    for name, cls, _ in series:
        items.append(
            html(
                '<rect class="{}" x="{}" y="8" width="10" height="10"/><text class="legend" x="{}" y="17">{}</text>',
                cls,
                x,
                x + 14,
                name,
            )
        )
        x += 14 + 8 * len(name) + 18
    return join(items)


def bar_chart(title: str, groups: Sequence[str], series: Sequence[Series], *, percent: bool = False) -> Html:
    """Grouped bars: one group per label in `groups`, one bar per series in each."""
    top = 1.0 if percent else nice_max(max((v for _, _, vs in series for v in vs), default=0.0))
    plot_w = WIDTH - LEFT - RIGHT
    plot_h = HEIGHT - TOP - BOTTOM
    group_w = plot_w / max(1, len(groups))
    bar_w = group_w * 0.7 / max(1, len(series))
    bars = []
    for g, label in enumerate(groups):
        x0 = LEFT + g * group_w + group_w * 0.15
        for s, (name, cls, values) in enumerate(series):
            value = float(values[g]) if g < len(values) else 0.0
            h = plot_h * min(1.0, value / top) if top else 0.0
            x = x0 + s * bar_w
            y = TOP + plot_h - h
            bars.append(
                html(
                    '<rect class="bar {}" x="{}" y="{}" width="{}" height="{}"><title>{}: {} {}</title></rect>',
                    cls,
                    f"{x:.1f}",
                    f"{y:.1f}",
                    f"{bar_w - 2:.1f}",
                    f"{h:.1f}",
                    label,
                    name,
                    f"{value:.0%}" if percent else _fmt(value),
                )
            )
            if h > 0 and not percent and bar_w > 18:
                bars.append(
                    html(
                        '<text class="value" x="{}" y="{}" text-anchor="middle">{}</text>',
                        f"{x + bar_w / 2 - 1:.1f}",
                        f"{y - 3:.1f}",
                        _fmt(value),
                    )
                )
        bars.append(
            html(
                '<text class="label" x="{}" y="{}" text-anchor="middle">{}</text>',
                f"{x0 + group_w * 0.35:.1f}",
                HEIGHT - BOTTOM + 16,
                label,
            )
        )
    return html(
        '<svg class="chart bar" viewBox="0 0 {w} {h}" role="img" aria-label="{title}"><title>{title}</title>'
        "{legend}{axis}{bars}</svg>",
        w=WIDTH,
        h=HEIGHT,
        title=title,
        legend=_legend(series),
        axis=_axis(top, percent),
        bars=join(bars),
    )


def line_chart(
    title: str, labels: Sequence[str], series: Sequence[Series], *, small: bool = False, width: int = WIDTH
) -> Html:
    """One polyline per series over the x `labels` (dates), with a dot and a tooltip on every point."""
    top = nice_max(max((v for _, _, vs in series for v in vs), default=0.0))
    plot_w = width - LEFT - RIGHT
    plot_h = HEIGHT - TOP - BOTTOM
    n = max(1, len(labels) - 1)

    def x(i: int) -> float:
        return LEFT + plot_w * i / n if len(labels) > 1 else LEFT + plot_w / 2

    def y(v: float) -> float:
        return TOP + plot_h * (1 - min(1.0, v / top))

    lines = []
    for name, cls, values in series:
        points = " ".join(f"{x(i):.1f},{y(float(v)):.1f}" for i, v in enumerate(values))
        dots = join(
            html(
                '<circle class="dot {}" cx="{}" cy="{}" r="3"><title>{}: {} {}</title></circle>',
                cls,
                f"{x(i):.1f}",
                f"{y(float(v)):.1f}",
                labels[i],
                name,
                _fmt(float(v)),
            )
            for i, v in enumerate(values)
            if v
        )
        lines.append(html('<polyline class="line {}" points="{}"/>{}', cls, points, dots))
    step = max(1, math.ceil(len(labels) / (12 if width > WIDTH else 6)))
    ticks = join(
        html(
            '<text class="label" x="{}" y="{}" text-anchor="middle">{}</text>',
            f"{x(i):.1f}",
            HEIGHT - BOTTOM + 16,
            label[5:],
        )
        for i, label in enumerate(labels)
        if i % step == 0 or i == len(labels) - 1
    )
    return html(
        '<svg class="chart line{small}" viewBox="0 0 {w} {h}" role="img" aria-label="{title}"><title>{title}</title>'
        "{legend}{axis}{lines}{ticks}</svg>",
        small=" small" if small else "",
        w=width,
        h=HEIGHT,
        title=title,
        legend=_legend(series),
        axis=_axis(top, False, width),
        lines=join(lines),
        ticks=ticks,
    )
