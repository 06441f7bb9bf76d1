# SPDX-License-Identifier: Apache-2.0
"""The wheel's version, for scikit-build-core (pyproject.toml): the library's own, from the project()
line of CMakeLists.txt, with the CUDA release of the nvcc that builds it as a PEP 440 local label,
e.g. 1.1.0+cu130, as PyTorch's wheels carry theirs.

nvcc is the one CMake would take, extended by the toolkit's usual place: CUDACXX, else the first nvcc
on PATH, else $CUDA_PATH/bin, else /usr/local/cuda/bin. Whichever is found is handed to CMake through
CUDACXX (which CMake reads first), so the toolkit the version names is the one that compiles, and a
toolkit outside PATH needs no setting.
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
    """(major, minor) of the toolkit, from `nvcc --version` ("release 13.0, V13.0.88")."""
    output = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"release ([0-9]+)\.([0-9]+)", output)
    if found is None:
        raise RuntimeError("%s --version names no release:\n%s" % (nvcc, output))
    return int(found.group(1)), int(found.group(2))


def dynamic_metadata(field, settings=None):
    """scikit-build-core's provider hook: the version, e.g. "1.1.0+cu130"."""
    if field != "version":
        raise RuntimeError("elementwise_build provides the version only, not %r" % field)
    if settings:
        raise RuntimeError("elementwise_build takes no settings, got %s" % sorted(settings))
    nvcc = find_nvcc()
    os.environ["CUDACXX"] = nvcc
    major, minor = cuda_release(nvcc)
    return "%s+cu%d%d" % (project_version(), major, minor)
