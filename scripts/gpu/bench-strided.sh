#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The strided targets in one go on this machine's GPU:
#   scripts/gpu/bench-strided.sh OUT_DIR [BUILD_DIR]
# BUILD_DIR (default build/gpu) is a CMake build with the bench target ew-bench-strided. Writes
# OUT_DIR/strided-cases.txt (ew-bench-strided --list), OUT_DIR/ew-strided.csv and ew-strided.log (the
# library and its flat yardsticks), OUT_DIR/torch-strided.csv and torch-strided.log (PyTorch on the same
# views; skipped with a note where torch is missing), then bench/strided_report.py's OUT_DIR/strided.md
# (a table per target, verdicts from both columns) and OUT_DIR/strided.png (where matplotlib imports).
# Extra options for both programs (e.g. --batches 9) go in EW_STRIDED_ARGS. Exits 1 when a step failed.
set -uo pipefail
# shellcheck source=scripts/gpu/common.sh
. "$(dirname "$0")/common.sh"
bench_setup ew-bench-strided "$@"
# shellcheck disable=SC2206 # word splitting of the extra options is intended
extra=(${EW_STRIDED_ARGS:-})

status=0
"$bench" --list "${extra[@]}" > "$out/strided-cases.txt" || exit 1
echo "== ew-bench-strided ($(grep -vc '^#' "$out/strided-cases.txt") cases)"
timeout 300 "$bench" --csv "$out/ew-strided.csv" "${extra[@]}" 2>&1 | tee "$out/ew-strided.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
echo "== torch_strided.py"
timeout 300 python3 "$here/bench/peers/torch_strided.py" --cases "$out/strided-cases.txt" \
    --csv "$out/torch-strided.csv" 2>&1 | tee "$out/torch-strided.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
echo "== strided_report.py"
python3 "$here/bench/strided_report.py" "$out" || status=1
echo "bench-strided: $out/strided.md"
exit $status
