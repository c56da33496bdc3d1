"""phx-plot's modules: readers for Chrome traces and Google Benchmark JSON, and one module
per plot (timeline, roofline, gemm). docs/plots.md describes the tool."""


class PlotError(Exception):
    """An input phx-plot cannot draw: printed as one line, exit status 1."""
