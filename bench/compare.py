#!/usr/bin/python3
"""Compares two runs of the benchmarks: for every benchmark both ran, its time per
iteration before and after (the median where the run has repetitions), new over old, and
the same for its rate counter (FLOPS, OPS, bytes or items per second) where it has one; a
time that moved by more than the threshold is marked faster or slower.

  bench/compare.py OLD NEW [--threshold PCT] [--fail-slower PCT]

OLD and NEW: each a folder that bench/run.sh --out wrote (its NAME.json files, matched by
name), or one Google Benchmark JSON file. --threshold: the change in percent that counts
(default 5). --fail-slower PCT: exit status 1 when a benchmark's time grew by more than
PCT percent. A bad input is one line on stderr and exit status 2. Reads the JSON with
phx-plot's reader (tools/phx-plot/phx_plot/bench.py); needs nothing beyond python3."""

import argparse
import os
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, str(Path(os.path.realpath(__file__)).parent.parent / "tools" / "phx-plot"))
from phx_plot import PlotError  # noqa: E402
from phx_plot.bench import read_results  # noqa: E402

RATE_COUNTERS = ("FLOPS", "OPS", "bytes_per_second", "items_per_second")


def json_files(path):
    """{program name: JSON file} of a run folder, or {"": path} for one file."""
    path = Path(path)
    if path.is_dir():
        files = {f.stem: f for f in sorted(path.glob("*.json"))}
        if not files:
            raise PlotError(f"{path}: no .json files (a folder of bench/run.sh --out)")
        return files
    if not path.exists():
        raise PlotError(f"{path}: no such file or folder")
    return {"": path}


def results_by_name(files):
    """{(program, benchmark): Result} of every file."""
    return {(program, r.name): r for program, f in files.items() for r in read_results([f])}


def rate_of(result):
    for key in RATE_COUNTERS:
        if result.get(key):
            return key, result.get(key)
    return None, None


def compare(old_path, new_path, threshold):
    """The table's rows and the benchmarks only one side ran."""
    old_files, new_files = json_files(old_path), json_files(new_path)
    if ("" in old_files) != ("" in new_files):
        raise PlotError("compare a folder with a folder, or a file with a file")
    old, new = results_by_name(old_files), results_by_name(new_files)
    rows = []
    for key in sorted(old.keys() & new.keys()):
        t_old, t_new = old[key].real_time_ns(), new[key].real_time_ns()
        if not t_old or not t_new:
            continue
        ratio = t_new / t_old
        verdict = "slower" if ratio > 1 + threshold else "faster" if ratio < 1 - threshold else ""
        counter, r_old = rate_of(old[key])
        r_new = new[key].get(counter) if counter else None
        rate_ratio = r_new / r_old if r_old and r_new else None
        rows.append((key, t_old, t_new, ratio, counter, rate_ratio, verdict))
    only = sorted(old.keys() ^ new.keys())
    return rows, only, old.keys()


def time_text(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def main():
    parser = argparse.ArgumentParser(prog="bench/compare.py", description=__doc__.split("\n")[0])
    parser.add_argument("old", help="a bench/run.sh --out folder or a JSON file")
    parser.add_argument("new", help="the same, of the run to compare")
    parser.add_argument("--threshold", type=float, default=5.0, help="percent (default 5)")
    parser.add_argument("--fail-slower", type=float, metavar="PCT",
                        help="exit 1 when a time grew by more than PCT percent")
    arguments = parser.parse_args()
    try:
        rows, only, old_keys = compare(arguments.old, arguments.new, arguments.threshold / 100)
    except PlotError as error:
        print(f"compare.py: {error}", file=sys.stderr)
        return 2
    if not rows:
        print("compare.py: the two runs have no benchmark in common", file=sys.stderr)
        return 2
    width = max(len(f"{p}:{n}" if p else n) for (p, n), *_ in rows)
    print(f"{'benchmark':<{width}} {'old':>10} {'new':>10} {'new/old':>8} {'rate new/old':>13}")
    for (program, name), t_old, t_new, ratio, counter, rate_ratio, verdict in rows:
        label = f"{program}:{name}" if program else name
        rate = f"{rate_ratio:.3f} {counter}" if rate_ratio else "-"
        line = (f"{label:<{width}} {time_text(t_old):>10} {time_text(t_new):>10} {ratio:>8.3f} "
                f"{rate:>13}  {verdict}")
        print(line.rstrip())
    faster = sum(r[-1] == "faster" for r in rows)
    slower = sum(r[-1] == "slower" for r in rows)
    print(f"\n{len(rows)} compared at a threshold of {arguments.threshold:g}%: {faster} faster, "
          f"{slower} slower, {len(rows) - faster - slower} within it")
    for program, name in only:
        side = "old" if (program, name) in old_keys else "new"
        print(f"only in the {side} run: {program + ':' if program else ''}{name}")
    if arguments.fail_slower is not None and any(r[3] > 1 + arguments.fail_slower / 100 for r in rows):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
