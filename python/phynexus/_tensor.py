"""Tensors: phynexus.tensor(array, device=...), .to(device), .numpy(), operators, DLPack.

Tensor is the extension's class; the methods below are added to it here. A tensor keeps
its context alive, and is freed (after the work queued on it) when garbage-collected, in
any order with its context and other objects.

On a device whose memory is the host's (the CPU device), numpy.asarray(t),
numpy.from_dlpack(t) and phynexus.from_dlpack(array) share memory instead of copying; a
view keeps its tensor alive, and closing the tensor or its context is refused while one
exists.
"""

import numpy as np

from . import _dtypes, _phynexus
from ._device import Device, device as _device

Tensor = _phynexus.Tensor


def tensor(data, device=None, dtype=None):
    """A tensor holding a copy of data (a numpy array, anything numpy.asarray takes, or a
    tensor) on device (a Device, "npu:0", an index; default: the default context's "cpu").
    dtype: a phynexus dtype (default: the array's; float64 becomes f32, int64 i32 with a
    range check, bool u8). bf16 from a float array rounds to nearest even; from a uint16
    array it takes the raw bits."""
    if isinstance(data, Tensor):
        result = data.to(device) if device is not None else data
        return result if dtype is None or _dtypes.dtype(dtype) is result.dtype else \
            _cast(result, _dtypes.dtype(dtype))
    target_device = _device(device if device is not None else "cpu")
    array = np.asarray(data)
    target = _dtypes.dtype(dtype) if dtype is not None else _dtypes.from_numpy_dtype(array.dtype)
    host = _dtypes.host_array(array, target)
    return Tensor.from_buffer(target_device.context, target_device.index, target.id,
                              list(array.shape), host)


def empty(shape, dtype="f32", device=None):
    """An uninitialized tensor."""
    target_device = _device(device if device is not None else "cpu")
    return Tensor.empty(target_device.context, target_device.index, _dtypes.dtype(dtype).id,
                        [int(d) for d in shape])


def _cast(value, target):
    from . import ops
    return ops.cast(value, dtype=target)


def _numpy(self):
    """A numpy copy of the contents (bf16: float32, exactly). Waits for the work queued on
    the tensor. numpy.asarray(tensor) shares the memory where it can."""
    dtype = self.dtype
    if dtype is _dtypes.bf16:
        bits = np.empty(self.shape, dtype=np.uint16)
        self.download(bits)
        return _dtypes.from_bf16_bits(bits)
    out = np.empty(self.shape, dtype=dtype.numpy)
    self.download(out)
    return out


def _to(self, device):
    """This tensor on device (itself when it is there already)."""
    target = device if isinstance(device, Device) else _device(device, self.context)
    if target.context is not self.context:
        raise _phynexus.InvalidArgumentError(
            "phynexus: Tensor.to: the device is of another context")
    if target.index == self.device_index:
        return self
    return self.copy_to(target.index)


def _array(self, dtype=None, copy=None):
    """numpy's array protocol: the tensor's memory in place where its device's memory is
    the host's (waiting for the work queued on it first), else a copy; copy=True always
    copies, copy=False raises ValueError where a copy is needed (as numpy 2 asks). bf16
    has no numpy dtype: always a float32 copy."""
    if copy is not True and self.dtype is not _dtypes.bf16:
        view = self.host_array(np.dtype(self.dtype.numpy))
        if view is not None:
            return view if dtype is None else view.astype(dtype, copy=False)
    if copy is False:
        raise ValueError("phynexus: the tensor's memory cannot be viewed in place "
                         "(its device's memory is not the host's, or bf16)")
    result = _numpy(self)
    return result if dtype is None else result.astype(dtype)


def _dlpack(self, stream=None, *, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule of the tensor in host memory: its own memory where its device's
    memory is the host's (the CPU device), else a copy the capsule owns. stream: None or -1
    (host memory needs none). The capsule is an unversioned one, which every DLPack
    consumer takes (max_version is a consumer's upper bound); copy=True always copies,
    copy=False raises BufferError where a copy is needed, as the protocol asks; dl_device,
    when given, must be the host."""
    if stream not in (None, -1):
        raise _phynexus.InvalidArgumentError(
            "phynexus: __dlpack__: the capsule is host memory; stream must be None")
    if dl_device is not None and tuple(dl_device) != (_phynexus.DLPACK_CPU, 0):
        raise BufferError("phynexus: __dlpack__: the capsule is host memory only")
    del max_version
    return _phynexus.to_dlpack(self, copy)


def _dlpack_device(self):
    return (_phynexus.DLPACK_CPU, 0)


def from_dlpack(obj, device=None, copy=None):
    """A tensor on device (default "cpu") of obj, which implements __dlpack__ (numpy >=
    1.22, torch, jax, ...) or is a DLPack capsule of host memory. Where the device computes
    on host memory (the CPU device) the tensor is obj's memory in place, which it keeps
    alive; elsewhere, or with copy=True, it holds a copy. copy=False raises BufferError
    where a copy is needed. A non-contiguous or read-only numpy array is copied first."""
    target_device = _device(device if device is not None else "cpu")
    if isinstance(obj, np.ndarray) and not (obj.flags.c_contiguous and obj.flags.writeable):
        if copy is False:
            raise BufferError("phynexus.from_dlpack: the array is not contiguous or not "
                              "writable, so it can only be copied")
        obj = np.ascontiguousarray(obj) if obj.flags.writeable else np.array(obj, order="C")
    capsule = obj.__dlpack__() if hasattr(obj, "__dlpack__") else obj
    return _phynexus.from_dlpack_capsule(target_device.context, target_device.index, capsule,
                                         copy)


def _repr(self):
    if self.closed:
        return "phynexus.Tensor(closed)"
    return (f"phynexus.Tensor(shape={self.shape}, dtype={self.dtype.name}, "
            f"device={self.device_index})")


def _binary(op_name, swap=False):
    def method(self, other):
        from . import ops
        op = getattr(ops, op_name)
        return op(other, self) if swap else op(self, other)
    method.__name__ = op_name
    return method


def _neg(self):
    from . import ops
    return ops.sub(0, self)


def _install():
    Tensor.dtype = property(lambda self: _dtypes.BY_ID[self.dtype_id], doc="The DType.")
    Tensor.device = property(lambda self: Device(self.context, self.device_index),
                             doc="The Device it lives on.")
    Tensor.ndim = property(lambda self: len(self.shape))
    Tensor.numpy = _numpy
    Tensor.__array__ = _array
    Tensor.to = _to
    Tensor.__dlpack__ = _dlpack
    Tensor.__dlpack_device__ = _dlpack_device
    Tensor.__repr__ = _repr
    Tensor.__neg__ = _neg
    # numpy_array + tensor: numpy gives way, so that the tensor's reflected operator runs
    # the op on the device instead of numpy converting the tensor.
    Tensor.__array_ufunc__ = None
    for dunder, op_name in (("add", "add"), ("sub", "sub"), ("mul", "mul"),
                            ("truediv", "div"), ("matmul", "matmul")):
        setattr(Tensor, f"__{dunder}__", _binary(op_name))
        setattr(Tensor, f"__r{dunder}__", _binary(op_name, swap=True))


_install()
