#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The API reference: Doxygen over the generated public header, with every warning an error (an
# undocumented function, parameter or return value fails the run). Installs doxygen if missing.
# The header comes from configuring the default preset (build/), which refreshes it when
# include/elementwise.h.in changed. Output: build/docs/html/index.html
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$root/build
cd "$root"

if ! command -v doxygen > /dev/null; then
    echo "== docs: installing doxygen"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq doxygen > /dev/null
fi
cmake --preset default > /dev/null

echo "== docs: doxygen $(doxygen --version) on $build/include/elementwise.h"
rm -rf "$build/docs"
# docs/Doxyfile with this build's paths; WARN_AS_ERROR=YES there makes any warning fail the run.
{ cat docs/Doxyfile; echo "INPUT = $build/include/elementwise.h"; echo "OUTPUT_DIRECTORY = $build/docs"; } |
    doxygen -
[[ -s $build/docs/html/index.html ]] || { echo "doxygen wrote no index.html" >&2; exit 1; }
echo "== docs: ok, no warnings; reference in $build/docs/html/index.html"
