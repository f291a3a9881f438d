#!/bin/sh
# run.sh: check the generated htree CUDA kernels on the CPU, without a GPU, by running them
# under a fiber emulation of CUDA (cuda_emu.h) against the CPU reference.  A developer tool
# (needs a C++ compiler; the ctest htree/emu_mma runs one case of the tensor-core leaves).
#
#   tools/htree-emu/run.sh BUILD_DIR r top_k max_top_nodes G K V dtype threads [fast_max] -- EMU_ARGS
#
# fast_max 1: pass 1 by ht_max_fast (the runner's default); 0 or absent: the exact sweep
# (the runner's --exact-max).
#
# After fast_max an optional mma flag: 1 runs the tensor-core leaves (G = K = V = 16, float)
# on an emulated mma.sync (slow: keep the cases small).  After mma an optional krot flag: 1
# makes pass 3 and the top layer's leaves read the rotated top keys (krot_keys).
#
# EMU_ARGS: GOLDEN_DIR CASE r top_k max_top_nodes
#        or random B T H Hkv K V r top_k max_top_nodes NPOS [dtype]
# Examples:
#   tools/htree-emu/run.sh build 4 8 32 4 16 16 float 64 -- ../shared/htree-golden v3_partial_T700 4 8 32
#   tools/htree-emu/run.sh build 16 512 8192 16 16 16 float 256 -- random 1 20000 16 1 16 16 16 512 8192 60
#   tools/htree-emu/run.sh build 16 32 256 16 16 16 float 256 0 1 -- random 1 3001 16 1 16 16 16 32 256 40
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=$(cd "$1" && pwd)
shift
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# the per-folder libraries, in a group (they refer to each other upwards and down)
LIBS="-Wl,--start-group $(ls "$BUILD"/libtinyc_*.a | tr '\n' ' ') -Wl,--end-group $(pkg-config --libs isl) -ldl -lm"
NVRTC=$(find /usr/local/cuda*/lib64 /usr/lib/x86_64-linux-gnu -maxdepth 1 -name 'libnvrtc.so*' 2>/dev/null | head -1)
NVDIR=$(dirname "${NVRTC:-/usr/local/cuda/lib64/x}")
cc -std=c11 -D_DEFAULT_SOURCE -I"$ROOT" "$HERE/gen.c" $LIBS -L"$NVDIR" -lnvrtc -Wl,-rpath,"$NVDIR" -o "$TMP/gen"
FAST=0
MMA=0
if [ $# -gt 8 ] && [ "$9" != "--" ]; then FAST=$9; fi
KROT=0
if [ $# -gt 9 ] && [ "$9" != "--" ] && [ "${10}" != "--" ]; then MMA=${10}; fi
if [ $# -gt 10 ] && [ "$9" != "--" ] && [ "${10}" != "--" ] && [ "${11}" != "--" ]; then KROT=${11}; fi
"$TMP/gen" "$TMP/htree.cu" "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$8" "$FAST" "$MMA" "$KROT"
shift 8
while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done
[ "${1:-}" = "--" ] && shift
sed -i '/#include <cuda_/d' "$TMP/htree.cu"
c++ -std=c++17 -O1 -ffp-contract=off -I"$ROOT" -I"$HERE" -include "$HERE/cuda_emu.h" \
	-DHTREE_CU="\"$TMP/htree.cu\"" "$HERE/emu_main.cpp" $LIBS -L"$NVDIR" -lnvrtc \
	-Wl,-rpath,"$NVDIR" -o "$TMP/emu"
"$TMP/emu" "$@"
