"""Devices, their properties and the availability checks."""

import pytest

import phynexus


def test_devices_are_listed_with_their_properties():
    devices = phynexus.devices()
    assert devices, "every machine has at least the CPU device"
    for index, device in enumerate(devices):
        assert device.index == index
        assert device.type in ("cpu", "gpu", "tpu", "npu", "accelerator")
        assert device.name and device.plugin
        assert device.memory_total > 0
        assert phynexus.f32 in device.dtypes
        assert isinstance(device.properties, dict)


@pytest.mark.parametrize("spec, kind", [("cpu", "cpu"), ("tpu", "tpu"), ("npu:0", "npu"),
                                        ("vulkan", "gpu"), ("gpu", "gpu"), ("tpu-sim", "tpu")])
def test_device_by_name(spec, kind):
    device = phynexus.device(spec)
    assert device.type == kind
    assert phynexus.device(device.index) == device


def test_availability_checks_answer_without_raising():
    for module in (phynexus.cpu, phynexus.gpu, phynexus.tpu, phynexus.npu, phynexus.vulkan):
        assert module.is_available() in (True, False)
    assert phynexus.cpu.is_available()


@pytest.mark.parametrize("spec, error", [("npu:7", phynexus.NotFoundError),
                                         ("quantum", phynexus.NotFoundError),
                                         ("npu:x", phynexus.InvalidArgumentError),
                                         (99, phynexus.NotFoundError),
                                         (None, phynexus.InvalidArgumentError),
                                         (3.5, phynexus.InvalidArgumentError)])
def test_bad_device_names_raise(spec, error):
    with pytest.raises(error):
        phynexus.device(spec)


def test_memory_stats_follow_a_tensor(context):
    device = context.devices()[0]
    before = device.memory_stats()["bytes_in_use"]
    tensor = phynexus.empty([256, 256], "f32", device=device)
    assert device.memory_stats()["bytes_in_use"] >= before + 256 * 256 * 4
    del tensor
    assert device.memory_stats()["bytes_in_use"] == before
    assert "fallback_ops" in device.stats()


def test_plugins_are_listed(context):
    plugins = context.plugins()
    assert any(p["name"] == "cpu" and p["state"] == "loaded" for p in plugins)
