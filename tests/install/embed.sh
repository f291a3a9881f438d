#!/bin/sh
# embed.sh SOURCE_DIR BUILD_DIR: install tinyc into a temporary prefix, build the C and C++
# examples of examples/embed against it twice (pkg-config, then find_package(tinyc) with
# CMake), run every build and compare the outputs with hand-computed values.
set -eu
src=$1 build=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix/usr" >/dev/null
ex=$src/examples/embed
# Y = relu(X @ W + bias) by hand:
#   embed.c:   X = [[1,2,3],[4,5,6]], W = [[1,-1],[0,2],[1,0]], bias = [-5,0.5]
#              X@W = [[4,3],[10,6]]; + bias = [[-1,3.5],[5,6.5]]; relu -> 0 3.5 5 6.5
#   embed.cpp: X = I(3), bias = [0.5,-0.5]: W + bias = [[1.5,-1.5],[0.5,1.5],[1.5,-0.5]]
cat >"$prefix/want_c" <<'W'
tinyc 0.2.0: output Y: float[M=2,N=2]
Y = 0 3.5 5 6.5
W
cat >"$prefix/want_cpp" <<'W'
Y[3,2] = 1.5 0 0.5 1.5 1.5 0
bad graph: TINYC_ERROR_INPUT, kind UnknownOp
W
check() {	# check NAME WANT COMMAND...: run COMMAND, compare its stdout with WANT
	name=$1 want=$2
	shift 2
	"$@" >"$prefix/got" || { echo "FAIL: $name exited with $?"; exit 1; }
	diff -u "$want" "$prefix/got" || { echo "FAIL: $name"; exit 1; }
	echo "ok: $name"
}

# 1. pkg-config
pcdir=$(dirname "$(find "$prefix/usr" -name tinyc.pc | head -n 1)")
flags=$(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs tinyc)
libdir=$(PKG_CONFIG_PATH=$pcdir pkg-config --variable=libdir tinyc)
cc -std=c11 -Wall -Wextra -Werror -o "$prefix/embed_c" "$ex/embed.c" $flags
c++ -std=c++11 -Wall -Wextra -Werror -o "$prefix/embed_cpp" "$ex/embed.cpp" $flags
check "C, pkg-config" "$prefix/want_c" env LD_LIBRARY_PATH="$libdir" "$prefix/embed_c"
check "C++, pkg-config" "$prefix/want_cpp" env LD_LIBRARY_PATH="$libdir" "$prefix/embed_cpp" "$ex/linear_relu.uop"

# 2. find_package(tinyc) (CMake puts the library's directory in the build RPATH)
cmake -S "$ex" -B "$prefix/cmake-build" -DCMAKE_PREFIX_PATH="$prefix/usr" \
      -DCMAKE_C_FLAGS="-Wall -Wextra -Werror" -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" >/dev/null
cmake --build "$prefix/cmake-build" >/dev/null
check "C, find_package" "$prefix/want_c" "$prefix/cmake-build/embed_c"
check "C++, find_package" "$prefix/want_cpp" "$prefix/cmake-build/embed_cpp" "$ex/linear_relu.uop"

# 3. what else was installed: the CLI and its man page
"$prefix/usr/bin/tinyc" --version >/dev/null
test -f "$prefix/usr/share/man/man1/tinyc.1"
echo "ok: CLI and man page installed"
