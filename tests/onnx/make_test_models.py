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


def old_opset(folder, rng):
    """An opset 6 Add with the legacy broadcast and axis attributes (b's dimensions lined up
    with x's from dimension 0), which ONNX's version converter turns into an Unsqueeze of b
    and an opset 7 Add. (libonnx 1.12's converter refuses some valid legacy broadcasts, b =
    [3] at axis 1 of x = [2, 3, 4] among them: an assertion of its adapter fails, which the
    import reports as UNSUPPORTED.)"""
    x = rng.uniform(-1, 1, (2, 3, 4)).astype(np.float32)
    b = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    y = x.astype(np.float64) + b.astype(np.float64)[:, :, None]
    node_test(folder, "add_opset_6_legacy_broadcast",
              [helper.make_node("Add", ["x", "b"], ["y"], broadcast=1, axis=0)],
              [("x", x), ("b", b)], [("y", y.astype(np.float32))], opset=6)


def known_mask(folder, rng):
    """A mask built from constants as torchvision's Swin builds its shifted-window attention
    mask: zeros, rows picked by slices of a Range (one of them empty), updates expanded
    from a scalar, ScatterND, Transpose; all known at import, then added to x. And Dropout
    in training mode with ratio 0, as Swin calls it, with its mask output named: the
    identity, the mask too big to be known (more than 65,536 elements)."""
    const = lambda name, v: helper.make_node(  # noqa: E731
        "Constant", [], [name], value=numpy_helper.from_array(np.array(v), name))
    nodes = [const("shape", np.array([6, 6], np.int64)),
             helper.make_node("ConstantOfShape", ["shape"], ["zeros"],
                              value=numpy_helper.from_array(np.zeros(1, np.float32))),
             const("start", np.int64(0)), const("limit", np.int64(6)), const("delta", np.int64(1)),
             helper.make_node("Range", ["start", "limit", "delta"], ["rows"]),
             const("s0", np.array([0], np.int64)), const("e0", np.array([-6], np.int64)),
             helper.make_node("Slice", ["rows", "s0", "e0"], ["none"]),
             const("s1", np.array([4], np.int64)), const("e1", np.array([6], np.int64)),
             helper.make_node("Slice", ["rows", "s1", "e1"], ["last_two"]),
             helper.make_node("Concat", ["none", "last_two"], ["picked"], axis=0),
             const("axis1", np.array([1], np.int64)),
             helper.make_node("Unsqueeze", ["picked", "axis1"], ["indices"]),
             const("seven", np.full((1, 1), 7, np.float32)),
             const("update_shape", np.array([2, 6], np.int64)),
             helper.make_node("Expand", ["seven", "update_shape"], ["updates"]),
             helper.make_node("ScatterND", ["zeros", "indices", "updates"], ["mask"]),
             helper.make_node("Transpose", ["mask"], ["mask_t"], perm=[1, 0]),
             helper.make_node("Add", ["x", "mask_t"], ["y"])]
    x = rng.uniform(-1, 1, (6, 6)).astype(np.float32)
    mask_t = np.zeros((6, 6))
    mask_t[:, 4:] = 7
    node_test(folder, "known_mask_as_swin_builds_it", nodes, [("x", x)],
              [("y", (x.astype(np.float64) + mask_t).astype(np.float32))])
    big = rng.uniform(-1, 1, (2, 33000)).astype(np.float32)
    node_test(folder, "dropout_training_ratio_0",
              [const("ratio", np.float32(0)), const("training", np.bool_(True)),
               helper.make_node("Dropout", ["x", "ratio", "training"], ["y", "unread_mask"])],
              [("x", big)], [("y", big)])


def trilu_tests(folder, rng):
    """Trilu (opset 14), which torch.triu and torch.tril export: the upper triangle from
    diagonal 1 and the lower from diagonal -1 of a graph input (a where with a known
    mask), and a decoder's causal mask, -inf above the diagonal, built from constants and
    added to x (computed at import)."""
    x = rng.uniform(-1, 1, (2, 3, 4)).astype(np.float32)
    rows, columns = np.indices((3, 4))
    for name, upper, k in (("trilu_upper_k1", 1, 1), ("trilu_lower_k_minus_1", 0, -1)):
        kept = (columns - rows >= k) if upper else (columns - rows <= k)
        node_test(folder, name,
                  [helper.make_node("Constant", [], ["k"],
                                    value=numpy_helper.from_array(np.array(k, np.int64), "k")),
                   helper.make_node("Trilu", ["x", "k"], ["y"], upper=upper)],
                  [("x", x)], [("y", np.where(kept, x, 0).astype(np.float32))])
    s = rng.uniform(-1, 1, (4, 4)).astype(np.float32)
    mask = np.triu(np.full((4, 4), -np.inf, np.float32), 1)
    node_test(folder, "trilu_causal_mask_known_at_import",
              [helper.make_node("Constant", [], ["shape"],
                                value=numpy_helper.from_array(np.array([4, 4], np.int64), "shape")),
               helper.make_node("ConstantOfShape", ["shape"], ["full"],
                                value=numpy_helper.from_array(np.array([-np.inf], np.float32))),
               helper.make_node("Constant", [], ["one"],
                                value=numpy_helper.from_array(np.array(1, np.int64), "one")),
               helper.make_node("Trilu", ["full", "one"], ["mask"]),
               helper.make_node("Add", ["s", "mask"], ["y"])],
              [("s", s)], [("y", s + mask)])


def hard_activations(folder, rng):
    """HardSigmoid with attributes of its own and HardSwish at opset 17, as MobileNetV3's
    export holds them (ONNX's own HardSigmoid tests are opset 6)."""
    x = rng.uniform(-6, 6, (3, 16)).astype(np.float32)
    alpha, beta = np.float32(0.25), np.float32(0.375)
    sigmoid = np.clip(np.float64(alpha) * x + np.float64(beta), 0, 1)
    node_test(folder, "hard_sigmoid_attributes",
              [helper.make_node("HardSigmoid", ["x"], ["y"], alpha=float(alpha), beta=float(beta))],
              [("x", x)], [("y", sigmoid.astype(np.float32))])
    swish = x * np.clip(x.astype(np.float64) / 6 + 0.5, 0, 1)
    node_test(folder, "hard_swish_opset_17", [helper.make_node("HardSwish", ["x"], ["y"])],
              [("x", x)], [("y", swish.astype(np.float32))])


def rotary_and_log_sum_exp(folder, rng):
    """Sin and Cos of the angles a rotary embedding takes (positions up to 4095 times its
    frequencies, up to 4095 radians), which ONNX's own tests keep within [-10, 10]; and
    ReduceLogSumExp over rows of -inf only, holding +inf, and finite, which must give -inf,
    +inf and log(sum(exp)) (ONNX's tests have no infinities)."""
    positions = np.arange(0, 4096, 37, dtype=np.float64)
    frequencies = 1.0 / 10000.0 ** (np.arange(0, 8, dtype=np.float64) / 8)
    angles = (positions[:, None] * frequencies[None, :]).astype(np.float32)
    node_test(folder, "sin_cos_rotary_angles",
              [helper.make_node("Sin", ["x"], ["s"]), helper.make_node("Cos", ["x"], ["c"])],
              [("x", angles)], [("s", np.sin(angles.astype(np.float64)).astype(np.float32)),
                                ("c", np.cos(angles.astype(np.float64)).astype(np.float32))])
    x = rng.uniform(-30, 30, (4, 5)).astype(np.float32)
    x[0, :] = -np.inf
    x[1, 2] = np.inf
    x[2, 3] = -np.inf
    with np.errstate(divide="ignore", over="ignore"):
        y = np.log(np.sum(np.exp(x.astype(np.float64)), axis=1))
    node_test(folder, "reduce_log_sum_exp_infinities",
              [helper.make_node("ReduceLogSumExp", ["x"], ["y"], axes=[1], keepdims=0)],
              [("x", x)], [("y", y.astype(np.float32))])


def const_node(name, value):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(value), name))


def index_tests(folder, rng):
    """GatherElements and GatherND with indices known at import (offsets computed by the
    importer) and as inputs (offsets computed at run time, negative ones from the end, a
    lone index tuple), OneHot with values known, and ScatterElements and ScatterND of
    known indices into data that is an input (ONNX's tests give every index as an input,
    which the importer takes only as constants)."""
    data = rng.uniform(-1, 1, (3, 4, 5)).astype(np.float32)
    idx = rng.integers(-4, 4, (3, 2, 5)).astype(np.int64)
    y = np.take_along_axis(data, np.where(idx < 0, idx + 4, idx), axis=1)
    node_test(folder, "gather_elements_axis_1_known_indices",
              [const_node("i", idx), helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1)],
              [("x", data)], [("y", y)])
    node_test(folder, "gather_elements_negative_axis_indices_input",
              [helper.make_node("GatherElements", ["x", "i"], ["y"], axis=-2)],
              [("x", data), ("i", idx)], [("y", y)])
    tuples = np.array([[[0, -1], [2, 1]], [[-3, 3], [1, 0]]], np.int64)  # [2, 2, 2] into [3, 4]
    y = np.stack([np.stack([data[t[0], t[1]] for t in row]) for row in tuples])
    node_test(folder, "gather_nd_negative_indices_input",
              [helper.make_node("GatherND", ["x", "i"], ["y"])],
              [("x", data), ("i", tuples)], [("y", y)])
    lone = np.array([2, -1, 3], np.int64)
    node_test(folder, "gather_nd_lone_tuple_known",
              [const_node("i", lone), helper.make_node("GatherND", ["x", "i"], ["y"])],
              [("x", data)], [("y", np.array(data[2, 3, 3], np.float32).reshape(()))])
    batch_idx = np.array([[[1], [-1]], [[0], [2]], [[3], [3]]], np.int64)  # [3, 2, 1], batch 3
    y = np.stack([data[b][np.where(batch_idx[b, :, 0] < 0, batch_idx[b, :, 0] + 4,
                                   batch_idx[b, :, 0])] for b in range(3)])
    node_test(folder, "gather_nd_batch_dims_1_input",
              [helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=1)],
              [("x", data), ("i", batch_idx)], [("y", y)])
    labels = np.array([[0, 3, -1], [9, 2, -10]], np.int64)
    depth, off, on = 10, -2.0, 5.0
    normalized = np.where(labels < 0, labels + depth, labels)
    hot = np.where(np.arange(depth)[:, None, None] == normalized[None], on, off)  # axis 0
    node_test(folder, "one_hot_axis_0_known_values",
              [const_node("depth", np.int64(depth)), const_node("values", np.array([off, on], np.float32)),
               helper.make_node("OneHot", ["i", "depth", "values"], ["y"], axis=0)],
              [("i", labels)], [("y", hot.astype(np.float32))])
    upd = rng.uniform(-1, 1, (2, 5)).astype(np.float32)
    rows = np.array([[1, 0, 3, 3, -1], [2, 2, 0, 1, 1]], np.int64)
    x2 = rng.uniform(-1, 1, (4, 5)).astype(np.float32)
    y = x2.astype(np.float64).copy()
    for i in range(2):
        for j in range(5):
            y[rows[i, j] % 4, j] = upd[i, j]
    node_test(folder, "scatter_elements_known_indices_data_input",
              [const_node("i", rows), helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=0)],
              [("x", x2), ("u", upd)], [("y", y.astype(np.float32))])
    nd_idx = np.array([[1, -1], [0, 2]], np.int64)
    nd_upd = rng.uniform(-1, 1, (2, 5)).astype(np.float32)
    y = data.astype(np.float64).copy()
    y[1, 3] += nd_upd[0]
    y[0, 2] += nd_upd[1]
    node_test(folder, "scatter_nd_add_known_indices_data_input",
              [const_node("i", nd_idx),
               helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction="add")],
              [("x", data), ("u", nd_upd)], [("y", y.astype(np.float32))], opset=16)


def top_k_tests(folder, rng):
    """TopK of logits with ties, the five largest of each row, and the three smallest
    along the first axis (run on the CPU device where a device lacks top_k), values and
    int64 indices as a stable sort gives them."""
    x = np.round(rng.uniform(-4, 4, (3, 40))).astype(np.float32)
    order = np.argsort(-x.astype(np.float64), axis=1, kind="stable")[:, :5]
    node_test(folder, "top_k_largest_with_ties",
              [const_node("k", np.array([5], np.int64)),
               helper.make_node("TopK", ["x", "k"], ["values", "indices"])],
              [("x", x)], [("values", np.take_along_axis(x, order, 1)), ("indices", order)])
    order = np.argsort(x.astype(np.float64), axis=0, kind="stable")[:2]
    node_test(folder, "top_k_smallest_axis_0",
              [const_node("k", np.array([2], np.int64)),
               helper.make_node("TopK", ["x", "k"], ["values", "indices"], axis=0, largest=0)],
              [("x", x)], [("values", np.take_along_axis(x, order, 0)), ("indices", order)])

def einsum_tests(folder, rng):
    """Einsum as attention writes it, a broadcast ellipsis of two ranks with an implicit
    output, a diagonal, a sum of everything to a scalar, and three operands."""
    q = rng.uniform(-1, 1, (2, 3, 4, 8)).astype(np.float32)
    k = rng.uniform(-1, 1, (2, 3, 5, 8)).astype(np.float32)
    node_test(folder, "einsum_attention_scores",
              [helper.make_node("Einsum", ["q", "k"], ["y"], equation="bhqd,bhkd->bhqk")],
              [("q", q), ("k", k)],
              [("y", np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k).astype(np.float32))])
    a = rng.uniform(-1, 1, (2, 1, 3, 4)).astype(np.float32)
    b = rng.uniform(-1, 1, (5, 4, 6)).astype(np.float32)
    node_test(folder, "einsum_broadcast_ellipsis_implicit",
              [helper.make_node("Einsum", ["a", "b"], ["y"], equation="...ij,...jk")],
              [("a", a), ("b", b)],
              [("y", np.einsum("...ij,...jk", a.astype(np.float64), b).astype(np.float32))])
    m = rng.uniform(-1, 1, (3, 4, 4)).astype(np.float32)
    node_test(folder, "einsum_diagonal_and_transpose",
              [helper.make_node("Einsum", ["m"], ["y"], equation="bii->ib")],
              [("m", m)], [("y", np.einsum("bii->ib", m.astype(np.float64)).astype(np.float32))])
    node_test(folder, "einsum_sum_to_scalar",
              [helper.make_node("Einsum", ["m"], ["y"], equation="abc->")],
              [("m", m)], [("y", np.array(np.einsum("abc->", m.astype(np.float64)), np.float32))])
    x = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    w = rng.uniform(-1, 1, (4, 5)).astype(np.float32)
    v = rng.uniform(-1, 1, (5, 2)).astype(np.float32)
    node_test(folder, "einsum_three_operands",
              [helper.make_node("Einsum", ["x", "w", "v"], ["y"], equation="ij,jk,kl->li")],
              [("x", x), ("w", w), ("v", v)],
              [("y", np.einsum("ij,jk,kl->li", x.astype(np.float64), w, v).astype(np.float32))])


def cumsum_tests(folder, rng):
    """CumSum along an axis of 100 (seven shifted adds), reversed and exclusive, of floats
    and of int64 position ids, as Hugging Face models compute them from an attention mask
    (exact)."""
    x = rng.uniform(-1, 1, (3, 100)).astype(np.float32)
    x64 = x.astype(np.float64)
    y = np.flip(np.cumsum(np.flip(x64, 1), 1), 1) - x64  # reverse, exclusive
    node_test(folder, "cumsum_reverse_exclusive_100",
              [const_node("axis", np.int64(-1)),
               helper.make_node("CumSum", ["x", "axis"], ["y"], reverse=1, exclusive=1)],
              [("x", x)], [("y", y.astype(np.float32))])
    mask = (rng.uniform(0, 1, (2, 100)) < 0.8).astype(np.int64)
    node_test(folder, "cumsum_position_ids_int64",
              [const_node("axis", np.int32(1)), helper.make_node("CumSum", ["m", "axis"], ["c"]),
               helper.make_node("Mul", ["c", "m"], ["y"])],
              [("m", mask)], [("y", np.cumsum(mask, 1) * mask)])


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def recurrence_reference(kind, x, w, r, b, h0, c0, p, lengths, direction, linear_before_reset):
    """Y, Y_h (and Y_c) of ONNX's LSTM (gates i, o, f, c), GRU (z, r, h) and RNN with the
    default activations, in float64; x [seq, batch, input]."""
    seq, batch, _ = x.shape
    hidden = r.shape[-1]
    dirs = 2 if direction == "bidirectional" else 1
    y = np.zeros((seq, dirs, batch, hidden))
    hs, cs = [], []
    for d in range(dirs):
        reverse = direction == "reverse" or d == 1
        wd, rd = w[d].astype(np.float64), r[d].astype(np.float64)
        wb, rb = np.split(b[d].astype(np.float64), 2)
        h = h0[d].astype(np.float64).copy()
        c = c0[d].astype(np.float64).copy() if c0 is not None else None
        for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
            live = (t < lengths)[:, None]
            xt = x[t].astype(np.float64)
            if kind == "LSTM":
                g = xt @ wd.T + h @ rd.T + wb + rb
                gi, go, gf, gc = np.split(g, 4, axis=1)
                pi, po, pf = np.split(p[d].astype(np.float64), 3)
                i = sigmoid(gi + pi * c)
                f = sigmoid(gf + pf * c)
                c_new = f * c + i * np.tanh(gc)
                o = sigmoid(go + po * c_new)
                h_new = o * np.tanh(c_new)
                c = np.where(live, c_new, c)
            elif kind == "GRU":
                wz, wr, wh = np.split(wd, 3)
                rz, rr, rh = np.split(rd, 3)
                wbz, wbr, wbh = np.split(wb, 3)
                rbz, rbr, rbh = np.split(rb, 3)
                z = sigmoid(xt @ wz.T + h @ rz.T + wbz + rbz)
                rt = sigmoid(xt @ wr.T + h @ rr.T + wbr + rbr)
                if linear_before_reset:
                    hh = np.tanh(xt @ wh.T + rt * (h @ rh.T + rbh) + wbh)
                else:
                    hh = np.tanh(xt @ wh.T + (rt * h) @ rh.T + rbh + wbh)
                h_new = (1 - z) * hh + z * h
            else:
                h_new = np.tanh(xt @ wd.T + h @ rd.T + wb + rb)
            y[t, d] = np.where(live, h_new, 0)
            h = np.where(live, h_new, h)
        hs.append(h)
        cs.append(c)
    return y, np.stack(hs), (np.stack(cs) if kind == "LSTM" else None)


def recurrence_tests(folder, rng):
    """A bidirectional LSTM with peepholes, initial states and sequence lengths, a GRU
    with linear_before_reset and a reverse RNN without initial state, against a float64
    reference of ONNX's equations (ONNX's own tests are forward, of full length)."""
    seq, batch, inp, hidden = 5, 3, 4, 6
    x = rng.uniform(-1, 1, (seq, batch, inp)).astype(np.float32)
    lengths = np.array([5, 2, 4], np.int32)
    for kind, gates, dirs, direction in (("LSTM", 4, 2, "bidirectional"),
                                         ("GRU", 3, 1, "forward"), ("RNN", 1, 1, "reverse")):
        w = rng.uniform(-0.5, 0.5, (dirs, gates * hidden, inp)).astype(np.float32)
        r = rng.uniform(-0.5, 0.5, (dirs, gates * hidden, hidden)).astype(np.float32)
        b = rng.uniform(-0.5, 0.5, (dirs, 2 * gates * hidden)).astype(np.float32)
        h0 = rng.uniform(-1, 1, (dirs, batch, hidden)).astype(np.float32)
        c0 = rng.uniform(-1, 1, (dirs, batch, hidden)).astype(np.float32)
        p = rng.uniform(-0.5, 0.5, (dirs, 3 * hidden)).astype(np.float32)
        inputs = [("x", x), ("w", w), ("r", r), ("b", b)]
        if kind == "LSTM":
            names = ["x", "w", "r", "b", "lengths", "h0", "c0", "p"]
            inputs += [("lengths", lengths), ("h0", h0), ("c0", c0), ("p", p)]
            outputs = ["y", "y_h", "y_c"]
            attrs = {}
            full = lengths
        elif kind == "GRU":
            names = ["x", "w", "r", "b", "", "h0"]
            inputs += [("h0", h0)]
            outputs = ["y", "y_h"]
            attrs = {"linear_before_reset": 1}
            full = np.full(batch, seq, np.int32)
        else:
            names = ["x", "w", "r", "b"]
            outputs = ["y", "y_h"]
            attrs = {}
            full = np.full(batch, seq, np.int32)
            h0 = np.zeros_like(h0)
        y, y_h, y_c = recurrence_reference(kind, x, w, r, b, h0, c0, p, full, direction,
                                           attrs.get("linear_before_reset", 0))
        expected = [("y", y.astype(np.float32)), ("y_h", y_h.astype(np.float32))]
        if kind == "LSTM":
            expected.append(("y_c", y_c.astype(np.float32)))
        node_test(folder, f"{kind.lower()}_{direction}",
                  [helper.make_node(kind, names, outputs, hidden_size=hidden, direction=direction,
                                    **attrs)],
                  inputs, expected)


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


def conv_reference(x, w, b, strides, begin, end, dilations, group):
    """ONNX's Conv in float64 over any number of spatial dimensions."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    k = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + list(zip(begin, end)))
    kernel = w.shape[2:]
    out = [(xp.shape[2 + d] - dilations[d] * (kernel[d] - 1) - 1) // strides[d] + 1
           for d in range(k)]
    y = np.zeros((x.shape[0], w.shape[0], *out))
    cg, og = x.shape[1] // group, w.shape[0] // group
    for g in range(group):
        for tap in np.ndindex(*kernel):
            window = tuple(slice(tap[d] * dilations[d],
                                 tap[d] * dilations[d] + (out[d] - 1) * strides[d] + 1, strides[d])
                           for d in range(k))
            patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + window]
            y[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...", patch,
                                                   w[(slice(g * og, (g + 1) * og), slice(None)) + tap])
    if b is not None:
        y += b.reshape((1, -1) + (1,) * k)
    return y


def conv_transpose_reference(x, w, b, strides, begin, end, output_padding, dilations, group):
    """ONNX's ConvTranspose in float64: each input element adds its kernel into the output."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    k = x.ndim - 2
    kernel, size = w.shape[2:], x.shape[2:]
    full = [(size[d] - 1) * strides[d] + dilations[d] * (kernel[d] - 1) + 1 + output_padding[d]
            for d in range(k)]
    cg, og = x.shape[1] // group, w.shape[1]
    y = np.zeros((x.shape[0], og * group, *full))
    for g in range(group):
        for tap in np.ndindex(*kernel):
            window = tuple(slice(tap[d] * dilations[d],
                                 tap[d] * dilations[d] + (size[d] - 1) * strides[d] + 1, strides[d])
                           for d in range(k))
            y[(slice(None), slice(g * og, (g + 1) * og)) + window] += np.einsum(
                "nc...,co->no...", x[:, g * cg:(g + 1) * cg],
                w[(slice(g * cg, (g + 1) * cg), slice(None)) + tap])
    y = y[(slice(None), slice(None)) + tuple(slice(begin[d], full[d] - end[d]) for d in range(k))]
    if b is not None:
        y += b.reshape((1, -1) + (1,) * k)
    return y


def conv3d_tests(folder, rng):
    """3-D Conv and ConvTranspose (lowered onto the 2-D ops). The values are multiples of
    1/2 (x) and 1/4 (w, b) below 2, so every product and sum is exact in f32 and the
    expected outputs are exact whatever order a device sums in."""
    def values(shape, step):
        return (rng.integers(-4, 5, shape) * step).astype(np.float32)

    x, w, b = values((2, 4, 5, 6, 7), 0.5), values((6, 2, 3, 2, 3), 0.25), values((6,), 0.25)
    attrs = dict(group=2, strides=[2, 1, 2], pads=[1, 0, 1, 0, 1, 1], dilations=[1, 2, 1])
    y = conv_reference(x, w, b, [2, 1, 2], [1, 0, 1], [0, 1, 1], [1, 2, 1], 2)
    node_test(folder, "conv3d_groups_strides_pads_dilations",
              [helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)],
              [("x", x)], [("y", y.astype(np.float32))], [("w", w), ("b", b)])

    # SAME_LOWER over D 4, H 5, W 5 with strides 1, 2, 1 and kernel 2, 3, 3: totals 1, 2, 2.
    x, w = values((1, 3, 4, 5, 5), 0.5), values((2, 3, 2, 3, 3), 0.25)
    y = conv_reference(x, w, None, [1, 2, 1], [1, 1, 1], [0, 1, 1], [1, 1, 1], 1)
    node_test(folder, "conv3d_same_lower_weight_input",
              [helper.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_LOWER", strides=[1, 2, 1])],
              [("x", x), ("w", w)], [("y", y.astype(np.float32))])

    x, w, b = values((1, 4, 3, 4, 3), 0.5), values((4, 3, 3, 2, 3), 0.25), values((6,), 0.25)
    attrs = dict(group=2, strides=[2, 2, 1], pads=[1, 0, 1, 1, 0, 0], output_padding=[1, 1, 0],
                 dilations=[1, 1, 2])
    y = conv_transpose_reference(x, w, b, [2, 2, 1], [1, 0, 1], [1, 0, 0], [1, 1, 0], [1, 1, 2], 2)
    node_test(folder, "convtranspose3d_groups_strides_pads_dilations",
              [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)],
              [("x", x)], [("y", y.astype(np.float32))], [("w", w), ("b", b)])

    # output_shape: D and H one longer than the windows reach (output padding 1), W 2
    # shorter (one cut off at each end).
    x, w = values((2, 2, 2, 3, 3), 0.5), values((2, 2, 2, 2, 2), 0.25)
    y = conv_transpose_reference(x, w, None, [2, 2, 2], [0, 0, 1], [0, 0, 1], [1, 1, 0],
                                 [1, 1, 1], 1)
    node_test(folder, "convtranspose3d_output_shape",
              [helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2, 2],
                                output_shape=[5, 7, 4])],
              [("x", x), ("w", w)], [("y", y.astype(np.float32))])


def refused(folder):
    f = TensorProto.FLOAT
    vi = helper.make_tensor_value_info
    single_node(folder, "unsupported_op", helper.make_node("Det", ["x"], ["y"], name="det"),
                [vi("x", f, [2, 3, 3])], [vi("y", f, [2])])
    single_node(folder, "old_opset", helper.make_node("Relu", ["x"], ["y"], name="r"),
                [vi("x", f, [2, 3])], [vi("y", f, [2, 3])], opset=6)
    # A transformer's export with dynamic_axes: Shape of an input whose dimensions are
    # named ("batch") or unnamed, then Reshape to [batch * seq, 8]: known at import only
    # once the caller gives the sizes (phx_onnx_options.dim_names or input_shapes).
    dyn_x = helper.make_tensor_value_info("x", f, ["batch", None, 8])
    dyn_in = np.arange(2 * 3 * 8, dtype=np.float32).reshape(2, 3, 8)
    dyn_nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "zero"], ["b"], name="batch"),
        helper.make_node("Gather", ["s", "one"], ["t"], name="seq"),
        helper.make_node("Mul", ["b", "t"], ["n"], name="rows"),
        helper.make_node("Unsqueeze", ["n", "axes"], ["rows1"], name="rows1"),
        helper.make_node("Concat", ["rows1", "eight"], ["target"], name="target", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"], name="flatten"),
    ]
    dyn_consts = [numpy_helper.from_array(np.array(0, dtype=np.int64), "zero"),
                  numpy_helper.from_array(np.array(1, dtype=np.int64), "one")]
    dyn_consts += [numpy_helper.from_array(np.array([v], dtype=np.int64), n)
                   for n, v in (("axes", 0), ("eight", 8))]
    save(folder, "dynamic_axes",
         helper.make_model(helper.make_graph(dyn_nodes, "dynamic_axes", [dyn_x],
                                             [helper.make_tensor_value_info("y", f, [None, 8])],
                                             dyn_consts),
                           opset_imports=[helper.make_opsetid("", 17)]),
         [numpy_helper.from_array(dyn_in, "x")], [numpy_helper.from_array(dyn_in.reshape(6, 8), "y")])
    single_node(folder, "future_opset", helper.make_node("Relu", ["x"], ["y"], name="r"),
                [vi("x", f, [2, 3])], [vi("y", f, [2, 3])], opset=18, check=False)
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
    # A 3-D convolution runs as 2-D ones over its depths, which must be known; a
    # transposed one's padding must leave an output.
    w = numpy_helper.from_array(np.ones((1, 1, 2, 2, 2), np.float32), "w")
    single_node(folder, "conv3d_dynamic_depth",
                helper.make_node("Conv", ["x", "w"], ["y"], name="c3"),
                [vi("x", f, [1, 1, "depth", 4, 4])], [vi("y", f, [1, 1, "out", 3, 3])], [w])
    single_node(folder, "convtranspose3d_no_output",
                helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="t3",
                                 pads=[2, 0, 0, 2, 0, 0]),
                [vi("x", f, [1, 1, 1, 2, 2])], [vi("y", f, [1, 1, 1, 3, 3])], [w])
    # Nearest before opset 11 takes the index below the coordinate: upsampling only.
    half = numpy_helper.from_array(np.array([1, 1, 0.5, 0.5], dtype=np.float32), "scales")
    single_node(folder, "upsample_nearest_down",
                helper.make_node("Upsample", ["x", "scales"], ["y"], name="up", mode="nearest"),
                [vi("x", f, [1, 1, 4, 4])], [vi("y", f, [1, 1, 2, 2])], [half], opset=9)
    # Blocks move between channels and positions of a static C, H and W.
    single_node(folder, "depth_to_space_dynamic_height",
                helper.make_node("DepthToSpace", ["x"], ["y"], name="d2s", blocksize=2),
                [vi("x", f, [1, 8, "h", 2])], [vi("y", f, [1, 2, "h2", 4])])
    single_node(folder, "depth_to_space_channels",
                helper.make_node("DepthToSpace", ["x"], ["y"], name="d2s", blocksize=3),
                [vi("x", f, [1, 8, 2, 2])], [vi("y", f, [1, 1, 6, 6])])
    i64 = TensorProto.INT64
    single_node(folder, "scatter_nd_runtime_indices",
                helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="sc"),
                [vi("x", f, [4, 3]), vi("i", i64, [2, 1]), vi("u", f, [2, 3])], [vi("y", f, [4, 3])])
    single_node(folder, "einsum_integers",
                helper.make_node("Einsum", ["a", "b"], ["y"], name="es", equation="ij,jk->ik"),
                [vi("a", TensorProto.INT32, [2, 3]), vi("b", TensorProto.INT32, [3, 4])],
                [vi("y", TensorProto.INT32, [2, 4])])
    single_node(folder, "einsum_operand_count",
                helper.make_node("Einsum", ["a", "b"], ["y"], name="es", equation="ij->ji"),
                [vi("a", f, [2, 3]), vi("b", f, [3, 4])], [vi("y", f, [3, 2])])
    single_node(folder, "lstm_dynamic_sequence",
                helper.make_node("LSTM", ["x", "w", "r"], ["y"], name="lstm", hidden_size=2),
                [vi("x", f, ["seq", 1, 3]), vi("w", f, [1, 8, 3]), vi("r", f, [1, 8, 2])],
                [vi("y", f, ["seq", 1, 1, 2])])
    single_node(folder, "gru_weights_shape",
                helper.make_node("GRU", ["x", "w", "r"], ["y"], name="gru", hidden_size=2),
                [vi("x", f, [3, 1, 3]), vi("w", f, [1, 8, 3]), vi("r", f, [1, 6, 2])],
                [vi("y", f, [3, 1, 1, 2])])
    single_node(folder, "gather_elements_rank",
                helper.make_node("GatherElements", ["x", "i"], ["y"], name="ge"),
                [vi("x", f, [2, 3]), vi("i", i64, [2])], [vi("y", f, [2])], check=False)


def max_pool_reference(x, kernel, strides, dilations, pads, ceil_mode, storage_order):
    """MaxPool's Y and Indices as ONNX defines them: each window's largest element of x
    (the padding never taken), the first in scan order on ties, its flat index in x
    (column-major within each plane with storage_order 1)."""
    k = len(kernel)
    size = x.shape[2:]
    out = []
    for d in range(k):
        span = size[d] + pads[d] + pads[d + k] - ((kernel[d] - 1) * dilations[d] + 1)
        o = (-(-span // strides[d]) if ceil_mode else span // strides[d]) + 1
        if ceil_mode and (o - 1) * strides[d] >= size[d] + pads[d]:
            o -= 1  # a last window that would start in the end padding
        out.append(o)
    plane = int(np.prod(size))
    y = np.zeros(x.shape[:2] + tuple(out), dtype=np.float64)
    indices = np.zeros(y.shape, dtype=np.int64)
    for n, c in np.ndindex(*x.shape[:2]):
        for o in np.ndindex(*out):
            best = None
            for t in np.ndindex(*kernel):
                at = [o[d] * strides[d] - pads[d] + t[d] * dilations[d] for d in range(k)]
                if any(a < 0 or a >= size[d] for d, a in enumerate(at)):
                    continue
                v = float(x[(n, c) + tuple(at)])
                if best is None or v > best:
                    order = reversed(range(k)) if storage_order else range(k)
                    index = 0
                    for d in order:
                        index = index * size[d] + at[d]
                    best = v
                    indices[(n, c) + o] = (n * x.shape[1] + c) * plane + index
            y[(n, c) + o] = best
    return y.astype(x.dtype), indices


def pool_indices_tests(folder, rng):
    """MaxPool's Indices output over 1 to 3 spatial dimensions. Few distinct values, so
    that windows hold ties; the integer inputs hold their dtype's lowest value next to
    padding."""
    cases = [
        ("maxpool_indices_1d_dilation_ceil", rng.integers(0, 4, (2, 3, 11)).astype(np.float32),
         dict(kernel_shape=[3], strides=[2], dilations=[2], pads=[1, 2], ceil_mode=1)),
        ("maxpool_indices_2d_int8_storage_order",
         rng.choice(np.array([-128, -127, 0, 5], dtype=np.int8), (2, 2, 5, 6)),
         dict(kernel_shape=[3, 2], strides=[2, 1], pads=[1, 1, 1, 0], storage_order=1)),
        ("maxpool_indices_2d_uint8_ceil",
         rng.choice(np.array([0, 1, 255], dtype=np.uint8), (1, 3, 6, 7)),
         dict(kernel_shape=[2, 3], strides=[2, 2], pads=[1, 0, 0, 1], ceil_mode=1)),
        ("maxpool_indices_3d", rng.integers(-2, 2, (2, 2, 4, 5, 6)).astype(np.float32),
         dict(kernel_shape=[2, 3, 2], strides=[2, 1, 2], dilations=[1, 1, 2],
              pads=[1, 0, 1, 0, 1, 1])),
        ("maxpool_indices_3d_storage_order_ceil",
         rng.uniform(-1, 1, (1, 2, 5, 4, 3)).astype(np.float32),
         dict(kernel_shape=[2, 2, 2], strides=[2, 2, 2], ceil_mode=1, storage_order=1)),
    ]
    for name, x, attrs in cases:
        k = x.ndim - 2
        y, indices = max_pool_reference(
            x, attrs["kernel_shape"], attrs.get("strides", [1] * k),
            attrs.get("dilations", [1] * k), attrs.get("pads", [0] * 2 * k),
            attrs.get("ceil_mode", 0), attrs.get("storage_order", 0))
        node = helper.make_node("MaxPool", ["x"], ["y", "indices"], name="pool", **attrs)
        node_test(folder, name, [node], [("x", x)], [("y", y), ("indices", indices)])


def qlinear_reference(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp):
    """QLinearMatMul: the integer product requantized as ONNX's rule, the multiplier
    a_scale * b_scale / y_scale in float64, rounded half to even and saturated."""
    acc = np.matmul(a.astype(np.int64) - a_zp.astype(np.int64),
                    b.astype(np.int64) - b_zp.astype(np.int64))
    multiplier = a_scale.astype(np.float64) * b_scale.astype(np.float64) / np.float64(y_scale)
    y = np.round(acc * multiplier) + y_zp.astype(np.int64)
    info = np.iinfo(y_zp.dtype)
    return np.clip(y, info.min, info.max).astype(y_zp.dtype)


def batched_qlinear_tests(folder, rng):
    """QLinearMatMul and MatMulInteger with a batched second operand: against an
    unbatched first operand, against a batched one (the batch dimensions broadcast), and
    with a batch of one."""
    u8, i8 = np.uint8, np.int8

    def ints(dtype, shape):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max + 1, shape).astype(dtype)

    def scale(*shape):
        return rng.uniform(0.005, 0.05, shape).astype(np.float32)

    qlinear = helper.make_node(
        "QLinearMatMul",
        ["a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale",
         "y_zero_point"], ["y"], name="qmm")
    # b's scale and zero point per column; b a u8 weight (known at import).
    a = ints(u8, (3, 4))
    quantization = [("a_scale", scale()), ("a_zero_point", np.array(131, u8)),
                    ("b_scale", scale(5)), ("b_zero_point", ints(u8, (5,))),
                    ("y_scale", np.array(0.4, np.float32)), ("y_zero_point", np.array(120, u8))]
    b = ints(u8, (2, 4, 5))
    q = dict(quantization)
    y = qlinear_reference(a, q["a_scale"], q["a_zero_point"], b, q["b_scale"], q["b_zero_point"],
                          q["y_scale"], q["y_zero_point"])
    node_test(folder, "qlinearmatmul_batched_b", [qlinear], [("a", a)], [("y", y)],
              initializers=[quantization[0], quantization[1], ("b", b)] + quantization[2:])
    # i8 throughout, b an input: batches [2, 1] against [3] broadcast to [2, 3].
    a = ints(i8, (2, 1, 3, 4))
    b = ints(i8, (3, 4, 2))
    quantization = [("a_scale", scale()), ("a_zero_point", np.array(-3, i8)),
                    ("b_scale", scale()), ("b_zero_point", np.array(2, i8)),
                    ("y_scale", np.array(0.3, np.float32)), ("y_zero_point", np.array(-5, i8))]
    q = dict(quantization)
    y = qlinear_reference(a, q["a_scale"], q["a_zero_point"], b, q["b_scale"], q["b_zero_point"],
                          q["y_scale"], q["y_zero_point"])
    node_test(folder, "qlinearmatmul_batched_both", [qlinear],
              [("a", a), quantization[0], quantization[1], ("b", b)] + quantization[2:],
              [("y", y)])
    integer = helper.make_node("MatMulInteger", ["a", "b", "a_zero_point", "b_zero_point"],
                               ["y"], name="mmi")
    for name, a, b in (("matmulinteger_batched", ints(u8, (2, 2, 3, 4)), ints(u8, (2, 1, 4, 3))),
                       ("matmulinteger_b_batch_of_one", ints(u8, (2, 3, 4)),
                        ints(u8, (1, 1, 4, 3)))):
        a_zp, b_zp = np.array(100, u8), np.array(140, u8)
        y = np.matmul(a.astype(np.int64) - 100, b.astype(np.int64) - 140).astype(np.int32)
        node_test(folder, name, [integer], [("a", a)], [("y", y)],
                  initializers=[("b", b), ("a_zero_point", a_zp), ("b_zero_point", b_zp)])


def main():
    folder = sys.argv[1]
    rng = np.random.default_rng(2026)
    mlp(folder, rng)
    conv3d_tests(folder, rng)
    refused(folder)
    pool_indices_tests(folder, rng)
    batched_qlinear_tests(folder, rng)
    empty_axes(folder, rng)
    bfloat16(folder, rng)
    range_of_inputs(folder)
    hard_activations(folder, rng)
    rotary_and_log_sum_exp(folder, rng)
    old_opset(folder, rng)
    known_mask(folder, rng)
    trilu_tests(folder, rng)
    index_tests(folder, rng)
    top_k_tests(folder, rng)
    einsum_tests(folder, rng)
    cumsum_tests(folder, rng)
    recurrence_tests(folder, rng)
    with open(os.path.join(folder, "mlp", "model.onnx"), "rb") as f:
        whole = f.read()
    with open(os.path.join(folder, "truncated.onnx"), "wb") as f:
        f.write(whole[: len(whole) // 2])


if __name__ == "__main__":
    main()
