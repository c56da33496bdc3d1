#!/usr/bin/env python3
"""Times the models export.py wrote on the CPU device and on ONNX Runtime's CPU provider in
the same run, model by model, each on the input it was exported with, at the same thread
count: a table of medians and their ratio, and the figures as JSON.

usage: compare_ort.py FOLDER [--runs 15] [--threads 2] [--ort DIR] [--json FILE]
                      [--run-onnx build/bin/phx-run-onnx]

--ort DIR: a folder where `npm install --ignore-scripts onnxruntime-node` was run (its CPU
binaries ship in the package; its install script would fetch GPU ones); default
build/ort. Phynexus runs through phx-run-onnx --bench with PHX_NUM_THREADS at --threads,
ONNX Runtime through node with intraOpNumThreads at --threads. Without node or
onnxruntime-node this says so and exits 77 (skipped)."""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

import onnx
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
ORT_TYPES = {"float32": "float32", "int64": "int64", "int32": "int32", "uint8": "uint8",
             "int8": "int8"}


def ort_median(args, model, folder):
    """ONNX Runtime's median ms of the model on its exported inputs."""
    data = os.path.join(os.path.dirname(model), "data")
    inputs = []
    for i in range(len(onnx.load(model, load_external_data=False).graph.input)):
        path = os.path.join(data, f"input_{i}.pb")
        if not os.path.exists(path):
            break
        array = numpy_helper.to_array(onnx.load_tensor(path))
        raw = os.path.join(folder, f"input_{i}.bin")
        array.tofile(raw)
        inputs.append({"name": onnx.load_tensor(path).name, "type": ORT_TYPES[str(array.dtype)],
                       "shape": list(array.shape), "file": raw})
    manifest = os.path.join(folder, "inputs.json")
    with open(manifest, "w") as f:
        json.dump(inputs, f)
    env = dict(os.environ, NODE_PATH=os.path.join(args.ort, "node_modules"))
    result = subprocess.run(["node", os.path.join(HERE, "ort_time.js"), model, manifest,
                             str(args.runs), str(args.threads)],
                            capture_output=True, text=True, env=env, timeout=1800)
    if result.returncode != 0:
        return None, result.stderr.strip().splitlines()[-1]
    return statistics.median(json.loads(result.stdout)["times_ms"]), ""


def phynexus_median(args, model, device="cpu"):
    """The device's median ms, as phx-run-onnx --bench prints it."""
    data = os.path.join(os.path.dirname(model), "data")
    env = dict(os.environ, PHX_NUM_THREADS=str(args.threads))
    result = subprocess.run([args.run_onnx, model, "--device", device, "--inputs", data,
                             "--bench", str(args.runs)], capture_output=True, text=True,
                            env=env, timeout=1800)
    match = re.search(r"median (\d+\.\d+) ms", result.stdout)
    if result.returncode != 0 or not match:
        return None, (result.stderr.strip().splitlines() or ["no median printed"])[-1]
    return float(match.group(1)), ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ort", default=os.path.join(ROOT, "build", "ort"))
    parser.add_argument("--json", default="")
    parser.add_argument("--run-onnx", default=os.path.join(ROOT, "build", "bin", "phx-run-onnx"))
    args = parser.parse_args()
    if shutil.which("node") is None or not os.path.isdir(
            os.path.join(args.ort, "node_modules", "onnxruntime-node")):
        print(f"compare_ort.py: node or onnxruntime-node in {args.ort} is missing (npm install "
              "--ignore-scripts onnxruntime-node there); nothing timed")
        sys.exit(77)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for name in sorted(os.listdir(args.folder)):
            model = os.path.join(args.folder, name, "model.onnx")
            if not os.path.exists(model):
                continue
            print(f"{name}...", file=sys.stderr, flush=True)
            ort_ms, ort_why = ort_median(args, model, scratch)
            phx_ms, phx_why = phynexus_median(args, model)
            rows.append({"model": name, "ort_ms": ort_ms, "phynexus_ms": phx_ms,
                         "ratio": phx_ms / ort_ms if ort_ms and phx_ms else None,
                         "note": ort_why or phx_why})
    report(args, rows, ("ONNX Runtime (ms)", "ort_ms"), ("Phynexus cpu (ms)", "phynexus_ms"),
           "Phynexus / ORT")


def report(args, rows, first, second, ratio_name):
    """Prints rows (model, first, second: medians in ms; their ratio; a note) as a table,
    the median and largest ratio, and writes them as JSON to --json if given. first and
    second are (column title, key)."""
    print(f"| model | {first[0]} | {second[0]} | {ratio_name} |\n|---|---|---|---|")
    for r in rows:
        cells = [f"{r[k]:.2f}" if r[k] is not None else "-" for k in (first[1], second[1],
                                                                      "ratio")]
        print(f"| {r['model']} | " + " | ".join(cells) + (f" ({r['note']})" if r["note"] else "")
              + " |")
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None]
    if ratios:
        print(f"\nmedian {ratio_name} over {len(ratios)} models: "
              f"{statistics.median(ratios):.2f}, largest {max(ratios):.2f} (median of "
              f"{args.runs} runs each, {args.threads} threads)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": args.runs, "threads": args.threads, "models": rows}, f, indent=1)


if __name__ == "__main__":
    main()
