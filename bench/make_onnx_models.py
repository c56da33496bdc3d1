#!/usr/bin/env python3
"""Writes the models of bench_onnx into a folder (argument 1):
- big.onnx: an MLP of six 2048x2048 f32 Gemm layers, 100.7 MB of weights: the import
  benchmark's model;
- cnn.onnx: 3 x (Conv 3x3 + Relu + MaxPool 2) then Gemm 4096->128 + Relu, Gemm 128->10,
  for a batch of 8 64x64 RGB images; and its weights as cnn_<name>.pb tensor files, which
  the OpenBLAS reference of the same network reads."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(folder, name, nodes, inputs, outputs, weights):
    graph = helper.make_graph(nodes, name, inputs, outputs,
                              [numpy_helper.from_array(a, n) for n, a in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, os.path.join(folder, name + ".onnx"))


def big(folder, rng):
    width, layers = 2048, 6
    weights, nodes, x = {}, [], "x"
    for i in range(layers):
        weights[f"w{i}"] = rng.standard_normal((width, width), dtype=np.float32) / 45
        nodes.append(helper.make_node("Gemm", [x, f"w{i}"], [f"h{i}"], name=f"fc{i}"))
        x = f"h{i}"
    save(folder, "big", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
         [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, width])], weights)


def cnn(folder, rng):
    weights, nodes, x, channels = {}, [], "x", 3
    for i, out in enumerate((16, 32, 64)):
        weights[f"conv{i}_w"] = (rng.standard_normal((out, channels, 3, 3)) /
                                 np.sqrt(9 * channels)).astype(np.float32)
        weights[f"conv{i}_b"] = rng.standard_normal(out).astype(np.float32) / 10
        nodes += [
            helper.make_node("Conv", [x, f"conv{i}_w", f"conv{i}_b"], [f"c{i}"],
                             kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", [f"c{i}"], [f"r{i}"]),
            helper.make_node("MaxPool", [f"r{i}"], [f"p{i}"], kernel_shape=[2, 2], strides=[2, 2]),
        ]
        x, channels = f"p{i}", out
    weights["fc0_w"] = (rng.standard_normal((4096, 128)) / 64).astype(np.float32)
    weights["fc0_b"] = rng.standard_normal(128).astype(np.float32) / 10
    weights["fc1_w"] = (rng.standard_normal((128, 10)) / 11).astype(np.float32)
    weights["fc1_b"] = rng.standard_normal(10).astype(np.float32) / 10
    nodes += [
        helper.make_node("Flatten", [x], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "fc0_w", "fc0_b"], ["g0"]),
        helper.make_node("Relu", ["g0"], ["g0r"]),
        helper.make_node("Gemm", ["g0r", "fc1_w", "fc1_b"], ["y"]),
    ]
    save(folder, "cnn", nodes,
         [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 3, 64, 64])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 10])], weights)
    for name, a in weights.items():
        with open(os.path.join(folder, f"cnn_{name}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, name).SerializeToString())


def main():
    os.makedirs(sys.argv[1], exist_ok=True)
    rng = np.random.default_rng(7)
    big(sys.argv[1], rng)
    cnn(sys.argv[1], rng)


if __name__ == "__main__":
    main()
