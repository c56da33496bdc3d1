"""Object lifetimes, streams, tickets, profiling and threads."""

import gc
import threading

import numpy as np
import pytest

import phynexus


def test_a_tensor_outliving_its_context_is_safe():
    context = phynexus.Context()
    t = phynexus.tensor(np.ones(4, np.float32), device=context.devices()[0])
    del context
    gc.collect()
    # The tensor keeps its context alive: still usable.
    np.testing.assert_array_equal((t + t).numpy(), [2, 2, 2, 2])


def test_a_closed_context_leaves_its_objects_failing_cleanly():
    context = phynexus.Context()
    device = context.devices()[0]
    t = phynexus.tensor(np.ones(4, np.float32), device=device)
    stream = device.stream()
    context.close()
    assert context.closed
    with pytest.raises(phynexus.InvalidArgumentError):
        t.numpy()
    with pytest.raises(phynexus.InvalidArgumentError):
        t + t
    with pytest.raises(phynexus.InvalidArgumentError):
        stream.synchronize()
    with pytest.raises(phynexus.InvalidArgumentError):
        context.device_count()
    del t, stream
    gc.collect()
    context.close()


@pytest.mark.parametrize("order", [(0, 1, 2, 3, 4), (4, 3, 2, 1, 0), (1, 3, 0, 4, 2),
                                   (2, 0, 4, 3, 1)])
def test_objects_are_freed_in_any_order(order):
    context = phynexus.Context()
    device = context.devices()[0]
    x = phynexus.tensor(np.ones((2, 2), np.float32), device=device)
    y = x @ x
    stream = device.stream()
    compiled = phynexus.compile(phynexus.nn.Linear(2, 2, device=device), x)
    compiled(x).numpy()
    objects = [context, x, y, stream, compiled]
    del compiled
    for index in order:
        objects[index] = None
        gc.collect()


def test_streams_tickets_and_profile_records():
    context = phynexus.Context(profile=True)
    device = context.devices()[0]
    stream = device.stream()
    x = phynexus.tensor(np.ones((4, 4), np.float32), device=device)
    y = phynexus.matmul(x, x, stream=stream)
    ticket = stream.last_ticket
    assert ticket >= 1
    stream.wait(ticket)
    assert stream.query(ticket)
    stream.synchronize()
    np.testing.assert_array_equal(y.numpy(), np.full((4, 4), 4.0))
    records = stream.records()
    assert [r["op"] for r in records] == ["matmul"]
    assert records[0]["ticket"] == ticket and "f32[4x4]" in records[0]["signature"]
    stream.profile_clear()
    assert stream.records() == []
    with pytest.raises(phynexus.InvalidArgumentError):
        stream.wait(ticket + 100)


def test_memory_limit_gives_out_of_memory():
    context = phynexus.Context()
    device = context.devices()[0]
    device.set_memory_limit(1 << 20)
    with pytest.raises(phynexus.OutOfMemoryError):
        phynexus.empty([1 << 20], "f32", device=device)
    device.set_memory_limit(0)
    assert phynexus.empty([1 << 20], "f32", device=device).nbytes == 4 << 20


def test_set_log_level():
    phynexus.set_log_level("error")
    phynexus.set_log_level("warn")
    with pytest.raises(phynexus.InvalidArgumentError):
        phynexus.set_log_level("loud")


def test_eight_threads_share_a_context(rng):
    context = phynexus.Context()
    devices = context.devices()
    a = rng.uniform(-1, 1, (16, 16)).astype(np.float32)
    expected = np.maximum(a.astype(np.float64) @ a, 0)
    errors = []

    def work(index):
        try:
            device = devices[index % len(devices)]
            x = phynexus.tensor(a, device=device)
            for _ in range(20):
                y = phynexus.matmul(x, x, activation="relu").numpy()
                # f32 accumulation of K = 16 products (2^-19), or bf16 inputs on a TPU
                # (4 * 2^-8): the second bound covers both, relative to max |y| <= 16.
                if np.max(np.abs(y - expected)) > 16 * 4 * 2.0**-8:
                    errors.append((index, "wrong result"))
        except phynexus.Error as error:
            errors.append((index, error))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
