#!/bin/sh
# cli_run.sh TINYC FILE.uop: the CLI path of a GPU run.  For each size (1, 7, 127 on every
# symbol) runs `tinyc run FILE --device=cuda --random-inputs 1 --bind ... --check`, with the
# kernels specialised to the sizes and again with --runtime-sizes (symbolic kernels).
# Exit 77 with a SKIP line where no GPU is present; 1 on the first failure.
tinyc="$1"
file="$2"
# the size symbols: identifiers inside the shapes after ':' (dims are integers or symbols)
syms=$(sed -e 's/#.*//' "$file" | grep -o ':[^[]*\[[^]]*\]' | sed -e 's/.*\[//' -e 's/\]//' |
       tr ',' '\n' | tr -d ' ' | grep -E '^[A-Za-z_][A-Za-z0-9_]*$' | sort -u)
probe=$("$tinyc" run "$file" --device=cuda --random-inputs 1 --bind "$(for s in $syms; do printf '%s=1,' "$s"; done | sed 's/,$//')" 2>&1)
case "$probe" in
*NoGpu*)
	echo "SKIP: no CUDA GPU here: $file was not run on a GPU"
	exit 77 ;;
esac
for size in 1 7 127; do
	bind=$(for s in $syms; do printf '%s=%s,' "$s" "$size"; done | sed 's/,$//')
	for mode in "" --runtime-sizes; do
		echo "+ tinyc run $file --device=cuda --random-inputs 1 ${bind:+--bind $bind} $mode --check"
		if ! "$tinyc" run "$file" --device=cuda --random-inputs 1 ${bind:+--bind "$bind"} $mode --check; then
			echo "FAIL: $file [$bind] $mode"
			exit 1
		fi
	done
done
echo "PASS: $file"
