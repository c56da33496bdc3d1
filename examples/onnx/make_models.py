#!/usr/bin/env python3
"""Writes the models of the ONNX example (examples/onnx_run.c) into a folder (argument
1), as a framework's export would be: an MLP and a small CNN built with python3-onnx,
their weights generated from a fixed seed (nothing downloaded), each in <name>/model.onnx
with one test_data_set_0 of inputs and of expected outputs computed in float64 with
numpy, in the layout of the ONNX backend tests."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def write(folder, name, graph, inputs, outputs):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="phynexus examples/onnx/make_models.py")
    onnx.checker.check_model(model)
    data = os.path.join(folder, name, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    onnx.save(model, os.path.join(folder, name, "model.onnx"))
    for prefix, arrays in (("input", inputs), ("output", outputs)):
        for i, a in enumerate(arrays):
            with open(os.path.join(data, f"{prefix}_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a.astype(np.float32)).SerializeToString())


def weights(rng, shape, fan_in):
    return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def mlp(folder, rng):
    """x [batch, 64] -> Gemm 128 -> Relu -> Gemm 10 -> Softmax."""
    w1, b1 = weights(rng, (64, 128), 64), weights(rng, (128,), 64)
    w2, b2 = weights(rng, (10, 128), 128), weights(rng, (10,), 128)
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1"),
         helper.make_node("Relu", ["h"], ["hr"], name="relu1"),
         helper.make_node("Gemm", ["hr", "w2", "b2"], ["logits"], name="fc2", transB=1),
         helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1)],
        "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 10])],
        [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))])
    x = rng.uniform(-1, 1, (8, 64)).astype(np.float32)
    h = np.maximum(x.astype(np.float64) @ w1 + b1, 0)
    write(folder, "mlp", graph, [x], [softmax(h @ w2.astype(np.float64).T + b2)])


def conv2d(x, w, b):
    """3x3 convolution, stride 1, padding 1, NCHW, in float64."""
    n, c, hh, ww = x.shape
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], hh, ww))
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,oc->nohw", padded[:, :, i:i + hh, j:j + ww], w[:, :, i, j])
    return out + b.reshape(1, -1, 1, 1)


def max_pool2(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def cnn(folder, rng):
    """x [batch, 3, 32, 32] -> (Conv 3x3 + Relu + MaxPool 2) x 2 -> Flatten -> Gemm 10."""
    w1, b1 = weights(rng, (8, 3, 3, 3), 27), weights(rng, (8,), 27)
    w2, b2 = weights(rng, (16, 8, 3, 3), 72), weights(rng, (16,), 72)
    w3, b3 = weights(rng, (16 * 8 * 8, 10), 1024), weights(rng, (10,), 1024)
    conv = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    pool = dict(kernel_shape=[2, 2], strides=[2, 2])
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", **conv),
         helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
         helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", **pool),
         helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2", **conv),
         helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
         helper.make_node("MaxPool", ["r2"], ["p2"], name="pool2", **pool),
         helper.make_node("Flatten", ["p2"], ["f"], name="flatten", axis=1),
         helper.make_node("Gemm", ["f", "w3", "b3"], ["logits"], name="fc")],
        "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 32, 32])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])],
        [numpy_helper.from_array(a, n) for a, n in
         ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"), (w3, "w3"), (b3, "b3"))])
    x = rng.uniform(-1, 1, (4, 3, 32, 32)).astype(np.float32)
    a = max_pool2(np.maximum(conv2d(x.astype(np.float64), w1, b1), 0))
    a = max_pool2(np.maximum(conv2d(a, w2, b2), 0))
    write(folder, "cnn", graph, [x], [a.reshape(4, -1) @ w3 + b3])


def main():
    rng = np.random.default_rng(20261126)
    mlp(sys.argv[1], rng)
    cnn(sys.argv[1], rng)


if __name__ == "__main__":
    main()
