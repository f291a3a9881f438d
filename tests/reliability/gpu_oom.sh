#!/bin/sh
# The GPU twin of the 4 TB run (issue 18): `tinyc run --device=cuda` checks the sizes against
# the device's free memory (cuMemGetInfo) before anything is allocated, and exits 1 with
# "OutOfMemory: ... needs N bytes, M available on the GPU" in under a second.  Two cases: the
# transpose of the issue (1e6 x 1e6 floats, input and output: 8 TB), and one whose input and
# output need 1.25x the device's memory (on an 80 GB H100 that also fits the host's 128 GB:
# only the GPU check refuses it, before any host array is allocated).
#   gpu_oom.sh TINYC TRANSPOSE_UOP
set -u
tinyc=$1 graph=$2
if ! nvidia-smi -L >/dev/null 2>&1; then
	echo "SKIP: no GPU"; exit 77
fi
total=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)	# MiB
# a square transpose whose input plus output need 1.25x the device's memory
side=$(python3 -c "import math; print(int(math.sqrt(1.25 * $total * 2**20 / 8)))")
fail=0
for bind in M=1000000,N=1000000 M=$side,N=$side; do
	start=$(date +%s.%N)
	err=$("$tinyc" run "$graph" --bind "$bind" --random-inputs 1 --device=cuda 2>&1 >/dev/null)
	rc=$?
	secs=$(python3 -c "import time; print(round(time.time() - $start, 2))")
	echo "$bind: exit $rc in $secs s: $err"
	case $err in *"OutOfMemory:"*"available on the GPU"*) ;; *) fail=1 ;; esac
	[ "$rc" = 1 ] || fail=1
	python3 -c "import sys; sys.exit(0 if $secs < 1.0 else 1)" || { echo "FAIL: slower than 1 s"; fail=1; }
done
[ $fail = 0 ] && echo ok
exit $fail
