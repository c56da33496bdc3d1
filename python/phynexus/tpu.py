"""phynexus.tpu: the default context's tpu devices."""

from . import _device


def is_available():
    """Whether the default context has a tpu device; never raises."""
    return _device.is_available("tpu")


def device(index=0):
    """The index-th tpu device; NotFoundError when there is none."""
    return _device.device(f"tpu:{index}")
