#!/usr/bin/env bash
# Builds the libFuzzer target fuzz/fuzz_api.c with clang, ASan and UBSan, linked against the
# library's own objects: the C files (src/*.c) compiled by clang with the same sanitizers and
# coverage, the CUDA files by nvcc as usual, plus cudart_static. Runs it for $EW_FUZZ_SECONDS
# (default 60) on the committed seeds fuzz/corpus (new inputs go to build-fuzz/corpus, never into the
# repository) and fails on any crash, sanitizer report, leak, timeout or out-of-memory.
# Needs a machine WITHOUT a GPU: the harness refuses to run where a CUDA device is visible.
# Usage: scripts/ci/fuzz.sh [BUILD_DIR]; BUILD_DIR (what .ci/run passes) is not used.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${EW_FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${EW_FUZZ_SECONDS:-60}
sanitize="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1"

# clang with libFuzzer and the sanitizer runtimes (Debian: clang + libclang-rt-dev).
probe=$(mktemp -d)
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; return (int)n * 0; }' >"$probe/p.c"
if ! clang -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" 2>/dev/null; then
    echo "== fuzz: installing clang and its libFuzzer runtime"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang libclang-rt-dev >/dev/null
fi
rm -rf "$probe"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CUDA_ARCHITECTURES=90-real \
    -DEW_BUILD_TESTS=OFF -DEW_BUILD_BENCH=OFF -DCMAKE_C_COMPILER=clang \
    -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link $sanitize" >/dev/null
cmake --build "$build" --target elementwise_objects

mapfile -t objects < <(find "$build/CMakeFiles/elementwise_objects.dir" -name '*.o' | sort)
nvcc=$(sed -n 's/^CMAKE_CUDA_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
cuda_root=$(dirname "$(dirname "$nvcc")")
cuda_lib=$cuda_root/lib64
[ -e "$cuda_lib/libcudart_static.a" ] || cuda_lib=$cuda_root/targets/x86_64-linux/lib
# shellcheck disable=SC2086 # $sanitize is a list of flags
clang -fsanitize=fuzzer $sanitize -Wall -Wextra \
    -I"$build/include" -I"$root/src" -isystem "$cuda_root/include" "$root/fuzz/fuzz_api.c" "${objects[@]}" \
    -L"$cuda_lib" -lcudart_static -lstdc++ -lpthread -ldl -lrt -lm -o "$build/fuzz_api"

rm -rf "$build/corpus" "$build/artifacts"
mkdir -p "$build/corpus" "$build/artifacts"
seeds=$(find "$root/fuzz/corpus" -type f | wc -l)
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:protect_shadow_gap=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
status=0
"$build/fuzz_api" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/" "$build/corpus" "$root/fuzz/corpus" >"$build/fuzz.log" 2>&1 \
    || status=$?
tail -n 25 "$build/fuzz.log"

executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$build/fuzz.log")
corpus=$(grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' "$build/fuzz.log" | tail -n 1 | cut -d' ' -f2)
crashes=$(find "$build/artifacts" -type f | wc -l)
echo "fuzz.sh: ${executions:-0} executions in ${seconds} s; corpus ${corpus:-?} (inputs/bytes) grown from" \
     "$seeds seeds; $crashes crash artifacts; exit status $status"
if [ "$status" -ne 0 ] || [ "$crashes" -ne 0 ] || [ -z "$executions" ]; then
    echo "fuzz.sh: FAIL; reproduce with: $build/fuzz_api <artifact> (artifacts in $build/artifacts)" >&2
    exit 1
fi
