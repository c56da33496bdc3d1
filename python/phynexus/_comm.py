"""Communicators: collectives, messages and sharding over devices of one context (comm.h).

Every call is one rank's part, queued on a stream of that rank's device; it returns the
stream's ticket at once. A collective runs when every rank has called it, so one thread
calls every rank's part before it waits for any (docs/comm.md).
"""

from . import _phynexus
from ._context import default_context
from ._device import Device

# phx_reduce_op (comm.h).
_REDUCE_OPS = {"sum": 0, "max": 1, "min": 2, "mean": 3}
# phx_comm_options.timeout_ms is a uint32_t, and 0 stands for the default.
_MAX_TIMEOUT_MS = 2**32 - 1


def _reduce_op(op):
    if op not in _REDUCE_OPS:
        raise _phynexus.InvalidArgumentError(
            f"phynexus: reduce op {op!r} is none of {', '.join(_REDUCE_OPS)}")
    return _REDUCE_OPS[op]


def _device_indices(devices, context):
    """The context of devices (Device objects, or indices of context, default: the default
    context) and their indices."""
    devices = list(devices)
    if not devices:
        raise _phynexus.InvalidArgumentError("phynexus.Communicator: no devices")
    contexts = {id(d.context): d.context for d in devices if isinstance(d, Device)}
    if context is not None:
        contexts.setdefault(id(context), context)
    if len(contexts) > 1:
        raise _phynexus.InvalidArgumentError(
            "phynexus.Communicator: the devices are of more than one context")
    context = next(iter(contexts.values())) if contexts else default_context()
    indices = []
    for d in devices:
        if isinstance(d, Device):
            indices.append(d.index)
        elif isinstance(d, int) and not isinstance(d, bool) and d >= 0:
            indices.append(d)
        else:
            raise _phynexus.InvalidArgumentError(
                f"phynexus.Communicator: {d!r} is neither a Device nor a device index")
    return context, indices


class Communicator(_phynexus.Communicator):
    """Ranks 0..len(devices)-1, rank r on devices[r] (a Device, or an index of context;
    a device may serve several ranks). timeout_ms: how long the ranks that reached a
    collective wait for the others before it fails with DeviceUnavailableError (None: the
    library's default, 60 s). Keeps its context alive; close() frees it at once.

    Each collective takes the rank, a Stream of the rank's device and tensors of that
    device, and returns the stream's ticket. op: "sum", "max", "min" or "mean" (floats)."""

    def __init__(self, devices, timeout_ms=None, *, context=None):
        context, indices = _device_indices(devices, context)
        if timeout_ms is None:
            timeout = 0
        elif isinstance(timeout_ms, int) and 0 < timeout_ms <= _MAX_TIMEOUT_MS:
            timeout = timeout_ms
        else:
            raise _phynexus.InvalidArgumentError(
                f"phynexus.Communicator: timeout_ms {timeout_ms!r} is not 1 to {_MAX_TIMEOUT_MS}")
        super().__init__(context, indices, timeout)
        self.devices = [Device(context, i) for i in indices]

    def all_reduce(self, rank, stream, send, recv, op="sum"):
        """recv = the reduction of every rank's send, in rank order (send may be recv)."""
        return self._all_reduce(rank, stream, send, recv, _reduce_op(op))

    def reduce_scatter(self, rank, stream, send, recv, op="sum"):
        """recv = part rank of the reduction of every rank's send (ranks x recv's size)."""
        return self._reduce_scatter(rank, stream, send, recv, _reduce_op(op))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        if self.closed:
            return "phynexus.Communicator(closed)"
        return f"phynexus.Communicator(ranks={self.ranks}, devices={[d.index for d in self.devices]})"
