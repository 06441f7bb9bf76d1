#!/bin/sh
# The library's file names and dynamic section: SONAME libelementwise.so.1, the link chain
# libelementwise.so -> libelementwise.so.1 -> libelementwise.so.<full version>, and no dependency on
# the CUDA runtime (it is linked in statically: consumers need no CUDA toolkit).
# Usage: check_soname.sh LIBRARY_DIR SONAME FULL_VERSION
set -eu
dir=$1
soname=$2
version=$3
fail() { echo "FAIL: $*" >&2; exit 1; }

real="libelementwise.so.$version"
[ -f "$dir/$real" ] && [ ! -L "$dir/$real" ] || fail "$dir/$real is missing or not a regular file"
[ -L "$dir/$soname" ] || fail "$dir/$soname is not a symbolic link"
[ -L "$dir/libelementwise.so" ] || fail "$dir/libelementwise.so is not a symbolic link"
[ "$(readlink "$dir/libelementwise.so")" = "$soname" ] ||
    fail "libelementwise.so -> $(readlink "$dir/libelementwise.so"), expected -> $soname"
[ "$(readlink "$dir/$soname")" = "$real" ] || fail "$soname -> $(readlink "$dir/$soname"), expected -> $real"

found=$(readelf -d "$dir/$real" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
[ "$found" = "$soname" ] || fail "SONAME is '$found', expected '$soname'"

needed=$(readelf -d "$dir/$real" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p')
echo "SONAME $found; NEEDED:" $needed
if echo "$needed" | grep -q -i -e cudart -e 'libcuda\.'; then
    fail "the library depends on the CUDA runtime or driver library: $needed"
fi
rpath=$(readelf -d "$dir/$real" | grep -E '\((RPATH|RUNPATH)\)' || true)
echo "OK: $soname, link chain, no CUDA runtime dependency${rpath:+ ($rpath)}"
