#!/bin/sh
# Run the htree device tests of a test_htree_gpu binary ($1).  Criterion reports tests that
# skip themselves (no GPU) as not tested: then exit 77 so that ctest shows "skipped".
out=$("$1" --jobs 1 --verbose --filter 'htree_device/*' 2>&1)
rc=$?
printf '%s\n' "$out"
if [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -q 'Tested: 0 |'; then
	echo "SKIP: htree device tests: no CUDA device"
	exit 77
fi
exit $rc
