#!/bin/sh
# Benchmark of the middle end (uop -> indexbook -> polyview): prints the per-pass times that
# `tinyc -v` reports, for two generated graphs:
#   1. 1,000 elementwise nodes on [M,N] (a chain mixing unary and binary ops, with
#      broadcasts of a [N] row and a scalar CONST),
#   2. a 6-D reshape/permute chain (24 movement ops over a 2*3*4*5*6*7 tensor).
# Not a timed test: it only reports.  Usage: tools/bench-middle.sh [path/to/tinyc] [stage]
set -eu
TINYC=${1:-build/tinyc}
STAGE=${2:-polyview}
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
PY

for g in ewise1000 chain6d; do
	echo "== $g ($(grep -c '^%' "$DIR/$g.uop") nodes), --dump-stage=$STAGE"
	start=$(date +%s%N)
	"$TINYC" -v --dump-stage="$STAGE" "$DIR/$g.uop" 2>&1 >/dev/null | grep 'tinyc: pass' || true
	end=$(date +%s%N)
	echo "   total wall time: $(( (end - start) / 1000000 )) ms"
done
