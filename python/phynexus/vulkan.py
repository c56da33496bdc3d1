"""phynexus.vulkan: the default context's vulkan devices."""

from . import _device


def is_available():
    """Whether the default context has a vulkan device; never raises."""
    return _device.is_available("vulkan")


def device(index=0):
    """The index-th vulkan device; NotFoundError when there is none."""
    return _device.device(f"vulkan:{index}")
