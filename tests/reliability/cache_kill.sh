#!/bin/sh
# Four processes share one kernel cache directory while one of them is killed (SIGKILL)
# mid-run; then every entry is checked (tests/reliability/stress.c cache-verify): a hit must
# hold nvrtc's own bytes, a corrupt entry must be rejected and rebuilt, never loaded.  A torn
# entry is also made by hand (truncated, and one with a flipped payload byte), since a kill
# lands inside nvrtc far more often than inside the write.
#   cache_kill.sh STRESS COUNT
set -eu
stress=$1 count=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# processes 0-2 compile every source, overlapping; process 3 is killed part-way
pids=
for p in 0 1 2; do
	"$stress" cache "$dir" 0 "$count" >"$dir/log$p" 2>&1 &
	pids="$pids $!"
done
"$stress" cache "$dir" 0 "$count" >/dev/null 2>&1 &
victim=$!
sleep 1.5
kill -9 "$victim" 2>/dev/null || true
wait "$victim" 2>/dev/null || true
for p in $pids; do
	if ! wait "$p"; then
		echo "FAIL: a cache writer failed:"; cat "$dir"/log*; exit 1
	fi
done
n=$(ls "$dir" | grep -c '\.cubin$' || true)
echo "entries after the run: $n (of $count)"
# tear two entries by hand: a truncated file and one with a flipped byte
set -- "$dir"/*.cubin
if [ $# -ge 2 ]; then
	size=$(wc -c <"$1")
	head -c $((size / 2)) "$1" >"$dir/t" && mv "$dir/t" "$1"
	python3 -c "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[-10]^=0xff; open(p,'wb').write(b)" "$2"
fi
"$stress" cache-verify "$dir" "$count"
