"""Reads a trace in the Chrome Trace Event Format: the JSON object form
({"traceEvents": [...]}) or the JSON array form, which may lack its closing bracket and
end in a half-written event (a program killed mid-run), as the format allows."""

import json

from . import PlotError


class Span:
    """One duration event: a complete event ("X") or a matched begin/end pair ("B"/"E")."""

    def __init__(self, name, kind, start_us, duration_us, track, category=""):
        self.name = name
        self.kind = kind  # what colours it: args.op where the event has it, else its name
        self.category = category  # the event's "cat": "op" for a Phynexus op
        self.start_us = start_us
        self.duration_us = duration_us
        self.track = track  # (pid, tid)
        self.depth = 0  # how deep it nests in the spans of its track


class Flow:
    """An arrow between two tracks: a flow event's start ("s") and one of its ends ("f"),
    matched by id, category and name, as Perfetto matches them."""

    def __init__(self, name, start, end):
        self.name = name
        self.start = start  # (track, ts in us)
        self.end = end


class Trace:
    def __init__(self):
        self.spans = []
        self.flows = []
        self.process_names = {}
        self.thread_names = {}
        self.process_order = {}
        self.thread_order = {}

    def track_name(self, track):
        pid, tid = track
        process = self.process_names.get(pid, f"pid {pid}")
        thread = self.thread_names.get(track, f"tid {tid}")
        return f"{process} / {thread}"

    def track_sort_key(self, track):
        pid, tid = track
        return (self.process_order.get(pid, 0), _id_key(pid), self.thread_order.get(track, 0),
                _id_key(tid))


def _id_key(value):
    """Ids in numeric order (2 before 10), any that is not a number after them."""
    return (0, value, "") if isinstance(value, (int, float)) else (1, 0, str(value))


def _events_of_array(text, path):
    """The events of the array form, closed or not."""
    decoder = json.JSONDecoder()
    events = []
    at = text.index("[") + 1
    while True:
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
        if at >= len(text) or text[at] == "]":
            return events
        try:
            event, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as error:
            # Only the last line may be cut short: a writer killed mid-event.
            if "\n" in text[at:].rstrip():
                raise PlotError(f"{path}: not a Chrome trace: {error.msg} at line "
                                f"{error.lineno}") from None
            return events
        events.append(event)


def _load_events(path):
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else error
        raise PlotError(f"{path}: cannot read: {reason}") from None
    start = text.lstrip()[:1]
    if start == "{":
        try:
            events = json.loads(text).get("traceEvents")
        except json.JSONDecodeError as error:
            raise PlotError(f"{path}: not a Chrome trace: {error.msg} at line "
                            f"{error.lineno}") from None
    elif start == "[":
        events = _events_of_array(text, path)
    else:
        raise PlotError(f"{path}: not a Chrome trace (neither a JSON array nor an object)")
    if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
        raise PlotError(f"{path}: not a Chrome trace: its events are not a list of objects")
    return events


def _metadata(trace, event, track):
    name = event.get("name")
    value = event.get("args")
    if not isinstance(value, dict):
        value = {}
    if name == "process_name":
        trace.process_names[track[0]] = str(value.get("name", track[0]))
    elif name == "thread_name":
        trace.thread_names[track] = str(value.get("name", track[1]))
    elif name == "process_sort_index":
        trace.process_order[track[0]] = value.get("sort_index", 0)
    elif name == "thread_sort_index":
        trace.thread_order[track] = value.get("sort_index", 0)


def _span(event, track, start, duration):
    name = str(event.get("name", "?"))
    args = event.get("args")
    kind = str(args.get("op", name)) if isinstance(args, dict) else name
    return Span(name, kind, start, duration, track, str(event.get("cat", "")))


def _set_depths(spans):
    """Nesting depth per track: a span that starts before the one open on its track ends
    lies inside it."""
    open_ends = {}
    for span in sorted(spans, key=lambda s: (s.start_us, -s.duration_us)):
        stack = open_ends.setdefault(span.track, [])
        while stack and stack[-1] <= span.start_us:
            stack.pop()
        span.depth = len(stack)
        stack.append(span.start_us + span.duration_us)


def read_trace(path):
    """The trace's duration events and track names; PlotError when it is none."""
    trace = Trace()
    begun = {}  # (pid, tid) -> the "B" events not yet ended, innermost last
    flow_starts = {}  # (cat, name, id) -> (track, ts)
    flow_ends = []  # ((cat, name, id), (track, ts))
    try:
        for event in _load_events(path):
            phase = event.get("ph")
            track = (event.get("pid", 0), event.get("tid", 0))
            if phase == "M":
                _metadata(trace, event, track)
            elif phase == "X":
                trace.spans.append(_span(event, track, float(event["ts"]),
                                         float(event.get("dur", 0))))
            elif phase == "B":
                begun.setdefault(track, []).append(event)
            elif phase == "E" and begun.get(track):
                first = begun[track].pop()
                start = float(first["ts"])
                trace.spans.append(_span(first, track, start, float(event["ts"]) - start))
            elif phase in ("s", "f") and "id" in event:
                key = (str(event.get("cat", "")), str(event.get("name", "")), str(event["id"]))
                point = (track, float(event["ts"]))
                if phase == "s":
                    flow_starts[key] = point
                else:
                    flow_ends.append((key, point))
    except (KeyError, TypeError, ValueError) as error:
        raise PlotError(f"{path}: an event with a field of the wrong type or none "
                        f"({error.__class__.__name__}: {error})") from None
    # An end whose start the trace lacks (cut short, or begun before it) draws nothing.
    trace.flows = [Flow(key[1], flow_starts[key], end) for key, end in flow_ends
                   if key in flow_starts]
    _set_depths(trace.spans)
    return trace
