"""phx-plot gemm: GFLOP/s against N per GEMM kernel, from the benchmark JSON of bench_gemm
(the CPU plugin and OpenBLAS), bench_vulkan (matmul_*) and bench_tpu_sim (N as a counter)."""

import re

from . import PlotError
from .bench import read_results
from .figure import new_figure, save

GEMM_NAME = re.compile(r"gemm|matmul", re.IGNORECASE)


def gemm_series(results):
    """family -> sorted [(N, GFLOP/s)] for every result that is a square product of size N."""
    series = {}
    for result in results:
        rate, size = result.flop_rate(), result.size()
        is_gemm = "N" in result.values or GEMM_NAME.search(result.family)
        if rate is None or size is None or not is_gemm:
            continue
        series.setdefault(result.family, {})[size] = rate / 1e9
    return {family: sorted(points.items()) for family, points in sorted(series.items())}


def _subtitle(results):
    context = results[0].context
    cpus, mhz = context.get("num_cpus"), context.get("mhz_per_cpu")
    host = context.get("host_name", "")
    return f"{host}, {cpus} CPUs at {mhz} MHz" if cpus and mhz else host


def plot_gemm(bench_paths, output, width, height):
    results = read_results(bench_paths)
    series = gemm_series(results)
    if not series:
        raise PlotError(f"{', '.join(bench_paths)}: no GEMM benchmark with a FLOP rate "
                        "(FLOPS or GFLOP/s) and a size N")
    figure = new_figure(width, height)
    axes = figure.add_subplot()
    for family, points in series.items():
        sizes = [n for n, _ in points]
        rates = [g for _, g in points]
        style = "--" if "openblas" in family.lower() else "-"
        axes.plot(sizes, rates, style, marker="o", label=family)
    axes.set_xscale("log", base=2)
    all_sizes = sorted({n for points in series.values() for n, _ in points})
    axes.set_xticks(all_sizes, [str(n) for n in all_sizes])
    axes.set_ylim(bottom=0)
    axes.set_xlabel("N (square N x N matrices)")
    axes.set_ylabel("GFLOP/s (2 N\u00b3 FLOP per product)")
    axes.set_title(f"GEMM throughput\n{_subtitle(results)}", fontsize=11)
    axes.grid(alpha=0.3)
    axes.legend(title="kernel", fontsize=8)
    save(figure, output)
