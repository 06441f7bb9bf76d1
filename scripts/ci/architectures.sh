#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The default build's architecture list (cmake/toolkit.cmake: Turing to Blackwell and PTX), compiled
# for the dispatch-table rows whose device code differs most between architectures: the casts from
# f8e4m3 and from f16 (the fp8 conversions, which cc 8.9 and later do in hardware; the 16-bit floats'
# conversions, which CUDA's headers write per architecture), each row's bulk-copy kernel and
# dependent launches (cc 9.0 and later) and the strided kernels' occupancy per architecture. .ci/run
# builds the README's commands for sm_90 alone, as a whole fat build would take CI's two cores most
# of its thirty minutes; this check keeps every architecture's compiler on the sources. The flags are
# the default preset's Release ones. In build/architectures; nothing is linked or run.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$root/build/architectures
cd "$root"
start=$SECONDS

# No -DCMAKE_CUDA_ARCHITECTURES: the configure step takes the toolkit's default list.
mkdir -p "$build"
cmake --preset default -B "$build" -DEW_BUILD_BENCH=OFF -DEW_BUILD_TESTS=OFF >"$build.log" ||
    { cat "$build.log"; exit 1; }
architectures=$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$build/CMakeCache.txt")
[ -n "$architectures" ] || { echo "architectures.sh: no CMAKE_CUDA_ARCHITECTURES in $build" >&2; exit 1; }
rows=(sets_cast_f8e4m3 sets_cast_f16) # src/catalogue/sets_cast.cu.in's translation units
echo "== architectures: ${rows[*]} for $architectures"
objects=()
for row in "${rows[@]}"; do
    objects+=("src/CMakeFiles/elementwise_objects.dir/$row.cu.o")
done
cmake --build "$build" --target "${objects[@]}"
echo "== architectures: ok in $((SECONDS - start)) s"
