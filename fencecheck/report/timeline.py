"""An inline SVG timeline of one race history: one lane per caller, one bar per call from invoke to return.

Bars are coloured by the call's answer (a small palette, in order of first appearance, with a legend), an
indefinite answer is hatched, a call that never returned runs to the right edge with an open end. The
number on a bar is its place in the linearization the checker found (or in the longest linearizable
prefix of an illegal history); the call that cannot be placed after that prefix is drawn red and labelled.
Every bar has a `<title>` tooltip with the call's full description. No script is needed to read it.
"""

from __future__ import annotations

import math

from fencecheck.report.html_builder import Safe, el
from fencecheck.report.model import RaceCall, RaceScenario

LANE = 18  # px per caller lane
LABEL = 150  # px for the caller names
PLOT = 820  # px for the time axis
AXIS = 26  # px below the lanes for ticks
PALETTE = ("#3b6fb6", "#5a9e4b", "#8a5cb8", "#c07a2c", "#2a9d9a", "#b5508a", "#6d7f2f", "#4f5d75")
FAILING = "#d1242f"


def _nice_step(span: float, ticks: int = 6) -> float:
    raw = max(span / ticks, 1e-9)
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def _fmt_ms(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".") if value < 10 else f"{value:.1f}".rstrip("0").rstrip(".")


def outcome_colours(scenario: RaceScenario) -> dict[str, str]:
    colours: dict[str, str] = {}
    for call in sorted(scenario.history, key=lambda c: c.invoked_ms):
        if call.definite and call.outcome not in colours:
            colours[call.outcome] = PALETTE[len(colours) % len(PALETTE)]
    return colours


def _tooltip(call: RaceCall) -> str:
    end = "no return" if call.returned_ms is None else f"{call.returned_ms:.3f} ms"
    place = f"linearized #{call.order}" if call.order is not None else "not placed"
    kind = "definite" if call.definite else "indefinite"
    lines = [
        f"call {call.id} ({call.caller})",
        call.op,
        f"answer: {call.outcome} ({kind})",
        f"invoked {call.invoked_ms:.3f} ms, returned {end}",
        place + (" — the first call that cannot be placed" if call.failing else ""),
    ]
    return "\n".join(lines)


def render_timeline(scenario: RaceScenario) -> Safe:
    calls = scenario.history
    if not calls:
        return el("p", "no calls recorded", class_="muted")
    lanes = list(scenario.lanes) or list(dict.fromkeys(c.caller for c in calls))
    lane_of = {name: i for i, name in enumerate(lanes)}
    end = max(max(c.returned_ms if c.returned_ms is not None else c.invoked_ms for c in calls), 1e-3)
    step = _nice_step(end)
    span = math.ceil(end / step) * step
    colours = outcome_colours(scenario)

    def x(ms: float) -> float:
        return LABEL + PLOT * ms / span

    height = LANE * len(lanes) + AXIS
    parts: list[Safe] = []
    for i, name in enumerate(lanes):
        y = i * LANE
        if i % 2:
            parts.append(el("rect", x=0, y=y, width=LABEL + PLOT, height=LANE, class_="lane-alt"))
        parts.append(el("text", name, x=LABEL - 6, y=y + LANE - 5, class_="lane-label", text_anchor="end"))
    tick = 0.0
    while tick <= span + 1e-9:
        parts.append(el("line", x1=f"{x(tick):.1f}", x2=f"{x(tick):.1f}", y1=0, y2=LANE * len(lanes), class_="grid"))
        parts.append(el("text", f"{_fmt_ms(tick)} ms", x=f"{x(tick):.1f}", y=LANE * len(lanes) + 16,
                        class_="tick", text_anchor="middle"))
        tick += step
    for call in sorted(calls, key=lambda c: (c.failing, c.id)):  # the failing bar is drawn last, on top
        parts.append(_bar(call, lane_of.get(call.caller, 0), x, colours, right=LABEL + PLOT))
    return el(
        "svg",
        parts,
        class_="timeline",
        viewBox=f"0 0 {LABEL + PLOT + 40} {height}",
        width=LABEL + PLOT + 40,
        height=height,
        role="img",
        aria_label=f"timeline of race {scenario.run_id}",
        data_run=scenario.run_id,
    )


def _bar(call: RaceCall, lane: int, x, colours: dict[str, str], *, right: float) -> Safe:
    y = lane * LANE + 3
    x0 = x(call.invoked_ms)
    x1 = right + 8 if call.returned_ms is None else x(call.returned_ms)
    width = max(x1 - x0, 3.0)
    classes = ["call", "definite" if call.definite else "indefinite"]
    if call.returned_ms is None:
        classes.append("no-return")
    if call.failing:
        classes.append("failing")
    fill = FAILING if call.failing else colours.get(call.outcome, "url(#hatch)")
    shapes = [
        el("title", _tooltip(call)),
        el("rect", x=f"{x0:.1f}", y=y, width=f"{width:.1f}", height=LANE - 6, rx=2, fill=fill),
    ]
    if call.order is not None:
        shapes.append(el("text", f"#{call.order}", x=f"{x0 + 3:.1f}", y=y + LANE - 9, class_="order"))
    if call.failing:
        shapes.append(el("text", "✖ cannot be placed", x=f"{x0 + width + 4:.1f}", y=y + LANE - 9,
                         class_="failing-label"))
    return el("g", shapes, class_=" ".join(classes), data_call_id=call.id, data_order=call.order)


def hatch_defs() -> Safe:
    """The hatch pattern for indefinite answers; defined once per page, used by every timeline."""
    pattern = el(
        "pattern",
        el("rect", width=6, height=6, fill="#f3c969"),
        el("path", d="M0,6 L6,0", stroke="#9a6b00", stroke_width=1.5),
        id="hatch",
        width=6,
        height=6,
        patternUnits="userSpaceOnUse",
        patternTransform="rotate(0)",
    )
    return el("svg", el("defs", pattern), width=0, height=0, aria_hidden="true", class_="defs")


def legend(scenario: RaceScenario) -> Safe:
    items = [
        el("span", el("i", style=f"background:{colour}"), label, class_="key")
        for label, colour in outcome_colours(scenario).items()
    ]
    if any(not c.definite for c in scenario.history):
        items.append(el("span", el("i", class_="hatched"), "indefinite answer", class_="key"))
    if scenario.failing_call is not None:
        items.append(el("span", el("i", style=f"background:{FAILING}"), "cannot be placed", class_="key"))
    return el("div", items, class_="legend")
