"""mlp: a small model from Python on every device, eagerly and compiled, checked against
numpy in float64; then quantized for the NPU with calibration batches.

    PYTHONPATH=build/python python3 examples/python/mlp.py

Exits 0 when every device's result is within the bound below.
"""

import math
import sys

import numpy as np

import phynexus
from phynexus import nn


def reference(model, x):
    """The model in float64 from its own weights."""
    w = {name: t.numpy().astype(np.float64) for name, t in model.state_dict().items()}
    h = x @ w["0.weight"].T + w["0.bias"]
    h = h * (1 + np.vectorize(math.erf)(h / math.sqrt(2))) / 2
    return h @ w["2.weight"].T + w["2.bias"]


def main():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (8, 64)).astype(np.float32)
    failures = 0
    for device in phynexus.devices():
        model = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 16)).to(device)
        expected = reference(model, x.astype(np.float64))
        eager = model(phynexus.tensor(x, device=device)).numpy()
        compiled = phynexus.compile(model, phynexus.tensor(x, device=device))
        result = compiled(x).numpy()
        # Two layers of K <= 128 f32 sums: about 2^-16 of the largest output; a TPU takes
        # f32 matmul inputs in bf16 (2^-8 each): 2^-6.
        bf16_inputs = device.properties.get("matmul_precision") == "bf16"
        bound = (2.0**-6 if bf16_inputs else 2.0**-16) * max(1.0, np.max(np.abs(expected)))
        error = max(np.max(np.abs(eager - expected)), np.max(np.abs(result - expected)))
        where = sorted({phynexus.devices()[n["device"]].type for n in compiled.nodes()})
        status = "ok" if error <= bound else "FAILED"
        failures += error > bound
        print(f"{device.type:4} {device.name:36} max error {error:.2e} (bound {bound:.1e}), "
              f"compiled nodes on {'+'.join(where)}: {status}")
    if phynexus.npu.is_available():
        model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 16))
        batches = [rng.uniform(-1, 1, (8, 64)).astype(np.float32) for _ in range(8)]
        optimized = phynexus.npu.optimize_model(model, batches, precision="int8")
        print(f"npu int8: {optimized.quantized_nodes} nodes quantized, calibration error "
              f"{optimized.calibration_error:.3%} of the largest output")
        failures += optimized.calibration_error > 0.05
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
