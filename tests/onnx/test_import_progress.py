"""The library's progress line (phx/progress.h) while phx_model_load_onnx imports a model
and phx_graph_compile compiles it, seen from a program of the library (phx-run-onnx): on
a pseudo-terminal, with show_after 0, the import's weights and nodes and the compile's
passes and nodes are drawn with their totals and erased before the program writes; with
the default show_after a small model draws nothing; with CI set or PHX_PROGRESS=0, or on
pipes, nothing of it is written.
usage: test_import_progress.py PHX_RUN_ONNX MODEL.onnx"""

import os
import subprocess
import sys
import unittest

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "base", "progress"))
from terminal import environment, run_on_terminal  # noqa: E402

RUN_ONNX = None
MODEL = None


def run_model_on_terminal(env):
    return run_on_terminal([RUN_ONNX, MODEL], env)


class ImportProgressTest(unittest.TestCase):
    def test_import_and_compile_drawn_on_a_terminal(self):
        written = run_model_on_terminal(environment())
        # Each stage, from the start of a line (\r) with done/total.
        self.assertRegex(written, rb"\r\d+\.\d/\d+\.\d kB of weights  ")
        self.assertRegex(written, rb"\r\d+/4 nodes  \d+\.\d/s  ")
        self.assertRegex(written, rb"\r\d+/\d+ passes  \d+\.\d/s  ")
        self.assertRegex(written, rb"\r\d+/\d+ nodes lowered  \d+\.\d/s  ")
        self.assertIn(b" left  ", written)
        # Erased before the program's own output, which starts on a clean line.
        self.assertIn(b"\r\x1b[Kplacement:", written)
        # One line: nothing of it is followed by a newline.
        self.assertNotRegex(written, rb"(weights|nodes|passes|lowered)  [^\r]*\n")

    def test_nothing_before_show_after(self):
        self.assert_nothing_drawn(run_model_on_terminal(environment(PHX_PROGRESS_AFTER_MS=None)))

    def test_nothing_when_ci_is_set(self):
        self.assert_nothing_drawn(run_model_on_terminal(environment(CI="1")))

    def test_nothing_when_turned_off(self):
        self.assert_nothing_drawn(run_model_on_terminal(environment(PHX_PROGRESS="0")))

    def test_nothing_on_pipes(self):
        result = subprocess.run([RUN_ONNX, MODEL], capture_output=True, env=environment(),
                                timeout=60, check=True)
        self.assertNotIn(b"\r", result.stderr)
        self.assertNotIn(b"\x1b[K", result.stderr)
        self.assertIn(b"placement:", result.stdout)

    def assert_nothing_drawn(self, written):
        self.assertNotIn(b"\x1b[K", written)
        self.assertNotRegex(written, rb"\d/\d+ (nodes|passes)")
        self.assertIn(b"placement:", written)


if __name__ == "__main__":
    RUN_ONNX, MODEL = sys.argv.pop(1), sys.argv.pop(1)
    unittest.main()
