"""Keyword parameters -> the bytes of an op's C parameter struct.

Nothing here knows a struct: phx_op_info_get describes each op's struct as data (its size,
its members with their offsets, types, lengths and enum names, and the bytes a null params
pointer stands for), and the keywords are its member names. A member's value may be
  - a number (an array member takes it in every entry: stride=2) or a sequence, which
    fills the leading entries and leaves the defaults in the rest; a member that a
    "length" member precedes (reshape's shape) records how many were given;
  - an enum member's name ("relu"), or its number;
  - for an "axes" member (reduce's axes_mask), the list of axes, under the name without
    "_mask"; axes and "dimension" entries count from the end when negative;
  - for a 4-entry padding, (h, w): top and bottom h, left and right w.
"""

import struct

from . import _phynexus

# The struct module's format of one entry of each member type (native sizes: C's).
_FORMATS = {"int32": "i", "uint32": "I", "int64": "q", "float32": "f", "bool": "i",
            "enum": "i", "axes": "I", "dimension": "I", "length": "I"}


def keyword(field):
    """The keyword a member is given by."""
    name = field["name"]
    return name[:-len("_mask")] if field["type"] == "axes" and name.endswith("_mask") else name


def keywords(op):
    """The keywords an op takes, in its struct's order."""
    return [keyword(f) for f in op.param_fields if f["type"] != "length"]


def _rank(inputs):
    first = inputs[0] if inputs else None
    return len(getattr(first, "shape", ())) if first is not None else None


def _dimension(value, inputs, op_name):
    value = int(value)
    if value >= 0:
        return value
    rank = _rank(inputs)
    if rank is None:
        raise _phynexus.InvalidArgumentError(
            f"phynexus.{op_name}: a negative dimension needs the first input's rank")
    return value % rank


def _enum(field, value, op_name):
    if not isinstance(value, str):
        return int(value)
    names = field["enum_names"]
    if value not in names:
        raise _phynexus.InvalidArgumentError(
            f"phynexus.{op_name}: {keyword(field)}={value!r} is none of {', '.join(names)}")
    return names.index(value)


def _is_sequence(value):
    return hasattr(value, "__len__") and not isinstance(value, str)


def _entries(field, value, inputs, op_name):
    """The member's entries from a keyword value: as many as it gives, at most count."""
    kind, count = field["type"], field["count"]
    if kind == "axes":
        mask = 0
        for axis in (value if _is_sequence(value) else (value,)):
            mask |= 1 << _dimension(axis, inputs, op_name)
        return [mask]
    if kind == "enum":
        return [_enum(field, value, op_name)]
    if not _is_sequence(value):  # a number (NumPy's too): every entry
        values = [value] * count
    else:
        values = list(value)
        if field["name"] == "padding" and count == 4 and len(values) == 2:
            values = [values[0], values[0], values[1], values[1]]
    if len(values) > count:
        raise _phynexus.InvalidArgumentError(
            f"phynexus.{op_name}: {keyword(field)} takes at most {count} entries, "
            f"got {len(values)}")
    if kind == "bool":
        return [1 if v else 0 for v in values]
    if kind == "dimension":
        return [_dimension(v, inputs, op_name) for v in values]
    return values


def pack(op, values, inputs):
    """The struct's bytes for the keyword values (a dict), or None when none was given
    (the library's defaults). Unknown keywords raise InvalidArgumentError."""
    if not values:
        return None
    fields = op.param_fields
    known = keywords(op)
    unknown = [k for k in values if k not in known]
    if unknown:
        takes = f"it takes {', '.join(known)}" if known else "it takes none"
        raise _phynexus.InvalidArgumentError(
            f"phynexus.{op.name}: no parameter {', '.join(unknown)} ({takes})")
    data = bytearray(op.default_params or bytes(op.params_size))
    struct.pack_into("@N", data, 0, op.params_size)
    try:
        for i, field in enumerate(fields):
            if field["type"] == "length" or keyword(field) not in values:
                continue
            entries = _entries(field, values[keyword(field)], inputs, op.name)
            if i > 0 and fields[i - 1]["type"] == "length":
                struct.pack_into("@I", data, fields[i - 1]["offset"], len(entries))
            struct.pack_into(f"@{len(entries)}{_FORMATS[field['type']]}", data,
                             field["offset"], *entries)
    except (struct.error, TypeError, ValueError) as error:
        raise _phynexus.InvalidArgumentError(f"phynexus.{op.name}: bad parameter: {error}") \
            from None
    return bytes(data)
