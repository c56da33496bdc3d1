"""phynexus.cpu: the default context's cpu devices."""

from . import _device


def is_available():
    """Whether the default context has a cpu device; never raises."""
    return _device.is_available("cpu")


def device(index=0):
    """The index-th cpu device; NotFoundError when there is none."""
    return _device.device(f"cpu:{index}")
