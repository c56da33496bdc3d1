"""Traces: a timeline of what a context did, written to a file that Perfetto
(ui.perfetto.dev) and chrome://tracing open (phx_trace_begin, docs/tracing.md)."""

import contextlib
import os

from ._context import default_context


@contextlib.contextmanager
def trace(path, context=None):
    """Writes a trace of the work of context (the default context when None) inside the
    with block to path, in the Chrome Trace Event Format: ops per device stream with
    their signatures, FLOPs and plugin metrics, waits and transfers, memory in use.
    "%p" in path becomes the process id. The trace ends when the block does, after the
    work queued meanwhile has finished; the file is then complete JSON.

        with phynexus.trace("run.json"):
            y = model(x).numpy()

    Raises InvalidArgumentError when path cannot be written or a trace of context is
    already being written."""
    context = default_context() if context is None else context
    context.trace_begin(os.fspath(path))
    try:
        yield path
    finally:
        context.trace_end()
