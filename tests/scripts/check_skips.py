#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The skips of a ctest run, from its JUnit file (the test presets write BUILD_DIR/Testing/ctest.xml):
every ctest entry that skipped (exit 77) and the tests skipped inside it (the "SKIP: <reason>" lines
of tests/gpu_util.h's rule in its output), then the count; fails on a skip the mode does not allow:

  cpu  (CI: scripts/ci/skips.sh, scripts/ci/cuda12.sh) a skipped entry labelled cpu fails unless
       CPU_ALLOWED names it; gpu entries may skip (no GPU).
  gpu  (the GPU machine: scripts/gpu-check) every skipped entry fails unless GPU_ALLOWED names it.

In both, an entry whose output has a SKIP line but that did not exit 77 fails: ctest showed its
skipped tests as passed.

Usage: check_skips.py cpu|gpu BUILD_DIR [JUNIT]; exit 0, or 1 with the entries that may not skip.
"""

import json
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

# cpu-labelled entries that may skip in CI, each with its reason. None: CI builds with the toolkit,
# so NVRTC (test_nvrtc, test_nvrtc_architectures) loads there; a toolkit-free environment would name
# them here ("no NVRTC: ...").
CPU_ALLOWED = {}

# The GPU machine's allow-list: the two-GPU tests on a one-GPU machine (GU_SKIP_ONE_GPU).
GPU_ALLOWED = {
    "test_stream_graph_gpu.device_mismatch": "needs two GPUs (EW_ERROR_DEVICE_MISMATCH)",
    "reliability_gpu.two_gpus": "needs two GPUs (one handle on each)",
}


def labels(build_dir):
    """ctest entry name -> its labels, from ctest's own list (nothing runs)."""
    listing = subprocess.run(["ctest", "--test-dir", build_dir, "--show-only=json-v1"], check=True,
                             capture_output=True, text=True).stdout
    result = {}
    for test in json.loads(listing)["tests"]:
        names = [p["value"] for p in test.get("properties", []) if p["name"] == "LABELS"]
        result[test["name"]] = names[0] if names else []
    return result


def main(argv):
    if len(argv) not in (3, 4) or argv[1] not in ("cpu", "gpu"):
        sys.exit(__doc__)
    mode, build_dir = argv[1], argv[2]
    junit = argv[3] if len(argv) == 4 else build_dir + "/Testing/ctest.xml"
    allowed = CPU_ALLOWED if mode == "cpu" else GPU_ALLOWED
    entry_labels = labels(build_dir)
    cases = list(ElementTree.parse(junit).getroot().iter("testcase"))
    skipped, refused, inside = [], [], 0
    for case in cases:
        name = case.get("name")
        skips = [line[len("SKIP: "):] for line in (case.findtext("system-out") or "").splitlines()
                 if line.startswith("SKIP: ")]
        inside += len(skips)
        if case.find("skipped") is None and not skips:
            continue
        if case.find("skipped") is None:
            # Tests skipped inside a binary that exited 0: the run showed it as passed.
            verdict = "NOT ALLOWED: skipped inside but reported passed"
            refused.append(name)
        elif (mode == "gpu" or "cpu" in entry_labels.get(name, [])) and name not in allowed:
            verdict = "NOT ALLOWED"
            refused.append(name)
        else:
            verdict = "allowed: " + allowed.get(name, "not labelled cpu")
            skipped.append(name)
        # A GPU entry without a GPU (cpu mode) says only its name: its reason is always the same.
        details = "" if verdict.startswith("allowed") and mode == "cpu" else "".join(
            "\n    SKIP: " + skip for skip in skips)
        print("skipped (%s): %s: %d inside%s" % (verdict, name, len(skips), details))
    print("skips (%s mode): %d of %d ctest entries skipped, %d of them not allowed; %d tests skipped inside "
          "binaries" % (mode, len(skipped) + len(refused), len(cases), len(refused), inside))
    return 1 if refused else 0

if __name__ == "__main__":
    sys.exit(main(sys.argv))
