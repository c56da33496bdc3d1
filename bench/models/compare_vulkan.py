#!/usr/bin/env python3
"""Times the models export.py wrote on the Vulkan device and on the CPU device in the same
run, model by model, each on the input it was exported with: a table of medians and their
ratio (issue 35 wants Vulkan on lavapipe within 4x of the CPU device, 3x in the median),
and the figures as JSON.

usage: compare_vulkan.py FOLDER [--runs 5] [--threads 2] [--json FILE]
                         [--run-onnx build/bin/phx-run-onnx]

Both run through phx-run-onnx --bench with PHX_NUM_THREADS at --threads (lavapipe takes
its own threads from LP_NUM_THREADS, by default one per core). Without a Vulkan device
this says so and exits 77 (skipped)."""

import argparse
import os
import subprocess
import sys

from compare_ort import ROOT, phynexus_median, report


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", default="")
    parser.add_argument("--run-onnx", default=os.path.join(ROOT, "build", "bin", "phx-run-onnx"))
    args = parser.parse_args()
    devices = subprocess.run([os.path.join(os.path.dirname(args.run_onnx), "phx-devices")],
                             capture_output=True, text=True).stdout
    if " vulkan " not in devices:
        print("compare_vulkan.py: no Vulkan device (phx-devices lists none); nothing timed")
        sys.exit(77)
    rows = []
    for name in sorted(os.listdir(args.folder)):
        model = os.path.join(args.folder, name, "model.onnx")
        if not os.path.exists(model):
            continue
        print(f"{name}...", file=sys.stderr, flush=True)
        cpu_ms, cpu_why = phynexus_median(args, model, "cpu")
        vulkan_ms, vulkan_why = phynexus_median(args, model, "vulkan")
        rows.append({"model": name, "cpu_ms": cpu_ms, "vulkan_ms": vulkan_ms,
                     "ratio": vulkan_ms / cpu_ms if cpu_ms and vulkan_ms else None,
                     "note": cpu_why or vulkan_why})
    report(args, rows, ("Phynexus cpu (ms)", "cpu_ms"), ("Phynexus vulkan (ms)", "vulkan_ms"),
           "vulkan / cpu")


if __name__ == "__main__":
    main()
