"""Streams: an in-order queue of work on a device, its tickets, events and profile records,
and transfers ordered on it."""

import numpy as np

from . import _dtypes, _phynexus

Event = _phynexus.Event


def _host_array(tensor, array, what):
    """array, checked to be a numpy array of tensor's element type (bf16: uint16 bits);
    the binding checks that it is C-contiguous and of the tensor's byte size."""
    expected = np.dtype(np.uint16) if tensor.dtype is _dtypes.bf16 else tensor.dtype.numpy
    if not isinstance(array, np.ndarray) or array.dtype != expected:
        found = array.dtype if isinstance(array, np.ndarray) else type(array).__name__
        raise _phynexus.InvalidArgumentError(
            f"phynexus: Stream.{what}: a {tensor.dtype.name} tensor needs a numpy array of "
            f"{expected}, not {found}")
    return array


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

    def upload_async(self, tensor, array):
        """Queues a copy of array (a C-contiguous numpy array of the tensor's element type
        and byte size; bf16: uint16 bits) into tensor, a tensor of this stream's device,
        and returns its ticket. The stream holds the array until it has seen the ticket
        finish; write to it only after waiting for the ticket."""
        return self._upload_async(tensor, _host_array(tensor, array, "upload_async"))

    def download_async(self, tensor, array):
        """Queues a copy of tensor, a tensor of this stream's device, into array (as
        upload_async's, writable) and returns its ticket. The stream holds the array until
        it has seen the ticket finish; read it only after waiting for the ticket."""
        return self._download_async(tensor, _host_array(tensor, array, "download_async"))
