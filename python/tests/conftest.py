# SPDX-License-Identifier: Apache-2.0
"""Shared set-up: import the binding from this checkout (or the installed package), and say how GPU
tests give up.

Environment:
  ELEMENTWISE_TEST_INSTALLED  "1": test the installed package (a wheel), never this checkout's python/
  ELEMENTWISE_PACKAGE_DIR  a directory holding the package with its compiled module built in place
                           (scripts/ci/python.sh BUILD_DIR stages one), else this checkout's python/
  ELEMENTWISE_LIBRARY      path of libelementwise.so.1 to test (else the binding's own search)
  ELEMENTWISE_INCLUDE_DIR  directory of elementwise.h, for the C-path driver of the GPU tests
  ELEMENTWISE_REQUIRE_GPU  "1" on the GPU machine: a GPU test that cannot run fails instead of skipping
"""

import importlib
import os
import sys

import pytest

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INSTALLED = os.environ.get("ELEMENTWISE_TEST_INSTALLED") == "1"
PACKAGE_DIR = os.environ.get("ELEMENTWISE_PACKAGE_DIR", PYTHON_DIR)
if not INSTALLED and PACKAGE_DIR not in sys.path:
    sys.path.insert(0, PACKAGE_DIR)

REQUIRE_GPU = os.environ.get("ELEMENTWISE_REQUIRE_GPU") == "1"


def unavailable(reason):
    """Skip a GPU test visibly, or fail it where the GPU run is required to be complete."""
    if REQUIRE_GPU:
        pytest.fail("ELEMENTWISE_REQUIRE_GPU=1 but " + reason)
    pytest.skip(reason)


def import_or_unavailable(name):
    """pytest.importorskip under the rule of `unavailable`: a missing module fails a required GPU run."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        unavailable("%s cannot be imported: %s" % (name, error))


@pytest.fixture(scope="session")
def handle():
    """A handle on device 0, or a visible skip (a failure where the GPU run is required)."""
    import elementwise as ew

    try:
        created = ew.Handle(0)
    except ew.ElementwiseError as error:
        if error.status == ew.Status.NO_DEVICE:
            unavailable("no GPU: " + error.message)
        raise
    yield created
    created.close()


@pytest.fixture(scope="session")
def torch(handle):
    """PyTorch with a CUDA device, or a visible skip."""
    try:
        import torch
    except ImportError:
        unavailable("PyTorch is not installed")
    if not torch.cuda.is_available():
        unavailable("PyTorch sees no CUDA device")
    return torch


class FakeArray:
    """Just a __cuda_array_interface__, for tests that need no real memory."""

    def __init__(self, shape=(4,), typestr="<f4", pointer=0x10000, read_only=False, dtype=None, **extra):
        self.__cuda_array_interface__ = dict(shape=shape, typestr=typestr, data=(pointer, read_only),
                                             version=3, **extra)
        if dtype is not None:
            self.dtype = dtype


# Tests whose peers need a CUDA toolkit of their own: CuPy compiles its kernels with the toolkit's
# headers, the C-path driver links the toolkit's static runtime. The installed wheel needs none, so
# scripts/gpu/python-wheel.sh runs the rest with the toolkit hidden (-m "not toolkit") and these
# beside it.
TOOLKIT_FIXTURES = {"cupy", "c_path"}


def pytest_configure(config):
    config.addinivalue_line("markers", "toolkit: the test's peer (CuPy, the C-path driver) needs a CUDA toolkit")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if TOOLKIT_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.toolkit)
