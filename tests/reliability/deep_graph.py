#!/usr/bin/env python3
"""Deep graphs (issue 18): no pass may recurse on graph depth.

  deep_graph.py TINYC [sanitized]

1. A 1,000,000-node NEG chain is refused by the parser with a located GraphTooLarge
   (TINYC_MAX_NODES = 262144), quickly and without a crash.
2. A long NEG chain compiles to CUDA (sm_80) and runs on the GPU IR interpreter with
   --check against the reference evaluator, under a 1 MiB stack: a walk that recursed once
   per node would overflow it (a 30,000-node chain needed more than 8 MiB before).  Under
   the sanitizers the stack is 8 MiB and the chain 4,000 nodes.
3. The compile time grows linearly: 4x the nodes may take at most 8x the time
   (quadratic growth would take 16x).
"""
import os
import resource
import subprocess
import sys
import tempfile
import time

tinyc = sys.argv[1]
sanitized = len(sys.argv) > 2 and sys.argv[2] in ("1", "ON", "on", "TRUE", "true")
# 1 MiB; 8 MiB under the sanitizers, whose frames are several times larger (there the
# chain is checked for crashes and linear time only)
STACK = (8 if sanitized else 1) << 20


def chain(path, n):
    """Write BUFFER -> n NEGs -> OUTPUT."""
    with open(path, "w") as f:
        f.write('%0 = BUFFER(slot=0, name="X") : float[4]\n')
        f.write("".join(f"%{i} = NEG(%{i - 1}) : float[4]\n" for i in range(1, n + 1)))
        f.write(f'%{n + 1} = OUTPUT(%{n}, name="Y") : float[4]\n')


def small_stack():
    resource.setrlimit(resource.RLIMIT_STACK, (STACK, STACK))


def run(args, limit_stack=True):
    """Run tinyc; (exit status, stdout, stderr, seconds)."""
    t0 = time.monotonic()
    p = subprocess.run([tinyc] + args, capture_output=True, text=True,
                       preexec_fn=small_stack if limit_stack else None)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t0


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


with tempfile.TemporaryDirectory() as tmp:
    big = os.path.join(tmp, "chain1m.uop")
    chain(big, 1000000)
    rc, out, err, secs = run(["--dump-stage=uop", big])
    want = f"{big}:262145:1: error: GraphTooLarge: a graph holds at most 262144 nodes"
    if rc != 1 or want not in err:
        fail(f"1M chain: exit {rc}, stderr {err[:300]!r}")
    print(f"1M chain: GraphTooLarge in {secs:.2f} s")

    n = 4000 if sanitized else 20000
    times = {}
    for size in (n // 4, n):
        path = os.path.join(tmp, f"chain{size}.uop")
        chain(path, size)
        rc, out, err, secs = run(["--dump-stage=cuda", "--target=sm_80", path])
        if rc != 0:
            fail(f"{size}-node chain: exit {rc} (negative: a signal), stderr {err[-300:]!r}")
        if f"float v{size} = (-v{size - 1});" not in out:
            fail(f"{size}-node chain: the CUDA text lacks the last NEG")
        times[size] = secs
        print(f"{size}-node chain: CUDA in {secs:.2f} s under a {STACK >> 20} MiB stack")
    rc, out, err, secs = run(["run", path, "--random-inputs", "1", "--device=gpuir", "--check"])
    if rc != 0 or "ok" not in out:
        fail(f"{n}-node chain on gpuir: exit {rc}, {out[-300:]!r} {err[-300:]!r}")
    print(f"{n}-node chain: gpuir run checked against the reference in {secs:.2f} s")
    ratio = times[n] / max(times[n // 4], 1e-3)
    print(f"time ratio for 4x the nodes: {ratio:.1f}")
    if ratio > 8:
        fail(f"compile time grows faster than linearly: {ratio:.1f}x for 4x the nodes")
print("ok")
