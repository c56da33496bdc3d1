"""phynexus.ops: every op of the library as a function (also at phynexus.<name>)."""

from . import _ops

_TABLE = _ops.table()
globals().update(_TABLE)
__all__ = sorted(_TABLE)


def _install_methods():
    """Each op whose first input is a tensor named x, a or q is also a method of tensors
    and graph symbols: t.relu(), t.softmax(axis=0), t.transpose(perm=(1, 0)), unless the
    name is taken (shape, to, ...)."""
    from ._phynexus import Tensor
    from ._trace import Symbol
    for name, op in _TABLE.items():
        if not op.inputs or op.inputs[0] not in ("x", "a", "q"):
            continue
        for cls in (Tensor, Symbol):
            if not hasattr(cls, name):
                setattr(cls, name, _method(op))


def _method(op):
    def method(self, *args, **kwargs):
        return op(self, *args, **kwargs)
    method.__name__ = op.name
    method.__doc__ = op.__doc__
    return method


_install_methods()


def names():
    """The names of the library's ops."""
    return list(__all__)
