"""Events, asynchronous transfers and communicators (comm.h) from Python.

Tolerances. A reduction combines the ranks in rank order, each element alone, summing f32
in f32 (comm.h). So a sum must equal, bit for bit, the same order computed here in f32,
and against the float64 sum of the same f32 inputs it may err by Higham's bound for R - 1
sequential f32 additions, (R - 1) * 2^-24 * sum_r |x_r|. A mean is that sum divided by R
and rounded once: the bound divided by R, plus half an ulp of the mean (2^-24 relative).
Max, min and every copy (gather, broadcast, messages, shards) are exact.
"""

import gc
import os
import threading
import weakref

import numpy as np
import pytest

import phynexus

F32_UNIT = 2.0**-24  # unit roundoff of f32


@pytest.fixture(scope="module")
def four_cpu_devices():
    """Four CPU devices of a context made with PHX_CPU_DEVICES=4 (the variable is read
    when the context is made, and unset again after)."""
    os.environ["PHX_CPU_DEVICES"] = "4"
    try:
        context = phynexus.Context(fallback=False)
    finally:
        del os.environ["PHX_CPU_DEVICES"]
    cpus = [d for d in context.devices() if d.plugin == "cpu"]
    assert len(cpus) == 4
    return cpus


def placement(name, context, four_cpu_devices):
    """The devices of each rank: the CPU device serving every rank, four CPU devices, every
    device that holds f32 round robin (CPU, NPU, TPU and GPU where they are built), or the
    CPU device and the simulated TPU."""
    cpu = phynexus.device("cpu", context)
    if name == "cpu x2":
        return [cpu, cpu]
    if name == "cpu x4":
        return [cpu] * 4
    if name == "four cpu devices":
        return four_cpu_devices
    if name == "every f32 device x4":
        holding = [d for d in context.devices() if phynexus.f32 in d.dtypes]
        return [holding[r % len(holding)] for r in range(4)]
    try:
        return [cpu, phynexus.device("tpu-sim", context)]
    except phynexus.NotFoundError:
        pytest.skip("the tpu-sim plugin is not built")


PLACEMENTS = ["cpu x2", "cpu x4", "four cpu devices", "every f32 device x4", "cpu + tpu-sim"]


def streams_of(devices):
    return [d.stream() for d in devices]


def synchronize(streams):
    for stream in streams:
        stream.synchronize()


def rank_inputs(rng, ranks, shape):
    return [rng.uniform(-4, 4, shape).astype(np.float32) for _ in range(ranks)]


def rank_order_sum(inputs):
    total = inputs[0].copy()
    for x in inputs[1:]:
        total = (total + x).astype(np.float32)
    return total


def sum_bound(inputs):
    return (len(inputs) - 1) * F32_UNIT * np.sum([np.abs(x.astype(np.float64)) for x in inputs],
                                                 axis=0)


@pytest.mark.parametrize("where", PLACEMENTS)
@pytest.mark.parametrize("op", ["sum", "max", "mean"])
def test_all_reduce_matches_float64(where, op, context, four_cpu_devices, rng):
    devices = placement(where, context, four_cpu_devices)
    ranks = len(devices)
    comm = phynexus.Communicator(devices)
    assert comm.ranks == ranks
    streams = streams_of(devices)
    inputs = rank_inputs(rng, ranks, (3, 1000))
    sends = [phynexus.tensor(x, device=d) for x, d in zip(inputs, devices)]
    recvs = [phynexus.empty(x.shape, "f32", device=d) for x, d in zip(inputs, devices)]
    tickets = [comm.all_reduce(r, streams[r], sends[r], recvs[r], op=op) for r in range(ranks)]
    assert tickets == [s.last_ticket for s in streams]
    synchronize(streams)
    exact = np.stack(inputs).astype(np.float64)
    for r in range(ranks):
        got = recvs[r].numpy().astype(np.float64)
        if op == "max":
            np.testing.assert_array_equal(got, exact.max(axis=0))
        elif op == "sum":
            np.testing.assert_array_equal(got, rank_order_sum(inputs))
            assert np.all(np.abs(got - exact.sum(axis=0)) <= sum_bound(inputs))
        else:
            mean = exact.sum(axis=0) / ranks
            bound = sum_bound(inputs) / ranks + F32_UNIT * np.abs(mean)
            assert np.all(np.abs(got - mean) <= bound)


def test_one_thread_queues_every_rank_without_blocking(context):
    """Each rank's call only queues: rank 0's part is not finished (nor an event after it)
    until rank 1 has called, all from this one thread."""
    cpu = phynexus.device("cpu", context)
    comm = phynexus.Communicator([cpu, cpu])
    streams = streams_of([cpu, cpu])
    tensors = [phynexus.tensor(np.full(8, r + 1, np.float32), device=cpu) for r in range(2)]
    first = comm.all_reduce(0, streams[0], tensors[0], tensors[0])
    event = streams[0].record_event()
    assert not streams[0].query(first)
    assert not event.query()
    comm.all_reduce(1, streams[1], tensors[1], tensors[1])
    event.synchronize()
    assert event.query() and streams[0].query(first)
    synchronize(streams)
    for t in tensors:
        np.testing.assert_array_equal(t.numpy(), np.full(8, 3.0))


def test_all_gather_reduce_scatter_broadcast_and_messages(context, rng):
    devices = placement("every f32 device x4", context, None)
    ranks = len(devices)
    comm = phynexus.Communicator(devices)
    streams = streams_of(devices)
    inputs = rank_inputs(rng, ranks, (2, 5))
    sends = [phynexus.tensor(x, device=d) for x, d in zip(inputs, devices)]

    gathered = [phynexus.empty((2 * ranks, 5), "f32", device=d) for d in devices]
    for r in range(ranks):
        comm.all_gather(r, streams[r], sends[r], gathered[r])
    # reduce_scatter: each rank's [ranks, 5] holds one row for every rank.
    rows = rank_inputs(rng, ranks, (ranks, 5))
    wholes = [phynexus.tensor(x, device=d) for x, d in zip(rows, devices)]
    parts = [phynexus.empty((1, 5), "f32", device=d) for d in devices]
    for r in range(ranks):
        comm.reduce_scatter(r, streams[r], wholes[r], parts[r], op="max")
    shared = [phynexus.tensor(inputs[r], device=d) for r, d in enumerate(devices)]
    for r in range(ranks):
        comm.broadcast(r, streams[r], shared[r], 2)
    # A ring: every send is queued before any receive (sends do not wait for them).
    messages = [phynexus.empty((2, 5), "f32", device=d) for d in devices]
    for r in range(ranks):
        comm.send(r, streams[r], sends[r], (r + 1) % ranks)
    for r in range(ranks):
        comm.recv(r, streams[r], messages[r], (r - 1) % ranks)
    synchronize(streams)

    row_max = np.max(rows, axis=0)
    for r in range(ranks):
        np.testing.assert_array_equal(gathered[r].numpy(), np.concatenate(inputs))
        np.testing.assert_array_equal(parts[r].numpy(), row_max[r:r + 1])
        np.testing.assert_array_equal(shared[r].numpy(), inputs[2])
        np.testing.assert_array_equal(messages[r].numpy(), inputs[(r - 1) % ranks])


@pytest.mark.parametrize("axis", [0, 1])
def test_shard_scatter_and_gather_round_trip(axis, context, rng):
    devices = placement("every f32 device x4", context, None)
    ranks = len(devices)
    comm = phynexus.Communicator(devices)
    streams = streams_of(devices)
    full_shape = (ranks * 2, 3) if axis == 0 else (2, ranks * 3)
    part_shape = (2, 3)
    source = rng.uniform(-1, 1, full_shape).astype(np.float32)
    root = 1
    full = phynexus.tensor(source, device=devices[root])
    parts = [phynexus.empty(part_shape, "f32", device=d) for d in devices]
    for r in range(ranks):
        comm.shard_scatter(r, streams[r], full if r == root else None, root, axis, parts[r])
    joined = [phynexus.empty(full_shape, "f32", device=d) for d in devices]
    for r in range(ranks):
        comm.shard_gather(r, streams[r], parts[r], axis, joined[r])
    synchronize(streams)
    expected_parts = np.split(source, ranks, axis=axis)
    for r in range(ranks):
        np.testing.assert_array_equal(parts[r].numpy(), expected_parts[r])
        np.testing.assert_array_equal(joined[r].numpy(), source)


def test_an_event_orders_two_streams(context, rng):
    """Stream b waits for an event of stream a, which is held behind a collective rank 1
    has not called yet: b's work waits too, and runs once the collective has."""
    cpu = phynexus.device("cpu", context)
    comm = phynexus.Communicator([cpu, cpu])
    a, b, other = cpu.stream(), cpu.stream(), cpu.stream()
    x = rng.uniform(-1, 1, 16).astype(np.float32)
    y = phynexus.tensor(x, device=cpu)
    partner = phynexus.tensor(x, device=cpu)
    comm.all_reduce(0, a, y, y)  # y = 2x once rank 1 has called
    event = a.record_event()
    b.wait_event(event)
    z = phynexus.add(y, y, stream=b)
    assert not b.query(b.last_ticket) and not event.query()
    comm.all_reduce(1, other, partner, partner)
    b.synchronize()
    assert event.query()
    np.testing.assert_array_equal(z.numpy(), 4 * x)
    # An event of a finished ticket holds nothing back.
    done = a.record_event(a.last_ticket)
    done.synchronize()
    b.wait_event(done)
    b.synchronize()


def test_async_transfers_hold_the_array_until_the_ticket_finishes(context, rng):
    cpu = phynexus.device("cpu", context)
    comm = phynexus.Communicator([cpu, cpu])
    streams = streams_of([cpu, cpu])
    blocker = [phynexus.tensor(np.ones(4, np.float32), device=cpu) for _ in range(2)]
    values = rng.uniform(-1, 1, (4, 8)).astype(np.float32)
    array = values.copy()
    held = weakref.ref(array)
    tensor = phynexus.empty((4, 8), "f32", device=cpu)
    # Held behind rank 0's part of a collective, so the upload cannot have run yet.
    comm.all_reduce(0, streams[0], blocker[0], blocker[0])
    ticket = streams[0].upload_async(tensor, array)
    del array
    gc.collect()
    assert held() is not None and streams[0].held_transfers == 1
    assert not streams[0].query(ticket)
    comm.all_reduce(1, streams[1], blocker[1], blocker[1])
    streams[0].wait(ticket)
    gc.collect()
    assert held() is None and streams[0].held_transfers == 0
    np.testing.assert_array_equal(tensor.numpy(), values)

    out = np.empty((4, 8), np.float32)
    streams[0].wait(streams[0].download_async(tensor, out))
    np.testing.assert_array_equal(out, values)

    device = phynexus.device("tpu-sim", context) if phynexus.tpu.is_available() else cpu
    copy = phynexus.empty((4, 8), "f32", device=device)
    stream = device.stream()
    stream.wait(stream.copy_async(copy, tensor))
    np.testing.assert_array_equal(copy.numpy(), values)


def test_a_freed_stream_waits_for_its_held_transfers(context):
    """The stream is freed while its upload waits behind a collective that a missing rank
    fails after the communicator's timeout: the array is given back only after that."""
    cpu = phynexus.device("cpu", context)
    comm = phynexus.Communicator([cpu, cpu], timeout_ms=200)
    stream = cpu.stream()
    blocker = phynexus.tensor(np.ones(4, np.float32), device=cpu)
    comm.all_reduce(0, stream, blocker, blocker)
    array = np.arange(4, dtype=np.float32)
    held = weakref.ref(array)
    tensor = phynexus.empty((4,), "f32", device=cpu)
    stream.upload_async(tensor, array)
    del array, stream
    gc.collect()
    assert held() is None
    np.testing.assert_array_equal(tensor.numpy(), np.arange(4))


def test_closing_the_context_gives_held_arrays_back(rng):
    context = phynexus.Context()
    cpu = context.devices()[0]
    comm = phynexus.Communicator([cpu, cpu])
    stream = cpu.stream()
    blocker = phynexus.tensor(np.ones(4, np.float32), device=cpu)
    comm.all_reduce(0, stream, blocker, blocker)
    array = rng.uniform(-1, 1, 4).astype(np.float32)
    held = weakref.ref(array)
    target = phynexus.empty((4,), "f32", device=cpu)  # freeing it would wait for the upload
    stream.upload_async(target, array)
    del array
    context.close()  # fails the collective missing rank 1, then finishes every stream
    with pytest.raises(phynexus.InvalidArgumentError):
        stream.synchronize()
    gc.collect()
    assert held() is not None  # nothing has told this stream yet
    del stream
    gc.collect()
    assert held() is None


def test_ranks_that_miss_a_collective_fail_it_after_the_timeout(context):
    cpu = phynexus.device("cpu", context)
    comm = phynexus.Communicator([cpu, cpu], timeout_ms=100)
    stream = cpu.stream()
    t = phynexus.tensor(np.ones(4, np.float32), device=cpu)
    comm.all_reduce(0, stream, t, t)
    with pytest.raises(phynexus.DeviceUnavailableError):
        stream.synchronize()


def test_ranks_that_disagree_fail_on_every_rank(context):
    cpu = phynexus.device("cpu", context)
    comm = phynexus.Communicator([cpu, cpu])
    streams = streams_of([cpu, cpu])
    t = [phynexus.tensor(np.ones(4, np.float32), device=cpu) for _ in range(2)]
    comm.all_reduce(0, streams[0], t[0], t[0], op="sum")
    comm.all_reduce(1, streams[1], t[1], t[1], op="max")
    for stream in streams:
        with pytest.raises(phynexus.InvalidArgumentError, match="rank"):
            stream.synchronize()


def test_bad_arguments_raise(context, rng):
    cpu = phynexus.device("cpu", context)
    other_device = next((d for d in context.devices() if d.index != cpu.index), None)
    comm = phynexus.Communicator([cpu, cpu])
    stream = cpu.stream()
    t = phynexus.tensor(np.ones(4, np.float32), device=cpu)
    ints = phynexus.tensor(np.ones(4, np.int32), device=cpu)
    other_context = phynexus.Context()
    foreign = phynexus.tensor(np.ones(4, np.float32), device=other_context.devices()[0])
    invalid = phynexus.InvalidArgumentError
    with pytest.raises(invalid, match="rank 2 is out of range"):
        comm.all_reduce(2, stream, t, t)
    with pytest.raises(invalid, match="prod"):
        comm.all_reduce(0, stream, t, t, op="prod")
    with pytest.raises(invalid):
        comm.all_reduce(0, stream, ints, ints, op="mean")  # mean is for floats
    with pytest.raises(invalid, match="another context"):
        comm.all_reduce(0, stream, foreign, foreign)
    with pytest.raises(invalid):
        comm.all_gather(0, stream, t, t)  # recv must hold every rank's part
    with pytest.raises(invalid, match="root 2"):
        comm.broadcast(0, stream, t, 2)
    with pytest.raises(invalid):
        comm.send(0, stream, t, 0)  # to itself
    with pytest.raises(invalid, match="axis 1"):
        comm.shard_gather(0, stream, t, 1, t)
    with pytest.raises(invalid):
        comm.all_reduce(0, stream, None, t)
    if other_device is not None:
        with pytest.raises(invalid, match="on device"):
            comm.all_reduce(0, other_device.stream(), t, t)
    closed = phynexus.tensor(np.ones(4, np.float32), device=cpu)
    closed.close()
    with pytest.raises(invalid, match="closed"):
        comm.all_reduce(0, stream, closed, t)
    # None of the refused calls was queued: a whole collective still runs.
    partner = phynexus.tensor(np.ones(4, np.float32), device=cpu)
    comm.all_reduce(0, stream, t, t)
    comm.all_reduce(1, cpu.stream(), partner, partner)
    stream.synchronize()
    np.testing.assert_array_equal(t.numpy(), np.full(4, 2.0))

    with pytest.raises(invalid, match="no devices"):
        phynexus.Communicator([])
    with pytest.raises(phynexus.NotFoundError):
        phynexus.Communicator([cpu.index, 99], context=context)
    with pytest.raises(invalid, match="more than one context"):
        phynexus.Communicator([cpu, other_context.devices()[0]])
    with pytest.raises(invalid, match="timeout_ms"):
        phynexus.Communicator([cpu], timeout_ms=0)
    with pytest.raises(invalid, match="neither"):
        phynexus.Communicator([cpu, "cpu"])

    foreign_event = other_context.devices()[0].stream().record_event()
    with pytest.raises(invalid, match="another context"):
        stream.wait_event(foreign_event)
    with pytest.raises(invalid, match="not issued"):
        stream.record_event(stream.last_ticket + 10)
    with pytest.raises(invalid):
        stream.wait_event(None)
    with pytest.raises(invalid, match="float32"):
        stream.upload_async(t, np.ones(4, np.float64))
    with pytest.raises(invalid, match="bytes"):
        stream.upload_async(t, np.ones(5, np.float32))
    with pytest.raises(invalid, match="C-contiguous"):
        stream.download_async(t, np.ones(8, np.float32)[::2])
    with pytest.raises(invalid):
        stream.copy_async(t, ints)
    assert stream.held_transfers == 0

    comm.close()
    assert comm.closed
    with pytest.raises(invalid, match="closed"):
        comm.all_reduce(0, stream, t, t)
    other_context.close()


def test_a_communicator_outliving_its_context():
    context = phynexus.Context()
    cpu = context.devices()[0]
    comm = phynexus.Communicator([cpu.index, cpu.index], context=context)
    stream = cpu.stream()
    t = phynexus.tensor(np.ones(4, np.float32), device=cpu)
    event = stream.record_event()
    del context, cpu
    gc.collect()
    assert comm.ranks == 2  # it keeps its context alive
    comm.context.close()
    with pytest.raises(phynexus.InvalidArgumentError):
        comm.all_reduce(0, stream, t, t)
    with pytest.raises(phynexus.InvalidArgumentError):
        event.query()
    del stream, t
    gc.collect()
    assert comm.ranks == 2
    del comm, event
    gc.collect()


@pytest.mark.parametrize("order", [(0, 1, 2, 3, 4, 5, 6), (6, 5, 4, 3, 2, 1, 0),
                                   (0, 2, 4, 6, 1, 3, 5), (3, 0, 6, 1, 5, 2, 4)])
def test_objects_are_freed_in_any_order(order):
    context = phynexus.Context()
    cpu = context.devices()[0]
    comm = phynexus.Communicator([cpu, cpu])
    streams = streams_of([cpu, cpu])
    tensors = [phynexus.tensor(np.ones(4, np.float32), device=cpu) for _ in range(2)]
    for r in range(2):
        comm.all_reduce(r, streams[r], tensors[r], tensors[r])
    event = streams[0].record_event()
    streams[1].upload_async(tensors[1], np.zeros(4, np.float32))
    objects = [context, comm, streams[0], streams[1], tensors[0], tensors[1], event]
    del comm, streams, tensors, event, cpu
    for index in order:
        objects[index] = None
        gc.collect()


def test_threads_drive_the_ranks(context, rng):
    """One thread per rank, each queueing its parts and waiting on its own stream."""
    devices = placement("every f32 device x4", context, None)
    ranks = len(devices)
    comm = phynexus.Communicator(devices)
    inputs = rank_inputs(rng, ranks, (64,))
    results, errors = [None] * ranks, []

    def work(rank):
        try:
            stream = devices[rank].stream()
            t = phynexus.tensor(inputs[rank], device=devices[rank])
            for _ in range(5):
                comm.all_reduce(rank, stream, t, t, op="max")
            stream.synchronize()
            results[rank] = t.numpy()
        except phynexus.Error as error:
            errors.append((rank, error))

    threads = [threading.Thread(target=work, args=(r,)) for r in range(ranks)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    for result in results:
        np.testing.assert_array_equal(result, np.max(inputs, axis=0))
