"""ONNX models (docs/onnx.md): phynexus.onnx.load("model.onnx", device="tpu") imports the
model through libphynexus_onnx and compiles it for the device, with the other devices for
the nodes it lacks, as phynexus.compile does. The result is called with the model's inputs
(tensors or numpy arrays, in the model's input order) and gives its outputs."""

from . import _phynexus
from ._compile import _PLACEMENT, Compiled, flag_bits, other_device_indices
from ._device import device as _device


def is_available():
    """Whether this build has the ONNX importer (libonnx-dev was found); never raises."""
    return hasattr(_phynexus, "load_onnx")


def load(path, device="cpu", other_devices="all", placement="first", flags=(), dims=None,
         input_shapes=None):
    """The ONNX model at path, imported and compiled for device. dims: sizes of the model's
    named dimensions ({"batch": 8}); input_shapes: shapes of inputs by name
    ({"input_ids": (1, 128)}), which fix their dynamic dimensions (a model exported with
    dynamic_axes takes the Shape of its inputs); the other dimensions stay dynamic.
    other_devices: "all" (every other device of the context, in index order) or a list.
    flags: names of PHX_COMPILE_* flags. Raises phynexus.UnsupportedError naming the node, operator and
    reason for a model the importer does not take, InvalidArgumentError for a broken one."""
    if not is_available():
        raise _phynexus.UnsupportedError(
            "phynexus.onnx: this build has no ONNX importer (libonnx-dev was not found)")
    target = _device(device)
    shapes = {name: [int(d) for d in shape] for name, shape in (input_shapes or {}).items()}
    graph = _phynexus.load_onnx(target.context, str(path), dict(dims or {}), shapes)
    executable = graph.compile(target.index, flag_bits(flags),
                               other_device_indices(other_devices, target),
                               _PLACEMENT[placement], [], 0)
    return Compiled(executable, target)
