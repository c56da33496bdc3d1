"""Devices: phynexus.devices(), phynexus.device("npu:0") and the availability checks."""

from . import _dtypes, _phynexus
from ._context import default_context


class Device:
    """A device of a context, with the properties phx_device_get gives."""

    __slots__ = ("context", "index", "_info")

    def __init__(self, context, index):
        self.context = context
        self.index = index
        self._info = context.device_info(index)

    type = property(lambda self: self._info["type"], doc='"cpu", "gpu", "tpu", "npu", ...')
    plugin = property(lambda self: self._info["plugin"])
    name = property(lambda self: self._info["name"])
    vendor = property(lambda self: self._info["vendor"])
    memory_total = property(lambda self: self._info["memory_total_bytes"])
    memory_available = property(lambda self: self._info["memory_available_bytes"])
    compute_units = property(lambda self: self._info["compute_units"])
    compiles_graphs = property(lambda self: self._info["compiles_graphs"])
    properties = property(lambda self: dict(self._info["properties"]))

    @property
    def dtypes(self):
        """The dtypes its tensors may have."""
        return [d for d in _dtypes.ALL if self._info["dtype_mask"] & (1 << d.id)]

    def memory_stats(self):
        """bytes_in_use, peak_bytes_in_use, bytes_cached, limit_bytes, allocation_count."""
        return self.context.memory_stats(self.index)

    def stats(self):
        """The plugin's running statistics and the runtime's ("fallback_ops")."""
        return self.context.device_stats(self.index)

    def set_memory_limit(self, limit_bytes):
        self.context.set_memory_limit(self.index, int(limit_bytes))

    def release_cached(self):
        self.context.release_cached(self.index)

    def stream(self):
        """A new stream of this device."""
        from ._stream import Stream
        return Stream(self)

    def __eq__(self, other):
        return isinstance(other, Device) and other.context is self.context and \
            other.index == self.index

    def __hash__(self):
        return hash((id(self.context), self.index))

    def __repr__(self):
        return f"phynexus.Device({self.index}: {self.type} {self.name!r}, plugin {self.plugin})"


def _matches(info, kind):
    plugin = info["plugin"]
    return kind in (info["type"], plugin) or plugin.removesuffix("-sim") == kind


def devices(context=None):
    """Every device of the context (default: the default context), in index order."""
    return (context or default_context()).devices()


def device(spec="cpu", context=None):
    """The device spec names: a Device, an index, or "<kind>[:<n>]" where kind is a device
    type ("cpu", "gpu", "tpu", "npu") or a plugin name ("vulkan", "tpu-sim") and n counts
    the devices of that kind (default 0). Raises NotFoundError when there is none."""
    if isinstance(spec, Device):
        return spec
    context = context or default_context()
    if isinstance(spec, int):
        if not 0 <= spec < context.device_count():
            raise _phynexus.NotFoundError(f"phynexus.device: no device {spec}")
        return Device(context, spec)
    if not isinstance(spec, str):
        raise _phynexus.InvalidArgumentError(f"phynexus.device: {spec!r} names no device")
    kind, _, ordinal = spec.partition(":")
    if ordinal and not ordinal.isdigit():
        raise _phynexus.InvalidArgumentError(f"phynexus.device: bad device number in {spec!r}")
    wanted = int(ordinal or 0)
    found = [i for i in range(context.device_count()) if _matches(context.device_info(i), kind)]
    if wanted >= len(found):
        raise _phynexus.NotFoundError(
            f"phynexus.device: no device {spec!r} ({len(found)} of kind {kind!r})")
    return Device(context, found[wanted])


def is_available(kind):
    """Whether the default context has a device of kind; never raises."""
    try:
        context = default_context()
        return any(_matches(context.device_info(i), kind) for i in range(context.device_count()))
    except Exception:  # noqa: BLE001 - an availability check answers, it does not fail
        return False
