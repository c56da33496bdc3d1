"""Tensors saved and loaded in the safetensors format, written here (no dependency):

    8 bytes   N, the header's length, little-endian unsigned
    N bytes   a JSON object: {name: {"dtype": "F32", "shape": [...], "data_offsets": [b, e]},
              "__metadata__": {str: str} (optional)}
    the data  each tensor's raw little-endian bytes at [b, e) of this part, row-major

load() checks every field and refuses a hostile or damaged file with
phynexus.InvalidArgumentError, before allocating anything from it: the header length
within the file and at most 100 MB, valid UTF-8 JSON, no duplicate names, known dtypes,
shapes of non-negative integers, offsets that match the shape's byte size, lie within the
data and cover it exactly, without overlaps or holes.
"""

import json
import struct

import numpy as np

from . import _dtypes, _phynexus

_MAX_HEADER = 100 << 20
# safetensors dtype names -> (Phynexus dtype, numpy dtype of the stored bytes)
_DTYPES = {"F32": (_dtypes.f32, "<f4"), "F16": (_dtypes.f16, "<f2"),
           "BF16": (_dtypes.bf16, "<u2"), "I8": (_dtypes.i8, "i1"), "I16": (_dtypes.i16, "<i2"),
           "I32": (_dtypes.i32, "<i4"), "U8": (_dtypes.u8, "u1")}
_NAMES = {d.name: n for n, (d, _) in _DTYPES.items()}


def _bad(path, why):
    return _phynexus.InvalidArgumentError(f"phynexus.safetensors: {path}: {why}")


def _stored(value):
    """(safetensors dtype name, the bytes' array) of a tensor or array."""
    if isinstance(value, _phynexus.Tensor):
        dtype = value.dtype
        array = value.numpy()
    else:
        array = np.asarray(value)
        dtype = _dtypes.from_numpy_dtype(array.dtype)
    name = _NAMES[dtype.name]
    host = _dtypes.host_array(array, dtype)
    return name, np.ascontiguousarray(host, dtype=_DTYPES[name][1])


def save(tensors, path, metadata=None):
    """Writes tensors ({name: tensor or numpy array}) to path."""
    header = {}
    blobs = []
    offset = 0
    for name in tensors:
        if not isinstance(name, str) or name == "__metadata__":
            raise _bad(path, f"bad tensor name {name!r}")
        dtype_name, array = _stored(tensors[name])
        blob = array.tobytes()
        header[name] = {"dtype": dtype_name, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)  # the data 8-byte aligned, as the format advises
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(encoded)))
        out.write(encoded)
        for blob in blobs:
            out.write(blob)


def _no_duplicates(pairs):
    result = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate name {key!r}")
        result[key] = value
    return result


def _header(data, path):
    if len(data) < 8:
        raise _bad(path, "shorter than the 8-byte header length")
    (length,) = struct.unpack("<Q", data[:8])
    if length > _MAX_HEADER or length > len(data) - 8:
        raise _bad(path, f"header length {length} past the file or above {_MAX_HEADER}")
    try:
        header = json.loads(data[8:8 + length].decode("utf-8"), object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise _bad(path, f"the header is no valid JSON: {error}") from None
    if not isinstance(header, dict):
        raise _bad(path, "the header is not a JSON object")
    return header, 8 + length


def _entry(name, entry, data_size, path):
    """(dtype name, shape, begin, end) of one checked entry."""
    if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
        raise _bad(path, f"{name}: an entry has exactly dtype, shape and data_offsets")
    dtype_name, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if dtype_name not in _DTYPES:
        raise _bad(path, f"{name}: unknown dtype {dtype_name!r}")
    if not isinstance(shape, list) or len(shape) > 8 or \
            not all(type(d) is int and d >= 0 for d in shape):
        raise _bad(path, f"{name}: bad shape {shape!r}")
    if not isinstance(offsets, list) or len(offsets) != 2 or \
            not all(type(o) is int for o in offsets) or not 0 <= offsets[0] <= offsets[1] <= data_size:
        raise _bad(path, f"{name}: bad data_offsets {offsets!r}")
    count = 1
    for d in shape:
        count *= d
    if count * np.dtype(_DTYPES[dtype_name][1]).itemsize != offsets[1] - offsets[0]:
        raise _bad(path, f"{name}: data_offsets {offsets} do not hold shape {shape}")
    return dtype_name, tuple(shape), offsets[0], offsets[1]


def load(path):
    """{name: numpy array} from path (bf16 as float32, exactly). Raises
    phynexus.InvalidArgumentError for a damaged or hostile file."""
    with open(path, "rb") as source:
        data = source.read()
    header, start = _header(data, path)
    header.pop("__metadata__", None)
    data_size = len(data) - start
    entries = sorted((_entry(n, e, data_size, path) + (n,) for n, e in header.items()),
                     key=lambda e: (e[2], e[3]))
    expected = 0
    for _, _, begin, end, name in entries:
        if begin != expected:
            raise _bad(path, f"{name}: the data has a hole or an overlap at byte {expected}")
        expected = end
    if expected != data_size:
        raise _bad(path, f"{data_size - expected} bytes of data belong to no tensor")
    out = {}
    for dtype_name, shape, begin, end, name in entries:
        raw = np.frombuffer(data, dtype=_DTYPES[dtype_name][1], count=(end - begin) //
                            np.dtype(_DTYPES[dtype_name][1]).itemsize, offset=start + begin)
        array = raw.reshape(shape)
        out[name] = _dtypes.from_bf16_bits(array) if dtype_name == "BF16" else \
            array.astype(_DTYPES[dtype_name][0].numpy)
    return out
