"""Reads Google Benchmark's JSON output (--benchmark_out=FILE --benchmark_out_format=json):
one result per benchmark run, the median where the run has repetitions."""

import json
import re
import statistics

from . import PlotError

# The counters that hold a rate of floating-point operations, in FLOP/s.
FLOP_RATE_COUNTERS = ("FLOPS", "GFLOP/s")


# Google Benchmark's time units, in nanoseconds.
_TIME_UNITS_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


class Result:
    def __init__(self, name, values, context, time_unit="ns"):
        self.name = name  # the run's name, e.g. "gemm_f32_phx/256/real_time"
        self.family = name.split("/")[0]  # e.g. "gemm_f32_phx"
        self.values = values  # counter or field -> number
        self.context = context  # the file's "context" (host, CPUs)
        self.time_unit = time_unit  # of real_time and cpu_time

    def get(self, key):
        return self.values.get(key)

    def real_time_ns(self):
        """The wall-clock time of one iteration in ns, or None."""
        time = self.values.get("real_time")
        scale = _TIME_UNITS_NS.get(self.time_unit)
        return None if time is None or scale is None else time * scale

    def flop_rate(self):
        """FLOP/s, or None when the benchmark counts no floating-point operations."""
        for key in FLOP_RATE_COUNTERS:
            if key in self.values:
                return self.values[key]
        return None

    def size(self):
        """The problem size N: the counter "N", else the first numeric argument of the name."""
        if "N" in self.values:
            return int(self.values["N"])
        match = re.search(r"/(\d+)(?:/|$)", self.name)
        return int(match.group(1)) if match else None


def _numbers(row):
    return {k: v for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _read_file(path):
    try:
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
    except OSError as error:
        raise PlotError(f"{path}: cannot read: {error.strerror or error}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise PlotError(f"{path}: not Google Benchmark JSON: {error}") from None
    rows = data.get("benchmarks") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "name" in r for r in rows):
        raise PlotError(f"{path}: not Google Benchmark JSON (no \"benchmarks\" list of named runs)")
    return rows, data.get("context") or {}


def _results_of(rows, context):
    medians, repetitions, units = {}, {}, {}
    for row in rows:
        if row.get("error_occurred"):
            continue
        run = str(row.get("run_name", row["name"]))
        units[run] = str(row.get("time_unit", "ns"))
        if row.get("run_type") == "aggregate":
            if row.get("aggregate_name") == "median":
                medians[run] = _numbers(row)
        else:
            repetitions.setdefault(run, []).append(_numbers(row))
    results = []
    for run, values in medians.items():
        results.append(Result(run, values, context, units[run]))
    for run, rows_of_run in repetitions.items():
        if run in medians:
            continue
        keys = set.intersection(*(set(r) for r in rows_of_run))
        values = {k: statistics.median(r[k] for r in rows_of_run) for k in keys}
        results.append(Result(run, values, context, units[run]))
    return results


def read_results(paths):
    """Every benchmark result of the files, in file order."""
    results = []
    for path in paths:
        rows, context = _read_file(path)
        results.extend(_results_of(rows, context))
    return results
