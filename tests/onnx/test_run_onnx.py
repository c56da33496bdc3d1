"""phx-run-onnx (docs/onnx.md, "phx-run-onnx"): its exit statuses, the tolerance of
--expect at the precision the device computes in, --rtol and --atol, --bench's
statistics, and --compare-with's first value out of tolerance. ctest runs it with PHX_RUN_ONNX set to the program."""

import math
import os
import re
import subprocess

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

RUN_ONNX = os.environ.get("PHX_RUN_ONNX")
pytestmark = pytest.mark.skipif(RUN_ONNX is None, reason="PHX_RUN_ONNX is not set")

K = 64  # the matmul's reduction length


def save_model(path, nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "test", inputs, outputs, list(initializers))
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def write_tensor(path, array):
    path.write_bytes(numpy_helper.from_array(array).SerializeToString())


@pytest.fixture
def matmul(tmp_path):
    """y = x @ w, x [4, K] an input, w [K, 16] a weight; input_0.pb and output_0.pb (the
    product in float64, rounded once to f32) in tmp_path/data."""
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, (4, K)).astype(np.float32)
    w = rng.uniform(-1, 1, (K, 16)).astype(np.float32)
    model = save_model(tmp_path / "matmul.onnx", [helper.make_node("MatMul", ["x", "w"], ["y"])],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, K])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])],
                       [numpy_helper.from_array(w, "w")])
    data = tmp_path / "data"
    data.mkdir()
    write_tensor(data / "input_0.pb", x)
    expected = (x.astype(np.float64) @ w.astype(np.float64)).astype(np.float32)
    write_tensor(data / "output_0.pb", expected)
    return model, data, expected


def run(*args, tpu_sim=None):
    env = dict(os.environ)
    env.pop("PHX_TPU_SIM", None)
    if tpu_sim is not None:
        env["PHX_TPU_SIM"] = tpu_sim
    return subprocess.run([RUN_ONNX, *map(str, args)], capture_output=True, text=True,
                          timeout=120, env=env)


def tolerance_printed(stdout):
    match = re.search(r"output 0: \S+ \S+ \(rtol (\S+), atol (\S+)\)", stdout)
    assert match, stdout
    return float(match.group(1)), float(match.group(2))


def test_matching_outputs_exit_0_at_f32_precision_on_the_cpu(matmul):
    model, data, expected = matmul
    result = run(model, "--device", "cpu", "--inputs", data, "--expect", data)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"comparing at f32 precision, reduction length {K}" in result.stdout
    assert "matches" in result.stdout
    # rtol: ONNX's 1e-3 (above 4 (2^-24 + 0)); atol: K f32 additions of the scale.
    rtol, atol = tolerance_printed(result.stdout)
    scale = max(1.0, float(np.abs(expected).max()))
    assert rtol == pytest.approx(1e-3)
    assert atol == pytest.approx(K * 2.0**-23 * scale, rel=1e-2)


def test_a_mismatch_exits_1(matmul):
    model, data, expected = matmul
    wrong = expected.copy()
    wrong[1, 2] += 0.05 * max(1.0, abs(float(wrong[1, 2])))
    write_tensor(data / "output_0.pb", wrong)
    result = run(model, "--device", "cpu", "--inputs", data, "--expect", data)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "MISMATCH: element 18 is" in result.stdout  # [1, 2] of [4, 16]


def test_tpu_sim_compares_at_the_bf16_precision_it_computes_in(matmul):
    model, data, expected = matmul
    result = run(model, "--device", "tpu-sim", "--inputs", data, "--expect", data)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"comparing at bf16 products precision, reduction length {K}" in result.stdout
    rtol, atol = tolerance_printed(result.stdout)
    scale = max(1.0, float(np.abs(expected).max()))
    assert rtol == pytest.approx(4 * (2.0**-24 + 2.0**-8), rel=1e-2)
    assert atol == pytest.approx((K * 2.0**-23 + 4 * 2.0**-8) * scale, rel=1e-2)
    # Its results are not f32's: ONNX's f32 tolerance, given by hand, refuses them.
    strict = run(model, "--device", "tpu-sim", "--inputs", data, "--expect", data,
                 "--rtol", "1e-3", "--atol", "1e-7")
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert "(rtol 0.001, atol 1e-07): MISMATCH" in strict.stdout


def test_tpu_sim_at_highest_precision_compares_at_f32(matmul):
    model, data, _ = matmul
    result = run(model, "--device", "tpu-sim", "--inputs", data, "--expect", data,
                 tpu_sim="precision=highest")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "comparing at f32 precision" in result.stdout


def test_an_unsupported_model_exits_4(tmp_path):
    model = save_model(tmp_path / "det.onnx",
                       [helper.make_node("Det", ["x"], ["y"], name="det")],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 3])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    result = run(model, "--device", "cpu")
    assert result.returncode == 4, result.stdout + result.stderr
    assert "node 'det' (Det)" in result.stderr


@pytest.mark.parametrize("make", ["missing", "broken"])
def test_other_errors_exit_3(tmp_path, make):
    model = tmp_path / "model.onnx"
    if make == "broken":
        model.write_bytes(b"\x08\xff\xff\xff not a model")
    result = run(model, "--device", "cpu")
    assert result.returncode == 3, result.stdout + result.stderr
    assert result.stderr.startswith("phx-run-onnx: loading")


@pytest.fixture
def dynamic_axes(tmp_path):
    """y = x reshaped to [batch * seq, 8] through Shape, Gather, Mul and Concat, x of shape
    ["batch", "seq", 8] (as a dynamic_axes export computes its shapes); input_0.pb (named
    x, [2, 5, 8]) and output_0.pb in tmp_path/data."""
    ints = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
            numpy_helper.from_array(np.array(1, np.int64), "one"),
            numpy_helper.from_array(np.array([0], np.int64), "axes"),
            numpy_helper.from_array(np.array([8], np.int64), "eight")]
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "zero"], ["b"]),
             helper.make_node("Gather", ["s", "one"], ["t"]),
             helper.make_node("Mul", ["b", "t"], ["n"]),
             helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
             helper.make_node("Concat", ["n1", "eight"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    model = save_model(tmp_path / "dynamic.onnx", nodes,
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 8])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 8])], ints)
    x = np.arange(80, dtype=np.float32).reshape(2, 5, 8)
    data = tmp_path / "data"
    data.mkdir()
    (data / "input_0.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
    write_tensor(data / "output_0.pb", x.reshape(10, 8))
    return model, data


def test_dynamic_sizes_come_from_the_inputs_or_dims(dynamic_axes):
    model, data = dynamic_axes
    refused = run(model, "--device", "cpu")
    assert refused.returncode == 4, refused.stdout + refused.stderr
    assert "--dims or --inputs" in refused.stderr
    from_inputs = run(model, "--device", "cpu", "--inputs", data, "--expect", data)
    assert from_inputs.returncode == 0, from_inputs.stdout + from_inputs.stderr
    assert "output 0: f32 [10,8]" in from_inputs.stdout
    from_dims = run(model, "--device", "cpu", "--dims", "batch=3,seq=4")
    assert from_dims.returncode == 0, from_dims.stdout + from_dims.stderr
    assert "output 0: f32 [12,8]" in from_dims.stdout
    # Sizes that contradict the input files are an error of the command's own.
    contradicted = run(model, "--device", "cpu", "--inputs", data, "--dims", "batch=3")
    assert contradicted.returncode == 3, contradicted.stdout + contradicted.stderr
    assert "given as 3" in contradicted.stderr


@pytest.mark.parametrize("args", [["--rtol", "x", "--expect", "d"], ["--atol", "-1", "--expect", "d"],
                                  ["--rtol", "1e-3"], ["--unknown"], ["--dims", "batch"],
                                  ["--dims", "batch=0"], ["--dims", "=3"], ["--dims", "b=2x"],
                                  ["--compare-with", "cpu", "--expect", "d"],
                                  ["--compare-with", "cpu", "--bench", "3"]])
def test_a_bad_command_line_exits_2(matmul, args):
    model, _, _ = matmul
    result = run(model, *args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "usage: phx-run-onnx" in result.stderr


def test_bench_prints_the_median_and_the_spread_of_the_timed_runs(matmul):
    model, data, _ = matmul
    result = run(model, "--device", "cpu", "--inputs", data, "--bench", "7")
    assert result.returncode == 0, result.stdout + result.stderr
    number = r"(\d+\.\d+) ms"
    match = re.search(r"run time over 7 runs \(after 1 untimed warm-up run\): median " + number +
                      ", p10 " + number + ", p90 " + number + ", min " + number + ", max " +
                      number, result.stdout)
    assert match, result.stdout
    median, p10, p90, low, high = map(float, match.groups())
    assert low <= p10 <= median <= p90 <= high
    assert math.isfinite(high) and high > 0


@pytest.fixture
def add_matmul_relu(tmp_path):
    """a = x + c, m = a @ w, y = relu(m): on tpu-sim the add is f32's (exact as the CPU
    device's) and the matmul's products bf16's, so m is the first value that differs."""
    rng = np.random.default_rng(11)
    c = rng.uniform(-1, 1, (4, K)).astype(np.float32)
    w = rng.uniform(-1, 1, (K, 16)).astype(np.float32)
    nodes = [helper.make_node("Add", ["x", "c"], ["a"]), helper.make_node("MatMul", ["a", "w"], ["m"]),
             helper.make_node("Relu", ["m"], ["y"])]
    return save_model(tmp_path / "add_matmul_relu.onnx", nodes,
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, K])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])],
                      [numpy_helper.from_array(c, "c"), numpy_helper.from_array(w, "w")])


def test_compare_with_finds_every_value_within_the_precisions_tolerance(add_matmul_relu):
    result = run(add_matmul_relu, "--device", "tpu-sim", "--compare-with", "cpu")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "comparing 3 values with device" in result.stdout
    assert "at bf16 products precision" in result.stdout
    assert "every value within tolerance" in result.stdout


def test_compare_with_names_the_first_value_out_of_tolerance(add_matmul_relu):
    # At no tolerance, the add (exact on both) matches and the matmul's bf16 products do
    # not: m is named, value 2 of 3, and y, computed from it, differs too.
    result = run(add_matmul_relu, "--device", "tpu-sim", "--compare-with", "cpu",
                 "--rtol", "0", "--atol", "0")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "first value out of tolerance: 'm' (value 2 of 3, rtol 0, atol 0)" in result.stdout
    assert "2 of 3 values out of tolerance" in result.stdout
    # The same device on both sides matches bit for bit.
    same = run(add_matmul_relu, "--device", "cpu", "--compare-with", "cpu", "--rtol", "0",
               "--atol", "0")
    assert same.returncode == 0, same.stdout + same.stderr
