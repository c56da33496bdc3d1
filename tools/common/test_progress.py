"""The progress line (progress.h) is drawn on a terminal only: on a pseudo-terminal it is
there, rewritten with \r; with CI set, or on pipes, nothing of it is written.
usage: test_progress.py PHX_PROGRESS_DEMO"""

import os
import pty
import subprocess
import sys
import unittest

DEMO = None
ITEMS = "5"


def run_on_terminal(environment):
    """Everything the demo writes to a pseudo-terminal that is its stdout and stderr."""
    leader, follower = pty.openpty()
    process = subprocess.Popen([DEMO, ITEMS, "0"], stdin=follower, stdout=follower,
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


def environment_without_ci(**extra):
    environment = {k: v for k, v in os.environ.items() if k != "CI"}
    environment.update(extra)
    return environment


class ProgressTest(unittest.TestCase):
    def test_drawn_on_a_terminal(self):
        written = run_on_terminal(environment_without_ci())
        # Rewritten in place: the last state after a carriage return (a terminal also
        # turns each \n into \r\n, so a bare \r proves nothing).
        self.assertIn(f"\r{ITEMS}/{ITEMS} items".encode(), written)
        self.assertIn(b" left", written)
        self.assertIn(b"done", written)

    def test_nothing_when_ci_is_set(self):
        written = run_on_terminal(environment_without_ci(CI="true"))
        self.assertNotIn(b"items", written)
        self.assertNotIn(b"\r\x1b[K", written)
        self.assertIn(b"done", written)

    def test_nothing_on_pipes(self):
        result = subprocess.run([DEMO, ITEMS, "0"], capture_output=True,
                                env=environment_without_ci(), timeout=30, check=True)
        self.assertEqual(result.stderr, b"")
        self.assertEqual(result.stdout, b"done\n")


if __name__ == "__main__":
    DEMO = sys.argv.pop(1)
    unittest.main()
