#!/usr/bin/env python3
"""PyTorch reference for tools/bench-rearrange: x.permute(...).contiguous() and a
device-to-device copy of the same bytes (y.copy_(x)), timed with CUDA events.

    bench_torch_permute.py [--iters N] [--warmup N] [--quick]

Prints CSV on stdout, one line per case and dtype:

    case,dtype,torch_ms,torch_gbs,torch_copy_gbs

(GB/s = (bytes read + bytes written) / time, the median of --iters timed calls after
--warmup).  The cases and their names are those of tools/bench_rearrange.c.  Exits 77 when
PyTorch or a CUDA device is missing (bench-rearrange then prints n/a for torch).
"""
import argparse
import statistics
import sys

from torch_timing import event_times_ms

# name, x shape, permutation (y = x.permute(perm)): as in tools/bench_rearrange.c
CASES = [
    ("nchw_to_nhwc", (32, 64, 224, 224), (0, 2, 3, 1)),
    ("nhwc_to_nchw", (32, 224, 224, 64), (0, 3, 1, 2)),
    ("transpose_8192", (8192, 8192), (1, 0)),
    ("bshd_to_bhsd", (8, 2048, 32, 128), (0, 2, 1, 3)),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="only the first case")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("SKIP: PyTorch is not installed", file=sys.stderr)
        return 77
    if not torch.cuda.is_available():
        print("SKIP: PyTorch sees no CUDA device", file=sys.stderr)
        return 77
    print(f"# torch {torch.__version__} on {torch.cuda.get_device_name(0)}", file=sys.stderr)
    cases = CASES[:1] if args.quick else CASES
    for name, shape, perm in cases:
        for dname, dtype in (("fp32", torch.float32), ("fp16", torch.float16)):
            x = torch.randn(shape, device="cuda", dtype=dtype)
            nbytes = x.numel() * x.element_size()
            y = torch.empty_like(x)
            want = x.permute(*perm).contiguous()
            # a spot check that the permute is the one meant (first and last elements)
            idx_last = tuple(s - 1 for s in want.shape)
            src_last = tuple(idx_last[perm.index(i)] for i in range(len(shape)))
            assert torch.equal(want[idx_last], x[src_last])
            del want
            t_perm = statistics.median(event_times_ms(lambda: x.permute(*perm).contiguous(),
                                                      args.iters, args.warmup))
            t_copy = statistics.median(event_times_ms(lambda: y.copy_(x), args.iters, args.warmup))
            gbs = 2 * nbytes / 1e6 / t_perm
            copy_gbs = 2 * nbytes / 1e6 / t_copy
            print(f"{name},{dname},{t_perm:.4f},{gbs:.1f},{copy_gbs:.1f}")
            sys.stdout.flush()
            del x, y
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
