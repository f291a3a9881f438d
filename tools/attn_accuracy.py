#!/usr/bin/env python3
"""The accuracy of tinyc's fp32 attention against fp64 (NumPy), beside torch's fp32 SDPA on
the same inputs (issue 16: fp32 attention must be no less accurate than torch's).

usage: tools/attn_accuracy.py [--tinyc bin/tinyc] [--device cuda|gpuir] UOP B T H D MASK
UOP is an fp32 graph exported by tools/tinygrad_models.attention with those sizes (inputs q,
k, v of [B, T, H*D], output y [B, H, T, D]; MASK causal or none).  Inputs: standard normal,
seed 0.  Sides: tinyc's default plan (the 3xTF32 kernel), tinyc with TINYC_ATTENTION=simt
(the SIMT kernel), torch F.scaled_dot_product_attention in fp32 (the backend torch picks,
TF32 off) when torch and a GPU are there.  Prints one "ACC ..." line per side: the max
absolute error and the max error relative to max |reference|.
"""
import argparse
import os
import subprocess
import tempfile

import numpy as np


def reference(q, k, v, causal):
    """Attention in fp64: softmax(q k^T / sqrt(d) [+ causal mask]) v, per (batch, head)."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        t = s.shape[-1]
        s = np.where(np.tril(np.ones((t, t), dtype=bool)), s, -np.inf)
    s = np.exp(s - s.max(axis=-1, keepdims=True))
    return (s / s.sum(axis=-1, keepdims=True)) @ v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tinyc", default="build/tinyc")
    ap.add_argument("--device", default="cuda", choices=["cuda", "gpuir"])
    ap.add_argument("uop")
    ap.add_argument("b", type=int)
    ap.add_argument("t", type=int)
    ap.add_argument("h", type=int)
    ap.add_argument("d", type=int)
    ap.add_argument("mask", choices=["causal", "none"])
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    x = {n: rng.standard_normal((a.b, a.t, a.h * a.d)).astype(np.float32) for n in "qkv"}
    heads = {n: x[n].reshape(a.b, a.t, a.h, a.d).transpose(0, 2, 1, 3) for n in "qkv"}
    ref = reference(heads["q"], heads["k"], heads["v"], a.mask == "causal")
    scale = np.abs(ref).max()
    tmp = tempfile.mkdtemp()
    args = []
    for n in "qkv":
        np.save(os.path.join(tmp, n + ".npy"), x[n])
        args += ["--in", "%s=%s" % (n, os.path.join(tmp, n + ".npy"))]
    sides = []
    for name, env in (("tinyc-3xtf32", {}), ("tinyc-simt", {"TINYC_ATTENTION": "simt"})):
        out = os.path.join(tmp, "y.npy")
        r = subprocess.run([a.tinyc, "run", a.uop] + args + ["--out", "y=" + out, "--device=" + a.device],
                           env=dict(os.environ, **env), capture_output=True, text=True)
        if r.returncode:
            print("ACC %s error: %s" % (name, r.stderr.strip()[-300:]))
            continue
        sides.append((name, np.load(out)))
    try:
        import torch
        if torch.cuda.is_available():
            torch.backends.cuda.matmul.allow_tf32 = False
            q, k, v = (torch.from_numpy(np.ascontiguousarray(x[n])).cuda()
                       .view(a.b, a.t, a.h, a.d).transpose(1, 2) for n in "qkv")
            y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=a.mask == "causal")
            sides.append(("torch-fp32", y.cpu().numpy()))
    except ImportError:
        pass
    for name, y in sides:
        err = np.abs(y.astype(np.float64) - ref)
        print("ACC B=%d T=%d H=%d d=%d %s %-13s max_abs %.3g max_abs/max|ref| %.3g mean_abs %.3g"
              % (a.b, a.t, a.h, a.d, a.mask, name, err.max(), err.max() / scale, err.mean()))


if __name__ == "__main__":
    main()
