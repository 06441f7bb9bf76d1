#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's test command (scripts/setup-test, which .ci/run runs before the checks) skipped no
# cpu-labelled test but those tests/scripts/check_skips.py lists with their reason: ctest counts a
# skip (exit 77) as no failure, so a CPU test that stopped running (NVRTC not found, say) would
# otherwise pass CI. Reads that run's JUnit file (build/Testing/ctest.xml, from the default test
# preset) and ctest's list of labels; runs no test again.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[ -s "$root/build/Testing/ctest.xml" ] ||
    { echo "skips.sh: no build/Testing/ctest.xml: run scripts/setup-test first" >&2; exit 1; }
python3 "$root/tests/scripts/check_skips.py" cpu "$root/build"
