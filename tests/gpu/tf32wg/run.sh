#!/bin/sh
# run.sh TINYC SOURCE_DIR: fp32 Linears through the wgmma 3xTF32 form (TINYC_MATMUL=tf32wg)
# on the GPU against the reference evaluator (tinyc run --device=cuda --check, the fp32
# model checks' tolerance 1e-4): M, N, K not multiples of the tiles (K a multiple of 4: TMA
# needs 16-byte rows), bias, GELU and a residual in the epilogue, K up to 3072.  The plan
# must be the wgmma 3xTF32 one.  Exit 77 with a SKIP line without a GPU or off sm_90.
tinyc="$1"
src="$2"
gelu="$src/tests/gpu/tf32wg/linear_gelu_res_fp32.uop"
lin="$src/examples/linear_fp32.uop"
probe=$("$tinyc" run "$lin" --device=cuda --random-inputs 1 --bind M=8,N=8,K=8 -v 2>&1)
case "$probe" in
*NoGpu*)
	echo "SKIP: no CUDA GPU here: the wgmma 3xTF32 form was not run"
	exit 77 ;;
esac
if ! TINYC_MATMUL=tf32wg "$tinyc" --dump-stage=schedule --bind M=200,N=136,K=100 "$gelu" | grep -q 'm64n.*k8 3xTF32'; then
	echo "SKIP: this GPU does not take the wgmma 3xTF32 form (not sm_90)"
	exit 77
fi
for case in "$gelu M=200,N=136,K=100" "$gelu M=333,N=257,K=3072" "$gelu M=129,N=65,K=36" \
	    "$lin M=97,N=45,K=68" "$lin M=130,N=129,K=36" "$lin M=1000,N=700,K=1028"; do
	set -- $case
	echo "+ TINYC_MATMUL=tf32wg tinyc run $1 --bind $2 --device=cuda --random-inputs 1 --check --atol=1e-4 --rtol=1e-4"
	if ! TINYC_MATMUL=tf32wg "$tinyc" --dump-stage=schedule --bind "$2" "$1" | grep -q 'k8 3xTF32'; then
		echo "FAIL: $1 [$2]: the plan is not the wgmma 3xTF32 form"
		exit 1
	fi
	if ! TINYC_MATMUL=tf32wg "$tinyc" run "$1" --bind "$2" --device=cuda --random-inputs 1 --check --atol=1e-4 --rtol=1e-4; then
		echo "FAIL: $1 [$2]"
		exit 1
	fi
done
echo "PASS: the wgmma 3xTF32 form on every shape"
