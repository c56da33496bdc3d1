"""Keyword parameters -> the bytes of an op's C parameter struct.

One entry per parameter struct of phynexus.h: its fields in order, each with its struct
format (native alignment, as the C compiler lays it out), its default and, for enums and
axes, a conversion. A new op with an existing struct needs nothing here; a new struct needs
one entry. Every struct begins with size_t struct_size, so its size is the packed fields
rounded up to 8 bytes.
"""

import struct

from . import _phynexus

_ACTIVATIONS = {"none": 0, "relu": 1, "gelu": 2, "silu": 3}
_LAYOUTS = {"nchw": 0, "nhwc": 1}
_MASKS = {"none": 0, "causal": 1, "sliding_window": 2}
_PAD_MODES = {"constant": 0, "reflect": 1, "edge": 2}
_RESIZE_MODES = {"nearest": 0, "linear": 1}
_RESIZE_COORDINATES = {"half_pixel": 0, "asymmetric": 1, "align_corners": 2,
                       "pytorch_half_pixel": 3}
_RESIZE_NEAREST = {"round_prefer_floor": 0, "round_prefer_ceil": 1, "floor": 2, "ceil": 3}
_FLT_MAX = 3.4028234663852886e38
_MAX_RANK = 8


def _enum(names):
    def convert(value, _inputs):
        if isinstance(value, str):
            if value not in names:
                raise _phynexus.InvalidArgumentError(
                    f"phynexus: {value!r} is none of {', '.join(names)}")
            return (names[value],)
        return (int(value),)
    return convert


def _pair(value, _inputs):
    return (value, value) if isinstance(value, int) else tuple(value)


def _padding(value, _inputs):
    """int: all four sides; (h, w): top=bottom=h, left=right=w; or (top, bottom, left, right)."""
    if isinstance(value, int):
        return (value,) * 4
    value = tuple(value)
    return (value[0], value[0], value[1], value[1]) if len(value) == 2 else value


def _rank(inputs):
    first = inputs[0] if inputs else None
    return len(getattr(first, "shape", ())) if first is not None else _MAX_RANK


def _perm(value, inputs):
    perm = tuple(int(p) % _rank(inputs) if p < 0 else int(p) for p in value)
    return perm + (0,) * (_MAX_RANK - len(perm))


def _axes_mask(value, inputs):
    axes = (value,) if isinstance(value, int) else tuple(value)
    mask = 0
    for axis in axes:
        mask |= 1 << (axis % _rank(inputs) if axis < 0 else axis)
    return (mask,)


def _flag(value, _inputs):
    return (1 if value else 0,)


def _scalar(value, _inputs):
    return (value,)


def _padded(count, fill):
    """A sequence (or one int for every entry) as count entries, fill past its end."""
    def convert(value, _inputs):
        values = (value,) * count if isinstance(value, int) else tuple(value)
        if len(values) > count:
            raise _phynexus.InvalidArgumentError(f"phynexus: more than {count} entries")
        return values + (fill,) * (count - len(values))
    return convert


def _shape(value, _inputs):
    """Reshape's and expand's target: its rank, then the dimensions."""
    if value is None:
        raise _phynexus.InvalidArgumentError("phynexus: shape= is required")
    dims = tuple(int(d) for d in value)
    if len(dims) > _MAX_RANK:
        raise _phynexus.InvalidArgumentError(f"phynexus: more than {_MAX_RANK} dimensions")
    return (len(dims),) + dims + (0,) * (_MAX_RANK - len(dims))


# name: [(field, format, default, conversion)]; the conversion gives the field's values.
STRUCTS = {
    "phx_matmul_params": [("transpose_a", "i", 0, _flag), ("transpose_b", "i", 0, _flag),
                          ("activation", "I", 0, _enum(_ACTIVATIONS))],
    "phx_softmax_params": [("axis", "i", -1, _scalar)],
    "phx_norm_params": [("epsilon", "f", 1e-5, _scalar)],
    "phx_transpose_params": [("perm", "8I", None, _perm)],
    "phx_reduce_params": [("axes", "I", 0, _axes_mask), ("keep_dims", "i", 0, _flag)],
    "phx_conv2d_params": [("layout", "I", 0, _enum(_LAYOUTS)), ("stride", "2I", (1, 1), _pair),
                          ("padding", "4I", (0, 0, 0, 0), _padding),
                          ("dilation", "2I", (1, 1), _pair), ("groups", "I", 1, _scalar),
                          ("activation", "I", 0, _enum(_ACTIVATIONS))],
    "phx_attention_params": [("scale", "f", 0.0, _scalar), ("mask", "I", 0, _enum(_MASKS)),
                             ("window", "I", 0, _scalar)],
    "phx_rope_params": [("interleaved", "i", 0, _flag)],
    "phx_quantize_params": [("axis", "i", 1, _scalar)],
    "phx_elementwise_params": [("alpha", "f", 0.0, _scalar), ("beta", "f", 0.0, _scalar)],
    "phx_argmax_params": [("axis", "i", 0, _scalar), ("keep_dims", "i", 1, _flag),
                          ("select_last_index", "i", 0, _flag)],
    "phx_reshape_params": [("shape", "I8q", None, _shape)],
    "phx_axis_params": [("axis", "i", 0, _scalar)],
    "phx_slice_params": [("starts", "8q", (), _padded(8, 0)), ("ends", "8q", (), _padded(8, 0)),
                         ("steps", "8q", (), _padded(8, 0))],
    "phx_tile_params": [("repeats", "8I", (), _padded(8, 1))],
    "phx_pad_params": [("mode", "I", 0, _enum(_PAD_MODES)), ("value", "f", 0.0, _scalar),
                       ("begin", "8I", (), _padded(8, 0)), ("end", "8I", (), _padded(8, 0))],
    "phx_pool_params": [("kernel", "3I", (), _padded(3, 0)), ("stride", "3I", 1, _padded(3, 1)),
                        ("pad_begin", "3I", 0, _padded(3, 0)),
                        ("pad_end", "3I", 0, _padded(3, 0)),
                        ("dilation", "3I", 1, _padded(3, 1)), ("ceil_mode", "i", 0, _flag),
                        ("count_include_pad", "i", 0, _flag)],
    "phx_conv_transpose2d_params": [("stride", "2I", (1, 1), _pair),
                                    ("padding", "4I", (0, 0, 0, 0), _padding),
                                    ("output_padding", "2I", (0, 0), _pair),
                                    ("dilation", "2I", (1, 1), _pair), ("groups", "I", 1, _scalar)],
    "phx_resize_params": [("mode", "I", 0, _enum(_RESIZE_MODES)),
                          ("coordinates", "I", 0, _enum(_RESIZE_COORDINATES)),
                          ("nearest", "I", 0, _enum(_RESIZE_NEAREST)),
                          ("shape", "I8q", None, _shape), ("scales", "8f", (), _padded(8, 0.0))],
}

# Defaults that are an op's rather than its struct's (phx_elementwise_params: phynexus.h).
OP_DEFAULTS = {
    "leaky_relu": {"alpha": 0.01},
    "elu": {"alpha": 1.0},
    "selu": {"alpha": 1.67326319217681884765625, "beta": 1.05070102214813232421875},
    "clip": {"alpha": -_FLT_MAX, "beta": _FLT_MAX},
}


def struct_size(name):
    """sizeof the C struct, as this table lays it out."""
    fmt = "@N" + "".join(f[1] for f in STRUCTS[name])
    return (struct.calcsize(fmt) + 7) // 8 * 8


def keywords(name):
    return [f[0] for f in STRUCTS.get(name, ())]


def pack(name, values, inputs, op_name):
    """The struct's bytes for the keyword values (a dict), or None when none was given
    (the library's defaults). Unknown keywords raise InvalidArgumentError."""
    if not values:
        return None
    fields = STRUCTS.get(name)
    if fields is None:
        raise _phynexus.InvalidArgumentError(
            f"phynexus.{op_name}: keyword parameters of {name} are not mapped yet "
            f"(phynexus/_params.py); got {', '.join(values)}")
    known = {f[0] for f in fields}
    unknown = [k for k in values if k not in known]
    if unknown:
        raise _phynexus.InvalidArgumentError(
            f"phynexus.{op_name}: no parameter {', '.join(unknown)} (it has {', '.join(known)})")
    packed = []
    op_defaults = OP_DEFAULTS.get(op_name, {})
    for field, _fmt, default, convert in fields:
        value = values.get(field, op_defaults.get(field, default))
        if value is None and field == "perm":  # its default depends on the inputs
            value = tuple(reversed(range(_rank(inputs))))
        packed.extend(convert(value, inputs))
    fmt = "@N" + "".join(f[1] for f in fields)
    size = struct_size(name)
    try:
        data = struct.pack(fmt, size, *packed)
    except struct.error as error:
        raise _phynexus.InvalidArgumentError(f"phynexus.{op_name}: bad parameter: {error}") \
            from None
    return data + bytes(size - len(data))
