"""phx-plot roofline: per device, the achieved GFLOP/s of the benchmark's ops against their
arithmetic intensity (FLOP/byte), under a compute roof and a memory roof.

The CPU's roofs come from bench_peak: its peak_fma_* runs (FLOPS, the best over all cores)
and its peak_stream_* runs (bytes_per_second). A device whose benchmark reports its
model's roofs (the counters model_peak_FLOPS and model_bytes_per_second: a simulator's
timing model, bench_tpu_sim) gets those, and its points are the rates the model gives
(model_FLOPS) rather than the simulation's on this machine; any other device is drawn
under the CPU's roofs, said so."""

import sys

from . import PlotError
from .bench import read_results
from .figure import new_figure, save

INTENSITY = "FLOP/byte"
# Which device ran a benchmark, from a word in its name; the rest ran on the CPU.
DEVICE_WORDS = (("vulkan", "vulkan"), ("tpu", "tpu-sim"), ("npu", "npu-sim"))


def device_of(family):
    lower = family.lower()
    for word, device in DEVICE_WORDS:
        if word in lower:
            return device
    return "cpu"


class Roof:
    def __init__(self, flops, bytes_per_second, source):
        self.flops = flops
        self.bytes_per_second = bytes_per_second
        self.source = source


def cpu_roof(results):
    flops = [r.get("FLOPS") for r in results if r.family.startswith("peak_fma")]
    bandwidth = [r.get("bytes_per_second") for r in results if r.family.startswith("peak_stream")]
    flops, bandwidth = [f for f in flops if f], [b for b in bandwidth if b]
    if not flops or not bandwidth:
        return None
    return Roof(max(flops), max(bandwidth), "CPU, measured by bench_peak")


def model_roofs(results):
    roofs = {}
    for r in results:
        peak, bandwidth = r.get("model_peak_FLOPS"), r.get("model_bytes_per_second")
        if peak and bandwidth:
            roofs[device_of(r.family)] = Roof(peak, bandwidth, "the simulator's model")
    return roofs


def points_by_device(results):
    points = {}
    for r in results:
        modelled = r.get("model_FLOPS")
        rate, intensity = modelled or r.flop_rate(), r.get(INTENSITY)
        if rate and intensity:
            label = r.name.replace("/real_time", "") + (" (modelled)" if modelled else "")
            points.setdefault(device_of(r.family), []).append((intensity, rate / 1e9, label))
    return points


def _draw_roof(axes, roof, low, high):
    ridge = roof.flops / roof.bytes_per_second
    xs = [low, ridge, high] if low < ridge < high else [low, high]
    ys = [min(roof.flops, roof.bytes_per_second * x) / 1e9 for x in xs]
    axes.plot(xs, ys, color="black", linewidth=1.5,
              label=f"roof: {roof.flops / 1e9:.1f} GFLOP/s, {roof.bytes_per_second / 1e9:.1f} GB/s")


def _draw_device(axes, device, points, roof):
    intensities = [p[0] for p in points]
    low, high = min(intensities) / 4, max(intensities) * 4
    if roof is not None:
        ridge = roof.flops / roof.bytes_per_second
        low, high = min(low, ridge / 4), max(high, ridge * 4)
        _draw_roof(axes, roof, low, high)
    for intensity, gflops, label in sorted(points):
        axes.plot([intensity], [gflops], "o", label=f"{label}: {gflops:.1f}")
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

    rates = [p[1] for p in points] + ([roof.flops / 1e9] if roof is not None else [])
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xlim(low, high)
    axes.set_ylim(min(rates) / 2, max(rates) * 1.6)  # every point, and the roof's top
    axes.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
    axes.yaxis.set_major_formatter(ScalarFormatter())  # 20, 50, 100: not 2 x 10^1
    axes.yaxis.set_minor_formatter(NullFormatter())
    axes.set_xlabel("arithmetic intensity (FLOP/byte)")
    axes.set_ylabel("GFLOP/s")
    source = roof.source if roof is not None else "no roof measured"
    axes.set_title(f"{device} (roof: {source})", fontsize=10)
    axes.grid(alpha=0.3, which="both")
    axes.legend(fontsize=6, loc="best")


def plot_roofline(bench_paths, output, width, height):
    results = read_results(bench_paths)
    points = points_by_device(results)
    if not points:
        raise PlotError(f"{', '.join(bench_paths)}: no benchmark with a FLOP rate (FLOPS or "
                        f"GFLOP/s) and a {INTENSITY} counter")
    cpu, models = cpu_roof(results), model_roofs(results)
    if cpu is None:
        print("phx-plot: warning: the inputs lack bench_peak's peak_fma_* or peak_stream_* "
              "results: no roof is drawn", file=sys.stderr)
    figure = new_figure(width, height)
    figure.suptitle("Roofline: achieved GFLOP/s against arithmetic intensity")
    devices = sorted(points)
    for i, device in enumerate(devices):
        roof = models.get(device)
        if roof is None and cpu is not None:
            roof = cpu if device == "cpu" else Roof(cpu.flops, cpu.bytes_per_second,
                                                    "the CPU's, no model reported")
        _draw_device(figure.add_subplot(1, len(devices), i + 1), device, points[device], roof)
    save(figure, output)
