"""phynexus.npu: the default context's npu devices."""

from . import _device


def is_available():
    """Whether the default context has a npu device; never raises."""
    return _device.is_available("npu")


def device(index=0):
    """The index-th npu device; NotFoundError when there is none."""
    return _device.device(f"npu:{index}")


def optimize_model(model, calibration_data, precision="int8", device="npu"):
    """model (a phynexus.nn module, or an ONNX model's path) compiled for the NPU, its
    float layers quantized from calibration_data (a list of input batches: arrays or
    tensors, or tuples of them). Returns a
    phynexus.Compiled; .calibration_error is its largest error against float on the
    batches, relative to the largest output; .nodes() says which ran quantized."""
    from ._compile import optimize_for_npu
    return optimize_for_npu(model, calibration_data, precision, device)
