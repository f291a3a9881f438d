#!/bin/sh
# Smoke run of one libFuzzer target (ctest): a fixed number of runs from the committed seed
# corpus, new inputs into a scratch directory.  Any crash, leak, timeout or sanitizer report
# makes libFuzzer exit non-zero, and the test fails.
#   smoke.sh TARGET SEED_DIR DICT RUNS
set -eu
target=$1 seeds=$2 dict=$3 runs=$4
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
exec "$target" -runs="$runs" -seed=1 -max_len=65536 -timeout=20 -rss_limit_mb=4096 \
	-dict="$dict" -artifact_prefix="$scratch/" "$scratch" "$seeds"
