#!/bin/sh
# cli_run.sh TINYC FILE.uop [BIND ...]: the CLI path of the rearrange graphs on the GPU:
# `tinyc run FILE --device=cuda --random-inputs 1 [--bind BIND] --check` once per BIND (once
# without --bind when none is given: the graph has no size symbols).  Exit 77 with a SKIP
# line where no GPU is present; 1 on the first failure.
tinyc="$1"
file="$2"
shift 2
probe=$("$tinyc" run "$file" --device=cuda --random-inputs 1 ${1:+--bind "$1"} 2>&1)
case "$probe" in
*NoGpu*)
	echo "SKIP: no CUDA GPU here: $file was not run on a GPU"
	exit 77 ;;
esac
[ $# -eq 0 ] && set -- ""
for bind in "$@"; do
	echo "+ tinyc run $file --device=cuda --random-inputs 1 ${bind:+--bind $bind} --check"
	if ! "$tinyc" run "$file" --device=cuda --random-inputs 1 ${bind:+--bind "$bind"} --check; then
		echo "FAIL: $file [$bind]"
		exit 1
	fi
done
echo "PASS: $file"
