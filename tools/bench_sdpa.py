#!/usr/bin/env python3
"""PyTorch scaled_dot_product_attention (causal) timing, for context beside tinyc htree --bench.

Usage: tools/bench_sdpa.py [--heads 16] [--kv-heads 1] [--dim 16] [--dtype float32]
                           [--warmup 3] [--iters 10] T [T ...]

Same shapes as the htree benchmark: q [B=1, H, T, D], k and v [1, H_kv, T, D] (GQA: the
k/v heads are repeated to H, as SDPA wants one head per query head), causal mask.  For each
T prints the median of CUDA-event-timed calls after warm-up, the backend PyTorch can use, and
one machine-readable line "BENCH sdpa T=<T> ms=<median> b2b_ms=<per call>" (b2b: --iters
calls back to back between two events, divided by their count; nan when it cannot run, e.g.
out of memory).  The tag is "sdpa" for float32, "sdpa-<dtype>" otherwise.
"""
import argparse
import statistics
import sys

from torch_timing import event_times_ms, loop_us


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("T", type=int, nargs="+")
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--kv-heads", type=int, default=1)
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    a = ap.parse_args()
    tag = "sdpa" if a.dtype == "float32" else "sdpa-" + a.dtype
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("bench_sdpa: PyTorch is not installed")
        for T in a.T:
            print("BENCH %s T=%d ms=nan b2b_ms=nan" % (tag, T))
        return 0
    if not torch.cuda.is_available():
        print("bench_sdpa: no CUDA device for PyTorch")
        for T in a.T:
            print("BENCH %s T=%d ms=nan b2b_ms=nan" % (tag, T))
        return 0
    dt = getattr(torch, a.dtype)
    dev = torch.device("cuda")
    print("bench_sdpa: torch %s on %s, %s, B=1 H=%d H_kv=%d D=%d, causal"
          % (torch.__version__, torch.cuda.get_device_name(0), a.dtype, a.heads, a.kv_heads,
             a.dim))
    g = torch.Generator(device=dev)
    g.manual_seed(0)
    for T in a.T:
        ms = b2b = float("nan")
        try:
            q = torch.randn(1, a.heads, T, a.dim, device=dev, dtype=dt, generator=g)
            k = torch.randn(1, a.kv_heads, T, a.dim, device=dev, dtype=dt, generator=g)
            v = torch.randn(1, a.kv_heads, T, a.dim, device=dev, dtype=dt, generator=g)
            rep = a.heads // a.kv_heads
            kk = k.repeat_interleave(rep, dim=1)
            vv = v.repeat_interleave(rep, dim=1)

            def run():
                return F.scaled_dot_product_attention(q, kk, vv, is_causal=True)

            times = event_times_ms(run, a.iters, a.warmup)
            ms = statistics.median(times)
            b2b = loop_us(run, a.iters, warmup=0) / 1e3
            print("sdpa T=%d %s: median %.3f ms, min %.3f ms over %d runs (warm-up %d), "
                  "%.3f ms a call back to back" % (T, a.dtype, ms, min(times), a.iters, a.warmup, b2b))
        except RuntimeError as err:  # out of memory, no kernel for this dtype
            print("sdpa T=%d: cannot run: %s" % (T, str(err).splitlines()[0]))
        finally:
            torch.cuda.empty_cache()
        print("BENCH %s T=%d ms=%s b2b_ms=%s" % (tag, T, "nan" if ms != ms else "%.4f" % ms,
                                                 "nan" if b2b != b2b else "%.4f" % b2b))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
