#!/usr/bin/env python3
"""The PyTorch side of tools/bench-matmul: inputs, references and the cuBLAS timings.

  tools/bench_matmul.py gen DIR MxNxK [...]     write DIR/MxNxK/{X,W,bias}.npy (fp16, seeded)
  tools/bench_matmul.py check DIR MxNxK [...]   compare DIR/MxNxK/Y.npy (tinyc's output) with
                                                relu(X @ W + bias) computed by torch in fp32
  tools/bench_matmul.py time MxNxK [...]        time on the GPU, per shape:
        cuBLASLt fused   torch._addmm_activation(bias, x, w)  (bias + ReLU epilogue)
        cuBLAS           x @ w
        unfused          torch.relu(torch.addmm(bias, x, w))
      CUDA events around each call, the median of --iters calls after --warmup; and the host
      wall time per call of --iters back-to-back calls with one synchronisation (launch
      overhead included).  Prints "BENCH torch shape=MxNxK lt_us=.. lt_wall_us=.. mm_us=..
      unfused_us=..".

check prints "CHECK shape=MxNxK rel=.. maxabs=.. ok|FAILED" (rel = |Y - ref| / |ref| in the
2-norm; ok below 5e-3, no NaN) and exits 1 when any check failed.
"""
import argparse
import os
import statistics
import sys
import time


def shape_of(s):
    m, n, k = (int(x) for x in s.lower().split("x"))
    return m, n, k


def gen(a):
    import numpy as np
    for i, sh in enumerate(a.shapes):
        m, n, k = shape_of(sh)
        d = os.path.join(a.dir, sh)
        os.makedirs(d, exist_ok=True)
        rng = np.random.default_rng(1000 + i)
        # uniform in [-1, 1): sums of K products stay well inside fp16's range
        np.save(os.path.join(d, "X.npy"), rng.uniform(-1, 1, (m, k)).astype(np.float16))
        np.save(os.path.join(d, "W.npy"), rng.uniform(-1, 1, (k, n)).astype(np.float16))
        np.save(os.path.join(d, "bias.npy"), rng.uniform(-1, 1, (n,)).astype(np.float16))
        print("GEN shape=%s" % sh)
    return 0


def check(a):
    import numpy as np
    import torch
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = False	# a float32 reference, not tf32
    bad = 0
    for sh in a.shapes:
        d = os.path.join(a.dir, sh)
        try:
            y = np.load(os.path.join(d, "Y.npy"))
        except OSError:
            print("CHECK shape=%s rel=nan maxabs=nan FAILED (no output)" % sh)
            bad = 1
            continue
        x = torch.from_numpy(np.load(os.path.join(d, "X.npy"))).to(dev).float()
        w = torch.from_numpy(np.load(os.path.join(d, "W.npy"))).to(dev).float()
        b = torch.from_numpy(np.load(os.path.join(d, "bias.npy"))).to(dev).float()
        ref = torch.relu(x @ w + b).half().float()
        got = torch.from_numpy(y.astype(np.float32)).to(dev)
        if got.shape != ref.shape:
            print("CHECK shape=%s rel=nan maxabs=nan FAILED (shape %s)" % (sh, tuple(got.shape)))
            bad = 1
            continue
        diff = got - ref
        rel = (diff.norm() / ref.norm().clamp_min(1e-30)).item()
        mx = diff.abs().max().item()
        ok = rel == rel and rel < 5e-3 and not torch.isnan(got).any().item()
        print("CHECK shape=%s rel=%.3g maxabs=%.3g %s" % (sh, rel, mx, "ok" if ok else "FAILED"))
        bad |= not ok
    return 1 if bad else 0


def timed(torch, fn, warmup, iters):
    """Median event time (us) and host wall time per call (us) of fn()."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        ts.append(e0.elapsed_time(e1) * 1e3)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) / iters * 1e6
    return statistics.median(ts), wall


def time_all(a):
    try:
        import torch
    except ImportError:
        print("bench_matmul: PyTorch is not installed")
        return 0
    if not torch.cuda.is_available():
        print("bench_matmul: no CUDA device for PyTorch")
        return 0
    print("bench_matmul: torch %s on %s" % (torch.__version__, torch.cuda.get_device_name()))
    for sh in a.shapes:
        m, n, k = shape_of(sh)
        g = torch.Generator(device="cuda").manual_seed(7)
        x = torch.rand(m, k, device="cuda", dtype=torch.float16, generator=g) * 2 - 1
        w = torch.rand(k, n, device="cuda", dtype=torch.float16, generator=g) * 2 - 1
        b = torch.rand(n, device="cuda", dtype=torch.float16, generator=g) * 2 - 1
        lt, lt_wall = timed(torch, lambda: torch._addmm_activation(b, x, w), a.warmup, a.iters)
        mm, mm_wall = timed(torch, lambda: x @ w, a.warmup, a.iters)
        un, un_wall = timed(torch, lambda: torch.relu(torch.addmm(b, x, w)), a.warmup, a.iters)
        print("BENCH torch shape=%s lt_us=%.3f lt_wall_us=%.3f mm_us=%.3f mm_wall_us=%.3f "
              "unfused_us=%.3f unfused_wall_us=%.3f" % (sh, lt, lt_wall, mm, mm_wall, un, un_wall))
        sys.stdout.flush()
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["gen", "check", "time"])
    ap.add_argument("args", nargs="+")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--iters", type=int, default=50)
    a = ap.parse_args()
    if a.mode in ("gen", "check"):
        a.dir, a.shapes = a.args[0], a.args[1:]
    else:
        a.shapes = a.args
    return {"gen": gen, "check": check, "time": time_all}[a.mode](a)


if __name__ == "__main__":
    sys.exit(main())
