"""ONNX models (docs/onnx.md): phynexus.onnx.load("model.onnx", device="tpu") imports the
model through libphynexus_onnx and compiles it for the device, with the other devices for
the nodes it lacks, as phynexus.compile does. The result is called with the model's inputs
(tensors or numpy arrays, in the model's input order) and gives its outputs."""

from collections import OrderedDict

import numpy as np

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


# phx_onnx_options.flags: every value the nodes compute an output, in node order (onnx.h).
_OUTPUT_EVERY_VALUE = 0x2
# Per float dtype: its unit roundoff, and the tolerance it is held to at the least (rtol,
# atol): docs/onnx.md, "Tolerances", as phx-run-onnx derives them.
_UNIT_ROUNDOFF = {"f32": 2.0**-24, "f16": 2.0**-11, "bf16": 2.0**-8}
_FLOOR = {"f32": (1e-3, 1e-7), "f16": (4 * 2.0**-11, 1e-3), "bf16": (4 * 2.0**-8, 1e-2)}
_PRODUCT_PRECISION = {"bf16": (2.0**-8, "bf16 products"), "bf16x3": (2.0**-16, "bf16x3 products")}


class Comparison:
    """What compare found: names (every value, in the model's order), within (per value,
    whether it is within tolerance), first (the first value out of tolerance, None when
    none is), precision (the tested devices', e.g. "bf16 products") and reduction_length."""

    def __init__(self, names, within, precision, reduction_length):
        self.names, self.within = names, within
        self.precision, self.reduction_length = precision, reduction_length
        self.first = next((n for n, ok in zip(names, within) if not ok), None)

    def __bool__(self):
        return self.first is None

    def __repr__(self):
        found = "every value within tolerance" if self.first is None else (
            f"first value out of tolerance: {self.first!r}")
        return f"<phynexus.onnx.Comparison of {len(self.names)} values: {found}>"


def compare(path, inputs, device, reference="cpu", rtol=None, atol=None, dims=None,
            input_shapes=None):
    """Where device goes wrong, as phx-run-onnx --compare-with finds it: the model at path
    run on device and on reference (each with the other devices for the nodes it lacks),
    every value its nodes compute an output, compared in the model's order with
    reference's as the expected values, at the precision device computes in (or rtol,
    atol). inputs: the model's inputs (arrays or tensors, in its input order). Returns a
    Comparison; .first names the first value out of tolerance."""
    inputs = inputs if isinstance(inputs, (tuple, list)) else (inputs,)
    runs = []
    for name in (device, reference):
        target = _device(name)
        shapes = [(n, [int(d) for d in shape]) for n, shape in (input_shapes or {}).items()]
        graph = _phynexus.load_onnx(target.context, str(path), dict(dims or {}), shapes,
                                    _OUTPUT_EVERY_VALUE)
        executable = graph.compile(target.index, 0,
                                   other_device_indices("all", target), _PLACEMENT["first"],
                                   [], 0)
        compiled = Compiled(executable, target)
        outputs = compiled(*inputs)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        runs.append((graph, compiled, [(t.dtype.name, t.numpy()) for t in outputs]))
    graph, compiled, got = runs[0]
    want = runs[1][2]
    unit_roundoff, precision = _precision(compiled)
    k = _reduction_length(graph)
    within = []
    for (dtype, g), (_, w) in zip(got, want):
        if g.shape != w.shape:
            within.append(False)
            continue
        if dtype not in _UNIT_ROUNDOFF:  # integers are exact
            within.append(bool(np.array_equal(g, w)))
            continue
        floor_rtol, floor_atol = _FLOOR[dtype]
        w64, g64 = w.astype(np.float64), g.astype(np.float64)
        finite = w64[np.isfinite(w64)]
        scale = max(1.0, float(np.abs(finite).max()) if finite.size else 0.0)
        r = max(floor_rtol, 4 * (_UNIT_ROUNDOFF[dtype] + unit_roundoff)) if rtol is None else rtol
        a = (max(floor_atol, (k * 2.0**-23 + 4 * unit_roundoff) * scale) if atol is None
             else atol)
        close = (np.abs(g64 - w64) <= a + r * np.abs(w64)) | (g64 == w64)
        close |= np.isnan(g64) & np.isnan(w64)
        within.append(bool(close.all()))
    names = compiled.info["outputs"]
    return Comparison(names, within, precision, k)


def _precision(compiled):
    """The unit roundoff of what compiled's products are computed from where coarser than
    f32's, and its name, as phx-run-onnx's compute_precision."""
    unit_roundoff, name = 0.0, "f32"
    context = compiled.device.context
    for node in compiled.nodes():
        candidates = []
        if node["compute_dtype"] in ("f16", "bf16"):
            candidates.append((_UNIT_ROUNDOFF[node["compute_dtype"]], node["compute_dtype"]))
        if node["op"] in ("matmul", "conv2d", "conv_transpose2d"):
            products = _device(node["device"], context).properties.get("matmul_precision")
            if products in _PRODUCT_PRECISION:
                candidates.append(_PRODUCT_PRECISION[products])
        for u, label in candidates:
            if u > unit_roundoff:
                unit_roundoff, name = u, label
    return unit_roundoff, name


def _reduction_length(graph):
    """An upper bound of the longest sum an element takes: the largest static dimension of
    any value of graph, or of any constant's element count over its first dimension (a
    weight's fan-in), as phx-run-onnx's. The graph numbers its values from 0."""
    k, value = 1, 0
    while True:
        try:
            _, shape, kind = graph.value_info(value)
        except _phynexus.NotFoundError:
            return k
        static = [d for d in shape if d >= 0]
        k = max([k] + static)
        if kind == 1 and len(shape) >= 2 and shape[0] > 0 and len(static) == len(shape):
            k = max(k, int(np.prod(shape)) // shape[0])
        value += 1
