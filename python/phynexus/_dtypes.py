"""Phynexus dtypes and their numpy counterparts.

bf16 has no numpy dtype (numpy 1.24 knows none, and ml_dtypes is not a Debian 12 package).
So a bf16 tensor reads back with .numpy() as float32, which holds every bf16 value
exactly, and phynexus.tensor(array, dtype="bf16") rounds a float array to bf16 (to
nearest, ties to even, as the library does); a uint16 array with dtype="bf16" is taken
as the raw bf16 bits.
"""

import numpy as np


class DType:
    """A Phynexus dtype: f32, f16, bf16, i8, i16, i32 or u8."""

    __slots__ = ("name", "id", "itemsize", "numpy")

    def __init__(self, name, dtype_id, itemsize, numpy_dtype):
        self.name = name
        self.id = dtype_id
        self.itemsize = itemsize
        # The numpy dtype of .numpy(); bf16: float32.
        self.numpy = numpy_dtype

    def __repr__(self):
        return f"phynexus.{self.name}"

    def __reduce__(self):
        return (dtype, (self.name,))


# The values of phx_dtype.
f32 = DType("f32", 1, 4, np.dtype(np.float32))
f16 = DType("f16", 2, 2, np.dtype(np.float16))
bf16 = DType("bf16", 3, 2, np.dtype(np.float32))
i8 = DType("i8", 4, 1, np.dtype(np.int8))
i16 = DType("i16", 5, 2, np.dtype(np.int16))
i32 = DType("i32", 6, 4, np.dtype(np.int32))
u8 = DType("u8", 7, 1, np.dtype(np.uint8))

ALL = (f32, f16, bf16, i8, i16, i32, u8)
BY_ID = {d.id: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
_ALIASES = {"float32": f32, "float16": f16, "bfloat16": bf16, "int8": i8, "int16": i16,
            "int32": i32, "uint8": u8}
# numpy dtypes taken as they are, and those converted (to the nearest Phynexus dtype).
_FROM_NUMPY = {np.dtype(np.float32): f32, np.dtype(np.float16): f16, np.dtype(np.int8): i8,
               np.dtype(np.int16): i16, np.dtype(np.int32): i32, np.dtype(np.uint8): u8,
               np.dtype(np.float64): f32, np.dtype(np.int64): i32, np.dtype(np.bool_): u8}


def dtype(value):
    """The DType named by value: a DType, "f32"/"float32"/..., or a numpy dtype."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        found = _BY_NAME.get(value) or _ALIASES.get(value)
        if found is not None:
            return found
    else:
        try:
            found = _FROM_NUMPY.get(np.dtype(value))
        except TypeError:
            found = None
        if found is not None:
            return found
    from ._phynexus import InvalidArgumentError
    raise InvalidArgumentError(f"phynexus: no dtype {value!r}")


def from_numpy_dtype(numpy_dtype):
    """The DType a numpy array of numpy_dtype becomes by default."""
    return dtype(numpy_dtype)


def to_bf16_bits(array):
    """float array -> uint16 bf16 bits, rounded to nearest, ties to even; NaN stays NaN."""
    values = np.ascontiguousarray(array, dtype=np.float32)
    bits = values.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan_bits = ((bits >> 16) | 0x40).astype(np.uint16)
    return np.where(np.isnan(values), nan_bits, rounded)


def from_bf16_bits(bits):
    """uint16 bf16 bits -> float32, exactly."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def host_array(array, target):
    """array as the contiguous host bytes of a tensor of DType target."""
    from ._phynexus import InvalidArgumentError
    array = np.asarray(array)
    if target is bf16:
        if array.dtype == np.uint16:
            return np.ascontiguousarray(array)
        return to_bf16_bits(array)
    if array.dtype.kind in "iub" and target.numpy.kind in "iu" and array.size > 0:
        info = np.iinfo(target.numpy)
        if array.min() < info.min or array.max() > info.max:
            raise InvalidArgumentError(
                f"phynexus: values outside {target.name}'s range [{info.min}, {info.max}]")
    return np.ascontiguousarray(array, dtype=target.numpy)
