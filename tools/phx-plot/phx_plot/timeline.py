"""phx-plot timeline: a trace drawn as one lane per (process, thread) track, time in ms,
each span a bar coloured by its kind (the op) and labelled where it is wide enough, and
each flow (an event waited for, a collective's release) an arrow between its lanes."""

import os

from . import PlotError
from .figure import new_figure, save
from .trace import read_trace

LANE_HEIGHT = 0.8  # of a lane's 1.0, the rest a gap between lanes
LABEL_FONT_SIZE = 7
LABEL_CHAR_PIXELS = 4.5  # about the width of one character at that size
MAX_LEGEND_KINDS = 20  # the largest palette's colours; more kinds share them, unnamed


def default_height(track_count):
    return min(4000, 160 + 60 * track_count)


def _colours(kinds):
    import matplotlib

    # tab10's colours are the most distinct; tab20 adds a lighter shade of each.
    palette = matplotlib.colormaps["tab10" if len(kinds) <= 10 else "tab20"]
    return {kind: palette(i % palette.N) for i, kind in enumerate(kinds)}


def _draw_spans(axes, trace, lanes, colours, origin_us):
    """Draws each span; returns [(span, start in ms, the middle of its bar)] to label."""
    bars = []
    depth_of_lane = {}
    for span in trace.spans:
        depth_of_lane[span.track] = max(depth_of_lane.get(span.track, 0), span.depth)
    for span in trace.spans:
        rows = depth_of_lane[span.track] + 1
        height = LANE_HEIGHT / rows
        # The y axis runs downwards (the first track on top): depth 0 in the top row.
        bottom = lanes[span.track] - LANE_HEIGHT / 2 + span.depth * height
        start_ms = (span.start_us - origin_us) / 1000
        axes.broken_barh([(start_ms, span.duration_us / 1000)], (bottom, height * 0.95),
                         facecolors=colours[span.kind], edgecolor="none")
        bars.append((span, start_ms, bottom + height / 2))
    return bars


def _draw_flows(axes, trace, lanes, origin_us):
    for flow in trace.flows:
        (start_track, start_us), (end_track, end_us) = flow.start, flow.end
        if start_track not in lanes or end_track not in lanes:
            continue  # a lane without spans is not drawn
        axes.annotate("", xy=((end_us - origin_us) / 1000, lanes[end_track]),
                      xytext=((start_us - origin_us) / 1000, lanes[start_track]),
                      arrowprops={"arrowstyle": "->", "color": "0.15", "linewidth": 0.7,
                                  "alpha": 0.8})


def _label_wide_spans(axes, bars):
    left, right = axes.get_xlim()
    pixels_per_ms = axes.bbox.width / (right - left)
    for span, start_ms, middle in bars:
        width_pixels = span.duration_us / 1000 * pixels_per_ms
        if width_pixels < LABEL_CHAR_PIXELS * (len(span.name) + 2):
            continue
        axes.text(start_ms + span.duration_us / 2000, middle, span.name, ha="center",
                  va="center", fontsize=LABEL_FONT_SIZE, clip_on=True)


def plot_timeline(trace_path, output, width, height):
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
    end_ms = max(s.start_us + s.duration_us for s in trace.spans) / 1000 - origin_us / 1000

    figure = new_figure(width, height)
    axes = figure.add_subplot()
    bars = _draw_spans(axes, trace, lanes, colours, origin_us)
    _draw_flows(axes, trace, lanes, origin_us)
    axes.set_xlim(0, max(end_ms, 1e-3) * 1.01)
    axes.set_ylim(len(tracks) - 0.5, -0.5)  # the first track on top
    axes.set_yticks(range(len(tracks)), [trace.track_name(t) for t in tracks], fontsize=8)
    axes.set_xlabel("time since the first event (ms)")
    arrows = f", {len(trace.flows)} arrows" if trace.flows else ""
    axes.set_title(f"Timeline of {os.path.basename(trace_path)}: {len(trace.spans)} spans"
                   f"{arrows}, {end_ms:.3f} ms")
    axes.grid(axis="x", alpha=0.3)
    figure.canvas.draw()  # lays the axes out, so that label widths are known in pixels
    _label_wide_spans(axes, bars)
    _legend(axes, kinds, colours)
    save(figure, output)


def _legend(axes, kinds, colours):
    from matplotlib.patches import Patch

    shown = kinds[:MAX_LEGEND_KINDS]
    handles = [Patch(color=colours[k], label=k) for k in shown]
    title = "op" if len(shown) == len(kinds) else f"op (first {len(shown)} of {len(kinds)})"
    axes.legend(handles=handles, title=title, loc="upper left", bbox_to_anchor=(1.0, 1.0),
                fontsize=7, title_fontsize=8)
