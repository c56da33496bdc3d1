"""phx-plot draws each plot from the committed example trace and bench JSON as a PNG of the
size asked for; a trace without its closing bracket is read; a bad input is one line on
stderr and exit status 1, never a traceback. The pictures hold what the eye checks, measured
on matplotlib's artists: every span at least a pixel wide in the window asked for, a roof
per precision with every point under its own, no two series of one colour.
Exits 77 (skipped) without matplotlib.
usage: test_phx_plot.py PHX_PLOT DATA_DIR (ctest), or python3 -m pytest tools/phx-plot/tests"""

import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import unittest

# The source tree's, unless the command line names others (ctest: the build tree's script).
HERE = os.path.dirname(os.path.abspath(__file__))
PHX_PLOT = os.path.join(HERE, "..", "phx-plot")
DATA = HERE

try:
    import matplotlib

    matplotlib.use("Agg")
    HAVE_MATPLOTLIB = True
except ImportError:
    HAVE_MATPLOTLIB = False


def png_size(path):
    """(width, height) from the PNG's signature and IHDR chunk."""
    with open(path, "rb") as file:
        header = file.read(24)
    assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is no PNG"
    assert header[12:16] == b"IHDR"
    return struct.unpack(">II", header[16:24])


def phx_plot_module(name):
    """The module phx_plot.<name>, from the source tree beside DATA."""
    sys.dont_write_bytecode = True  # nothing written into the source tree
    sys.path.insert(0, os.path.dirname(os.path.abspath(DATA)))
    import importlib

    return importlib.import_module(f"phx_plot.{name}")


def trace_reader():
    """phx_plot.trace.read_trace, from the source tree beside DATA."""
    return phx_plot_module("trace").read_trace


def write_json(path, value):
    with open(path, "w") as file:
        json.dump(value, file)


def long_compile_trace(path):
    """A trace as the writer lays out a Vulkan run (tracing.md): the first op's submission
    holds a 0.42 s pipeline compile, the ops after it take microseconds, the host compiles
    the graph for 0.6 s before. The devices are processes 1 and 2, the host 3."""
    events = []

    def metadata(kind, pid, tid, **args):
        events.append({"name": kind, "ph": "M", "pid": pid, "tid": tid, "args": args})

    def span(name, cat, pid, tid, ts, dur):
        events.append({"name": name, "cat": cat, "ph": "X", "pid": pid, "tid": tid, "ts": ts,
                       "dur": dur, "args": {"op": name} if cat != "compile" else {}})

    for pid, name in ((1, "llvmpipe (vulkan)"), (2, "TPU v5e (simulated) (tpu-sim)"),
                      (3, "host (pid 42)")):
        metadata("process_name", pid, 0, name=name)
        metadata("process_sort_index", pid, 0, sort_index=pid)
    for pid, tid, name in ((1, 0, "stream 0"), (2, 2, "stream 1"),
                           (2, 3, "stream 1 (simulated device time)"), (3, 1, "API calls")):
        metadata("thread_name", pid, tid, name=name)
        metadata("thread_sort_index", pid, tid, sort_index=tid)
    span("graph compile", "host", 3, 1, 0.0, 600000.0)
    span("pipeline compile", "compile", 1, 0, 600100.0, 420000.0)
    span("matmul", "op", 1, 0, 600100.0, 420050.0)
    for i in range(20):
        span("add", "op", 1, 0, 1020200.0 + 30 * i, 8.0)
        span("matmul", "op", 2, 2, 1020200.0 + 30 * i, 17.0)
        span("matmul", "simulated op", 2, 3, 1020200.0 + 30 * i, 1.339)
    span("stream wait", "host", 3, 1, 1020150.0, 850.0)
    write_json(path, events)


def bench_run(name, **counters):
    return {"name": name, "run_name": name, "run_type": "iteration", "iterations": 10,
            "real_time": 1.0, "cpu_time": 1.0, "time_unit": "ms", **counters}


def bench_with_every_precision(path, bf16_dot=290e9):
    """bench_peak's and bench_gemm's runs on a CPU with a bf16 dot and an int8 dot: 13
    series, bf16 products above the f32 FMA's roof and under the bf16 dot's."""
    runs = [bench_run("peak_fma_f32_avx512/real_time/threads:2", FLOPS=150e9),
            bench_run("peak_fma_f32_avx512/n256/real_time/threads:2", FLOPS=140e9),
            bench_run("peak_dot_bf16_avx512bf16/real_time/threads:2", FLOPS=bf16_dot),
            bench_run("peak_dot_i8_avx512vnni/real_time/threads:2", OPS=600e9),
            bench_run("peak_stream_copy/real_time/threads:2", bytes_per_second=20e9)]
    per_byte = {"f32": 6, "f16": 3, "bf16": 3, "i8": 3}  # N / intensity of an N^3 product
    for family, rates in (("gemm_f32_phx", (120e9, 135e9, 140e9)),
                          ("gemm_f32_openblas", (100e9, 110e9, 115e9)),
                          ("gemm_bf16_phx", (180e9, 240e9, 270e9)),
                          ("gemm_f16_phx", (90e9, 110e9)), ("qmatmul_i8_phx", (300e9, 450e9))):
        dtype = family.split("_")[1]
        for n, rate in zip((256, 512, 1024), rates):
            counters = {"OPS" if dtype == "i8" else "FLOPS": rate, "FLOP/byte": n / per_byte[dtype]}
            runs.append(bench_run(f"{family}/{n}/real_time", **counters))
    write_json(path, {"context": {"host_name": "test"}, "benchmarks": runs})


def drawn_widths(axes):
    """The width in pixels of each span's bar within the axes, as the PNG shows it."""
    axes.figure.canvas.draw()
    box, widths = axes.bbox, []
    for bars in axes.collections:
        for path in bars.get_paths():
            extent = path.get_extents(bars.get_transform())
            widths.append(min(extent.x1, box.x1) - max(extent.x0, box.x0))
    return widths


def lines_by_gid(axes, prefix):
    return [line for line in axes.lines if (line.get_gid() or "").startswith(prefix)]


def roof_height(roof, intensity):
    """The roof line's height at an intensity: straight segments on the log-log axes."""
    import numpy

    xs, ys = numpy.log(roof.get_xdata()), numpy.log(roof.get_ydata())
    return math.exp(numpy.interp(math.log(intensity), xs, ys))


@unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib is not installed")
class PhxPlotTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.folder.cleanup()

    def run_plot(self, *arguments):
        return subprocess.run([sys.executable, PHX_PLOT, *arguments], capture_output=True,
                              text=True, timeout=120)

    def draw(self, command, inputs, size):
        output = os.path.join(self.folder.name, f"{command}.png")
        result = self.run_plot(command, *[os.path.join(DATA, i) for i in inputs], "-o", output,
                               "--size", size)
        self.assertEqual(result.returncode, 0, result.stderr)
        return png_size(output)

    def test_timeline(self):
        self.assertEqual(self.draw("timeline", ["example_trace.json"], "900x420"), (900, 420))

    def test_timeline_of_a_trace_cut_short(self):
        # No closing bracket, the last event half written: the program was killed.
        self.assertEqual(self.draw("timeline", ["example_trace_killed.json"], "640x300"),
                         (640, 300))

    def test_cut_short_trace_keeps_every_whole_event(self):
        read_trace = trace_reader()
        whole = read_trace(os.path.join(DATA, "example_trace.json"))
        cut = read_trace(os.path.join(DATA, "example_trace_killed.json"))
        self.assertEqual(len(whole.spans), 16)
        self.assertEqual([(s.name, s.start_us) for s in cut.spans],
                         [(s.name, s.start_us) for s in whole.spans])
        self.assertEqual(cut.track_name((2, 2)),
                         "TPU v5e (simulated) (tpu-sim) / stream 1 (simulated device time)")

    def test_flows_are_matched_arrows(self):
        # A start and its end make an arrow; an end whose start the trace lacks makes none.
        flows = trace_reader()(os.path.join(DATA, "example_trace.json")).flows
        self.assertEqual([(f.name, f.start, f.end) for f in flows],
                         [("event", ((1, 1), 654.0), ((2, 1), 1869.0))])

    def test_nesting_and_begin_end_pairs(self):
        read_trace = trace_reader()
        path = os.path.join(self.folder.name, "nested.json")
        with open(path, "w") as file:
            file.write('{"traceEvents": ['
                       '{"name": "run", "ph": "X", "ts": 0, "dur": 10, "pid": 1, "tid": 1},'
                       '{"name": "a", "ph": "X", "ts": 1, "dur": 4, "pid": 1, "tid": 1},'
                       '{"name": "b", "ph": "X", "ts": 5, "dur": 4, "pid": 1, "tid": 1},'
                       '{"name": "w", "ph": "B", "ts": 2, "pid": 1, "tid": 2},'
                       '{"name": "w", "ph": "E", "ts": 7, "pid": 1, "tid": 2}]}')
        spans = {s.name: s for s in read_trace(path).spans}
        self.assertEqual([spans[n].depth for n in ("run", "a", "b", "w")], [0, 1, 1, 0])
        self.assertEqual((spans["w"].start_us, spans["w"].duration_us), (2.0, 5.0))

    def test_roofline(self):
        self.assertEqual(self.draw("roofline", ["example_bench.json"], "1000x500"), (1000, 500))

    def test_roofline_of_a_simulator_is_its_models(self):
        # example_bench.json's tpu-sim matmul carries bench_tpu_sim's model_* counters.
        bench, roofline = phx_plot_module("bench"), phx_plot_module("roofline")
        results = bench.read_results([os.path.join(DATA, "example_bench.json")])
        roof = roofline.model_roofs(results)["tpu-sim"]["bf16"]
        self.assertEqual((roof.flops, roof.bytes_per_second), (197e12, 819e9))
        [point] = roofline.points_by_device(results)["tpu-sim"]
        self.assertEqual((point.intensity, point.gflops), (256.0, 176683.0))  # not 77.6
        self.assertIn("(modelled)", point.label)
        # The CPU's points stay the measured rates.
        cpu_rates = [p.gflops for p in roofline.points_by_device(results)["cpu"]]
        self.assertNotIn(176683.0, cpu_rates)

    def spans_in(self, trace_path, window):
        trace = trace_reader()(trace_path)
        origin = min(s.start_us for s in trace.spans)
        low, high = window
        return [s for s in trace.spans if (s.start_us + s.duration_us - origin) / 1000 >= low
                and (s.start_us - origin) / 1000 <= high]

    def test_every_span_is_drawn_at_least_a_pixel_wide(self):
        timeline = phx_plot_module("timeline")
        path = os.path.join(self.folder.name, "compile.json")
        long_compile_trace(path)
        # The ops' window (the default), the whole trace, and one from the middle of the
        # compile: 8 us spans are below a pixel in the last two without the least width.
        for window in ((None, None), (0.0, 1100.0), (700.0, 1020.5)):
            with self.subTest(window=window):
                figure = timeline.draw_timeline(path, 900, 400, *window)
                axes = figure.axes[0]
                widths = drawn_widths(axes)
                self.assertEqual(len(widths), len(self.spans_in(path, axes.get_xlim())))
                self.assertGreaterEqual(min(widths), 1.0)

    def test_the_default_window_is_the_ops(self):
        timeline = phx_plot_module("timeline")
        path = os.path.join(self.folder.name, "compile.json")
        long_compile_trace(path)
        low, high = timeline.draw_timeline(path, 900, 400).axes[0].get_xlim()
        # Neither the host's 0.6 s graph compile nor the 0.42 s pipeline compile that opens
        # the first op: the 0.8 ms of ops after them, with a margin.
        self.assertGreater(low, 1020.0)
        self.assertLess(high, 1021.0)
        self.assertGreater(high, 1020.8)

    def test_from_and_to_choose_the_window(self):
        timeline = phx_plot_module("timeline")
        path = os.path.join(self.folder.name, "compile.json")
        long_compile_trace(path)
        figure = timeline.draw_timeline(path, 900, 400, 600.0, 1021.0)
        self.assertEqual(figure.axes[0].get_xlim(), (600.0, 1021.0))
        self.assertEqual([timeline.parse_time_ms(t, "--from") for t in
                          ("420", "0.42s", "420ms", "420000us", "4.2e2")], [420.0] * 5)
        output = os.path.join(self.folder.name, "window.png")
        result = self.run_plot("timeline", path, "-o", output, "--size", "800x300",
                               "--from", "0.6s", "--to", "1021")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(png_size(output), (800, 300))
        for arguments, words in ((("--from", "5", "--to", "1"), "not before"),
                                 (("--from", "soon"), "--from 'soon'")):
            with self.subTest(arguments=arguments):
                self.assert_one_line_error(
                    self.run_plot("timeline", path, "-o", output, *arguments), words)

    def test_a_roof_per_precision_and_every_point_under_its_own(self):
        roofline = phx_plot_module("roofline")
        path = os.path.join(self.folder.name, "precisions.json")
        bench_with_every_precision(path)
        figure, warnings = roofline.draw_roofline([path], 1000, 600)
        self.assertEqual(warnings, [])
        [axes] = figure.axes
        roofs = {line.get_gid().split(":")[1]: line for line in lines_by_gid(axes, "roof:")}
        self.assertEqual(len(roofs), len(lines_by_gid(axes, "roof:")))  # one each
        self.assertEqual(set(roofs), {"f32", "bf16", "int8"})
        points = lines_by_gid(axes, "point:")
        self.assertEqual(len(points), 13)
        held_to = {}
        for point in points:
            precision = roofline.precision_of(point.get_label())
            held_to[precision] = point.get_gid().split(":")[1]
            [x], [y] = point.get_xdata(), point.get_ydata()
            self.assertLessEqual(y, roof_height(roofs[held_to[precision]], x) * (1 + 1e-9),
                                 point.get_label())
        # f16 is multiplied with the f32 FMA: it has no roof of its own.
        self.assertEqual(held_to, {"f32": "f32", "f16": "f32", "bf16": "bf16", "int8": "int8"})
        # bf16's roof is the dot's, above the f32 FMA's: its products go past the latter.
        self.assertGreater(roof_height(roofs["bf16"], 100), roof_height(roofs["f32"], 100))

    def test_bf16_under_the_f32_fma_where_the_dot_is_slower(self):
        # As on a Xeon whose VDPBF16PS runs at half the FMA's rate: the GEMM takes the FMA.
        roofline = phx_plot_module("roofline")
        path = os.path.join(self.folder.name, "slow_dot.json")
        bench_with_every_precision(path, bf16_dot=75e9)
        figure, _ = roofline.draw_roofline([path], 1000, 600)
        [axes] = figure.axes
        self.assertEqual(len(lines_by_gid(axes, "roof:bf16")), 1)  # the device has it
        held_to = {p.get_gid() for p in lines_by_gid(axes, "point:")
                   if roofline.precision_of(p.get_label()) == "bf16"}
        self.assertTrue(held_to and all(gid.startswith("point:f32") for gid in held_to), held_to)

    def test_a_point_above_its_roof_is_marked(self):
        # example_bench.json is a run on a shared host: one f32 GEMM outran the f32 peak
        # timed earlier. The point is drawn where it was measured, and said to be above.
        roofline = phx_plot_module("roofline")
        figure, warnings = roofline.draw_roofline([os.path.join(DATA, "example_bench.json")],
                                                  1000, 500)
        self.assertEqual(len(warnings), 1)
        self.assertIn("gemm_f32_phx/256", warnings[0])
        for axes in figure.axes:
            roofs = {line.get_gid().split(":")[1]: line for line in lines_by_gid(axes, "roof:")}
            self.assertEqual(len(roofs), 1)  # the CPU has no bf16 dot timed; the TPU one model
            for point in lines_by_gid(axes, "point:"):
                _, held_to, *above = point.get_gid().split(":")
                [x], [y] = point.get_xdata(), point.get_ydata()
                self.assertEqual(bool(above), y > roof_height(roofs[held_to], x),
                                 point.get_label())

    def test_series_colours_are_distinct(self):
        roofline = phx_plot_module("roofline")
        from matplotlib.colors import to_rgba

        path = os.path.join(self.folder.name, "precisions.json")
        bench_with_every_precision(path)
        for inputs in ([path], [os.path.join(DATA, "example_bench.json")]):
            figure, _ = roofline.draw_roofline(inputs, 1000, 600)
            for axes in figure.axes:
                colours = [to_rgba(p.get_color()) for p in lines_by_gid(axes, "point:")]
                self.assertEqual(len(set(colours)), len(colours), inputs)
        for count in (5, 13, 20, 31):
            styles = roofline.series_styles(count)
            self.assertEqual(len({to_rgba(colour) for colour, _ in styles}), count)
            self.assertGreater(len({marker for _, marker in styles}), min(count, 5) - 1)

    def test_gemm(self):
        self.assertEqual(self.draw("gemm", ["example_bench.json"], "800x600"), (800, 600))

    def test_width_and_height(self):
        output = os.path.join(self.folder.name, "gemm.png")
        result = self.run_plot("gemm", os.path.join(DATA, "example_bench.json"), "-o", output,
                               "--width", "700", "--height", "350")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(png_size(output), (700, 350))

    def assert_one_line_error(self, result, words):
        self.assertEqual(result.returncode, 1)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertTrue(lines[0].startswith("phx-plot: "), lines[0])
        self.assertIn(words, lines[0])
        self.assertNotIn("Traceback", result.stderr)

    def test_bad_inputs(self):
        output = os.path.join(self.folder.name, "out.png")
        bad = os.path.join(self.folder.name, "bad.json")
        with open(bad, "w") as file:
            # A broken event in the middle, not at the end: malformed, not cut short.
            file.write('[\n{"name": "a", "ph": "X", "ts": 1, "dur": 2},\n{"name": \n'
                       '{"ph": "X"}\n]\n')
        wrong_types = os.path.join(self.folder.name, "wrong_types.json")
        with open(wrong_types, "w") as file:
            file.write('[{"name": "a", "ph": "X", "ts": "soon", "dur": 2, "pid": 1, "tid": 1}]')
        cases = [
            (("timeline", bad), "not a Chrome trace"),
            (("timeline", os.path.join(self.folder.name, "missing.json")), "cannot read"),
            (("gemm", bad), "not Google Benchmark JSON"),
            (("timeline", wrong_types), "wrong type"),
            (("roofline", os.path.join(DATA, "example_trace.json")), "not Google Benchmark JSON"),
            (("timeline", os.path.join(DATA, "example_bench.json")), "not a Chrome trace"),
            (("gemm", os.path.join(DATA, "example_bench.json"), "--size", "big"), "--size"),
        ]
        for arguments, words in cases:
            with self.subTest(arguments=arguments):
                self.assert_one_line_error(self.run_plot(*arguments, "-o", output), words)
        self.assertFalse(os.path.exists(output))


if __name__ == "__main__":
    PHX_PLOT, DATA = sys.argv[1], sys.argv[2]
    del sys.argv[1:3]
    if not HAVE_MATPLOTLIB:
        print("test_phx_plot: matplotlib is not installed (Debian: python3-matplotlib): skipped")
        sys.exit(77)
    unittest.main()
