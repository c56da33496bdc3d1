"""phynexus.ops: every op of the library as a function (also at phynexus.<name>)."""

from . import _ops

_TABLE = _ops.table()
globals().update(_TABLE)
__all__ = sorted(_TABLE)


def names():
    """The names of the library's ops."""
    return list(__all__)
