"""Streams: an in-order queue of work on a device, its tickets and profile records."""

from . import _phynexus


class Stream(_phynexus.Stream):
    """A stream of device (a Device). Ops given stream=... and executables run on it; the
    others use their device's default stream. Safe to share between threads (the binding
    serializes the calls naming it)."""

    def __init__(self, device):
        super().__init__(device.context, device.index)
        self.device = device

    def records(self):
        """The stream's profile records (with profiling on: Context(profile=True) or
        PHX_PROFILE=1): ticket, op, signature, host_time_ns, metrics, node."""
        return self.profile_records()
