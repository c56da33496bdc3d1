"""Fixtures of the Python suites: a context without CPU fallback, so that what each device
runs is its own, and its devices."""

import numpy as np
import pytest

import phynexus


@pytest.fixture(scope="session")
def context():
    return phynexus.Context(fallback=False)


@pytest.fixture(scope="session")
def all_devices(context):
    return context.devices()


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
