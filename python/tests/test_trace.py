"""phynexus.trace: the trace of a with block is JSON with the block's ops in it."""

import json

import numpy as np
import pytest

import phynexus


def test_trace_holds_the_ops_of_the_block(tmp_path):
    path = tmp_path / "run.json"
    a = phynexus.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device="cpu")
    with phynexus.trace(path) as written:
        total = (a + a).numpy()
    assert written == path
    np.testing.assert_array_equal(total, 2 * np.arange(6, dtype=np.float32).reshape(2, 3))

    events = json.loads(path.read_text())  # complete JSON once the block has ended
    adds = [e for e in events if e.get("cat") == "op" and e["name"] == "add"]
    assert len(adds) == 1
    assert adds[0]["args"]["signature"] == "f32[2x3], f32[2x3] -> f32[2x3]"
    assert adds[0]["ph"] == "X" and adds[0]["dur"] >= 0
    assert any(e["name"] == "download" for e in events)
    named = {e["pid"] for e in events if e["name"] == "process_name"}
    assert {e["pid"] for e in events} <= named


def test_trace_refuses_an_unwritable_path(tmp_path):
    with pytest.raises(phynexus.InvalidArgumentError, match="cannot write the trace"):
        with phynexus.trace(tmp_path / "no-such-folder" / "run.json"):
            pytest.fail("the block ran without a trace")
    # Nothing was begun: a trace to a good path works afterwards.
    with phynexus.trace(tmp_path / "run.json"):
        pass
    assert json.loads((tmp_path / "run.json").read_text())
