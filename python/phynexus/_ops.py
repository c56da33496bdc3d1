"""Every op of the library's op table as a function: phynexus.matmul(a, b, bias=None, *,
transpose_b=False, activation="none"), phynexus.softmax(x, axis=-1), ...

The functions are made at import from phx_op_info_get (names, inputs, parameter struct
and its members), so an op added to the library appears here, keywords and all, with no
change.
"""

from . import _dtypes, _params, _phynexus
from ._trace import Symbol

# Ops whose outputs' dtypes the caller chooses, with a dtype= keyword: the dtypes of all
# outputs from it (dynamic_quantize's scale and zero point have fixed dtypes).
_OUTPUT_DTYPES = {"dynamic_quantize": lambda d: [d.id, _dtypes.f32.id, _dtypes.i32.id]}

_Tensor = _phynexus.Tensor


class Op:
    """One op of the table: calling it runs the op eagerly on the device of its first
    tensor input (on stream=..., when given) and returns its output, or a tuple of them."""

    def __init__(self, info):
        self.id = info["id"]
        self.name = info["name"]
        self.inputs = tuple(info["inputs"])
        self.min_inputs = info["min_inputs"]
        self.optional = info["optional_inputs"]
        self.outputs = tuple(info["outputs"])
        self.params_struct = info["params_struct"]
        self.params_size = info["params_size"]
        self.param_fields = info["param_fields"]
        self.default_params = info["default_params"]
        self.dtype_mask = info["dtype_mask"]
        self.__name__ = self.name
        self.__qualname__ = self.name
        params = _params.keywords(self)
        self.__doc__ = (
            f"{self.name}({', '.join(self._input_spelling())}"
            f"{', *, ' + ', '.join(params) if params else ''}, dtype=None, stream=None)\n\n"
            f"{info['summary']}.\nOutputs: {', '.join(self.outputs)}. "
            f"Parameters: {self.params_struct or 'none'} (docs/ops.md).")

    def _input_spelling(self):
        return [n + ("=None" if self.optional & (1 << i) else "") for i, n in enumerate(self.inputs)]

    def tensors(self, args, kwargs, convert=True):
        """The op's inputs from positional and keyword arguments; the rest stay in kwargs.
        convert: numbers and arrays become tensors (else the graph recording takes them)."""
        if len(args) > len(self.inputs):
            raise _phynexus.InvalidArgumentError(
                f"phynexus.{self.name}: {len(args)} inputs given, it takes {len(self.inputs)}")
        values = list(args) + [kwargs.pop(n, None) for n in self.inputs[len(args):]]
        while len(values) > self.min_inputs and values[-1] is None:
            values.pop()
        reference = next((v for v in values if isinstance(v, _Tensor)), None)
        for i, value in enumerate(values):
            if value is None:
                if not self.optional & (1 << i):
                    raise _phynexus.InvalidArgumentError(
                        f"phynexus.{self.name}: input {self.inputs[i]} is required")
            elif convert and not isinstance(value, _Tensor):
                values[i] = _as_tensor(value, reference, self.name)
        return values

    def __call__(self, *args, dtype=None, stream=None, name="", **kwargs):
        # The common case first, kept short: tensors only, no parameters (a tiny op's
        # cost from Python is mostly this function).
        if not kwargs and dtype is None and len(args) >= self.min_inputs:
            for arg in args:
                if type(arg) is not _Tensor:
                    break
            else:
                runner = _phynexus if stream is None else stream
                outputs = runner.run_op(self.id, None, args, ())
                return outputs[0] if len(outputs) == 1 else tuple(outputs)
        symbol = next((a for a in list(args) + list(kwargs.values()) if isinstance(a, Symbol)),
                      None)
        inputs = self.tensors(args, kwargs, convert=symbol is None)
        params = _params.pack(self, kwargs, inputs)
        output_dtypes = []
        if dtype is not None:
            chosen = _dtypes.dtype(dtype)
            rule = _OUTPUT_DTYPES.get(self.name)
            output_dtypes = rule(chosen) if rule else [chosen.id] * len(self.outputs)
        if symbol is not None:  # recording a graph: phynexus.compile
            outputs = symbol.tracer.node(self, inputs, params, output_dtypes, name)
        elif stream is None:
            outputs = _phynexus.run_op(self.id, params, inputs, output_dtypes)
        else:
            outputs = stream.run_op(self.id, params, inputs, output_dtypes)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def __repr__(self):
        return f"<phynexus op {self.name}>"


def _as_tensor(value, reference, op_name):
    """A number or array given where a tensor goes: a tensor on the reference tensor's
    device, of its dtype (numbers) or the array's."""
    from ._tensor import tensor
    if reference is None:
        raise _phynexus.InvalidArgumentError(
            f"phynexus.{op_name}: no input is a phynexus tensor, so no device to run on")
    if isinstance(value, (int, float, bool)):
        return tensor(value, device=reference.device, dtype=reference.dtype)
    return tensor(value, device=reference.device)


def table():
    """Every op of the library, by name."""
    return {info["name"]: Op(info) for info in _phynexus.op_table()}
