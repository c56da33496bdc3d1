"""phynexus.gpu: the default context's gpu devices."""

from . import _device


def is_available():
    """Whether the default context has a gpu device; never raises."""
    return _device.is_available("gpu")


def device(index=0):
    """The index-th gpu device; NotFoundError when there is none."""
    return _device.device(f"gpu:{index}")
