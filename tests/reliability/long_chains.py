#!/usr/bin/env python3
"""Long chains of every op kind compile in linear time (issue 18).

  long_chains.py TINYC [sanitized]

For each kind of chain (elementwise NEG, CAST float<->half, PAD/SHRINK, RESHAPE, PERMUTE,
EXPAND/SHRINK, and each movement kind with a NEG after every step, which the fused
elementwise kernels see instead of the rearrange path) the graph of n steps and of 4n steps
are compiled to CUDA (sm_80); 4x the steps may take at most 8x the CPU time (quadratic growth
takes 16x; before the fix a PAD/SHRINK chain took 12x and a RESHAPE+NEG chain grew
exponentially: 40 steps made 40 MB of CUDA).  The CUDA text must also grow at most 8x.
A short chain of each kind then runs on the GPU IR interpreter with --check against the
reference evaluator.  Under the sanitizers the chains are 5x shorter.
"""
import os
import resource
import subprocess
import sys
import tempfile

tinyc = sys.argv[1]
sanitized = len(sys.argv) > 2 and sys.argv[2] in ("1", "ON", "on", "TRUE", "true")


def step(kind, i, p, q):
    """The line of node %q = one step of chain `kind` (step i) on %p."""
    if kind == "neg":
        return f"%{q} = NEG(%{p}) : float[4,8]"
    if kind == "cast":
        return f"%{q} = CAST(%{p}) : " + ("half[4,8]" if i % 2 else "float[4,8]")
    if kind == "padshrink":
        return (f"%{q} = PAD(%{p}, pads=[[1,1],[0,0]]) : float[6,8]" if i % 2 else
                f"%{q} = SHRINK(%{p}, bounds=[[1,5],[0,8]]) : float[4,8]")
    if kind == "reshape":
        return (f"%{q} = RESHAPE(%{p}, shape=[32]) : float[32]" if i % 2 else
                f"%{q} = RESHAPE(%{p}, shape=[4,8]) : float[4,8]")
    if kind == "permute":
        return f"%{q} = PERMUTE(%{p}, perm=[1,0]) : " + ("float[8,4]" if i % 2 else "float[4,8]")
    if kind == "expand":
        return (f"%{q} = SHRINK(%{p}, bounds=[[0,1],[0,8]]) : float[1,8]" if i % 2 else
                f"%{q} = EXPAND(%{p}, shape=[4,8]) : float[4,8]")
    raise ValueError(kind)


def chain(path, kind, n):
    """Write BUFFER -> n steps of kind ("m" prefix: a NEG after each step) -> OUTPUT."""
    mixed = kind.startswith("m-")
    base = kind[2:] if mixed else kind
    lines = ['%0 = BUFFER(slot=0, name="X") : float[4,8]']
    q = 0
    for i in range(1, n + 1):
        lines.append(step(base, i, q, q + 1))
        q += 1
        if mixed:
            ty = lines[-1].split(" : ")[1]
            lines.append(f"%{q + 1} = NEG(%{q}) : {ty}")
            q += 1
    ty = lines[-1].split(" : ")[1]
    lines.append(f'%{q + 1} = OUTPUT(%{q}, name="Y") : {ty}')
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def run(args):
    """Run tinyc: (exit status, stdout length, stderr, CPU seconds).  The child's CPU time
    (user + system), not the wall time, so that other work on a loaded machine does not
    change the ratio."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([tinyc] + args, capture_output=True, text=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return p.returncode, len(p.stdout), p.stderr, cpu


div = 5 if sanitized else 1
# kind -> n (4n is compiled too): 20,000 NEGs vs 80,000 (the sizes), the others
# chosen so that each takes a few CPU seconds at 4n
KINDS = {
    "neg": 20000, "cast": 10000, "padshrink": 20000, "reshape": 50000, "permute": 50000,
    "expand": 50000, "m-padshrink": 2500, "m-reshape": 1500, "m-permute": 2500,
    "m-expand": 2500,
}
failed = []
with tempfile.TemporaryDirectory() as tmp:
    for kind, n in KINDS.items():
        n = max(n // div, 50)
        res = {}
        for size in (n, 4 * n):
            path = os.path.join(tmp, f"{kind}-{size}.uop")
            chain(path, kind, size)
            rc, out_len, err, secs = run(["--dump-stage=cuda", "--target=sm_80", path])
            if rc != 0:
                failed.append(f"{kind} x{size}: exit {rc}, {err[-300:]!r}")
                break
            res[size] = (secs, out_len)
        if len(res) < 2:
            continue
        ratio = res[4 * n][0] / max(res[n][0], 0.02)
        text = res[4 * n][1] / max(res[n][1], 1)
        print(f"{kind:12s} {n:6d} steps {res[n][0]:6.2f} s CPU, {4 * n:6d} steps {res[4 * n][0]:6.2f} s:"
              f" time x{ratio:.1f}, CUDA text x{text:.1f}")
        if ratio > 8 or text > 8:
            failed.append(f"{kind}: 4x the steps took x{ratio:.1f} the time, x{text:.1f} the text")
        path = os.path.join(tmp, f"{kind}-check.uop")
        chain(path, kind, 40)
        rc, _, err, _ = run(["run", path, "--random-inputs", "1", "--device=gpuir", "--check"])
        if rc != 0:
            failed.append(f"{kind} x40 on gpuir --check: exit {rc}, {err[-300:]!r}")
for f in failed:
    print("FAIL:", f)
sys.exit(1 if failed else 0)
