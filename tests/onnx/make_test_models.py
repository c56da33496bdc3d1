#!/usr/bin/env python3
"""Writes the ONNX models of phx_onnx_import_test into a folder (argument 1): small
models built with python3-onnx, each with a test_data_set_0 of inputs and of outputs
computed in float64 with numpy where the model runs, and the broken or refused models the
importer must answer with a clear status."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 17)]


def save(folder, name, model, inputs=None, outputs=None, check=True):
    if check:
        onnx.checker.check_model(model)
    path = os.path.join(folder, name)
    os.makedirs(path, exist_ok=True)
    onnx.save(model, os.path.join(path, "model.onnx"))
    data = os.path.join(path, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    for prefix, tensors in (("input", inputs or []), ("output", outputs or [])):
        for i, t in enumerate(tensors):
            if not isinstance(t, onnx.TensorProto):
                t = numpy_helper.from_array(t)
            with open(os.path.join(data, f"{prefix}_{i}.pb"), "wb") as f:
                f.write(t.SerializeToString())


def mlp(folder, rng):
    """Gemm + Relu + Gemm + Softmax with a dynamic batch named "batch"."""
    w1 = rng.uniform(-1, 1, (16, 32)).astype(np.float32)
    b1 = rng.uniform(-1, 1, (32,)).astype(np.float32)
    w2 = rng.uniform(-1, 1, (10, 32)).astype(np.float32)
    b2 = rng.uniform(-1, 1, (10,)).astype(np.float32)
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("Gemm", ["r", "w2", "b2"], ["z"], name="fc2", transB=1),
        helper.make_node("Softmax", ["z"], ["y"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])],
        [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))])
    x = rng.uniform(-1, 1, (5, 16)).astype(np.float32)
    h = np.maximum(x.astype(np.float64) @ w1 + b1, 0)
    z = h @ w2.astype(np.float64).T + b2
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    y = e / e.sum(axis=-1, keepdims=True)
    save(folder, "mlp", helper.make_model(graph, opset_imports=OPSET), [x], [y.astype(np.float32)])


def single_node(folder, name, node, inputs, outputs, initializers=(), opset=17, check=True):
    graph = helper.make_graph([node], name, inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    save(folder, name, model, check=check)


def node_test(folder, name, nodes, inputs, outputs, initializers=(), opset=17):
    """A test in the layout of ONNX's backend node tests (node/test_NAME: model.onnx and
    test_data_set_0 of tensors named as the model's inputs and outputs), which
    phx-onnx-node-tests runs on every device. inputs and outputs are (name, array) pairs,
    the outputs computed by the caller in float64 and rounded to their dtype once;
    initializers are (name, array) pairs too. An array may be a TensorProto instead (for
    bfloat16, which numpy lacks), declared with its own element type unless a third item
    gives the one the model declares."""
    def tensor(n, a):
        return a if isinstance(a, onnx.TensorProto) else numpy_helper.from_array(a, n)

    def infos(items):
        out = []
        for n, a, *declared in items:
            t = tensor(n, a)
            out.append(helper.make_tensor_value_info(n, declared[0] if declared else t.data_type,
                                                     list(t.dims)))
        return out
    graph = helper.make_graph(nodes, name, infos(inputs), infos(outputs),
                              [numpy_helper.from_array(a, n) for n, a in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    save(os.path.join(folder, "node"), "test_" + name, model,
         [tensor(n, a) for n, a, *_ in inputs], [tensor(n, a) for n, a, *_ in outputs])


def bf16_tensor(name, values, as_uint16=False):
    """values rounded to bfloat16 (to nearest even, as ONNX's helper does) as a BFLOAT16
    TensorProto, or as ONNX 1.12's test data stores bfloat16 (numpy has none): UINT16
    holding the bit patterns."""
    flat = [helper.float32_to_bfloat16(float(v)) for v in np.asarray(values, np.float32).flat]
    t = numpy_helper.from_array(np.array(flat, np.uint16).reshape(np.shape(values)), name)
    if not as_uint16:
        t.data_type = TensorProto.BFLOAT16
    return t


def bf16_values(values):
    """values rounded to bfloat16 to nearest even, as float32."""
    flat = [helper.float32_to_bfloat16(float(v)) << 16 for v in np.asarray(values, np.float32).flat]
    return np.array(flat, np.uint32).view(np.float32).reshape(np.shape(values))


def empty_axes(folder, rng):
    """ReduceSum (opset 13: axes an input) with empty axes, which mean every axis, or none
    with noop_with_empty_axes: fed as an input (which the runner gives as a constant), an
    initializer or a Constant."""
    x = rng.uniform(-1, 1, (2, 3, 4)).astype(np.float32)
    axes = np.array([], np.int64)
    total = np.array(x.astype(np.float64).sum(), np.float32)
    node_test(folder, "reduce_sum_empty_axes_input",
              [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)],
              [("x", x), ("axes", axes)], [("y", total)], opset=13)
    node_test(folder, "reduce_sum_empty_axes_input_noop",
              [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0,
                                noop_with_empty_axes=1)],
              [("x", x), ("axes", axes)], [("y", x)], opset=13)
    node_test(folder, "reduce_sum_empty_axes_initializer",
              [helper.make_node("ReduceSum", ["x", "axes"], ["y"])],
              [("x", x)], [("y", total.reshape(1, 1, 1))], [("axes", axes)], opset=13)
    empty = helper.make_node("Constant", [], ["axes"],
                             value=numpy_helper.from_array(axes, "axes"))
    node_test(folder, "reduce_sum_empty_axes_constant_noop",
              [empty, helper.make_node("ReduceSum", ["x", "axes"], ["y"],
                                       noop_with_empty_axes=1)],
              [("x", x)], [("y", x)], opset=13)


def bfloat16(folder, rng):
    """Casts to and from bfloat16, in BFLOAT16 files and in ONNX 1.12's UINT16 ones. The
    values hold ties, which round to even (the spec names no rounding; ONNX's helper and
    IEEE 754 round to nearest even): one down to 1, one up to 1 + 2^-6, that one negated,
    and a rounding that carries into the exponent (2 - 2^-23 becomes 2)."""
    ties = np.array([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 3 * 2**-8), 2 - 2**-23], np.float32)
    x = np.concatenate([ties, rng.uniform(-4, 4, 8).astype(np.float32)]).reshape(3, 4)
    node_test(folder, "cast_float_to_bfloat16",
              [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.BFLOAT16)],
              [("x", x)], [("y", bf16_tensor("y", x))])
    node_test(folder, "cast_bfloat16_as_uint16_to_float",
              [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)],
              [("x", bf16_tensor("x", x, as_uint16=True), TensorProto.BFLOAT16)],
              [("y", bf16_values(x))])
    node_test(folder, "castlike_float_to_bfloat16",
              [helper.make_node("CastLike", ["x", "like"], ["y"])],
              [("x", x), ("like", bf16_tensor("like", x.flat[:1]))],
              [("y", bf16_tensor("y", x, as_uint16=True), TensorProto.BFLOAT16)])


def range_of_inputs(folder):
    """A Range whose bounds are all graph inputs: given as constants, the model holds no
    input at all."""
    start, limit, delta = (np.array(v, np.float32) for v in (0.5, 3.0, 0.75))
    node_test(folder, "range_float_inputs",
              [helper.make_node("Range", ["start", "limit", "delta"], ["y"])],
              [("start", start), ("limit", limit), ("delta", delta)],
              [("y", np.arange(0.5, 3.0, 0.75).astype(np.float32))])


def refused(folder):
    f = TensorProto.FLOAT
    vi = helper.make_tensor_value_info
    single_node(folder, "unsupported_op", helper.make_node("Hardmax", ["x"], ["y"], name="hm"),
                [vi("x", f, [2, 3])], [vi("y", f, [2, 3])])
    single_node(folder, "old_opset", helper.make_node("Relu", ["x"], ["y"], name="r"),
                [vi("x", f, [2, 3])], [vi("y", f, [2, 3])], opset=6)
    single_node(folder, "double_input", helper.make_node("Relu", ["x"], ["y"], name="r"),
                [vi("x", TensorProto.DOUBLE, [2])], [vi("y", TensorProto.DOUBLE, [2])])
    # K of 3 against 4: the checker passes it (it infers no shapes), the graph's rules do not.
    single_node(folder, "shape_mismatch", helper.make_node("MatMul", ["a", "b"], ["y"], name="mm"),
                [vi("a", f, [2, 3]), vi("b", f, [4, 5])], [vi("y", f, [2, 5])])
    big = numpy_helper.from_array(np.array([1 << 40, 2], dtype=np.int64), "big")
    single_node(folder, "int64_overflow", helper.make_node("Add", ["x", "big"], ["y"], name="add"),
                [vi("x", TensorProto.INT64, [2])], [vi("y", TensorProto.INT64, [2])], [big])
    # Names an input no node defines: the checker refuses it.
    single_node(folder, "dangling_input", helper.make_node("Relu", ["nowhere"], ["y"], name="r"),
                [vi("x", f, [2])], [vi("y", f, [2])], check=False)
    # Reduction axes fed as an input: taken only with the input's value given at import.
    single_node(folder, "axes_input",
                helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="sum", keepdims=0),
                [vi("x", f, [2, 3]), vi("axes", TensorProto.INT64, [1])], [vi("y", f, [2])])
    # Empty reduction axes: taken given at import (reduce every axis), refused as a graph
    # input, as is an empty input any node needs in the graph.
    single_node(folder, "empty_axes_input",
                helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="sum", keepdims=0),
                [vi("x", f, [2, 3]), vi("axes", TensorProto.INT64, [0])], [vi("y", f, [])])
    single_node(folder, "empty_input", helper.make_node("Relu", ["x"], ["y"], name="r"),
                [vi("x", f, [0, 3])], [vi("y", f, [0, 3])])
    # Resize's scales size the output, so they must be known at import, and valid.
    resize = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="rs")
    single_node(folder, "resize_runtime_scales", resize,
                [vi("x", f, [1, 1, 2, 2]), vi("scales", f, [4])], [vi("y", f, [1, 1, 4, 4])])
    negative = numpy_helper.from_array(np.array([1, 1, -2, 2], dtype=np.float32), "scales")
    single_node(folder, "resize_negative_scale", resize, [vi("x", f, [1, 1, 2, 2])],
                [vi("y", f, [1, 1, 4, 4])], [negative])
    # Nearest before opset 11 takes the index below the coordinate: upsampling only.
    half = numpy_helper.from_array(np.array([1, 1, 0.5, 0.5], dtype=np.float32), "scales")
    single_node(folder, "upsample_nearest_down",
                helper.make_node("Upsample", ["x", "scales"], ["y"], name="up", mode="nearest"),
                [vi("x", f, [1, 1, 4, 4])], [vi("y", f, [1, 1, 2, 2])], [half], opset=9)


def main():
    folder = sys.argv[1]
    rng = np.random.default_rng(2026)
    mlp(folder, rng)
    refused(folder)
    empty_axes(folder, rng)
    bfloat16(folder, rng)
    range_of_inputs(folder)
    with open(os.path.join(folder, "mlp", "model.onnx"), "rb") as f:
        whole = f.read()
    with open(os.path.join(folder, "truncated.onnx"), "wb") as f:
        f.write(whole[: len(whole) // 2])


if __name__ == "__main__":
    main()
