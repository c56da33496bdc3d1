"""None or an object of a wrong type given to anything the extension exports raises a
Python exception, never crashes (docs/python.md, "Errors"). Each probe runs in a
subprocess, so that a crash fails the test with the call that caused it instead of
ending the test run."""

import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

# Raised by the binding itself (a phynexus.Error subclass) or by pybind11 when it cannot
# convert an argument (TypeError, which names the types it takes).
EXPECTED = {"TypeError", "InvalidArgumentError", "NotFoundError", "UnsupportedError"}


def run_python(code_or_args):
    return subprocess.run([sys.executable, *code_or_args], capture_output=True, text=True,
                          timeout=100, cwd=HERE)


def crash_report(result):
    calls = [line for line in result.stdout.splitlines() if line.startswith("CALL ")]
    last = calls[-1] if calls else "(before the first call)"
    return (f"exit status {result.returncode} after {last}\n"
            f"stderr: {result.stderr[-2000:]}")


def test_every_binding_refuses_none_and_wrong_types():
    result = run_python([os.path.join(HERE, "bad_argument_probe.py")])
    assert result.returncode == 0, crash_report(result)
    lines = result.stdout.splitlines()
    probed = re.search(r"^PROBED (\d+) calls$", result.stdout, re.MULTILINE)
    assert probed, result.stdout[-2000:]
    # Every class and function of the module is probed: well over 200 calls today.
    assert int(probed.group(1)) >= 200
    outcomes = {}
    for call, outcome in zip(lines[0::2], lines[1::2]):
        assert call.startswith("CALL ") and outcome.startswith("-> "), (call, outcome)
        outcomes[call[5:]] = outcome[3:]
    for call, outcome in outcomes.items():
        if outcome == "ok":
            continue  # None is a valid value there (an optional parameter)
        kind = outcome.split(":", 1)[0].removeprefix("raised ")
        assert kind in EXPECTED, f"{call}: {outcome}"
        # A None object of the binding's own classes is refused by name, or by pybind11.
        if "with None" in call and "phynexus._phynexus." in call.split(": ", 1)[1]:
            assert kind in ("TypeError", "InvalidArgumentError"), f"{call}: {outcome}"


# The three calls users found crashing, each named in its error.
@pytest.mark.parametrize("call, name", [
    ("from phynexus import _phynexus; _phynexus.Graph(None)", "Graph: the context"),
    ("from phynexus import _phynexus; _phynexus.to_dlpack(None)", "to_dlpack: the tensor"),
    ("from phynexus import _compile; _compile.Tracer(None)", "Graph: the context"),
])
def test_none_for_a_context_or_tensor_is_an_invalid_argument(call, name):
    code = (f"import phynexus\ntry:\n    {call}\n"
            "except phynexus.InvalidArgumentError as error:\n    print('raised', error)\n")
    result = run_python(["-c", code])
    assert result.returncode == 0, crash_report(result)
    assert f"raised phynexus: {name} is None" in result.stdout
