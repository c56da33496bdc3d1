"""What the tests of the progress line (test_progress.py, tests/onnx/test_import_progress.py)
share: running a program on a pseudo-terminal, and an environment that leaves the line
to the test alone."""

import os
import pty
import subprocess

STEERING = ("CI", "PHX_PROGRESS", "PHX_LOG_LEVEL", "PHX_PROGRESS_AFTER_MS")


def run_on_terminal(command, environment, timeout=60):
    """Everything command writes to a pseudo-terminal that is its stdin, stdout and stderr;
    it must exit with 0."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(command, stdin=follower, stdout=follower, stderr=follower,
                               env=environment)
    os.close(follower)
    written = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the program exited and closed its side
            break
        if not chunk:
            break
        written += chunk
    os.close(leader)
    assert process.wait(timeout=timeout) == 0, written
    return written


def environment(**extra):
    """The caller's environment without what steers the line, show_after 0 (the tests'
    work takes less than two seconds), and extra (a None value unsets its variable)."""
    result = {k: v for k, v in os.environ.items() if k not in STEERING}
    result["PHX_PROGRESS_AFTER_MS"] = "0"
    result.update(extra)
    return {k: v for k, v in result.items() if v is not None}
