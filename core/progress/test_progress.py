"""The progress line (phx/progress.h) is drawn on a terminal only: on a pseudo-terminal it
is there, rewritten with \\r; with CI set, PHX_PROGRESS=0, PHX_LOG_LEVEL=off, or on pipes,
nothing of it is written; two threads never mix their lines.
usage: test_progress.py PHX_PROGRESS_DEMO"""

import os
import pty
import re
import subprocess
import sys
import unittest

DEMO = None
ITEMS = "5"


def run_on_terminal(environment, *arguments):
    """Everything the demo writes to a pseudo-terminal that is its stdout and stderr."""
    leader, follower = pty.openpty()
    process = subprocess.Popen([DEMO, ITEMS, *arguments], stdin=follower, stdout=follower,
                               stderr=follower, env=environment)
    os.close(follower)
    written = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the demo exited and closed its side
            break
        if not chunk:
            break
        written += chunk
    os.close(leader)
    assert process.wait(timeout=30) == 0
    return written


def environment(**extra):
    """The caller's environment without what steers the line; show_after 0, as the demo
    takes 100 ms."""
    steering = ("CI", "PHX_PROGRESS", "PHX_LOG_LEVEL", "PHX_PROGRESS_AFTER_MS")
    result = {k: v for k, v in os.environ.items() if k not in steering}
    result["PHX_PROGRESS_AFTER_MS"] = "0"
    result.update(extra)
    return result


class ProgressTest(unittest.TestCase):
    def test_drawn_on_a_terminal(self):
        written = run_on_terminal(environment())
        # Rewritten in place: the last state after a carriage return (a terminal also
        # turns each \n into \r\n, so a bare \r proves nothing).
        self.assertIn(f"\r{ITEMS}/{ITEMS} items".encode(), written)
        self.assertIn(b" left", written)
        self.assertIn(b"done", written)

    def test_not_before_show_after(self):
        written = run_on_terminal(environment(PHX_PROGRESS_AFTER_MS="60000"))
        self.assertNotIn(b"items", written)
        self.assertIn(b"done", written)

    def test_two_threads_never_mix_their_lines(self):
        written = run_on_terminal(environment(), "2")
        line = re.compile(rb"\d+/\d+ items of thread \d  \d+\.\d/s  [0-9:?]+ left  (item \d+)?")
        drawn = [part for part in written.split(b"\r") if b"items" in part]
        self.assertTrue(drawn)
        for part in drawn:
            self.assertRegex(part, b"^" + line.pattern + rb"\x1b\[K$")

    def test_nothing_when_ci_is_set(self):
        self.assert_nothing_drawn(run_on_terminal(environment(CI="true")))

    def test_nothing_when_turned_off(self):
        self.assert_nothing_drawn(run_on_terminal(environment(PHX_PROGRESS="0")))
        self.assert_nothing_drawn(run_on_terminal(environment(PHX_LOG_LEVEL="off")))

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
