"""phx-plot timeline: a trace drawn as one lane per (process, thread) track, time in ms,
each span a bar coloured by its kind (the op) and labelled where it is wide enough, and
each flow (an event waited for, a collective's release) an arrow between its lanes.

The window drawn is, by default, the one the ops span (a long compile or wait on the
host would otherwise set the axis and leave every op below a pixel), or the one asked
for; every span in it is drawn at least MIN_SPAN_PIXELS wide, so none disappears."""

import os
import re

from . import PlotError
from .figure import new_figure, save
from .trace import read_trace

LANE_HEIGHT = 0.8  # of a lane's 1.0, the rest a gap between lanes
LABEL_FONT_SIZE = 7
LABEL_CHAR_PIXELS = 4.5  # about the width of one character at that size
MAX_LEGEND_KINDS = 20  # the largest palette's colours; more kinds share them, unnamed
MIN_SPAN_PIXELS = 2.0  # a span shorter than this is drawn this wide: seen, not measured
# The categories of a Phynexus op's spans (tracing.md): the default window spans these,
# less the compiles that open them ("compile": Vulkan's pipelines, made in the submission).
OP_CATEGORIES = ("op", "simulated op")
COMPILE_CATEGORY = "compile"
WINDOW_MARGIN = 0.02  # of the default window's width, on each side
_TIME_UNITS_MS = {"s": 1e3, "ms": 1.0, "us": 1e-3}


def default_height(track_count):
    return min(4000, 160 + 60 * track_count)


def parse_time_ms(text, option):
    """"12.5" (ms), "0.42s", "420ms" or "420000us" -> ms."""
    match = re.fullmatch(r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(s|ms|us)?\s*",
                         text or "")
    if not match:
        raise PlotError(f"{option} {text!r}: expected a time in ms, or with a unit: "
                        f"0.42s, 420ms, 420000us")
    return float(match.group(1)) * _TIME_UNITS_MS[match.group(2) or "ms"]


def _colours(kinds):
    import matplotlib

    # tab10's colours are the most distinct; tab20 adds a lighter shade of each.
    palette = matplotlib.colormaps["tab10" if len(kinds) <= 10 else "tab20"]
    return {kind: palette(i % palette.N) for i, kind in enumerate(kinds)}


def default_window_ms(trace, origin_us):
    """(start, end) in ms from origin_us, and what it is: the ops' spans with a margin,
    each from the end of a compile that opens it; every span where there is no op."""
    ops = [s for s in trace.spans if s.category in OP_CATEGORIES]
    if not ops:
        what, starts, spans = "all", [s.start_us for s in trace.spans], trace.spans
    else:
        compile_end = {(s.track, s.start_us): s.start_us + s.duration_us
                       for s in trace.spans if s.category == COMPILE_CATEGORY}
        what, spans = "the ops", ops
        starts = [compile_end.get((s.track, s.start_us), s.start_us) for s in ops]
    start, end = min(starts), max(s.start_us + s.duration_us for s in spans)
    margin = max(end - start, 1.0) * WINDOW_MARGIN
    return ((max(start - margin, origin_us) - origin_us) / 1000,
            (end + margin - origin_us) / 1000, what)


def _window(trace, origin_us, start_ms, end_ms):
    """(start, end) in ms from origin_us and what it is."""
    if start_ms is None and end_ms is None:
        return default_window_ms(trace, origin_us)
    # One bound given: the other is the trace's own.
    if start_ms is None:
        start_ms = 0.0
    if end_ms is None:
        end_ms = (max(s.start_us + s.duration_us for s in trace.spans) - origin_us) / 1000
    if not start_ms < end_ms:
        raise PlotError(f"--from {start_ms:g} ms is not before --to {end_ms:g} ms")
    return start_ms, end_ms, "asked for"


def visible_extent(start_ms, duration_ms, window, ms_per_pixel):
    """(left, width) in ms of a span's bar in the window: its part within the window, at
    least MIN_SPAN_PIXELS wide and kept inside it; None when it is outside."""
    low, high = window
    end_ms = start_ms + duration_ms
    if end_ms < low or start_ms > high:
        return None
    left, right = max(start_ms, low), min(end_ms, high)
    width = max(right - left, MIN_SPAN_PIXELS * ms_per_pixel)
    return min(left, high - width), width


def _draw_spans(axes, trace, lanes, colours, origin_us, window):
    """Draws each span in the window; returns [(span, left, width, middle of its bar)]."""
    left_ms, right_ms = axes.get_xlim()
    ms_per_pixel = (right_ms - left_ms) / axes.bbox.width
    bars = []
    depth_of_lane = {}
    for span in trace.spans:
        depth_of_lane[span.track] = max(depth_of_lane.get(span.track, 0), span.depth)
    for span in trace.spans:
        extent = visible_extent((span.start_us - origin_us) / 1000, span.duration_us / 1000,
                                window, ms_per_pixel)
        if extent is None:
            continue
        rows = depth_of_lane[span.track] + 1
        height = LANE_HEIGHT / rows
        # The y axis runs downwards (the first track on top): depth 0 in the top row.
        bottom = lanes[span.track] - LANE_HEIGHT / 2 + span.depth * height
        # A thin white edge tells apart two spans of one kind that touch (an op and the next).
        axes.broken_barh([extent], (bottom, height * 0.95), facecolors=colours[span.kind],
                         edgecolor="white", linewidth=0.4)
        bars.append((span, extent[0], extent[1], bottom + height / 2))
    return bars, ms_per_pixel


def _draw_flows(axes, trace, lanes, origin_us, window):
    low, high = window
    for flow in trace.flows:
        (start_track, start_us), (end_track, end_us) = flow.start, flow.end
        if start_track not in lanes or end_track not in lanes:
            continue  # a lane without spans is not drawn
        start_ms, end_ms = (start_us - origin_us) / 1000, (end_us - origin_us) / 1000
        if not (low <= start_ms <= high and low <= end_ms <= high):
            continue  # an arrow from outside the axes would cross the lane names
        axes.annotate("", xy=(end_ms, lanes[end_track]), xytext=(start_ms, lanes[start_track]),
                      arrowprops={"arrowstyle": "->", "color": "0.15", "linewidth": 0.7,
                                  "alpha": 0.8})


def _label_wide_bars(axes, bars, ms_per_pixel):
    for span, left, width, middle in bars:
        if width / ms_per_pixel < LABEL_CHAR_PIXELS * (len(span.name) + 2):
            continue
        axes.text(left + width / 2, middle, span.name, ha="center", va="center",
                  fontsize=LABEL_FONT_SIZE, clip_on=True)


def draw_timeline(trace_path, width, height, start_ms=None, end_ms=None):
    """The timeline's figure, laid out and drawn; start_ms and end_ms (from the trace's
    first event) choose the window, by default the ops'."""
    trace = read_trace(trace_path)
    if not trace.spans:
        raise PlotError(f"{trace_path}: no duration events (\"X\", or \"B\" and \"E\") to draw")
    tracks = sorted({s.track for s in trace.spans}, key=trace.track_sort_key)
    if height is None:
        height = default_height(len(tracks))
    lanes = {track: i for i, track in enumerate(tracks)}
    kinds = sorted({s.kind for s in trace.spans})
    colours = _colours(kinds)
    origin_us = min(s.start_us for s in trace.spans)
    total_ms = (max(s.start_us + s.duration_us for s in trace.spans) - origin_us) / 1000
    *window, shown = _window(trace, origin_us, start_ms, end_ms)

    figure = new_figure(width, height)
    axes = figure.add_subplot()
    axes.set_xlim(*window)
    axes.set_ylim(len(tracks) - 0.5, -0.5)  # the first track on top
    axes.set_yticks(range(len(tracks)), [trace.track_name(t) for t in tracks], fontsize=8)
    axes.set_xlabel("time since the first event (ms)")
    # A window far from 0 reads 1020.2, not 0.2 and "+1.02e3" in the corner.
    axes.ticklabel_format(axis="x", useOffset=False)
    axes.grid(axis="x", alpha=0.3)
    _legend(axes, kinds, colours)
    arrows = f", {_count(len(trace.flows), 'arrow')}" if trace.flows else ""
    axes.set_title(f"Timeline of {os.path.basename(trace_path)}: "
                   f"{_count(len(trace.spans), 'span')}{arrows} in {total_ms:.3f} ms; drawn "
                   f"{window[0]:.3f} to {window[1]:.3f} ms ({shown})", fontsize=10)
    # The layout is settled before the spans are drawn: a bar's least width and a label's
    # room are in pixels, which depend on the axes' final size.
    figure.canvas.draw()
    bars, ms_per_pixel = _draw_spans(axes, trace, lanes, colours, origin_us, window)
    _draw_flows(axes, trace, lanes, origin_us, window)
    _label_wide_bars(axes, bars, ms_per_pixel)
    return figure


def _count(number, noun):
    return f"{number} {noun}" + ("" if number == 1 else "s")


def plot_timeline(trace_path, output, width, height, start_ms=None, end_ms=None):
    save(draw_timeline(trace_path, width, height, start_ms, end_ms), output)


def _legend(axes, kinds, colours):
    from matplotlib.patches import Patch

    shown = kinds[:MAX_LEGEND_KINDS]
    handles = [Patch(color=colours[k], label=k) for k in shown]
    title = "op" if len(shown) == len(kinds) else f"op (first {len(shown)} of {len(kinds)})"
    axes.legend(handles=handles, title=title, loc="upper left", bbox_to_anchor=(1.0, 1.0),
                fontsize=7, title_fontsize=8)
