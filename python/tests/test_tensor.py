"""Tensors: dtypes through numpy, operators, moving between devices, DLPack, bad input."""

import gc

import numpy as np
import pytest

import phynexus


@pytest.mark.parametrize("name, numpy_dtype", [("f32", np.float32), ("f16", np.float16),
                                               ("i8", np.int8), ("i16", np.int16),
                                               ("i32", np.int32), ("u8", np.uint8)])
def test_every_dtype_round_trips_on_every_device(all_devices, name, numpy_dtype, rng):
    values = rng.integers(0, 100, (3, 5)).astype(numpy_dtype)
    for device in all_devices:
        if phynexus.dtype(name) not in device.dtypes:
            continue
        t = phynexus.tensor(values, device=device)
        assert t.dtype is phynexus.dtype(name) and t.shape == (3, 5)
        back = t.numpy()
        assert back.dtype == numpy_dtype
        np.testing.assert_array_equal(back, values)


def test_bf16_rounds_to_nearest_even_and_reads_back_as_float32(all_devices):
    # 1 + 2^-8 is halfway between bf16's 1 and 1 + 2^-7: ties to even gives 1;
    # 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: gives 1 + 2^-6.
    values = np.array([1 + 2.0**-8, 1 + 3 * 2.0**-8, -2.5, 0.0, np.inf], dtype=np.float32)
    expected = np.array([1.0, 1 + 2.0**-6, -2.5, 0.0, np.inf], dtype=np.float32)
    for device in all_devices:
        if phynexus.bf16 not in device.dtypes:
            continue
        t = phynexus.tensor(values, device=device, dtype="bf16")
        back = t.numpy()
        assert back.dtype == np.float32
        np.testing.assert_array_equal(back, expected)
    nan = phynexus.tensor(np.array([np.nan], np.float32), dtype="bf16").numpy()
    assert np.isnan(nan).all()
    bits = phynexus.tensor(np.array([0x3F80], np.uint16), dtype="bf16").numpy()
    assert bits[0] == 1.0


def test_float64_and_int64_arrays_convert():
    assert phynexus.tensor(np.ones(3)).dtype is phynexus.f32
    assert phynexus.tensor(np.arange(3)).dtype is phynexus.i32
    with pytest.raises(phynexus.InvalidArgumentError):
        phynexus.tensor(np.array([2**40]))
    with pytest.raises(phynexus.InvalidArgumentError):
        phynexus.tensor(np.array([300]), dtype="i8")


def test_operators_match_numpy(rng):
    a = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    b = rng.uniform(0.5, 1, (3, 4)).astype(np.float32)
    c = rng.uniform(-1, 1, (4, 2)).astype(np.float32)
    ta, tb, tc = phynexus.tensor(a), phynexus.tensor(b), phynexus.tensor(c)
    # One f32 rounding of an exact result (K = 4 products for @): 2^-24 relative each.
    for got, want in (((ta + tb), a + b), ((ta - tb), a - b), ((ta * tb), a * b),
                      ((ta / tb), a / b), ((ta @ tc), a @ c), ((ta + 1), a + 1),
                      ((2 * ta), 2 * a), ((1 - ta), 1 - a), ((-ta), -a),
                      (phynexus.relu(ta), np.maximum(a, 0))):
        np.testing.assert_allclose(got.numpy(), want, rtol=4 * 2.0**-24, atol=4 * 2.0**-24)


def test_to_moves_between_devices_and_keeps_the_values(all_devices, rng):
    values = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    t = phynexus.tensor(values, device=all_devices[0])
    for device in all_devices:
        moved = t.to(device)
        assert moved.device == device
        np.testing.assert_array_equal(moved.numpy(), values)
    assert t.to(all_devices[0]) is t


def test_dlpack_both_ways(rng):
    values = rng.uniform(-1, 1, (2, 3, 4)).astype(np.float32)
    t = phynexus.from_dlpack(values)
    assert t.shape == (2, 3, 4) and t.dtype is phynexus.f32
    assert t.__dlpack_device__() == (1, 0)
    np.testing.assert_array_equal(np.from_dlpack(t), values)
    for dtype in (np.float16, np.int8, np.int16, np.int32, np.uint8):
        arr = (values * 50).astype(dtype)
        np.testing.assert_array_equal(np.from_dlpack(phynexus.from_dlpack(arr)), arr)
    strided = values[:, ::2, :]
    np.testing.assert_array_equal(phynexus.from_dlpack(strided).numpy(), strided)
    on_npu = phynexus.from_dlpack(values, device="npu")
    assert on_npu.device.type == "npu"


def test_dlpack_capsule_is_consumed_once():
    t = phynexus.tensor(np.arange(4, dtype=np.float32))
    capsule = t.__dlpack__()
    assert phynexus.from_dlpack(capsule).numpy().tolist() == [0, 1, 2, 3]
    with pytest.raises(phynexus.InvalidArgumentError):
        phynexus.from_dlpack(capsule)
    unused = t.__dlpack__()
    del unused  # freed by the capsule's destructor, nothing leaks or crashes


def test_dlpack_refuses_what_it_cannot_take():
    with pytest.raises(phynexus.UnsupportedError):
        phynexus.from_dlpack(np.zeros(3, dtype=np.float64))
    with pytest.raises(phynexus.InvalidArgumentError):
        phynexus.tensor([1.0]).__dlpack__(stream=7)
    with pytest.raises(BufferError):
        phynexus.tensor([1.0], device="npu").__dlpack__(copy=False)
    with pytest.raises(BufferError):
        phynexus.from_dlpack(np.zeros(3, dtype=np.float32), device="npu", copy=False)
    with pytest.raises(BufferError):
        phynexus.from_dlpack(np.zeros(4, dtype=np.float32)[::2], copy=False)
    with pytest.raises(ValueError):
        phynexus.tensor([1.0], device="npu").__array__(copy=False)
    assert phynexus.from_dlpack(phynexus.tensor([1.0]).__dlpack__(max_version=(1, 0))).shape == (1,)


def test_cpu_tensors_share_memory_with_numpy_and_dlpack(rng):
    # numpy's memory in a CPU tensor, in place: each side sees what the other writes.
    values = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    shared = phynexus.from_dlpack(values)
    values[1, 2] = 42.0
    assert shared.numpy()[1, 2] == 42.0
    doubled = shared + shared
    np.testing.assert_array_equal(np.asarray(doubled), values * 2)
    # The tensor's memory in numpy, in place, and the same memory each time.
    a, b = np.asarray(doubled), np.from_dlpack(doubled)
    assert np.shares_memory(a, b)
    a[0, 0] = -7.0
    assert doubled.numpy()[0, 0] == -7.0
    assert not np.shares_memory(doubled.numpy(), a)  # .numpy() copies
    assert not np.shares_memory(np.array(doubled), a)
    # A copy on a device whose memory is not the host's: the array is not shared.
    on_tpu = phynexus.from_dlpack(values, device="tpu")
    values[0, 0] = 1000.0
    assert on_tpu.numpy()[0, 0] != 1000.0
    assert phynexus.from_dlpack(values, copy=True).numpy()[0, 0] == 1000.0


def test_views_keep_their_memory_alive_and_closing_under_them_is_refused(rng):
    context = phynexus.Context()
    cpu = phynexus.device("cpu", context)
    t = phynexus.tensor(np.arange(6, dtype=np.int32), device=cpu)
    view = np.asarray(t)
    del t  # the view keeps the tensor
    gc.collect()
    assert view.tolist() == list(range(6))
    viewed = phynexus.tensor(np.ones(2, dtype=np.float32), device=cpu)
    capsule_view = np.from_dlpack(viewed)
    with pytest.raises(phynexus.InvalidArgumentError, match="view its memory"):
        viewed.close()
    with pytest.raises(phynexus.InvalidArgumentError, match="view its memory"):
        context.close()
    del view, capsule_view
    gc.collect()
    viewed.close()
    # numpy memory inside a tensor outlives the array's last other reference, and is given
    # back when the context closes.
    inner = phynexus.from_dlpack(np.full(5, 3, dtype=np.int16), device=cpu)
    gc.collect()
    assert inner.numpy().tolist() == [3] * 5
    context.close()
    with pytest.raises(phynexus.InvalidArgumentError):
        inner.numpy()


def test_bad_input_raises_phynexus_errors(rng):
    a = phynexus.tensor(rng.uniform(size=(3, 4)).astype(np.float32))
    b = phynexus.tensor(rng.uniform(size=(5, 2)).astype(np.float32))
    with pytest.raises(phynexus.InvalidArgumentError, match="matmul"):
        a @ b
    with pytest.raises(phynexus.InvalidArgumentError):
        phynexus.add(a, phynexus.tensor(np.ones((3, 4), np.int32)))
    with pytest.raises(phynexus.InvalidArgumentError):
        phynexus.relu(None)
    with pytest.raises(phynexus.InvalidArgumentError):
        phynexus.softmax(a, axis=-1, nonsense=3)
    with pytest.raises(phynexus.InvalidArgumentError):
        phynexus.matmul(a, b, activation="tanh")
    with pytest.raises((phynexus.Error, TypeError)):
        phynexus.tensor(None)
    with pytest.raises(phynexus.InvalidArgumentError):
        phynexus.tensor(np.ones(3), dtype="f64")
    with pytest.raises(phynexus.NotFoundError):
        phynexus.tensor(np.ones(3), device=42)
    with pytest.raises(phynexus.InvalidArgumentError):
        phynexus.empty([0, 3])
    with pytest.raises(phynexus.UnsupportedError):
        phynexus.tensor(np.ones(3), device="npu", dtype="bf16")
    with pytest.raises(phynexus.InvalidArgumentError):
        a.download(np.zeros(5, np.float32))
    assert isinstance(phynexus.InvalidArgumentError("x"), phynexus.Error)


def test_a_closed_tensor_raises():
    t = phynexus.tensor(np.ones(3, np.float32))
    t.close()
    assert t.closed
    for call in (t.numpy, lambda: t + t, lambda: t.to("npu"), t.__dlpack__):
        with pytest.raises(phynexus.InvalidArgumentError):
            call()
    t.close()


def test_every_op_unsupported_on_a_device_runs_with_fallback():
    # The default context has CPU fallback on: the NPU lacks an f32 add, the CPU runs it.
    x = phynexus.tensor(np.array([1.0, 2.0], np.float32), device="npu")
    np.testing.assert_array_equal((x + x).numpy(), [2.0, 4.0])
    assert phynexus.device("npu").stats()["fallback_ops"] >= 1


def test_the_extension_refuses_malformed_calls():
    a = phynexus.tensor(np.ones((2, 2), np.float32))
    run = phynexus._phynexus.run_op
    with pytest.raises(phynexus.NotFoundError):
        run(999, None, [a], [])
    for params in (b"", b"\x01", (1000).to_bytes(8, "little")):
        with pytest.raises(phynexus.InvalidArgumentError):
            run(phynexus.ops.softmax.id, params, [a], [])
    with pytest.raises(phynexus.InvalidArgumentError):
        run(phynexus.ops.add.id, None, [None, None], [])
    with pytest.raises(phynexus.InvalidArgumentError):
        run(phynexus.ops.relu.id, None, [a], [99])
    with pytest.raises(TypeError):
        a.download(None)


def test_numpy_on_the_left_runs_the_op_on_the_device():
    t = phynexus.tensor(np.array([1.0, 2.0], np.float32), device="tpu")
    result = np.array([3.0, 4.0], np.float32) - t
    assert isinstance(result, phynexus.Tensor) and result.device.type == "tpu"
    np.testing.assert_array_equal(result.numpy(), [2.0, 2.0])
