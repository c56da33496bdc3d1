"""ONNX models (docs/onnx.md): phynexus.onnx.load("model.onnx", device="tpu") imports the
model through libphynexus_onnx and compiles it for the device, with the other devices for
the nodes it lacks, as phynexus.compile does. The result is called with the model's inputs
(tensors or numpy arrays, in the model's input order) and gives its outputs."""

from collections import OrderedDict

from . import _phynexus
from ._compile import (_PLACEMENT, Compiled, _as_input, _examples, flag_bits,
                       other_device_indices)
from ._device import device as _device

# What the importer's refusal says when a dynamic dimension's size is needed at import.
_NEEDS_SIZES = "give the input sizes"


def is_available():
    """Whether this build has the ONNX importer (libonnx-dev was found); never raises."""
    return hasattr(_phynexus, "load_onnx")


def load(path, device="cpu", other_devices="all", placement="first", flags=(), dims=None,
         input_shapes=None, cache_size=8, calibration_data=None):
    """The ONNX model at path, imported and compiled for device. dims: sizes of the model's
    named dimensions ({"batch": 8}); input_shapes: shapes of inputs by name
    ({"input_ids": (1, 128)}), which fix their dynamic dimensions; the other dimensions
    stay dynamic. A model whose dynamic sizes must be known at import (an export with
    dynamic_axes takes the Shape of its inputs), loaded without input_shapes, gives a
    Specialized model: each call compiles it for its inputs' shapes when they are new.
    other_devices: "all" (every other device of the context, in index order) or a list.
    flags: names of PHX_COMPILE_* flags. calibration_data: batches of inputs (each an
    input or a tuple of them) a quantizing device (the NPU) calibrates with, as
    phynexus.npu.optimize_model's. Raises phynexus.UnsupportedError naming the node, operator and
    reason for a model the importer does not take, InvalidArgumentError for a broken one."""
    if not is_available():
        raise _phynexus.UnsupportedError(
            "phynexus.onnx: this build has no ONNX importer (libonnx-dev was not found)")
    if cache_size < 1:
        raise _phynexus.InvalidArgumentError("phynexus.onnx.load: cache_size must be >= 1")
    target = _device(device)
    samples = [x for batch in calibration_data or () for x in _examples(batch, target)]
    compile_args = (flag_bits(flags), other_device_indices(other_devices, target),
                    _PLACEMENT[placement], samples, len(calibration_data or ()))
    shapes = [(name, [int(d) for d in shape]) for name, shape in (input_shapes or {}).items()]
    try:
        return Compiled(_compile(path, target, dims, shapes, compile_args), target)
    except _phynexus.UnsupportedError as error:
        if input_shapes is not None or _NEEDS_SIZES not in str(error):
            raise
    return Specialized(path, target, dims, compile_args, cache_size)


class Specialized:
    """An ONNX model compiled for the shapes of the inputs it is called with: the first
    call with new shapes imports and compiles it for them (phx_onnx_options.input_shapes,
    by position), as ONNX Runtime and TensorRT compile per shape profile; the last
    cache_size compiles are kept, keyed by the inputs' shapes. For a model whose dynamic
    sizes must be known at import (phynexus.onnx.load gives one)."""

    def __init__(self, path, device, dims, compile_args, cache_size):
        self.path, self.device = str(path), device
        self._dims, self._compile_args, self._cache_size = dims, compile_args, cache_size
        self._compiled = OrderedDict()

    def __call__(self, *inputs, stream=None):
        tensors = [x if isinstance(x, _phynexus.Tensor) else _as_input(x, self.device)
                   for x in inputs]
        key = tuple(tuple(t.shape) for t in tensors)
        compiled = self._compiled.get(key)
        if compiled is None:
            shapes = [(None, list(shape)) for shape in key]
            executable = _compile(self.path, self.device, self._dims, shapes, self._compile_args)
            compiled = self._compiled[key] = Compiled(executable, self.device)
            if len(self._compiled) > self._cache_size:
                self._compiled.popitem(last=False)
        else:
            self._compiled.move_to_end(key)
        return compiled(*tensors, stream=stream)

    @property
    def specializations(self):
        """The input shapes it holds a compile for, the least recently used first."""
        return list(self._compiled)


def _compile(path, target, dims, shapes, compile_args):
    graph = _phynexus.load_onnx(target.context, str(path), dict(dims or {}), shapes, 0)
    return graph.compile(target.index, *compile_args)
