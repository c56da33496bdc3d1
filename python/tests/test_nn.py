"""phynexus.nn models on every device, compiled through the graph API, quantized for the
NPU, and saved as safetensors."""

import math
import struct

import numpy as np
import pytest

import phynexus
from phynexus import nn


def _mlp():
    return nn.Sequential(nn.Linear(8, 16, seed=1), nn.GELU(), nn.LayerNorm(16),
                         nn.Linear(16, 16, seed=3), nn.SiLU(), nn.RMSNorm(16),
                         nn.Linear(16, 4, seed=5), nn.ReLU())


def _erf(x):
    return np.vectorize(math.erf)(x)


def _mlp_reference(model, x):
    """The model in float64 from its own parameters."""
    p = {k: v.numpy().astype(np.float64) for k, v in model.state_dict().items()}
    h = x @ p["0.weight"].T + p["0.bias"]
    h = h * (1 + _erf(h / math.sqrt(2))) / 2
    h = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5)
    h = h * p["2.weight"] + p["2.bias"]
    h = h @ p["3.weight"].T + p["3.bias"]
    h = h / (1 + np.exp(-h))
    h = h / np.sqrt((h * h).mean(-1, keepdims=True) + 1e-5) * p["5.weight"]
    h = h @ p["6.weight"].T + p["6.bias"]
    return np.maximum(h, 0)


def _bound(device):
    """Error bound of the MLP relative to max(1, max |y|): three layers of K <= 16 f32
    sums (16 * 2^-23 each) with the two norms' amplification (<= 4x each) -> 2^-12 for
    f32; a TPU takes matmul inputs in bf16 (2^-8 per product, through the same three
    layers and norms) -> 2^-3; the default context's NPU runs f32 ops through CPU fallback
    (f32)."""
    return 2.0**-3 if device.properties.get("matmul_precision") == "bf16" else 2.0**-12


@pytest.mark.parametrize("device_index", range(len(phynexus.devices())))
def test_a_model_runs_eagerly_and_compiled_on_every_device(device_index, rng):
    device = phynexus.devices()[device_index]
    model = _mlp().to(device)
    assert all(p.device == device for p in model.parameters())
    x = rng.uniform(-1, 1, (3, 8)).astype(np.float32)
    reference = _mlp_reference(model, x.astype(np.float64))
    bound = _bound(device) * max(1.0, float(np.max(np.abs(reference))))
    eager = model(phynexus.tensor(x, device=device)).numpy()
    assert np.max(np.abs(eager - reference)) <= bound
    compiled = phynexus.compile(model, phynexus.tensor(x, device=device))
    assert compiled.device == device
    assert np.max(np.abs(compiled(x).numpy() - reference)) <= bound


def test_a_saved_executable_loads_and_gives_the_same_bits(rng):
    model = _mlp()
    x = rng.uniform(-1, 1, (3, 8)).astype(np.float32)
    compiled = phynexus.compile(model, x)
    # Nodes are named after the modules' paths; fusion joins the names.
    assert compiled.nodes()[0]["name"].startswith("0.matmul + 1.gelu")
    loaded = phynexus.load_compiled(compiled.save())
    np.testing.assert_array_equal(loaded(x).numpy(), compiled(x).numpy())
    with pytest.raises(phynexus.InvalidArgumentError):
        phynexus.load_compiled(b"not an executable")


def test_conv2d_and_attention_modules_match_numpy(rng):
    conv = nn.Conv2d(2, 3, 3, padding=1, seed=7)
    x = rng.uniform(-1, 1, (1, 2, 5, 5)).astype(np.float32)
    w = conv.weight.numpy().astype(np.float64)
    b = conv.bias.numpy().astype(np.float64)
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    expected = np.zeros((1, 3, 5, 5))
    for i in range(5):
        for j in range(5):
            expected[0, :, i, j] = w.reshape(3, -1) @ xp[0, :, i:i + 3, j:j + 3].reshape(-1) + b
    # K = 18 products accumulated in f32.
    np.testing.assert_allclose(conv(phynexus.tensor(x)).numpy(), expected, atol=18 * 2.0**-22)

    mha = nn.MultiheadAttention(8, 2, causal=True, seed=11)
    xa = rng.uniform(-1, 1, (2, 3, 8)).astype(np.float32)
    p = {k: v.numpy().astype(np.float64) for k, v in mha.state_dict().items()}
    x64 = xa.astype(np.float64)
    out = np.zeros((2, 3, 8)) + p["out_bias"]
    for h in range(2):
        q, k, v = (x64 @ p[f"{n}_weight"][h, 0] + p[f"{n}_bias"][h, 0] for n in "qkv")
        scores = q @ np.swapaxes(k, 1, 2) / math.sqrt(4)
        scores = np.where(np.tril(np.ones((3, 3))) > 0, scores, -np.inf)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        out += (weights / weights.sum(-1, keepdims=True)) @ v @ p["out_weight"][h]
    # Four chained f32 products of K <= 8: 2^-18 relative, on values below 4.
    got = mha(phynexus.tensor(xa)).numpy()
    np.testing.assert_allclose(got, out, atol=2.0**-16)
    np.testing.assert_allclose(phynexus.compile(mha, xa)(xa).numpy(), out, atol=2.0**-16)


def test_npu_optimized_model_error(rng):
    if not phynexus.npu.is_available():
        pytest.skip("no NPU device")
    model = nn.Sequential(nn.Linear(16, 32, seed=1), nn.ReLU(), nn.Linear(32, 8, seed=2))
    batches = [rng.uniform(-1, 1, (4, 16)).astype(np.float32) for _ in range(8)]
    optimized = phynexus.npu.optimize_model(model, batches, precision="int8")
    assert optimized.quantized_nodes >= 1
    assert any(n["compute_dtype"] in ("i8", "i16") for n in optimized.nodes())
    # int8 with per-tensor scales: each matmul's inputs carry half a step (1/254 of their
    # range) each, two layers -> a few percent of the largest output; the library's own
    # example (examples/npu_optimize.c) holds 5%.
    assert 0 < optimized.calibration_error <= 0.05
    x = rng.uniform(-1, 1, (4, 16)).astype(np.float32)
    reference = model(phynexus.tensor(x)).numpy()
    error = np.max(np.abs(optimized(x).numpy() - reference)) / np.max(np.abs(reference))
    assert error <= 0.05
    # Any batch size, not only the calibration's: rows it saw (a row past its ranges
    # saturates, as int8 does), 9 and 1 at a time.
    rows = np.concatenate(batches)
    for x in (rows[:9], rows[:1]):
        reference = model(phynexus.tensor(x)).numpy()
        error = np.max(np.abs(optimized(x).numpy() - reference)) / np.max(np.abs(reference))
        assert error <= 0.05
    with pytest.raises(phynexus.UnsupportedError):
        phynexus.npu.optimize_model(model, batches, precision="int4")


def test_weights_round_trip_through_safetensors(tmp_path, rng):
    model = _mlp()
    path = tmp_path / "mlp.safetensors"
    model.save(path)
    other = _mlp()
    for p in other.parameters():
        assert p.dtype is phynexus.f32
    other.load_state_dict({k: np.zeros(v.shape, np.float32) for k, v in model.state_dict().items()})
    other.load(path)
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(other.state_dict()[name].numpy(), value.numpy())
    tensors = {"bf16": phynexus.tensor(np.array([1.5, -2.0], np.float32), dtype="bf16"),
               "i8": np.array([[-3, 4]], np.int8), "u8": np.arange(3, dtype=np.uint8)}
    phynexus.safetensors.save(tensors, tmp_path / "mixed.safetensors")
    back = phynexus.safetensors.load(tmp_path / "mixed.safetensors")
    assert back["bf16"].tolist() == [1.5, -2.0]
    assert back["i8"].dtype == np.int8 and back["i8"].tolist() == [[-3, 4]]


def _file(header, data=b""):
    encoded = header if isinstance(header, bytes) else __import__("json").dumps(header).encode()
    return struct.pack("<Q", len(encoded)) + encoded + data


HOSTILE = {
    "empty": b"",
    "short length": b"\x01\x02",
    "length past the file": struct.pack("<Q", 1 << 40) + b"{}",
    "not json": _file(b"{nope"),
    "not utf-8": _file(b"{\"\xff\": 1}"),
    "not an object": _file([1, 2]),
    "duplicate names": _file(b'{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},'
                             b' "a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}', b"x"),
    "unknown dtype": _file({"a": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]}}, b"x" * 8),
    "negative dimension": _file({"a": {"dtype": "U8", "shape": [-1], "data_offsets": [0, 1]}}, b"x"),
    "float dimension": _file({"a": {"dtype": "U8", "shape": [1.5], "data_offsets": [0, 1]}}, b"x"),
    "offsets past the data": _file({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}}, b"x"),
    "offsets not the size": _file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, b"x" * 4),
    "overlap": _file({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
                      "b": {"dtype": "U8", "shape": [2], "data_offsets": [1, 3]}}, b"x" * 3),
    "trailing bytes": _file({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}, b"xy"),
    "extra field": _file({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1], "x": 1}}, b"x"),
    "huge shape": _file({"a": {"dtype": "U8", "shape": [1 << 62, 1 << 62], "data_offsets": [0, 1]}}, b"x"),
    "deep json": _file(b"[" * 100000 + b"]" * 100000),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_safetensors_files_are_refused(tmp_path, case):
    path = tmp_path / "hostile.safetensors"
    path.write_bytes(HOSTILE[case])
    with pytest.raises(phynexus.InvalidArgumentError):
        phynexus.safetensors.load(path)


def test_load_state_dict_refuses_wrong_names_and_shapes():
    model = nn.Linear(4, 2)
    with pytest.raises(phynexus.InvalidArgumentError):
        model.load_state_dict({"weight": np.zeros((2, 4))})
    with pytest.raises(phynexus.InvalidArgumentError):
        model.load_state_dict({"weight": np.zeros((4, 2)), "bias": np.zeros(2)})
