"""The figure every plot draws on: a size in pixels, saved as a PNG of exactly that size."""

import re

from . import PlotError

DPI = 100


def parse_size(text):
    """"WxH" in pixels -> (width, height)."""
    match = re.fullmatch(r"(\d+)x(\d+)", text or "")
    if not match:
        raise PlotError(f"--size {text!r}: expected WIDTHxHEIGHT in pixels, e.g. 1200x600")
    return int(match.group(1)), int(match.group(2))


def check_size(width, height):
    if not (100 <= width <= 20000 and 100 <= height <= 20000):
        raise PlotError(f"size {width}x{height}: each side must be 100 to 20000 pixels")


def new_figure(width, height):
    import matplotlib.pyplot as plt

    check_size(width, height)
    return plt.figure(figsize=(width / DPI, height / DPI), dpi=DPI, layout="constrained")


def save(figure, path):
    import matplotlib.pyplot as plt

    try:
        figure.savefig(path, dpi=DPI, format="png")
    except OSError as error:
        raise PlotError(f"{path}: cannot write: {error.strerror or error}") from None
    finally:
        plt.close(figure)
