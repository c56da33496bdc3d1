"""What a tiny op costs from Python more than from C, measured in the same run.

C: bench_dispatch (Google Benchmark): phx_op_run + phx_stream_wait of an add of two 1x4
f32 tensors of the CPU device, into an output made beforehand (add_1x4_phx), and into an
output made and freed per op (add_1x4_phx_new_output).
Python (timeit, best of 5 repeats), on the same device of a context made alike:
  run_op_into  the same op into an output made beforehand, then Stream.wait: the binding's
               own cost per op, against add_1x4_phx;
  phynexus.add phynexus.add(a, b, stream=s) then s.wait: what a program writes, with the
               output tensor made per op (its shape from the cached rules), against
               add_1x4_phx_new_output, which makes and frees it too.
Prints each, and its difference from its C counterpart; the target is at most 3 us more.

    PYTHONPATH=build/python python3 bench/python_overhead.py [build-folder]
"""

import json
import os
import subprocess
import sys
import tempfile
import timeit

# numpy's OpenBLAS threads spin on sched_yield for a while after numpy's own calls: on a
# 2-core machine they take a core from the op being timed, which C's process never has to
# share. One BLAS thread leaves the figures to the binding. Set before numpy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import phynexus

TARGET_US = 3.0


def c_ns(build):
    """name -> the median ns of bench_dispatch's add_1x4_phx and add_1x4_phx_new_output."""
    with tempfile.TemporaryDirectory() as folder:
        report = os.path.join(folder, "dispatch.json")
        subprocess.run(
            [os.path.join(build, "bin", "bench_dispatch"),
             "--benchmark_filter=^add_1x4_phx(_new_output)?/",
             f"--benchmark_out={report}", "--benchmark_out_format=json",
             "--benchmark_min_time=0.5", "--benchmark_repetitions=3",
             "--benchmark_report_aggregates_only=true"],
            check=True, capture_output=True)
        with open(report, encoding="utf-8") as source:
            runs = json.load(source)["benchmarks"]
    return {b["run_name"].split("/")[0]: b["real_time"] for b in runs
            if b.get("aggregate_name") == "median"}


def python_ns(statement, setup_globals, number=20000):
    timer = timeit.Timer(statement, globals=setup_globals)
    return min(timer.repeat(repeat=5, number=number)) / number * 1e9


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    c = c_ns(build)
    context = phynexus.Context(fallback=False)
    cpu = [d for d in context.devices() if d.type == "cpu"][0]
    a = phynexus.tensor(np.array([[1, 2, 3, 4]], np.float32), device=cpu)
    b = phynexus.tensor(np.array([[0.5, 0.25, 0.125, 0.0625]], np.float32), device=cpu)
    c_out = phynexus.empty([1, 4], "f32", device=cpu)
    stream = cpu.stream()
    add_id = phynexus.ops.add.id
    names = {"stream": stream, "a": a, "b": b, "out": c_out, "add": phynexus.add, "op": add_id}
    into = python_ns("stream.wait(stream.run_op_into(op, None, [a, b], [out]))", names)
    full = python_ns("add(a, b, stream=stream); stream.wait(stream.last_ticket)", names)
    print("add of two 1x4 f32 on the CPU device, per op (op + wait):")
    for label, value, counterpart in (
            ("Python, run_op_into + wait", into, "add_1x4_phx"),
            ("Python, phynexus.add + wait", full, "add_1x4_phx_new_output")):
        reference = c[counterpart]
        extra = (value - reference) / 1000
        verdict = "within" if extra <= TARGET_US else "ABOVE"
        print(f"  C, bench_dispatch {counterpart + ' (median)':32} {reference / 1000:8.2f} us")
        print(f"  {label:49} {value / 1000:8.2f} us: {extra:+.2f} us, "
              f"x{value / reference:.2f} ({verdict} the {TARGET_US:g} us target)")


if __name__ == "__main__":
    main()
