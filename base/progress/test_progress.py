"""The progress line (phx/progress.h) is drawn on a terminal only: on a pseudo-terminal it
is there, rewritten with \\r; with CI set, PHX_PROGRESS=0, PHX_LOG_LEVEL=off, or on pipes,
nothing of it is written; two threads never mix their lines; a log message erases it first.
usage: test_progress.py PHX_PROGRESS_DEMO"""

import re
import subprocess
import sys
import unittest

sys.dont_write_bytecode = True  # nothing written into the source tree
from terminal import environment, run_on_terminal  # noqa: E402

DEMO = None
ITEMS = "5"


def run_demo_on_terminal(env, *arguments):
    return run_on_terminal([DEMO, ITEMS, *arguments], env)


class ProgressTest(unittest.TestCase):
    def test_drawn_on_a_terminal(self):
        written = run_demo_on_terminal(environment())
        # Rewritten in place: the last state after a carriage return (a terminal also
        # turns each \n into \r\n, so a bare \r proves nothing).
        self.assertIn(f"\r{ITEMS}/{ITEMS} items".encode(), written)
        self.assertIn(b" left", written)
        self.assertIn(b"done", written)

    def test_not_before_show_after(self):
        written = run_demo_on_terminal(environment(PHX_PROGRESS_AFTER_MS="60000"))
        self.assertNotIn(b"items", written)
        self.assertIn(b"done", written)

    def test_two_threads_never_mix_their_lines(self):
        written = run_demo_on_terminal(environment(), "2")
        line = re.compile(rb"\d+/\d+ items of thread \d  \d+\.\d/s  [0-9:?]+ left  (item \d+)?")
        drawn = [part for part in written.split(b"\r") if b"items" in part]
        self.assertTrue(drawn)
        for part in drawn:
            self.assertRegex(part, b"^" + line.pattern + rb"\x1b\[K$")

    def test_a_log_message_starts_on_a_clean_line(self):
        # The library's log erases the line before its message (erase_progress_line); the
        # line is drawn again after it.
        written = run_demo_on_terminal(environment(), "1", "log")
        self.assertIn(b"\r\x1b[Ka log message\r\n", written)
        self.assertNotRegex(written, rb"items[^\r]*a log message")
        self.assertIn(b"items", written.split(b"a log message")[1])

    def test_nothing_when_ci_is_set(self):
        self.assert_nothing_drawn(run_demo_on_terminal(environment(CI="true")))

    def test_nothing_when_turned_off(self):
        self.assert_nothing_drawn(run_demo_on_terminal(environment(PHX_PROGRESS="0")))
        self.assert_nothing_drawn(run_demo_on_terminal(environment(PHX_LOG_LEVEL="off")))

    def test_nothing_on_pipes(self):
        result = subprocess.run([DEMO, ITEMS], capture_output=True, env=environment(),
                                timeout=30, check=True)
        self.assertEqual(result.stderr, b"")
        self.assertEqual(result.stdout, b"done\n")

    def assert_nothing_drawn(self, written):
        self.assertNotIn(b"items", written)
        self.assertNotIn(b"\r\x1b[K", written)
        self.assertIn(b"done", written)


if __name__ == "__main__":
    DEMO = sys.argv.pop(1)
    unittest.main()
