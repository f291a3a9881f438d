#!/bin/sh
# epilogue_run.sh TINYC FILE.uop: a matmul + epilogue graph on the GPU against the reference
# evaluator (tinyc run --device=cuda --check), through both templates (TINYC_MATMUL=simt and
# mma), at sizes with tails: (M, N, K) in (8, 8, 8), (509, 506, 120), (768, 768, 256),
# (509, 8, 256), (8, 506, 120), (768, 506, 8); the batched graph (symbol B) at B = 3.
# Symbolic kernels (--runtime-sizes) for every size, specialised ones for (509, 506, 120).
# The schedule must pick the matmul template (not a generic fallback).  Tolerances: 2e-3
# absolute and relative (K up to 256 products summed in float in another order than the
# reference's: near-zero results carry the rounding of their large partial sums).
# On sm_90 also the wgmma template (TINYC_MATMUL=wgmma) at bound sizes, aligned rows and
# rows TMA cannot load (packed first), and its 2-CTA clusters (TINYC_WGMMA_CLUSTER=2).
# Exit 77 with a SKIP line where no GPU is present; 1 on the first failure.
tinyc="$1"
file="$2"
batch=""
if grep -q 'half\[B,' "$file"; then batch="B=3,"; fi
probe=$("$tinyc" run "$file" --device=cuda --random-inputs 1 --bind "${batch}M=8,N=8,K=8" 2>&1)
case "$probe" in
*NoGpu*)
	echo "SKIP: no CUDA GPU here: $file was not run on a GPU"
	exit 77 ;;
esac
for variant in simt mma; do
	if ! TINYC_MATMUL=$variant "$tinyc" --dump-stage=schedule "$file" | grep -q '(matmul)'; then
		echo "FAIL: $file: the schedule does not use the matmul template ($variant)"
		exit 1
	fi
	for mnk in 8,8,8 509,506,120 768,768,256 509,8,256 8,506,120 768,506,8; do
		m=${mnk%%,*}; rest=${mnk#*,}; n=${rest%%,*}; k=${rest#*,}
		bind="${batch}M=$m,N=$n,K=$k"
		modes="--runtime-sizes"
		if [ "$mnk" = 509,506,120 ]; then modes="--runtime-sizes specialised"; fi
		for mode in $modes; do
			flag=$mode; [ "$mode" = specialised ] && flag=""
			echo "+ TINYC_MATMUL=$variant tinyc run $file --device=cuda --random-inputs 1 --bind $bind $flag --check --atol=2e-3 --rtol=2e-3"
			if ! TINYC_MATMUL=$variant "$tinyc" run "$file" --device=cuda --random-inputs 1 --bind "$bind" $flag --check --atol=2e-3 --rtol=2e-3; then
				echo "FAIL: $file [$bind] $variant $mode"
				exit 1
			fi
		done
	done
done
# The Hopper template (wgmma + TMA) where the device has it: sizes bound at compile time
# (TMA needs them) with 16-byte aligned rows, tails in every dim; graphs whose epilogue
# reduces stay on mma (the plan does not propose wgmma for them).
if TINYC_MATMUL=wgmma "$tinyc" --dump-stage=schedule "$file" --bind "${batch}M=200,N=136,K=72" 2>/dev/null |
	grep -q 'candidate [0-9]*: matmul wgmma'; then
	# odd row lengths (130x77x75, 509x506x121): TMA cannot load X (and W where N is odd):
	# the plan packs them into padded workspaces first (packing kernels)
	for mnk in 8,8,8 200,136,72 509,504,120 768,768,256 130,77,75 509,506,121; do
		m=${mnk%%,*}; rest=${mnk#*,}; n=${rest%%,*}; k=${rest#*,}
		bind="${batch}M=$m,N=$n,K=$k"
		if ! TINYC_MATMUL=wgmma "$tinyc" --dump-stage=schedule "$file" --bind "$bind" | grep -q 'choice: .*(matmul)' ||
		   ! TINYC_MATMUL=wgmma "$tinyc" --dump-stage=schedule "$file" --bind "$bind" | grep -q 'tile .*TMA ring'; then
			echo "FAIL: $file [$bind]: the schedule does not use the wgmma template"
			exit 1
		fi
		case $mnk in
		130,77,75|509,506,121)
			if ! TINYC_MATMUL=wgmma "$tinyc" --dump-stage=schedule "$file" --bind "$bind" | grep -q '^  pack: A'; then
				echo "FAIL: $file [$bind]: the wgmma plan does not pack X (rows not 16-byte aligned)"
				exit 1
			fi ;;
		esac
		echo "+ TINYC_MATMUL=wgmma tinyc run $file --device=cuda --random-inputs 1 --bind $bind --check --atol=2e-3 --rtol=2e-3"
		if ! TINYC_MATMUL=wgmma "$tinyc" run "$file" --device=cuda --random-inputs 1 --bind "$bind" --check --atol=2e-3 --rtol=2e-3; then
			echo "FAIL: $file [$bind] wgmma"
			exit 1
		fi
	done
	# 2-CTA clusters with B multicast (TINYC_WGMMA_CLUSTER=2) where the plan offers them
	# (B n-major, no batch): the model's cluster tile, and a forced cooperative 128x128
	# and pingpong 64x64 over an odd count of m tiles (the last pair's second tile past M)
	for run in ":200,136,72" ":509,504,120" "128x128x64x4:300,256,120" "64x64x64x4:200,136,72"; do
		tile=${run%%:*}; mnk=${run#*:}
		m=${mnk%%,*}; rest=${mnk#*,}; n=${rest%%,*}; k=${rest#*,}
		bind="${batch}M=$m,N=$n,K=$k"
		if ! TINYC_MATMUL=wgmma TINYC_WGMMA_CLUSTER=2 TINYC_MATMUL_TILE=$tile "$tinyc" --dump-stage=schedule "$file" \
			--bind "$bind" 2>/dev/null | grep -q '^  bind: .*clusters of 2 CTAs'; then
			echo "note: $file [$bind]: no cluster plan (B k-major or batched)"
			continue
		fi
		echo "+ TINYC_MATMUL=wgmma TINYC_WGMMA_CLUSTER=2 TINYC_MATMUL_TILE=$tile tinyc run $file --device=cuda --random-inputs 1 --bind $bind --check --atol=2e-3 --rtol=2e-3"
		if ! TINYC_MATMUL=wgmma TINYC_WGMMA_CLUSTER=2 TINYC_MATMUL_TILE=$tile "$tinyc" run "$file" --device=cuda \
			--random-inputs 1 --bind "$bind" --check --atol=2e-3 --rtol=2e-3; then
			echo "FAIL: $file [$bind] wgmma cluster $tile"
			exit 1
		fi
	done
else
	echo "note: $file: no wgmma plan on this device (not sm_90, or the epilogue reduces)"
fi
echo "PASS: $file"
