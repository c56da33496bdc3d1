"""phynexus.onnx: a model written here with python3-onnx, imported and run on every device
(the CPU device for the nodes a device lacks) against numpy float64, and the errors of
models the importer refuses."""

import numpy as np
import pytest

import phynexus

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

pytestmark = pytest.mark.skipif(not phynexus.onnx.is_available(),
                                reason="built without the ONNX importer")


def save(tmp_path, nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "test", inputs, outputs, list(initializers))
    path = tmp_path / "model.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


@pytest.fixture
def conv_model(tmp_path, rng):
    """Conv 3x3 + Relu + MaxPool 2 + Flatten + Gemm, with a dynamic batch."""
    w = rng.uniform(-1, 1, (4, 2, 3, 3)).astype(np.float32)
    b = rng.uniform(-1, 1, 4).astype(np.float32)
    fc = rng.uniform(-1, 1, (4 * 3 * 3, 5)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2],
                              strides=[2, 2]),
             helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "fc"], ["y"], name="fc")]
    path = save(tmp_path, nodes,
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2, 6, 6])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 5])],
                [numpy_helper.from_array(a, n) for a, n in ((w, "w"), (b, "b"), (fc, "fc"))])
    return path, (w, b, fc)


def reference(x, w, b, fc):
    x = x.astype(np.float64)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((x.shape[0], 4, 6, 6))
    for i in range(3):
        for j in range(3):
            conv += np.einsum("nchw,oc->nohw", padded[:, :, i:i + 6, j:j + 6], w[:, :, i, j])
    r = np.maximum(conv + b.reshape(1, -1, 1, 1), 0)
    p = r.reshape(x.shape[0], 4, 3, 2, 3, 2).max(axis=(3, 5))
    return p.reshape(x.shape[0], -1) @ fc


def test_a_model_runs_on_every_device(conv_model, all_devices, rng):
    path, weights = conv_model
    x = rng.uniform(-1, 1, (3, 2, 6, 6)).astype(np.float32)
    want = reference(x, *weights)
    for device in all_devices:
        got = phynexus.onnx.load(path, device=device)(x).numpy()
        # K = 18 products, then 36: f32 sums within K * 2^-24 of sum |terms| (a few 1e-6 of
        # the output's scale); a device multiplying in bf16 (tpu-sim's default) within
        # 2^-8 relative per product, a few 1e-3 of the scale.
        bf16 = device.properties.get("matmul_precision") == "bf16"
        tolerance = (3e-2 if bf16 else 1e-5) * np.abs(want).max()
        assert np.abs(got - want).max() <= tolerance, device


def test_a_named_dimension_takes_a_size(conv_model, rng):
    path, weights = conv_model
    model = phynexus.onnx.load(path, device="cpu", dims={"batch": 2})
    x = rng.uniform(-1, 1, (2, 2, 6, 6)).astype(np.float32)
    np.testing.assert_allclose(model(x).numpy(), reference(x, *weights), rtol=0, atol=1e-4)


def dynamic_reshape(tmp_path):
    """Shape of an input with a named and an unnamed dynamic dimension, then Reshape to
    [batch * seq, 8], as a dynamic_axes export computes its shapes."""
    zero, one = (numpy_helper.from_array(np.array(v, np.int64), n) for v, n in ((0, "zero"),
                                                                              (1, "one")))
    axes, eight = (numpy_helper.from_array(np.array([v], np.int64), n)
                   for v, n in ((0, "axes"), (8, "eight")))
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "zero"], ["b"]),
             helper.make_node("Gather", ["s", "one"], ["t"]),
             helper.make_node("Mul", ["b", "t"], ["n"]),
             helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
             helper.make_node("Concat", ["n1", "eight"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    return save(tmp_path, nodes,
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", None, 8])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 8])],
                [zero, one, axes, eight])


def test_input_shapes_fix_a_dynamic_axes_export(tmp_path, all_devices):
    """Given the sizes, the export is exact (a reshape moves no value) on every device."""
    path = dynamic_reshape(tmp_path)
    x = np.arange(2 * 5 * 8, dtype=np.float32).reshape(2, 5, 8)
    for device in all_devices:
        got = phynexus.onnx.load(path, device=device, input_shapes={"x": x.shape})(x).numpy()
        np.testing.assert_array_equal(got, x.reshape(10, 8))
    with pytest.raises(phynexus.InvalidArgumentError, match="dimension 2 is 9, the model's 8"):
        phynexus.onnx.load(path, input_shapes={"x": (2, 5, 9)})
    with pytest.raises(phynexus.UnsupportedError, match="node 'shape'"):  # a name ignored
        phynexus.onnx.load(path, input_shapes={"nothing": (1,)})


def test_without_sizes_it_compiles_once_per_input_shapes(tmp_path, all_devices):
    """Loaded without sizes, the export compiles at each call with new shapes and keeps the
    last cache_size compiles: a shape seen again runs what it compiled then."""
    path = dynamic_reshape(tmp_path)
    a, b, c = (np.arange(np.prod(s), dtype=np.float32).reshape(s)
               for s in ((2, 5, 8), (3, 4, 8), (1, 1, 8)))
    for device in all_devices:
        model = phynexus.onnx.load(path, device=device, cache_size=2)
        assert isinstance(model, phynexus.onnx.Specialized)
        assert model.specializations == []
        for x in (a, b, a):
            np.testing.assert_array_equal(model(x).numpy(), x.reshape(-1, 8))
        assert model.specializations == [((3, 4, 8),), ((2, 5, 8),)]  # a used last
        np.testing.assert_array_equal(model(c).numpy(), c.reshape(1, 8))
        assert model.specializations == [((2, 5, 8),), ((1, 1, 8),)]  # b dropped, the oldest
    with pytest.raises(phynexus.InvalidArgumentError, match="the model has 1 inputs"):
        model(a, a)
    with pytest.raises(phynexus.InvalidArgumentError, match="cache_size"):
        phynexus.onnx.load(path, cache_size=0)


def test_an_operator_not_taken_is_named(tmp_path):
    path = save(tmp_path, [helper.make_node("Det", ["x"], ["y"], name="det")],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 3])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    with pytest.raises(phynexus.UnsupportedError, match="node 'det' \\(Det\\)"):
        phynexus.onnx.load(path)


def test_a_broken_file_is_refused(tmp_path):
    path = tmp_path / "broken.onnx"
    path.write_bytes(b"\x08\xff\xff\xff not a model")
    with pytest.raises(phynexus.InvalidArgumentError, match="not a valid ONNX model"):
        phynexus.onnx.load(path)
    with pytest.raises(phynexus.NotFoundError):
        phynexus.onnx.load(tmp_path / "missing.onnx")


INT64_MIN, INT64_MAX = -2**63, 2**63 - 1


# Slices of an [8, 8] input backwards, as exporters write x[::-1] and torch.flip (ends =
# INT64_MIN): (starts, ends, axes, steps), starts and ends at the bounds and beyond them.
BACKWARD_SLICES = [
    ([-1], [INT64_MIN], [1], [-1]),
    ([7], [INT64_MIN], [1], [-1]),
    ([INT64_MAX], [INT64_MIN], [1], [-1]),
    ([100], [-100], [1], [-1]),
    ([7], [-9], [1], [-1]),  # -9 + 8 = -1: just before the first element
    ([5], [0], [1], [-1]),  # stops at the first element, excluded
    ([-3], [-8], [1], [-1]),
    ([7], [INT64_MIN], [1], [-2]),
    ([-2], [INT64_MIN], [1], [-2]),
    ([100], [-100], [1], [-2]),
    ([INT64_MAX], [-9], [1], [-2]),
    ([6], [1], [1], [-2]),
    ([-1, 7], [INT64_MIN, INT64_MIN], [0, 1], [-1, -2]),
]


@pytest.mark.parametrize("starts, ends, axes, steps", BACKWARD_SLICES)
def test_a_slice_backwards_reaches_the_start(tmp_path, rng, starts, ends, axes, steps):
    x = rng.uniform(-1, 1, (8, 8)).astype(np.float32)
    index = [slice(None)] * 2
    for start, end, axis, step in zip(starts, ends, axes, steps):
        index[axis] = slice(start, end, step)
    want = x[tuple(index)]  # Python's slicing clamps as ONNX's Slice does
    assert want.size > 0  # Phynexus has no empty tensors: every case here has elements
    inputs = [numpy_helper.from_array(np.array(v, np.int64), n)
              for v, n in ((starts, "starts"), (ends, "ends"), (axes, "axes"), (steps, "steps"))]
    path = save(tmp_path,
                [helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"],
                                  name="flip")],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 8])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, want.shape)], inputs)
    got = phynexus.onnx.load(path, device="cpu")(x).numpy()
    np.testing.assert_array_equal(got, want)


def test_an_onnx_model_is_calibrated_for_the_npu_saved_and_loaded(tmp_path, rng):
    """An ONNX MLP with a dynamic batch, calibrated for the NPU from Python: quantized, within
    the error int8 allows, at batch sizes other than the calibration's, and the same bits
    after a save and a load."""
    if not phynexus.npu.is_available():
        pytest.skip("no NPU device")
    w1 = rng.uniform(-1, 1, (16, 32)).astype(np.float32)
    b1 = rng.uniform(-1, 1, 32).astype(np.float32)
    w2 = rng.uniform(-1, 1, (32, 8)).astype(np.float32)
    path = save(tmp_path,
                [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"]),
                 helper.make_node("Relu", ["h"], ["r"]), helper.make_node("MatMul", ["r", "w2"], ["y"])],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
                [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"))])
    batches = [rng.uniform(-1, 1, (4, 16)).astype(np.float32) for _ in range(8)]
    optimized = phynexus.npu.optimize_model(path, batches)
    assert optimized.quantized_nodes >= 1
    assert any(n["compute_dtype"] in ("i8", "i16") for n in optimized.nodes())
    # As test_nn.py's optimize_model test: int8 per-tensor scales, two layers, within 5%.
    assert 0 < optimized.calibration_error <= 0.05
    # Rows the calibration saw (a row past its ranges saturates, as int8 does), at batch
    # sizes it did not.
    rows = np.concatenate(batches)
    for batch in (1, 9):
        x = rows[:batch]
        want = np.maximum(x.astype(np.float64) @ w1 + b1, 0) @ w2
        assert np.abs(optimized(x).numpy() - want).max() <= 0.05 * np.abs(want).max()
    loaded = phynexus.load_compiled(optimized.save())
    np.testing.assert_array_equal(loaded(x).numpy(), optimized(x).numpy())
    # What the NPU compiled is planned per input shapes: the loaded one's, after its run.
    assert loaded.quantized_nodes == optimized.quantized_nodes
    # phynexus.onnx.load with calibration_data is the same compile.
    same = phynexus.onnx.load(path, device="npu", calibration_data=batches)
    np.testing.assert_array_equal(same(x).numpy(), optimized(x).numpy())


def test_a_qdq_model_runs_its_conv_as_int8_on_the_cpu_and_the_npu(tmp_path, rng):
    """A conv between QuantizeLinear and DequantizeLinear nodes, as quantization tools
    write QDQ models (u8 activations, i8 weights per output channel, an i32 bias): the
    compile runs it as one qconv2d, on the CPU device and on the NPU, within one output
    step of the QDQ graph's meaning in float64."""
    xs, xz, ys, yz = np.float32(0.02), np.uint8(128), np.float32(0.05), np.uint8(100)
    w = rng.integers(-127, 128, (4, 2, 3, 3)).astype(np.int8)
    ws = np.array([0.01, 0.02, 0.015, 0.03], np.float32)
    b = rng.integers(-500, 500, 4).astype(np.int32)
    bs = (xs * ws).astype(np.float32)
    scalars = [numpy_helper.from_array(np.array(v), n)
               for v, n in ((xs, "xs"), (xz, "xz"), (ys, "ys"), (yz, "yz"))]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws"], ["wd"], axis=0),
             helper.make_node("DequantizeLinear", ["b", "bs"], ["bd"], axis=0),
             helper.make_node("Conv", ["xd", "wd", "bd"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "ys", "yz"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    path = save(tmp_path, nodes,
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])],
                scalars + [numpy_helper.from_array(a, n)
                           for a, n in ((w, "w"), (ws, "ws"), (b, "b"), (bs, "bs"))])
    x = rng.uniform(-2, 2, (1, 2, 6, 6)).astype(np.float32)
    xd = (np.clip(np.rint(x / xs) + 128, 0, 255) - 128) * np.float64(xs)
    padded = np.pad(xd, ((0, 0), (0, 0), (1, 1), (1, 1)))
    wd = w.astype(np.float64) * ws.reshape(-1, 1, 1, 1)
    c = np.zeros((1, 4, 6, 6)) + (b * bs.astype(np.float64)).reshape(1, -1, 1, 1)
    for i in range(3):
        for j in range(3):
            c += np.einsum("nchw,oc->nohw", padded[:, :, i:i + 6, j:j + 6], wd[:, :, i, j])
    want = (np.clip(np.rint(np.maximum(c, 0) / ys) + 100, 0, 255) - 100) * np.float64(ys)
    for device in ("cpu", "npu"):
        if device == "npu" and not phynexus.npu.is_available():
            continue
        model = phynexus.onnx.load(path, device=device)
        convs = [n for n in model.nodes() if "conv" in n["name"]]
        assert [n["op"] for n in convs] == ["qconv2d"], model.nodes()
        assert convs[0]["device"] == model.device.index
        # One step of y: where the float path's sum would round the other way.
        assert np.abs(model(x).numpy() - want).max() <= ys * 1.001, device


def test_compare_names_where_a_device_leaves_the_reference(tmp_path, rng):
    """phynexus.onnx.compare as phx-run-onnx --compare-with: a = x + c, m = a @ w,
    y = relu(m); on tpu-sim the add is f32's (exact as the CPU device's) and the matmul's
    products bf16's. At its precision every value is within tolerance; at none, m is the
    first value out of it."""
    if not phynexus.tpu.is_available():
        pytest.skip("no TPU device")
    k = 64
    c = rng.uniform(-1, 1, (4, k)).astype(np.float32)
    w = rng.uniform(-1, 1, (k, 16)).astype(np.float32)
    path = save(tmp_path,
                [helper.make_node("Add", ["x", "c"], ["a"]),
                 helper.make_node("MatMul", ["a", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, k])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])],
                [numpy_helper.from_array(c, "c"), numpy_helper.from_array(w, "w")])
    x = rng.uniform(-1, 1, (4, k)).astype(np.float32)
    result = phynexus.onnx.compare(path, x, device="tpu-sim")
    assert result.names == ["a", "m", "y"]
    assert result.precision == "bf16 products" and result.reduction_length == k
    assert result and result.first is None and all(result.within)
    strict = phynexus.onnx.compare(path, x, device="tpu-sim", rtol=0, atol=0)
    assert not strict and strict.first == "m"
    assert strict.within == [True, False, False]
    assert phynexus.onnx.compare(path, x, device="cpu", rtol=0, atol=0)
