#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The libFuzzer target fuzz/fuzz_api.c, through the fuzz preset's workflow (build/fuzz; the target
# and its test: cmake/fuzz.cmake): clang with ASan and UBSan over the library's C files and the
# harness, EW_FUZZ_SECONDS (default 60) of fuzzing from the committed seeds fuzz/corpus, after the
# seeds' tests (fuzz_seeds: the corpus is make_seeds.py's from fuzz/fuzz_table.h; fuzz_api_seeds: each
# seed once, every action reached). Prints each action's executions and the calls judged valid and
# refused. Fails on any crash, sanitizer report, leak, timeout or out-of-memory, an action that never
# ran or never saw a valid and a refused call, or when nothing was executed.
# Needs a machine WITHOUT a GPU: the harness refuses to run where a CUDA device is visible.
# EW_CI_ARCHITECTURES, when set, replaces the preset's sm_90 on the configure step: .ci/run passes
# the README build's list, whose device code its compiler cache holds (the fuzzer drives the C code).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$root/build/fuzz
cd "$root"

# clang with libFuzzer and the sanitizer runtimes (Debian: clang + libclang-rt-dev).
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; return (int)n * 0; }' >"$probe/p.c"
if ! clang -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" 2>/dev/null; then
    echo "== fuzz: installing clang and its libFuzzer runtime"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang libclang-rt-dev >/dev/null
fi

# The fuzz workflow's three steps, the configure step with the architectures above.
status=0
{ cmake --preset fuzz ${EW_CI_ARCHITECTURES:+-DCMAKE_CUDA_ARCHITECTURES=$EW_CI_ARCHITECTURES} &&
    cmake --build --preset fuzz && ctest --preset fuzz; } || status=$?

log=$build/Testing/Temporary/LastTest.log
grep -E '^(stat::|Done |INFO: Seed|#[0-9]+ *DONE|[0-9]+/[0-9]+ Testing: |fuzz_api: |make_seeds.py)' "$log" || true
executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
crashes=$(find "$build/fuzz/artifacts" -type f 2>/dev/null | wc -l)
seeds=$(find "$root/fuzz/corpus" -type f | wc -l)
corpus=$(find "$build/fuzz/corpus" -type f 2>/dev/null | wc -l)
echo "fuzz.sh: ${executions:-0} executions; $corpus new inputs beside the $seeds seeds; $crashes crash" \
     "artifacts; workflow status $status"
if [ "$status" -ne 0 ] || [ "$crashes" -ne 0 ] || [ -z "$executions" ] || [ "$executions" -eq 0 ]; then
    echo "fuzz.sh: FAIL; log: $log; reproduce with: $build/fuzz/fuzz_api <artifact> (in $build/fuzz/artifacts)" >&2
    exit 1
fi
