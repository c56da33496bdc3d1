"""phynexus.compile: a model recorded once into a graph and compiled into an executable
(graph.h), and the NPU's calibrated compile (phynexus.npu.optimize_model)."""

import os

import numpy as np

from . import _phynexus
from ._device import Device, device as _device
from ._trace import Symbol, Tracer

# phx_compile_options flags and placement policies (graph.h).
_FLAGS = {"no_memory_plan": 0x1, "no_constant_folding": 0x2, "no_fusion": 0x4,
          "deterministic": 0x8}
_PLACEMENT = {"first": 0, "cost": 1}


class Compiled:
    """An executable: calling it with tensors (or arrays) of the example inputs' dtypes and
    shapes runs the whole model as one submission and returns its output(s)."""

    def __init__(self, executable, device):
        self.executable = executable
        self.device = device

    def __call__(self, *inputs, stream=None):
        tensors = [x if isinstance(x, _phynexus.Tensor) else _as_input(x, self.device)
                   for x in inputs]
        tensors = [t.to(self.device) for t in tensors]
        outputs = self.executable.run(stream, tensors)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    # Described at each access: what the devices compiled is planned per input shapes, so
    # an executable with dynamic dimensions says what its last run's plan holds.
    info = property(lambda self: self.executable.describe())
    calibration_error = property(lambda self: self.info["calibration_error"])
    quantized_nodes = property(lambda self: self.info["quantized_nodes"])

    def nodes(self):
        """Where each node runs: name, op, device, compute_dtype."""
        return self.info["nodes"]

    def save(self):
        """The compiled executable as bytes (phx_executable_save); phynexus.load_compiled
        reads them back."""
        return self.executable.save()


def _as_input(value, device):
    from ._tensor import tensor
    return tensor(value, device=device)


def _examples(example_inputs, device):
    if isinstance(example_inputs, (_phynexus.Tensor, np.ndarray)):
        example_inputs = (example_inputs,)
    return [x if isinstance(x, _phynexus.Tensor) else _as_input(x, device)
            for x in example_inputs]


def _default_device(model, example_inputs):
    """The first example's device when it is a tensor, else the model's (its first
    parameter's), else the CPU device."""
    first = example_inputs[0] if isinstance(example_inputs, (tuple, list)) else example_inputs
    if isinstance(first, _phynexus.Tensor):
        return first.device
    parameters = model.parameters() if hasattr(model, "parameters") else []
    return parameters[0].device if parameters else _device("cpu")


def record(model, examples, context, dynamic_batch=False):
    """The graph of model called on inputs shaped as examples; with dynamic_batch, their
    first dimension is dynamic, one size "batch" for all in a run."""
    tracer = Tracer(context)
    if hasattr(model, "named_modules"):
        for path, module in model.named_modules():
            object.__setattr__(module, "_path", path or type(module).__name__)
    symbols = []
    for i, x in enumerate(examples):
        shape, names = list(x.shape), [""] * len(x.shape)
        if dynamic_batch and shape:
            shape[0], names[0] = -1, "batch"
        symbols.append(tracer.input(f"input{i}", x.dtype, shape, names))
    outputs = model(*symbols)
    outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    for i, output in enumerate(outputs):
        if not isinstance(output, Symbol):
            raise _phynexus.InvalidArgumentError(
                "phynexus.compile: the model's output does not come from its inputs")
        tracer.graph.add_output(output.value, f"output{i}")
    return tracer


def other_device_indices(other_devices, target):
    """The indices of other_devices: "all" (every device of target's context but target, in
    index order) or a list of devices or names."""
    context = target.context
    if other_devices == "all":
        return [i for i in range(context.device_count()) if i != target.index]
    return [d.index if isinstance(d, Device) else _device(d, context).index
            for d in other_devices]


def flag_bits(flags):
    """PHX_COMPILE_* bits of flag names ("no_fusion", "deterministic", ...)."""
    bits = 0
    for flag in flags:
        bits |= _FLAGS[flag]
    return bits


def compile(model, example_inputs, device=None, other_devices="all", placement="first",
            flags=(), calibration_data=None, dynamic_batch=False):
    """model (a phynexus.nn module, or any callable of phynexus ops) recorded on inputs
    like example_inputs (a tensor or array, or a tuple of them) and compiled for device
    (default: the first example's when it is a tensor, else the model's). Nodes the device lacks go to other_devices ("all":
    every other device of the context, in index order; or a list). flags: names of
    PHX_COMPILE_* flags ("no_fusion", "deterministic", ...). calibration_data: batches of
    inputs (each an input or a tuple of them) to calibrate with (docs/graphs.md).
    dynamic_batch: the inputs' first dimension is dynamic, so that the result runs any
    batch size (a model that reads its inputs' shapes may refuse it)."""
    target = _device(device) if device is not None else _default_device(model, example_inputs)
    examples = _examples(example_inputs, target)
    context = target.context
    tracer = record(model, examples, context, dynamic_batch)
    others = other_device_indices(other_devices, target)
    samples = []
    sample_count = 0
    for batch in calibration_data or ():
        samples.extend(_examples(batch, target))
        sample_count += 1
    executable = tracer.graph.compile(target.index, flag_bits(flags), others,
                                      _PLACEMENT[placement], samples, sample_count)
    return Compiled(executable, target)


def load_compiled(data, context=None):
    """An executable saved by Compiled.save(), for the same devices of context (default:
    the default context)."""
    from ._context import default_context
    context = context or default_context()
    executable = _phynexus.Executable.load(context, bytes(data))
    return Compiled(executable, Device(context, executable.describe()["device"]))


def optimize_for_npu(model, calibration_data, precision="int8", device="npu"):
    """model compiled for the NPU with calibration: the NPU quantizes the float nodes it
    can from the value ranges the calibration batches give (int8, or int16 where a range
    has outliers: docs/npu-sim.md), the rest runs on the other devices."""
    if precision != "int8":
        raise _phynexus.UnsupportedError(
            f"phynexus.npu.optimize_model: precision {precision!r}: the graph API lets the "
            "NPU choose its integer widths from the ranges (int8, int16 for outliers); "
            "only 'int8' is accepted")
    batches = list(calibration_data)
    if not batches:
        raise _phynexus.InvalidArgumentError(
            "phynexus.npu.optimize_model: calibration_data is empty")
    npu = _device(device)
    if isinstance(model, (str, os.PathLike)):  # an ONNX model's path
        from . import onnx
        return onnx.load(model, device=npu, calibration_data=batches)
    # Any batch size, as the calibration batches' (a model that reads its inputs' shapes
    # keeps theirs).
    try:
        return compile(model, batches[0], device=npu, calibration_data=batches,
                       dynamic_batch=True)
    except _phynexus.InvalidArgumentError:
        return compile(model, batches[0], device=npu, calibration_data=batches)



