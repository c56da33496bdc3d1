"""bench/compare.py on runs written here: the ratios and verdicts of the benchmarks both
runs have, medians of repetitions, time units, the benchmarks only one side ran, folders
matched by program, --fail-slower's exit status, and bad inputs as one line and status 2.
usage: test_compare.py COMPARE_PY"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

COMPARE = None


def run_json(path, runs):
    """A Google Benchmark JSON file of runs: (name, real_time, unit, counters, repetition)."""
    rows = []
    for name, time, unit, counters, aggregate in runs:
        row = {"name": name + ("_" + aggregate if aggregate else ""), "run_name": name,
               "run_type": "aggregate" if aggregate else "iteration", "real_time": time,
               "cpu_time": time, "time_unit": unit, **counters}
        if aggregate:
            row["aggregate_name"] = aggregate
        rows.append(row)
    with open(path, "w", encoding="utf-8") as file:
        json.dump({"context": {"host_name": "test"}, "benchmarks": rows}, file)


def compare(*args):
    done = subprocess.run([sys.executable, COMPARE, *args], capture_output=True, text=True,
                          check=False)
    return done.returncode, done.stdout, done.stderr


class Compare(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.dir = self.folder.name

    def tearDown(self):
        self.folder.cleanup()

    def path(self, *parts):
        path = os.path.join(self.dir, *parts)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return path

    def test_ratios_verdicts_units_and_medians(self):
        old, new = self.path("old.json"), self.path("new.json")
        run_json(old, [("gemm/256", 2.0, "ms", {"FLOPS": 1e10}, None),
                       ("add/1", 500.0, "ns", {}, None),
                       ("same/1", 100.0, "us", {}, None),
                       ("gone/1", 1.0, "ns", {}, None)])
        # gemm: 1 ms where it was 2 (twice as fast, its rate twice), add: 0.6 us where it was
        # 500 ns (1.2x the time), same: 103 us against 100 (within 5%), given as the median
        # of three repetitions.
        run_json(new, [("gemm/256", 1000.0, "us", {"FLOPS": 2e10}, None),
                       ("add/1", 0.6, "us", {}, None),
                       ("same/1", 90.0, "us", {}, None), ("same/1", 103.0, "us", {}, None),
                       ("same/1", 200.0, "us", {}, None),
                       ("new/1", 1.0, "ns", {}, None)])
        status, out, err = compare(old, new)
        self.assertEqual((status, err), (0, ""))
        lines = {line.split()[0]: line for line in out.splitlines() if line}
        self.assertIn(" 0.500 ", lines["gemm/256"])
        self.assertIn("2.000 FLOPS", lines["gemm/256"])
        self.assertTrue(lines["gemm/256"].endswith("faster"))
        self.assertIn(" 1.200 ", lines["add/1"])
        self.assertTrue(lines["add/1"].endswith("slower"))
        self.assertIn(" 1.030 ", lines["same/1"])
        self.assertFalse(lines["same/1"].rstrip().endswith(("faster", "slower")))
        self.assertIn("3 compared at a threshold of 5%: 1 faster, 1 slower, 1 within it", out)
        self.assertIn("only in the old run: gone/1", out)
        self.assertIn("only in the new run: new/1", out)
        # A threshold of 25% counts add's 20% as within it.
        _, out, _ = compare(old, new, "--threshold", "25")
        self.assertIn("1 faster, 0 slower, 2 within it", out)

    def test_fail_slower(self):
        old, new = self.path("old.json"), self.path("new.json")
        run_json(old, [("op/1", 100.0, "ns", {}, None)])
        run_json(new, [("op/1", 115.0, "ns", {}, None)])
        self.assertEqual(compare(old, new, "--fail-slower", "20")[0], 0)
        self.assertEqual(compare(old, new, "--fail-slower", "10")[0], 1)

    def test_folders_match_programs(self):
        # The same benchmark name in two programs compares within each program only.
        for side, times in (("old", (10.0, 20.0)), ("new", (10.0, 40.0))):
            run_json(self.path(side, "bench_a.json"), [("x/1", times[0], "ms", {}, None)])
            run_json(self.path(side, "bench_b.json"), [("x/1", times[1], "ms", {}, None)])
        status, out, _ = compare(self.path("old"), self.path("new"))
        self.assertEqual(status, 0)
        lines = {line.split()[0]: line for line in out.splitlines() if line}
        self.assertIn(" 1.000 ", lines["bench_a:x/1"])
        self.assertIn(" 2.000 ", lines["bench_b:x/1"])

    def test_bad_inputs_are_one_line(self):
        good = self.path("good.json")
        run_json(good, [("op/1", 1.0, "ns", {}, None)])
        broken = self.path("broken.json")
        with open(broken, "w", encoding="utf-8") as file:
            file.write("{\"benchmarks\": [")
        other = self.path("other.json")
        run_json(other, [("elsewhere/1", 1.0, "ns", {}, None)])
        os.makedirs(self.path("folder", "x"), exist_ok=True)
        cases = [(good, broken), (good, self.path("missing.json")), (good, other),
                 (good, self.path("folder")), (self.path("folder", "x"), self.path("folder", "x"))]
        for old, new in cases:
            status, out, err = compare(old, new)
            self.assertEqual(status, 2, (old, new, out, err))
            self.assertEqual(len(err.strip().splitlines()), 1, err)
            self.assertNotIn("Traceback", err)


if __name__ == "__main__":
    COMPARE = sys.argv.pop(1)
    unittest.main()
