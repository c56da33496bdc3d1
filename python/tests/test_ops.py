"""Every op of the library on every device, against numpy in float64.

The inputs are made in the tested dtype first and read back, so the float64 reference
sees exactly the values the device does. Tolerances (tolerance() below) follow from the
dtype and the length K of the longest sum an output element takes:
  |device - reference| <= (K * 2^-23 + 4 * (u_out + u_in) + 16 * 2^-24) * max(1, max |reference|)
with u_out the unit roundoff of the output's dtype (f32 2^-24, f16 2^-11, bf16 2^-8) for its
final rounding, u_in that of the inputs as the device's matrix unit takes them (2^-8 for an
f32 or f16 matmul or conv2d on a TPU whose matmul_precision is bf16, which rounds them to
bf16: docs/tpu-sim.md; else 0), K * 2^-23 for sums
accumulated in f32, and 16 f32 ulps for exp, erf and rsqrt. Integer results are exact,
except quantize's rounding of x / scale at a tie, which f32 and float64 may break apart
(one step). A device that does not run a variant (phx_device_supports_op says 0) skips it,
with the reason; an op with no reference here is skipped naming the op, so that a new op
of the table shows up in the report until it has one.
"""

import math
import struct

import numpy as np
import pytest

import phynexus
from phynexus import _params

ULP = {"f32": 2.0**-24, "f16": 2.0**-11, "bf16": 2.0**-8}
FLOATS = ("f32", "f16", "bf16")


def _erf(x):
    return np.vectorize(math.erf)(x)


def _conv2d(x, w, bias, padding):
    n, c, h, wd = x.shape
    co, ci, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh, ow = h + 2 * padding - kh + 1, wd + 2 * padding - kw + 1
    out = np.zeros((n, co, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i:i + kh, j:j + kw].reshape(n, -1)
            out[:, :, i, j] = patch @ w.reshape(co, -1).T
    return out + (0 if bias is None else bias.reshape(1, co, 1, 1))


def _attention(q, k, v):
    sq, skv = q.shape[2], k.shape[2]
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    allowed = np.arange(skv)[None, :] <= (np.arange(sq)[:, None] + skv - sq)
    scores = np.where(allowed, scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return (weights / weights.sum(-1, keepdims=True)) @ v


def _rope(x, cos, sin):
    r = cos.shape[1]
    out = x.copy()
    out[..., :r] = x[..., :r] * cos - x[..., r:2 * r] * sin
    out[..., r:2 * r] = x[..., r:2 * r] * cos + x[..., :r] * sin
    return out


def _layer_norm(x, gamma, beta):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * gamma + beta


def _float_case(shapes, reference, k=1, positive=()):
    """inputs: float arrays of shapes (indices in positive kept away from zero)."""
    def make(rng):
        arrays = [rng.uniform(-1, 1, s) for s in shapes]
        for i in positive:
            arrays[i] = np.abs(arrays[i]) + 0.5
        return arrays
    return {"make": make, "reference": reference, "k": k, "dtypes": FLOATS}


CASES = {
    "matmul": dict(_float_case([(4, 8), (8, 5), (5,)],
                               lambda a, b, c: np.maximum(a @ b + c, 0), k=8),
                   kwargs={"activation": "relu"}),
    "add": _float_case([(3, 4), (4,)], lambda a, b: a + b),
    "sub": _float_case([(3, 4), (3, 4)], lambda a, b: a - b),
    "mul": _float_case([(3, 4), (1, 4)], lambda a, b: a * b),
    "div": _float_case([(3, 4), (3, 4)], lambda a, b: a / b, positive=(1,)),
    "relu": _float_case([(5, 7)], lambda x: np.maximum(x, 0)),
    "gelu": _float_case([(5, 7)], lambda x: x * (1 + _erf(x / math.sqrt(2))) / 2),
    "silu": _float_case([(5, 7)], lambda x: x / (1 + np.exp(-x))),
    "softmax": _float_case([(3, 6)], lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True),
                           k=6),
    "layer_norm": _float_case([(3, 16), (16,), (16,)], _layer_norm, k=16),
    "rms_norm": _float_case([(3, 16), (16,)],
                            lambda x, g: x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * g,
                            k=16),
    "transpose": dict(_float_case([(2, 3, 4)], lambda x: np.transpose(x, (2, 0, 1))),
                      kwargs={"perm": (2, 0, 1)}),
    "reduce_sum": dict(_float_case([(3, 5, 2)], lambda x: x.sum(1, keepdims=True), k=5),
                       kwargs={"axes": [1], "keep_dims": True}),
    "reduce_max": dict(_float_case([(3, 5, 2)], lambda x: x.max(axis=(0, 2))),
                       kwargs={"axes": [0, 2]}),
    "cast": dict(_float_case([(4, 5)], lambda x: x), dtypes=("f32",), out="f16"),
    "conv2d": dict(_float_case([(1, 2, 5, 5), (3, 2, 3, 3), (3,)],
                               lambda x, w, b: _conv2d(x, w, b, 1), k=18),
                   kwargs={"padding": 1}),
    "attention": dict(_float_case([(1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4)], _attention, k=5),
                      kwargs={"mask": "causal"}),
    # rope's cos and sin tables are f32 whatever x is.
    "rope": dict(_float_case([(1, 3, 8), (3, 2), (3, 2)], _rope),
                 input_dtypes_for=lambda d: [d, "f32", "f32"]),
}


def _quant_cases():
    def quantize(rng):
        return [rng.uniform(-3, 3, (3, 4)), np.array([0.05]), np.array([3])]
    def dequantize(rng):
        return [rng.integers(-128, 128, (3, 4)), np.array([0.05]), np.array([3])]
    def qmatmul(rng):
        return [rng.integers(-128, 128, (2, 8)), rng.integers(-128, 128, (8, 3)),
                np.array([0.02]), None, np.array([0.01])]
    def qconv2d(rng):
        return [rng.integers(-128, 128, (1, 2, 4, 4)), rng.integers(-128, 128, (3, 2, 3, 3)),
                np.array([0.02]), None, np.array([0.01])]
    q_dtypes = {"quantize": ["f32", "f32", "i32"], "dequantize": ["i8", "f32", "i32"],
                "qmatmul": ["i8", "i8", "f32", None, "f32"],
                "qconv2d": ["i8", "i8", "f32", None, "f32"]}
    return {
        "quantize": {"make": quantize, "out": "i8", "exact": 1, "input_dtypes": q_dtypes["quantize"],
                     "reference": lambda x, s, z: np.clip(np.round(x / s) + z, -128, 127)},
        "dequantize": {"make": dequantize, "input_dtypes": q_dtypes["dequantize"],
                       "reference": lambda q, s, z: (q - z) * s},
        "qmatmul": {"make": qmatmul, "out": "f32", "k": 8, "input_dtypes": q_dtypes["qmatmul"],
                    "reference": lambda a, b, sa, _, sb: (a @ b) * sa * sb},
        "qconv2d": {"make": qconv2d, "out": "f32", "k": 18, "input_dtypes": q_dtypes["qconv2d"],
                    "reference": lambda x, w, sa, _, sb: _conv2d(x, w, None, 0) * sa * sb},
    }


CASES.update(_quant_cases())


def tolerance(device, op, out_dtype, in_dtype, k, reference):
    u_out = ULP.get(out_dtype, 2.0**-24)
    mxu = op in ("matmul", "conv2d") and in_dtype in ("f32", "f16") and \
        device.properties.get("matmul_precision") == "bf16"
    u_in = 2.0**-8 if mxu else 0.0
    scale = max(1.0, float(np.max(np.abs(reference))) if reference.size else 1.0)
    return (k * 2.0**-23 + 4 * (u_out + u_in) + 16 * 2.0**-24) * scale


def _variants():
    names = phynexus.ops.names()
    out = []
    for name in names:
        case = CASES.get(name)
        dtypes = case.get("dtypes", (None,)) if case else (None,)
        out.extend((name, dtype) for dtype in dtypes)
    return out


@pytest.mark.parametrize("device_index", range(len(phynexus.devices())))
@pytest.mark.parametrize("op_name, dtype", _variants())
def test_op_against_float64(context, all_devices, op_name, dtype, device_index, rng):
    case = CASES.get(op_name)
    if op_name in ("dynamic_quantize", "top_k"):
        pytest.skip(f"{op_name}: a test of its own below checks its several outputs")
    if case is None:
        pytest.skip(f"{op_name}: no float64 reference in test_ops.py yet")
    device = all_devices[device_index]
    op = getattr(phynexus.ops, op_name)
    arrays = case["make"](rng)
    in_dtypes = case.get("input_dtypes") or [dtype] * len(arrays)
    if "input_dtypes_for" in case:
        in_dtypes = case["input_dtypes_for"](dtype)
    out_dtype = case.get("out") or dtype
    kwargs = case.get("kwargs", {})
    if not all(d is None or phynexus.dtype(d) in device.dtypes for d in in_dtypes):
        pytest.skip(f"{device.name} holds no {in_dtypes}")
    inputs = [None if a is None else phynexus.tensor(a, device=device, dtype=d)
              for a, d in zip(arrays, in_dtypes)]
    params = _params.pack(op, dict(kwargs), inputs)
    variant = [0 if d is None else phynexus.dtype(d).id for d in in_dtypes]
    if not context.supports_op(device.index, op.id, params, variant,
                               [phynexus.dtype(out_dtype).id] * len(op.outputs)):
        pytest.skip(f"{device.name} does not run {op_name}({', '.join(map(str, in_dtypes))})")
    exact = [None if t is None else t.numpy().astype(np.float64) for t in inputs]
    reference = np.asarray(case["reference"](*exact), dtype=np.float64)
    result = op(*inputs, dtype=case.get("out"), **kwargs)
    got = result.numpy().astype(np.float64)
    assert got.shape == reference.shape
    if "exact" in case:
        assert np.max(np.abs(got - reference)) <= case["exact"]
        return
    tol = tolerance(device, op_name, out_dtype, dtype, case.get("k", 1), reference)
    error = float(np.max(np.abs(got - reference)))
    assert error <= tol, f"{op_name} {dtype} on {device.name}: error {error} > {tol}"


def test_dynamic_quantize_recovers_its_input(context, rng):
    x = rng.uniform(-2, 2, (4, 6))
    for device in context.devices():
        xt = phynexus.tensor(x, device=device, dtype="f32")
        if not context.supports_op(device.index, phynexus.ops.dynamic_quantize.id, None,
                                   [phynexus.f32.id], [phynexus.i8.id, 1, 6]):
            continue
        q, scale, zero_point = phynexus.dynamic_quantize(xt, dtype="i8")
        s = float(scale.numpy()[0])
        # i8 is symmetric over max |x|: scale = max |x| / 127, and each element is within
        # half a step of its quantized value.
        assert abs(s - np.max(np.abs(x)) / 127) <= 1e-6 * s + 1e-7
        assert int(zero_point.numpy()[0]) == 0
        assert np.max(np.abs(q.numpy() * s - x)) <= s / 2 * (1 + 1e-5)


def test_top_k_gives_values_and_indices_as_a_stable_sort(context, rng):
    x = np.round(rng.uniform(-4, 4, (3, 30)))  # ties
    top_k = phynexus.ops.top_k
    for device in context.devices():
        params = _params.pack(top_k, {"k": 4}, [None])
        if not context.supports_op(device.index, top_k.id, params, [phynexus.f32.id],
                                   [phynexus.f32.id, phynexus.i32.id]):
            continue  # the CPU device runs it for them in a model (placement)
        xt = phynexus.tensor(x, device=device, dtype="f32")
        for largest in (True, False):
            values, indices = phynexus.top_k(xt, k=4, largest=largest)
            order = np.argsort(-x if largest else x, axis=-1, kind="stable")[:, :4]
            assert indices.dtype == phynexus.i32
            np.testing.assert_array_equal(indices.numpy(), order)
            np.testing.assert_array_equal(values.numpy(), np.take_along_axis(x, order, -1))
    with pytest.raises(phynexus.InvalidArgumentError, match="k is 0 \\(not set\\)"):
        phynexus.top_k(phynexus.tensor(x, dtype="f32"))


def test_parameter_structs_are_described_member_by_member():
    # The library's description (phx_op_info) is all the package knows of a struct: its
    # members lie in order inside it, after struct_size, each within its size.
    sizes = {"int64": 8}
    for op in (getattr(phynexus.ops, n) for n in phynexus.ops.names()):
        if not op.params_struct:
            assert op.params_size == 0 and op.param_fields == [] and op.default_params is None
            continue
        end = 8
        for field in op.param_fields:
            assert field["offset"] >= end, (op.name, field["name"])
            end = field["offset"] + field["count"] * sizes.get(field["type"], 4)
            assert (field["type"] == "enum") == bool(field["enum_names"]), field["name"]
        assert end <= op.params_size <= end + 7, op.name
        if op.default_params is not None:
            assert len(op.default_params) == op.params_size
            assert struct.unpack_from("@N", op.default_params)[0] == op.params_size


def test_keywords_at_the_defaults_pack_the_default_struct():
    # Every member given its default value by keyword packs the very bytes a null params
    # pointer stands for: the keywords reach each member, at its offset, in its type.
    checked = 0
    for op in (getattr(phynexus.ops, n) for n in phynexus.ops.names()):
        if op.default_params is None:
            continue
        values = {}
        for field in op.param_fields:
            fmt = _params._FORMATS[field["type"]]
            entries = struct.unpack_from(f"@{field['count']}{fmt}", op.default_params,
                                         field["offset"])
            if field["type"] == "axes":
                values[_params.keyword(field)] = [d for d in range(32) if entries[0] >> d & 1]
            elif field["type"] == "enum":
                values[_params.keyword(field)] = field["enum_names"][entries[0]]
            else:
                values[_params.keyword(field)] = entries[0] if field["count"] == 1 else entries
        assert _params.pack(op, values, []) == op.default_params, op.name
        checked += 1
    assert checked >= 15


def test_op_defaults_come_from_the_library():
    leaky_relu = phynexus.ops.leaky_relu
    alpha, beta = struct.unpack_from("@ff", leaky_relu.default_params, 8)
    assert alpha == pytest.approx(0.01) and beta == 0
    x = phynexus.tensor(np.array([[-2.0, 3.0]], np.float32))
    np.testing.assert_allclose(leaky_relu(x).numpy(), [[-0.02, 3.0]], rtol=1e-6)
    # A keyword given for one member keeps the op's defaults in the others.
    np.testing.assert_allclose(phynexus.clip(x, alpha=0.0).numpy(), [[0.0, 3.0]])


def test_ops_are_tensor_methods_too():
    x = phynexus.tensor(np.array([[-1.0, 2.0]], np.float32))
    np.testing.assert_array_equal(x.relu().numpy(), [[0.0, 2.0]])
    assert x.transpose().shape == (2, 1)


def test_bad_keywords_name_the_op_and_the_member():
    x = phynexus.tensor(np.ones((2, 3), np.float32))
    w = phynexus.tensor(np.ones((3, 4), np.float32))
    with pytest.raises(phynexus.InvalidArgumentError, match=r"matmul: no parameter axis"):
        phynexus.matmul(x, w, axis=1)
    with pytest.raises(phynexus.InvalidArgumentError, match=r"activation='tanh' is none of"):
        phynexus.matmul(x, w, activation="tanh")
    with pytest.raises(phynexus.InvalidArgumentError, match=r"shape takes at most 8 entries"):
        phynexus.reshape(x, shape=[1] * 9)
    with pytest.raises(phynexus.InvalidArgumentError, match=r"relu: no parameter alpha"):
        phynexus.relu(x, alpha=1.0)
    # Sequences, negative dimensions and axes, enum names and a length member all reach
    # the library as the struct's bytes.
    np.testing.assert_array_equal(phynexus.transpose(x, perm=(-1, 0)).numpy(), np.ones((3, 2)))
    np.testing.assert_array_equal(phynexus.reduce_sum(x, axes=-1).numpy(), [3.0, 3.0])
    assert phynexus.reshape(x, shape=(3, 2)).shape == (3, 2)
    np.testing.assert_allclose(phynexus.matmul(x - 2, w, activation="relu").numpy(),
                               np.zeros((2, 4)))
