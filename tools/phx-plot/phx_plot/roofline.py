"""phx-plot roofline: per device, the achieved GFLOP/s of the benchmark's ops against their
arithmetic intensity (FLOP/byte), under a roof per precision the device has: the lesser
of that precision's peak compute rate and the memory bandwidth times the intensity.

The CPU's roofs come from bench_peak's and bench_gemm's peak runs (peak_kernels.h): f32
FMA from peak_fma_* (FLOPS), bf16 dot from peak_dot_bf16_* (FLOPS), int8 dot from
peak_dot_i8_* (OPS, 2 per multiply-add), each the best run of its kind; the bandwidth
from peak_stream_* (bytes_per_second). A device whose benchmark reports its model's
roofs (the counters model_peak_FLOPS and model_bytes_per_second: a simulator's timing
model, bench_tpu_sim) gets those, for the precision of that benchmark, and its points
are the rates the model gives (model_FLOPS) rather than the simulation's on this
machine; any other device is drawn under the CPU's roofs, said so."""

import re
import sys

from . import PlotError
from .bench import read_results
from .figure import new_figure, save

INTENSITY = "FLOP/byte"
# Which device ran a benchmark, from a word in its name; the rest ran on the CPU.
DEVICE_WORDS = (("vulkan", "vulkan"), ("tpu", "tpu-sim"), ("npu", "npu-sim"))
# The CPU's peak loops by the precision whose roof they set, and what the roof is called.
PEAK_FAMILIES = (("f32", "peak_fma", "f32 FMA"), ("bf16", "peak_dot_bf16", "bf16 dot"),
                 ("int8", "peak_dot_i8", "int8 dot"))
# The other roof a precision's products may run under: f16 is converted to f32 and
# multiplied with the f32 FMA (the CPU has no f16 arithmetic); bf16 takes the bf16 dot
# only where it is the faster (docs/loader.md, PHX_CPU_ISA), else the f32 FMA too. Where
# no bf16 dot was timed the CPU has none: bench_peak and bench_gemm time it wherever the
# CPU has the instruction. So a product is held to the higher of the two roofs.
FALLBACK_ROOF = {"f16": "f32", "bf16": "f32"}
ROOF_STYLES = {"f32": "-", "bf16": "--", "int8": ":"}
LEGEND_FONT_SIZE = 7
LEGEND_CHAR_PIXELS = 4.3  # about the width of one character at that size
LEGEND_HANDLE_PIXELS = 40  # the marker or line and the gaps around it
LEGEND_DROP_INCHES = 0.5  # from the axes' bottom to the legend's top: the tick and axis labels
MARKERS = "osD^vP*X<>hp"


def device_of(family):
    lower = family.lower()
    for word, device in DEVICE_WORDS:
        if word in lower:
            return device
    return "cpu"


def precision_of(name):
    """The precision of a benchmark's products, from its name (f32 where it names none)."""
    lower = name.lower()
    if "bf16" in lower:
        return "bf16"
    if re.search(r"(^|[^b])f16", lower):
        return "f16"
    if re.search(r"int8|i8|qmatmul", lower):
        return "int8"
    return "f32"


class Roof:
    def __init__(self, flops, bytes_per_second, source, name):
        self.flops = flops
        self.bytes_per_second = bytes_per_second
        self.source = source
        self.name = name  # what sets its peak, e.g. "f32 FMA"


class Point:
    def __init__(self, intensity, gflops, label, precision):
        self.intensity = intensity
        self.gflops = gflops
        self.label = label
        self.precision = precision


def cpu_roofs(results):
    """precision -> Roof, from the best peak run of each kind; {} without a bandwidth."""
    bandwidth = [r.get("bytes_per_second") for r in results if r.family.startswith("peak_stream")]
    bandwidth = [b for b in bandwidth if b]
    if not bandwidth:
        return {}
    roofs = {}
    for precision, prefix, name in PEAK_FAMILIES:
        rates = [r.get("FLOPS") or r.get("OPS") for r in results if r.family.startswith(prefix)]
        rates = [rate for rate in rates if rate]
        if rates:
            roofs[precision] = Roof(max(rates), max(bandwidth), "measured by bench_peak", name)
    return roofs


def model_roofs(results):
    """device -> {precision -> Roof} from the simulators' models."""
    roofs = {}
    for r in results:
        peak, bandwidth = r.get("model_peak_FLOPS"), r.get("model_bytes_per_second")
        if peak and bandwidth:
            precision = precision_of(r.family)
            roofs.setdefault(device_of(r.family), {})[precision] = Roof(
                peak, bandwidth, "the simulator's model", f"{precision} model")
    return roofs


def points_by_device(results):
    points = {}
    for r in results:
        modelled = r.get("model_FLOPS")
        rate, intensity = modelled or r.flop_rate() or r.get("OPS"), r.get(INTENSITY)
        if rate and intensity:
            label = r.name.replace("/real_time", "") + (" (modelled)" if modelled else "")
            points.setdefault(device_of(r.family), []).append(
                Point(intensity, rate / 1e9, label, precision_of(r.family)))
    return points


def roof_for(roofs, precision):
    """The precision whose roof a product of this precision is held to, or None."""
    candidates = [c for c in (precision, FALLBACK_ROOF.get(precision)) if c in roofs]
    if candidates:
        return max(candidates, key=lambda c: roofs[c].flops)
    return next(iter(roofs), None)  # a model's one roof holds all of its device's points


def attainable(roof, intensity):
    """GFLOP/s the roof allows at this intensity."""
    return min(roof.flops, roof.bytes_per_second * intensity) / 1e9


def series_styles(count):
    """A (colour, marker) per series, no colour used twice: tab10's, then tab20's (its dark
    shades first), then evenly spaced hues; markers vary too, for print in grey."""
    import matplotlib

    if count <= 10:
        colours = [matplotlib.colormaps["tab10"](i) for i in range(count)]
    elif count <= 20:
        tab20 = matplotlib.colormaps["tab20"]
        colours = [tab20(i) for i in list(range(0, 20, 2)) + list(range(1, 20, 2))][:count]
    else:
        # Hues spread evenly, each next series half the circle from the one before.
        hsv = matplotlib.colormaps["hsv"]
        colours = [hsv((i // 2) / count + (0.5 if i % 2 else 0.0)) for i in range(count)]
    return [(colour, MARKERS[i % len(MARKERS)]) for i, colour in enumerate(colours)]


def _draw_roof(axes, precision, roof, low, high, holds):
    ridge = roof.flops / roof.bytes_per_second
    xs = [low, ridge, high] if low < ridge < high else [low, high]
    ys = [attainable(roof, x) for x in xs]
    held = "" if holds == [precision] else f" ({', '.join(holds) or 'holds no point'})"
    axes.plot(xs, ys, color="black", linestyle=ROOF_STYLES.get(precision, "-"), linewidth=1.5,
              gid=f"roof:{precision}",
              label=f"{roof.name} roof{held}: {roof.flops / 1e9:.1f}, "
                    f"{roof.bytes_per_second / 1e9:.1f} GB/s")


def _draw_device(axes, device, points, roofs, warnings, width_pixels):
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter
    from matplotlib.transforms import ScaledTranslation

    intensities = [p.intensity for p in points]
    low, high = min(intensities) / 4, max(intensities) * 4
    for roof in roofs.values():
        ridge = roof.flops / roof.bytes_per_second
        low, high = min(low, ridge / 4), max(high, ridge * 4)
    for precision, roof in roofs.items():
        holds = sorted({p.precision for p in points if roof_for(roofs, p.precision) == precision})
        _draw_roof(axes, precision, roof, low, high, holds)
    points = sorted(points, key=lambda p: (p.precision, p.intensity, p.label))
    for point, (colour, marker) in zip(points, series_styles(len(points))):
        held_to = roof_for(roofs, point.precision)
        note, gid = "", f"point:{held_to}"
        if held_to is not None and point.gflops > attainable(roofs[held_to], point.intensity):
            # Above its roof: the peak and the point were timed under different loads (a
            # shared host). Said on the picture, not hidden by raising the roof.
            note, gid = " (above its roof)", gid + ":above"
            warnings.append(f"{device}: {point.label} ({point.gflops:.1f} G/s) is above its "
                            f"{roofs[held_to].name} roof ({roofs[held_to].flops / 1e9:.1f})")
            ringed = any(line.get_gid() == "above" for line in axes.lines)
            axes.plot([point.intensity], [point.gflops], linestyle="none", marker="o",
                      markersize=13, markerfacecolor="none", markeredgecolor="red", gid="above",
                      label="_" if ringed else "ringed: above its roof")
        axes.plot([point.intensity], [point.gflops], linestyle="none", marker=marker,
                  color=colour, markersize=6, gid=gid,
                  label=f"{point.label}: {point.gflops:.1f}{note}")
    rates = [p.gflops for p in points] + [roof.flops / 1e9 for roof in roofs.values()]
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xlim(low, high)
    axes.set_ylim(min(rates) / 2, max(rates) * 1.6)  # every point, and the roofs' tops
    axes.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
    axes.yaxis.set_major_formatter(ScalarFormatter())  # 20, 50, 100: not 2 x 10^1
    axes.yaxis.set_minor_formatter(NullFormatter())
    axes.set_xlabel("arithmetic intensity (FLOP/byte)")
    axes.set_ylabel("GFLOP/s (int8: GOP/s)")
    source = next(iter(roofs.values())).source if roofs else "no roof measured"
    axes.set_title(f"{device} (roofs: {source})", fontsize=10)
    axes.grid(alpha=0.3, which="both")
    # Below the axes, where it covers no point and no roof, in as many columns as fit the
    # panel's width: a legend wider than its panel would run into the next one.
    labels = [line.get_label() for line in axes.lines if not line.get_label().startswith("_")]
    entry = LEGEND_HANDLE_PIXELS + LEGEND_CHAR_PIXELS * max(len(label) for label in labels)
    below_the_labels = axes.transAxes + ScaledTranslation(0, -LEGEND_DROP_INCHES,
                                                          axes.figure.dpi_scale_trans)
    axes.legend(fontsize=LEGEND_FONT_SIZE, loc="upper center", bbox_to_anchor=(0.5, 0),
                bbox_transform=below_the_labels, frameon=False,
                ncol=max(1, min(3, int(width_pixels // entry))))


def draw_roofline(bench_paths, width, height):
    """The roofline's figure and the warnings to print."""
    results = read_results(bench_paths)
    points = points_by_device(results)
    if not points:
        raise PlotError(f"{', '.join(bench_paths)}: no benchmark with a FLOP rate (FLOPS or "
                        f"GFLOP/s) and a {INTENSITY} counter")
    cpu, models = cpu_roofs(results), model_roofs(results)
    warnings = []
    if "f32" not in cpu:
        warnings.append("the inputs lack bench_peak's peak_fma_* or peak_stream_* results: "
                        "the CPU's points have no roof")
    figure = new_figure(width, height)
    figure.suptitle("Roofline: achieved GFLOP/s against arithmetic intensity")
    devices = sorted(points)
    for i, device in enumerate(devices):
        roofs = models.get(device)
        if roofs is None:
            roofs = cpu if device == "cpu" else {
                precision: Roof(roof.flops, roof.bytes_per_second,
                                "the CPU's, no model reported", roof.name)
                for precision, roof in cpu.items()}
        _draw_device(figure.add_subplot(1, len(devices), i + 1), device, points[device], roofs,
                     warnings, 0.95 * width / len(devices))
    return figure, warnings


def plot_roofline(bench_paths, output, width, height):
    figure, warnings = draw_roofline(bench_paths, width, height)
    for warning in warnings:
        print(f"phx-plot: warning: {warning}", file=sys.stderr)
    save(figure, output)
