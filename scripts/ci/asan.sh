#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ASan + UBSan + LeakSanitizer over the library's C host code and the CPU tests: the asan preset's
# workflow (build/asan: EW_SANITIZE=address,undefined, every report fatal; `ctest -L cpu` with the
# sanitizers' options). The count printed at the end is taken from ctest's full log, which keeps the
# output of passing tests too. EW_CI_ARCHITECTURES, when set, replaces the preset's sm_90 on the
# configure step: .ci/run passes the README build's list, whose device code its compiler cache holds
# (the sanitizers cover the C host code alone; nvcc's objects are the same in every build).
# test_nvrtc_architectures is left out: its host code is test_nvrtc's, which runs here, and the rest
# of its time is NVRTC compiling for every architecture, which no sanitizer sees.
# Exit status: 0 only when every CPU test passed and there were 0 sanitizer reports.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$root/build/asan
cd "$root"

# The asan workflow's three steps, the configure step with the architectures above.
status=0
{ cmake --preset asan ${EW_CI_ARCHITECTURES:+-DCMAKE_CUDA_ARCHITECTURES=$EW_CI_ARCHITECTURES} &&
    cmake --build --preset asan &&
    CTEST_PARALLEL_LEVEL=$(nproc) ctest --preset asan -E '^test_nvrtc_architectures$'; } || status=$?

# The sanitizers must really be in what ran: a build that silently lost the flags would pass anything.
for binary in "$build/libelementwise.so" "$build/tests/test_lifecycle"; do
    symbols=$(nm -D "$binary")   # not piped into grep -q: with pipefail, nm's SIGPIPE would fail the test
    if ! grep -q ' U __asan_init$' <<<"$symbols"; then
        echo "asan.sh: $binary is not built with AddressSanitizer" >&2
        exit 1
    fi
done

log=$build/Testing/Temporary/LastTest.log
pattern='ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:'
reports=$(grep -cE "$pattern" "$log" || true)
if [ "$reports" -ne 0 ]; then
    echo "=== sanitizer reports in $log ==="
    grep -E -A 20 "$pattern" "$log" || true
fi
tests=$(ctest --preset asan -N | sed -n 's/^Total Tests: //p')
echo "asan.sh: $tests CPU tests under ASan+UBSan+LSan, $reports sanitizer reports, workflow status $status"
if [ "$reports" -ne 0 ] || [ "$status" -ne 0 ]; then
    exit 1
fi
