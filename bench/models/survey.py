#!/usr/bin/env python3
"""The operator survey of docs/onnx.md: for the models export.py wrote (FOLDER/NAME), the
ONNX operators each uses, whether the importer takes each (core/onnx/operator_table.cpp),
and how each model fares on each device: phx-run-onnx --expect against torch's output.

usage: survey.py FOLDER [FOLDER...] [--run-onnx build/bin/phx-run-onnx]
                 [--devices cpu,tpu-sim,npu-sim,vulkan]

Prints two markdown tables: the operators (how many models use each, taken or not) and
the models (per device: match, MISMATCH, refused with the reason, or error)."""

import argparse
import collections
import os
import re
import subprocess
import sys

import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = {0: "match", 1: "MISMATCH", 3: "error", 4: "refused"}


def taken_operators():
    with open(os.path.join(ROOT, "core", "onnx", "operator_table.cpp")) as f:
        return set(re.findall(r'\{"(\w+)", convert_\w+\}', f.read()))


def run(run_onnx, model, device):
    data = os.path.join(os.path.dirname(model), "data")
    try:
        result = subprocess.run([run_onnx, model, "--device", device, "--inputs", data,
                                 "--expect", data], capture_output=True, text=True,
                                timeout=900)
    except subprocess.TimeoutExpired:
        return "timed out"
    outcome = RESULTS.get(result.returncode, f"exit {result.returncode}")
    if result.returncode in (3, 4):
        reason = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else ""
        reason = re.sub(r"^phx-run-onnx: (loading|compiling) \S+: ", "", reason)
        outcome += f": {reason[:160]}"
    return outcome


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--run-onnx", default=os.path.join(ROOT, "build", "bin", "phx-run-onnx"))
    parser.add_argument("--devices", default="cpu,tpu-sim,npu-sim,vulkan")
    args = parser.parse_args()
    devices = args.devices.split(",")
    taken = taken_operators()
    uses = collections.defaultdict(set)
    rows = []
    for folder in args.folders:
        for name in sorted(os.listdir(folder)):
            model = os.path.join(folder, name, "model.onnx")
            if not os.path.exists(model):
                continue
            proto = onnx.load(model, load_external_data=False)
            opset = next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))
            dynamic = any(d.dim_param for i in proto.graph.input
                          for d in i.type.tensor_type.shape.dim)
            label = f"{name} (opset {opset}{', dynamic axes' if dynamic else ''})"
            for node in proto.graph.node:
                uses[node.op_type].add(label)
            results = []
            for device in devices:
                print(f"{label} on {device}...", file=sys.stderr, flush=True)
                results.append(run(args.run_onnx, model, device))
            rows.append((label, len({n.op_type for n in proto.graph.node}), results))
    print("| operator | models using it | taken |\n|---|---|---|")
    for op in sorted(uses, key=lambda o: (-len(uses[o]), o)):
        print(f"| {op} | {len(uses[op])} | {'yes' if op in taken else 'no'} |")
    print()
    print("| model | operators | " + " | ".join(devices) + " |")
    print("|---|---|" + "---|" * len(devices))
    for label, count, results in rows:
        print(f"| {label} | {count} | " + " | ".join(results) + " |")


if __name__ == "__main__":
    main()
