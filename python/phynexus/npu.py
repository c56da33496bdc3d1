"""phynexus.npu: the default context's npu devices."""

from . import _device


def is_available():
    """Whether the default context has a npu device; never raises."""
    return _device.is_available("npu")


def device(index=0):
    """The index-th npu device; NotFoundError when there is none."""
    return _device.device(f"npu:{index}")
