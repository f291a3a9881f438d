#!/bin/sh
# Benchmark of the middle end (uop -> indexbook -> polyview -> rbssa -> polycore): prints the
# per-pass times that `tinyc -v` reports and their sum, for
#   1. 1,000 elementwise nodes on [M,N] (a chain mixing unary and binary ops, with
#      broadcasts of a [N] row and a scalar CONST),
#   2. a 6-D reshape/permute chain (24 movement ops over a 2*3*4*5*6*7 tensor),
#   3. the entangled 6-D chain of test_poly (every reshape regroups all six dims, so some
#      movement values are stored and their readers' accesses carry many divisions),
#   4. every examples/*.uop.
# Not a timed test: it only reports.  Usage: tools/bench-middle.sh [path/to/tinyc] [stage]
# (stage: the last pass run, polycore by default).
set -eu
TINYC=${1:-build/tinyc}
STAGE=${2:-polycore}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT

python3 - "$DIR" <<'PY'
import sys, random
d = sys.argv[1]
random.seed(1)
# 1. elementwise chain
L = ['%0 = BUFFER(slot=0, name="X") : float[M,N]',
     '%1 = BUFFER(slot=1, name="b") : float[N]',
     '%2 = CONST(0.5) : float[]']
prev, n = 0, 3
while n < 1003:
    op = random.choice(["ADD", "MUL", "SUB", "MAX", "NEG", "RELU", "ADDB", "MULC"])
    if op == "ADDB":
        L.append('%%%d = ADD(%%%d, %%1) : float[M,N]' % (n, prev))
    elif op == "MULC":
        L.append('%%%d = MUL(%%%d, %%2) : float[M,N]' % (n, prev))
    elif op in ("NEG", "RELU"):
        L.append('%%%d = %s(%%%d) : float[M,N]' % (n, op, prev))
    else:
        other = random.choice([0, max(3, n - 7), prev])
        L.append('%%%d = %s(%%%d, %%%d) : float[M,N]' % (n, op, prev, other))
    prev, n = n, n + 1
L.append('%%%d = OUTPUT(%%%d, name="Y") : float[M,N]' % (n, prev))
open(d + "/ewise1000.uop", "w").write("\n".join(L) + "\n")

# 2. 6-D reshape/permute chain
shape = [2, 3, 4, 5, 6, 7]
L = ['%%0 = BUFFER(slot=0, name="X") : float[%s]' % ",".join(map(str, shape))]
n = 1
for step in range(12):
    perm = list(range(6))
    random.shuffle(perm)
    shape = [shape[p] for p in perm]
    L.append('%%%d = PERMUTE(%%%d, perm=[%s]) : float[%s]' % (n, n - 1, ",".join(map(str, perm)), ",".join(map(str, shape))))
    n += 1
    # regroup the factors into a new 6-D shape of the same element count
    f = []
    for s in shape:
        k = 2
        while s > 1:
            while s % k == 0:
                f.append(k); s //= k
            k += 1
    random.shuffle(f)
    new = [1] * 6
    for i, x in enumerate(f):
        new[i % 6] *= x
    shape = new
    L.append('%%%d = RESHAPE(%%%d, shape=[%s]) : float[%s]' % (n, n - 1, ",".join(map(str, shape)), ",".join(map(str, shape))))
    n += 1
L.append('%%%d = OUTPUT(%%%d, name="Y") : float[%s]' % (n, n - 1, ",".join(map(str, shape))))
open(d + "/chain6d.uop", "w").write("\n".join(L) + "\n")

# 3. the entangled 6-D chain (tests/unit/test_poly.c: six_d_chain_with_stored_views)
open(d + "/entangled6d.uop", "w").write("""\
%0 = BUFFER(slot=0, name="X") : float[2,3,4,5,2,3]
%1 = PERMUTE(%0, perm=[2,3,5,0,4,1]) : float[4,5,3,2,2,3]
%2 = RESHAPE(%1, shape=[6,10,2,2,3,1]) : float[6,10,2,2,3,1]
%3 = PERMUTE(%2, perm=[2,4,1,5,0,3]) : float[2,3,10,1,6,2]
%4 = RESHAPE(%3, shape=[9,10,4,2,1,1]) : float[9,10,4,2,1,1]
%5 = PERMUTE(%4, perm=[2,3,1,4,5,0]) : float[4,2,10,1,1,9]
%6 = RESHAPE(%5, shape=[6,6,5,2,2,1]) : float[6,6,5,2,2,1]
%7 = PERMUTE(%6, perm=[5,3,0,2,1,4]) : float[1,2,6,5,6,2]
%8 = RESHAPE(%7, shape=[5,4,3,2,3,2]) : float[5,4,3,2,3,2]
%9 = NEG(%8) : float[5,4,3,2,3,2]
%10 = OUTPUT(%9, name="Y") : float[5,4,3,2,3,2]
""")
PY

for f in "$DIR/ewise1000.uop" "$DIR/chain6d.uop" "$DIR/entangled6d.uop" "$ROOT"/examples/*.uop; do
	echo "== $(basename "$f" .uop) ($(grep -c '^%' "$f") nodes), --dump-stage=$STAGE"
	start=$(date +%s%N)
	"$TINYC" -v --dump-stage="$STAGE" "$f" 2>&1 >/dev/null | grep 'tinyc: pass' |
		awk '{ print; t += $4 } END { printf "   sum of the passes: %.1f ms\n", t }' || true
	end=$(date +%s%N)
	echo "   total wall time: $(( (end - start) / 1000000 )) ms"
done
