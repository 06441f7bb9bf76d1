# SPDX-License-Identifier: Apache-2.0
"""The package's dynamic metadata, for scikit-build-core (pyproject.toml):

- version: the library's own, from the project() line of CMakeLists.txt (1.2.0), as an index takes
  it; the CUDA major of a released wheel is in its name (elementwise-cu13: scripts/build-wheel);
- optional-dependencies: `test`, and `nvrtc`, NVIDIA's NVRTC wheel of the building toolkit's CUDA
  major (nvidia-cuda-nvrtc for 13, nvidia-cuda-nvrtc-cu12 for 12), where user kernels find it.

nvcc is the one CMake would take, extended by the toolkit's usual place: CUDACXX, else the first nvcc
on PATH, else $CUDA_PATH/bin, else /usr/local/cuda/bin. Whichever is found is handed to CMake through
CUDACXX (which CMake reads first), so the toolkit whose NVRTC the extra names is the one that
compiles, and a toolkit outside PATH needs no setting.
"""

import os
import re
import shutil
import subprocess

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def project_version():
    """MAJOR.MINOR.PATCH of project(elementwise VERSION ...) in CMakeLists.txt."""
    with open(os.path.join(_ROOT, "CMakeLists.txt"), encoding="utf-8") as cmake:
        found = re.search(r"project\(\s*elementwise\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)", cmake.read())
    if found is None:
        raise RuntimeError("CMakeLists.txt has no project(elementwise VERSION x.y.z)")
    return found.group(1)


def find_nvcc():
    """The nvcc path, chosen as the module docstring says; RuntimeError when there is none."""
    explicit = os.environ.get("CUDACXX")
    if explicit:
        return explicit
    candidates = [shutil.which("nvcc")]
    if os.environ.get("CUDA_PATH"):
        candidates.append(os.path.join(os.environ["CUDA_PATH"], "bin", "nvcc"))
    candidates.append("/usr/local/cuda/bin/nvcc")
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise RuntimeError("no nvcc: put the CUDA toolkit's bin directory on PATH or set CUDACXX "
                       "(looked on PATH, in $CUDA_PATH/bin and /usr/local/cuda/bin)")


def cuda_release(nvcc):
    """(major, minor) of the runtime the build links: CUDART_VERSION of the toolkit beside nvcc, else
    `nvcc --version` ("release 13.0, V13.0.88"). The CUDA 12 layout of scripts/install-cuda12 has
    CUDA 13's nvcc driver over the 12.9 runtime, so the header decides."""
    header = os.path.join(os.path.dirname(os.path.dirname(nvcc)), "include", "cuda_runtime_api.h")
    if os.path.exists(header):
        with open(header, encoding="utf-8") as text:
            found = re.search(r"^#define\s+CUDART_VERSION\s+([0-9]+)\s*$", text.read(), re.MULTILINE)
        if found is not None:
            version = int(found.group(1))
            return version // 1000, version % 1000 // 10
    output = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"release ([0-9]+)\.([0-9]+)", output)
    if found is None:
        raise RuntimeError("%s --version names no release:\n%s" % (nvcc, output))
    return int(found.group(1)), int(found.group(2))


def nvrtc_requirement(major):
    """The NVRTC wheel for CUDA `major`: 13 dropped the -cuNN suffix and versions the name instead."""
    return "nvidia-cuda-nvrtc-cu%d" % major if major <= 12 else "nvidia-cuda-nvrtc>=%d,<%d" % (major, major + 1)


def dynamic_metadata(field, settings=None):
    """scikit-build-core's provider hook: the fields the module docstring names."""
    if settings:
        raise RuntimeError("elementwise_build takes no settings, got %s" % sorted(settings))
    if field == "version":
        return project_version()
    if field != "optional-dependencies":
        raise RuntimeError("elementwise_build provides the version and the extras, not %r" % field)
    nvcc = find_nvcc()
    os.environ["CUDACXX"] = nvcc
    major, _ = cuda_release(nvcc)
    return {"test": ["pytest"], "nvrtc": [nvrtc_requirement(major)]}
