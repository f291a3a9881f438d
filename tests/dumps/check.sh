#!/bin/sh
# Test `dumps`: every stage's dump of every committed graph matches the manifest of the last
# intended output (tests/dumps/manifest.sha256). See tools/dump-all for how to update it.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
got=$(mktemp)
trap 'rm -f "$got"' EXIT
"$root/tools/dump-all" --manifest "$1" > "$got"
if ! diff -u "$root/tests/dumps/manifest.sha256" "$got"; then
	echo "dumps: the lines above changed (- intended, + now). If the change is intended:" >&2
	echo "  tools/dump-all --manifest $1 > tests/dumps/manifest.sha256" >&2
	exit 1
fi
echo "dumps: $(wc -l < "$got") dumps identical to the manifest"
