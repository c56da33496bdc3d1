"""Recording ops into a graph: a Symbol stands for a value of a graph being built. An op
called with a Symbol among its inputs adds a node to that graph instead of running, so
model code written once with phynexus ops both runs eagerly and records itself
(phynexus.compile). Tensors met while recording become constants of the graph, read in
place by an executable of their device (graph.h, phx_graph_add_constant_tensor)."""

import numpy as np

from . import _dtypes, _phynexus


class Tracer:
    """One graph being recorded, in context."""

    def __init__(self, context):
        self.context = context
        self.graph = _phynexus.Graph(context)
        self._constants = {}  # id(tensor) -> (tensor, value): each tensor added once
        self._scopes = []  # the paths of the modules being recorded, outermost first
        self._names = {}  # node name -> times used, to keep names apart

    def enter(self, path):
        self._scopes.append(path)

    def leave(self):
        self._scopes.pop()

    def _node_name(self, op_name):
        """"<module path>.<op>" (e.g. "0.matmul", "2.layer_norm"), numbered from the
        second use of a name; "" (the library's "<op> N") outside any module."""
        scope = next((s for s in reversed(self._scopes) if s), "")
        if not scope:
            return ""
        name = f"{scope}.{op_name}"
        count = self._names.get(name, 0)
        self._names[name] = count + 1
        return name if count == 0 else f"{name}{count + 1}"

    def input(self, name, dtype, shape, dim_names=()):
        """An input of the graph; a size of -1 is dynamic, named by dim_names (a name per
        dimension, "" for none) when given."""
        value = self.graph.add_input(name, dtype.id, list(shape), list(dim_names))
        return Symbol(self, value)

    def constant_tensor(self, tensor, name=""):
        entry = self._constants.get(id(tensor))
        if entry is None:
            entry = (tensor, self.graph.add_constant_tensor(name, tensor))
            self._constants[id(tensor)] = entry
        return Symbol(self, entry[1])

    def constant_array(self, array, dtype):
        host = _dtypes.host_array(array, dtype)
        value = self.graph.add_constant("", dtype.id, list(np.shape(array)), host)
        return Symbol(self, value)

    def node(self, op, inputs, params, output_dtypes, name=""):
        values = [None if v is None else self._value_of(v, inputs) for v in inputs]
        name = name or self._node_name(op.name)
        outputs = self.graph.add_node(name, op.id, params, values, output_dtypes,
                                      len(op.outputs))
        return [Symbol(self, v) for v in outputs]

    def _value_of(self, item, inputs):
        if isinstance(item, Symbol):
            if item.tracer is not self:
                raise _phynexus.InvalidArgumentError("phynexus: a value of another graph")
            return item.value
        if isinstance(item, _phynexus.Tensor):
            return self.constant_tensor(item).value
        reference = next(v for v in inputs if isinstance(v, Symbol))
        dtype = reference.dtype if isinstance(item, (int, float, bool)) else \
            _dtypes.from_numpy_dtype(np.asarray(item).dtype)
        return self.constant_array(np.asarray(item), dtype).value


class Symbol:
    """A value of a graph being recorded: its dtype and shape, as the graph infers them."""

    __slots__ = ("tracer", "value", "dtype", "shape")

    def __init__(self, tracer, value):
        self.tracer = tracer
        self.value = value
        dtype_id, shape, _ = tracer.graph.value_info(value)
        self.dtype = _dtypes.BY_ID[dtype_id]
        self.shape = tuple(shape)

    ndim = property(lambda self: len(self.shape))

    def __repr__(self):
        return f"phynexus.Symbol(value={self.value}, shape={self.shape}, dtype={self.dtype.name})"


def _install_operators():
    from ._tensor import _binary, _neg
    for dunder, op_name in (("add", "add"), ("sub", "sub"), ("mul", "mul"),
                            ("truediv", "div"), ("matmul", "matmul")):
        setattr(Symbol, f"__{dunder}__", _binary(op_name))
        setattr(Symbol, f"__r{dunder}__", _binary(op_name, swap=True))
    Symbol.__neg__ = _neg


_install_operators()
