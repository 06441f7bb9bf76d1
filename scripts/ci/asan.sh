#!/usr/bin/env bash
# ASan + UBSan + LeakSanitizer over the library's C host code (src/*.c) and the CPU tests.
# A separate build (build-asan, or $EW_ASAN_BUILD_DIR) with -DEW_SANITIZE=address,undefined; then
# `ctest -L cpu`. Every report is fatal (-fno-sanitize-recover=all, halt_on_error), and the count printed
# at the end is taken from ctest's full log, which keeps the output of passing tests too.
# Exit status: 0 only when every CPU test passed and there were 0 sanitizer reports.
# Usage: scripts/ci/asan.sh [BUILD_DIR]; BUILD_DIR (what .ci/run passes) is not used: this check needs
# its own sanitized build.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${EW_ASAN_BUILD_DIR:-$root/build-asan}
archs=${EW_CUDA_ARCHITECTURES:-90-real}   # the device code is not under test here: one arch is enough

# CMAKE_PROJECT_INCLUDE brings cmake/sanitize.cmake in right after project(), whether or not
# CMakeLists.txt includes it too (it has an include guard).
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CUDA_ARCHITECTURES="$archs" -DEW_SANITIZE=address,undefined \
    -DCMAKE_PROJECT_INCLUDE="$root/cmake/sanitize.cmake"
cmake --build "$build"

# The sanitizers must really be in what runs: a build that silently lost the flags would pass anything.
for binary in "$build/libelementwise.so" "$build/tests/test_lifecycle"; do
    symbols=$(nm -D "$binary")   # not piped into grep -q: with pipefail, nm's SIGPIPE would fail the test
    if ! grep -q ' U __asan_init$' <<<"$symbols"; then
        echo "asan.sh: $binary is not built with AddressSanitizer" >&2
        exit 1
    fi
done

# protect_shadow_gap=0: the CUDA driver maps memory where ASan's shadow gap would be (GPU machines).
# verify_asan_link_order=0: consumer programs built without -fsanitize load the sanitized library.
asan_options=(detect_leaks=1 halt_on_error=1 detect_stack_use_after_return=1 check_initialization_order=1
              strict_string_checks=1 protect_shadow_gap=0 verify_asan_link_order=0)
ASAN_OPTIONS=$(IFS=:; echo "${asan_options[*]}")
export ASAN_OPTIONS
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export LSAN_OPTIONS="report_objects=1"

status=0
ctest --test-dir "$build" -L cpu --output-on-failure -j "$(nproc)" || status=$?

log=$build/Testing/Temporary/LastTest.log
pattern='ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:'
reports=$(grep -cE "$pattern" "$log" || true)
if [ "$reports" -ne 0 ]; then
    echo "=== sanitizer reports in $log ==="
    grep -E -A 20 "$pattern" "$log" || true
fi
tests=$(ctest --test-dir "$build" -L cpu -N | sed -n 's/^Total Tests: //p')
echo "asan.sh: $tests CPU tests under ASan+UBSan+LSan, $reports sanitizer reports, ctest status $status"
if [ "$reports" -ne 0 ] || [ "$status" -ne 0 ]; then
    exit 1
fi
