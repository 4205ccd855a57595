"""The loss chart: L, D and Ω per GGS round as an SVG string, built on the server.

``loss_chart(rounds)`` is a pure function of ``summaries.rounds_of``-shaped
entries (``judged``, when present, names the round a decision judged); every
piece of text in the SVG goes through ``html.escape``, so the result can be
marked safe and embedded in a page.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from django.utils.safestring import SafeString, mark_safe

WIDTH, HEIGHT = 560, 220
PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 44, 16, 16, 42


@dataclass(frozen=True)
class Series:
    key: str
    label: str
    css: str


SERIES = (
    Series("L", "L (loss)", "series-l"),
    Series("D", "D (distance)", "series-d"),
    Series("Omega", "Ω (budget)", "series-omega"),
)


def _value(entry: dict, key: str) -> float | None:
    loss = entry.get("loss") or {}
    try:
        return float(loss[key])
    except (KeyError, TypeError, ValueError):
        return None


def _scale(rounds: list[dict]) -> float:
    values = [_value(r, s.key) for r in rounds for s in SERIES]
    top = max([v for v in values if v is not None] or [1.0])
    return max(1.0, top)


def _xy(index: int, count: int, value: float, top: float) -> tuple[float, float]:
    inner_w = WIDTH - PAD_LEFT - PAD_RIGHT
    inner_h = HEIGHT - PAD_TOP - PAD_BOTTOM
    x = PAD_LEFT + (inner_w * index / (count - 1) if count > 1 else inner_w / 2)
    y = PAD_TOP + inner_h * (1 - value / top)
    return round(x, 1), round(y, 1)


def _axes(top: float) -> list[str]:
    parts = []
    for step in range(5):
        value = top * step / 4
        _, y = _xy(0, 1, value, top)
        parts.append(
            f'<line class="grid" x1="{PAD_LEFT}" y1="{y}" '
            f'x2="{WIDTH - PAD_RIGHT}" y2="{y}"/>'
            f'<text class="tick" x="{PAD_LEFT - 6}" y="{y + 4}" '
            f'text-anchor="end">{value:.2f}</text>'
        )
    return parts


def _round(entry: dict, index: int) -> object:
    return entry.get("judged", entry.get("round", index))


def _round_labels(rounds: list[dict], top: float) -> list[str]:
    parts = []
    for i, entry in enumerate(rounds):
        x, _ = _xy(i, len(rounds), 0, top)
        label = escape(str(entry.get("transition", "")))
        # The outermost transition labels grow inwards so they are not clipped.
        anchor = "middle"
        if len(rounds) > 1 and i in (0, len(rounds) - 1):
            anchor = "start" if i == 0 else "end"
        parts.append(
            f'<text class="tick" x="{x}" y="{HEIGHT - PAD_BOTTOM + 16}" '
            f'text-anchor="middle">round {escape(str(_round(entry, i)))}</text>'
            f'<text class="tick small" x="{x}" y="{HEIGHT - PAD_BOTTOM + 30}" '
            f'text-anchor="{anchor}">{label}</text>'
        )
    return parts


def _series(rounds: list[dict], series: Series, top: float) -> str:
    points = [
        (_xy(i, len(rounds), v, top), v)
        for i, r in enumerate(rounds)
        if (v := _value(r, series.key)) is not None
    ]
    if not points:
        return ""
    path = " ".join(f"{x},{y}" for (x, y), _ in points)
    dots = "".join(
        f'<circle cx="{x}" cy="{y}" r="3.5"><title>{escape(series.label)} '
        f"{v:.3f}</title></circle>"
        for (x, y), v in points
    )
    return (
        f'<g class="series {series.css}"><polyline fill="none" points="{path}"/>'
        f"{dots}</g>"
    )


def _legend() -> str:
    items = []
    for i, series in enumerate(SERIES):
        x = PAD_LEFT + i * 120
        items.append(
            f'<g class="series {series.css}"><line x1="{x}" y1="6" x2="{x + 18}" '
            f'y2="6"/><text class="tick" x="{x + 22}" y="10">'
            f"{escape(series.label)}</text></g>"
        )
    return "".join(items)


def describe(rounds: list[dict]) -> str:
    """Return the chart's values as plain text, for screen readers."""
    if not rounds:
        return "No GGS decision yet."
    rows = []
    for entry in rounds:
        values = ", ".join(
            f"{s.key if s.key != 'Omega' else 'Ω'} {v:.3f}"
            for s in SERIES
            if (v := _value(entry, s.key)) is not None
        )
        rows.append(f"round {_round(entry, 0)} {entry.get('transition')}: {values}")
    return "; ".join(rows) + "."


def loss_chart(rounds: list[dict], chart_id: str = "loss-chart-svg") -> SafeString:
    """Return an accessible SVG line chart of L, D and Ω per round."""
    top = _scale(rounds)
    title_id, desc_id = f"{chart_id}-title", f"{chart_id}-desc"
    body = [] if not rounds else [*_axes(top), *_round_labels(rounds, top)]
    body += [_series(rounds, s, top) for s in SERIES] if rounds else []
    if not rounds:
        body.append(
            f'<text class="tick" x="{WIDTH / 2}" y="{HEIGHT / 2}" '
            'text-anchor="middle">No GGS decision yet</text>'
        )
    svg = (
        f'<svg id="{escape(chart_id)}" class="loss-chart" role="img" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" preserveAspectRatio="xMidYMid meet" '
        f'aria-labelledby="{escape(title_id)} {escape(desc_id)}" '
        'xmlns="http://www.w3.org/2000/svg">'
        f'<title id="{escape(title_id)}">Loss per round: L, D and Ω</title>'
        f'<desc id="{escape(desc_id)}">{escape(describe(rounds))}</desc>'
        f"{_legend()}{''.join(body)}</svg>"
    )
    # Every interpolated text above is escaped or a number we formatted.
    return mark_safe(svg)  # noqa: S308


# The control benchmark: bars per strategy -------------------------------------

BAR_W, BAR_H = 640, 260
BAR_PAD_TOP, BAR_PAD_BOTTOM, BAR_GAP = 40, 44, 36
# Fill attributes, not classes: the SVG file the bench writes stands alone.
PASS_FILLS = ("#3b6ea8", "#9cbbe0", "#c9d9ec")


@dataclass(frozen=True)
class Panel:
    key: str
    title: str


BENCH_PANELS = (
    Panel("solve_rate", "Solved, recoverable scenarios (%)"),
    Panel("tokens_per_solved", "Tokens per solved task"),
)


def _bench_value(row: dict, key: str) -> float | None:
    try:
        value = float(row[key])
    except (KeyError, TypeError, ValueError):
        return None
    return value * 100 if key == "solve_rate" else value


def _bench_label(value: float | None, key: str) -> str:
    if value is None:
        return "n/a"
    return f"{value:.0f}%" if key == "solve_rate" else f"{value:,.0f}"


def _panel(rows: list[dict], panel: Panel, x0: float, width: float) -> list[str]:
    strategies = list(dict.fromkeys(str(r.get("strategy", "")) for r in rows))
    passes = sorted({int(r.get("pass", 1)) for r in rows})
    values = [_bench_value(r, panel.key) for r in rows]
    top = 100.0 if panel.key == "solve_rate" else max([v or 0 for v in values] + [1])
    inner_h = BAR_H - BAR_PAD_TOP - BAR_PAD_BOTTOM
    base = BAR_PAD_TOP + inner_h
    slot = width / max(1, len(strategies))
    bar = min(40.0, slot * 0.7 / max(1, len(passes)))
    parts = [
        f'<text class="tick" x="{x0 + width / 2:.1f}" y="{BAR_PAD_TOP - 22}" '
        f'text-anchor="middle" font-weight="bold">{escape(panel.title)}</text>',
        f'<line x1="{x0:.1f}" y1="{base}" x2="{x0 + width:.1f}" y2="{base}" '
        'stroke="#888"/>',
    ]
    for i, strategy in enumerate(strategies):
        left = x0 + i * slot + (slot - bar * len(passes)) / 2
        for j, pass_no in enumerate(passes):
            row = next(
                (
                    r
                    for r in rows
                    if str(r.get("strategy")) == strategy
                    and int(r.get("pass", 1)) == pass_no
                ),
                {},
            )
            value = _bench_value(row, panel.key)
            h = inner_h * (value or 0) / top
            x, y = left + j * bar, base - h
            label = _bench_label(value, panel.key)
            fill = PASS_FILLS[min(j, len(PASS_FILLS) - 1)]
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar - 2:.1f}" '
                f'height="{h:.1f}" fill="{fill}"><title>{escape(strategy)} pass '
                f"{pass_no}: {escape(label)}</title></rect>"
                f'<text class="tick" x="{x + bar / 2 - 1:.1f}" y="{y - 4:.1f}" '
                f'text-anchor="middle" font-size="10">{escape(label)}</text>'
            )
        parts.append(
            f'<text class="tick" x="{x0 + i * slot + slot / 2:.1f}" '
            f'y="{base + 16}" text-anchor="middle">{escape(strategy)}</text>'
        )
    return parts


def _pass_legend(rows: list[dict]) -> str:
    passes = sorted({int(r.get("pass", 1)) for r in rows})
    if len(passes) < 2:
        return ""
    items = []
    for j, pass_no in enumerate(passes):
        x = 12 + j * 90
        fill = PASS_FILLS[min(j, len(PASS_FILLS) - 1)]
        items.append(
            f'<rect x="{x}" y="{BAR_H - 16}" width="10" height="10" fill="{fill}"/>'
            f'<text class="tick" x="{x + 14}" y="{BAR_H - 7}">pass {pass_no}</text>'
        )
    return "".join(items)


def describe_bench(rows: list[dict]) -> str:
    """Return the benchmark chart's values as plain text, for screen readers."""
    if not rows:
        return "No benchmark result."
    return (
        "; ".join(
            f"{r.get('strategy')} pass {r.get('pass', 1)}: "
            + ", ".join(
                f"{p.title} {_bench_label(_bench_value(r, p.key), p.key)}"
                for p in BENCH_PANELS
            )
            for r in rows
        )
        + "."
    )


def benchmark_chart(rows: list[dict], chart_id: str = "bench-chart-svg") -> SafeString:
    """Return an SVG of solve rate and tokens per solved task per strategy.

    ``rows`` hold ``strategy``, ``pass``, ``solve_rate`` (0–1) and
    ``tokens_per_solved`` (None when nothing was solved).
    """
    title_id, desc_id = f"{chart_id}-title", f"{chart_id}-desc"
    half = (BAR_W - 3 * BAR_GAP) / 2
    body = []
    for n, panel in enumerate(BENCH_PANELS):
        body += _panel(rows, panel, BAR_GAP + n * (half + BAR_GAP), half)
    svg = (
        f'<svg id="{escape(chart_id)}" class="bench-chart" role="img" '
        f'viewBox="0 0 {BAR_W} {BAR_H}" preserveAspectRatio="xMidYMid meet" '
        f'aria-labelledby="{escape(title_id)} {escape(desc_id)}" '
        'font-family="sans-serif" font-size="12" '
        'xmlns="http://www.w3.org/2000/svg">'
        f'<title id="{escape(title_id)}">Control strategies: solve rate and tokens'
        "</title>"
        f'<desc id="{escape(desc_id)}">{escape(describe_bench(rows))}</desc>'
        f"{''.join(body)}{_pass_legend(rows)}</svg>"
    )
    # Every interpolated text above is escaped or a number we formatted.
    return mark_safe(svg)  # noqa: S308
