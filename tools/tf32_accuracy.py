#!/usr/bin/env python3
"""The accuracy of tinyc's fp32 contraction templates against fp64 (NumPy), on
examples/linear_fp32.uop (Y = X W^T + bias): per shape and template (TINYC_MATMUL=simt,
tf32x3, tf32wg: the wgmma 3xTF32 form on sm_90a), the max absolute error, the max relative error and the max error relative to
sum_k |x_k w_k| + |bias| (the scale of an fp32 dot product's rounding), and the same for
torch's fp32 F.linear with TF32 off when torch and a GPU are there.  Inputs: standard
normal, seed 0.

usage: tools/tf32_accuracy.py [--tinyc build/tinyc] [--device cuda|gpuir]
                             [--templates simt,tf32x3,tf32wg] MxNxK ...
Prints one "ACC ..." line per shape and side.
"""
import argparse
import os
import subprocess
import tempfile

import numpy as np


def errors(y, ref, scale):
    """max abs, max rel and max scaled error of y against ref."""
    err = np.abs(y.astype(np.float64) - ref)
    return err.max(), (err / np.maximum(np.abs(ref), 1e-30)).max(), (err / scale).max()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tinyc", default="build/tinyc")
    ap.add_argument("--device", default="cuda", choices=["cuda", "gpuir"])
    ap.add_argument("--templates", default="simt,tf32x3",
                    help="TINYC_MATMUL values, comma-separated (tf32wg needs sm_90a)")
    ap.add_argument("shapes", nargs="+")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    uop = os.path.join(root, "examples", "linear_fp32.uop")
    rng = np.random.default_rng(0)
    tmp = tempfile.mkdtemp()
    for sh in a.shapes:
        m, n, k = (int(v) for v in sh.split("x"))
        x = rng.standard_normal((m, k)).astype(np.float32)
        w = rng.standard_normal((n, k)).astype(np.float32)
        b = rng.standard_normal(n).astype(np.float32)
        for name, v in (("x", x), ("w", w), ("b", b)):
            np.save(os.path.join(tmp, name + ".npy"), v)
        x64, w64, b64 = x.astype(np.float64), w.astype(np.float64), b.astype(np.float64)
        ref = x64 @ w64.T + b64
        scale = np.abs(x64) @ np.abs(w64).T + np.abs(b64)
        sides = []
        for v in a.templates.split(","):
            out = os.path.join(tmp, "y_%s.npy" % v)
            env = dict(os.environ, TINYC_MATMUL=v)
            r = subprocess.run([a.tinyc, "run", uop, "--in", "X=" + os.path.join(tmp, "x.npy"),
                                "--in", "W=" + os.path.join(tmp, "w.npy"),
                                "--in", "bias=" + os.path.join(tmp, "b.npy"),
                                "--out", "Y=" + out, "--device=" + a.device],
                               env=env, capture_output=True, text=True)
            if r.returncode:
                print("ACC M=%d N=%d K=%d %s error: %s" % (m, n, k, v, r.stderr.strip()[-300:]))
                continue
            sides.append(("tinyc-" + v, np.load(out)))
        try:
            import torch
            if torch.cuda.is_available():
                torch.backends.cuda.matmul.allow_tf32 = False
                y = torch.nn.functional.linear(torch.from_numpy(x).cuda(), torch.from_numpy(w).cuda(),
                                               torch.from_numpy(b).cuda())
                sides.append(("torch-fp32", y.cpu().numpy()))
                torch.backends.cuda.matmul.allow_tf32 = True
                y = torch.nn.functional.linear(torch.from_numpy(x).cuda(), torch.from_numpy(w).cuda(),
                                               torch.from_numpy(b).cuda())
                sides.append(("torch-tf32", y.cpu().numpy()))
                torch.backends.cuda.matmul.allow_tf32 = False
        except ImportError:
            pass
        for name, y in sides:
            ea, er, es = errors(y, ref, scale)
            print("ACC M=%d N=%d K=%d %-12s max_abs %.3g max_rel %.3g max_err/sum|xw| %.3g"
                  % (m, n, k, name, ea, er, es))


if __name__ == "__main__":
    main()
