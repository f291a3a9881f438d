#!/bin/sh
# check_exports.sh HEADER LIBRARY: the dynamic symbols LIBRARY defines are exactly the
# functions HEADER declares TINYC_API (no internal symbol leaks, none of the API is missing).
set -eu
header=$1 lib=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# every "TINYC_API <type> name(" declaration, which may span lines
tr '\n' ' ' <"$header" | grep -o 'TINYC_API [^;(]*(' | sed 's/($//; s/.*[ *]//' | grep '^tinyc_' | sort -u >"$tmp/api"
nm -D --defined-only "$lib" | awk '{print $NF}' | sort -u >"$tmp/exported"
[ -s "$tmp/api" ] || { echo "no TINYC_API declarations found in $header"; exit 1; }
if ! diff -u "$tmp/api" "$tmp/exported"; then
	echo "FAIL: the exports of $lib (+) differ from the API of $header (-)"
	exit 1
fi
echo "ok: $(wc -l <"$tmp/api") functions, all of tinyc.h and nothing else"
