"""Contexts: the default one, made on first use, and any a program makes itself."""

import threading

from . import _phynexus

# phx_context flags (phynexus.h).
_PROFILE = 0x1
_FALLBACK_CPU = 0x2

_LOG_LEVELS = {"trace": 0, "debug": 1, "info": 2, "warn": 3, "error": 4, "off": 5}


class Context(_phynexus.Context):
    """A Phynexus context: the plugins it found and their devices.

    fallback: an op a device lacks runs on the CPU device (PHX_CONTEXT_FALLBACK_CPU).
    profile: every stream keeps a record per op (PHX_CONTEXT_PROFILE).
    plugin_paths: folders searched before the default ones; use_default_search_path=False
    searches them alone. num_threads: the CPU plugin's threads (0: one per hardware thread).
    The context lives as long as any tensor, stream or model made in it, or until close().
    """

    def __init__(self, *, fallback=True, profile=False, plugin_paths=(),
                 use_default_search_path=True, num_threads=0):
        flags = (_FALLBACK_CPU if fallback else 0) | (_PROFILE if profile else 0)
        super().__init__([str(p) for p in plugin_paths], bool(use_default_search_path),
                         flags, int(num_threads))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def devices(self):
        from ._device import Device
        return [Device(self, i) for i in range(self.device_count())]


_default = None
_default_lock = threading.Lock()


def default_context():
    """The context phynexus.devices(), phynexus.device() and phynexus.tensor() use: made on
    first use, with CPU fallback on, and kept until the interpreter exits."""
    global _default
    context = _default
    if context is None:
        with _default_lock:
            if _default is None:
                _default = Context()
            context = _default
    return context


def set_log_level(level):
    """Messages below level ("trace", "debug", "info", "warn" (default), "error", "off")
    are dropped. A context is created with the level set then, below which the library
    never sends a message: set it before the first use to see debug messages; raising it
    later silences any context at once. PHX_LOG_LEVEL in the environment overrides it."""
    if level not in _LOG_LEVELS:
        raise _phynexus.InvalidArgumentError(
            f"phynexus.set_log_level: {level!r} is none of {', '.join(_LOG_LEVELS)}")
    _phynexus.set_log_threshold(_LOG_LEVELS[level])
