#!/usr/bin/env python3
"""fp32 accuracy of the ResNet BasicBlock (issue 15) against a float64 NumPy reference:
tinyc (each plan named on the command line) beside torch fp32 (cuDNN, TF32 off) on the
same inputs.

  tools/conv_accuracy.py TINYC UOP [N C HW] [--device=D] [--plan LABEL=ENV ...]

UOP is a BasicBlock graph of tools/export-models (x[N,C,HW,HW], two 3x3 convs without bias,
BatchNorm eval with eps 1e-5, ReLU, identity residual; N C HW give its shape, default 32
64 56).  Each --plan runs `TINYC run UOP --device=D` (default cuda) with the environment variables
ENV (comma-separated VAR=VALUE, or "default") and reports its output's error; torch is
skipped when it is not installed.  Prints per side "ACC side=.. max_abs=.. max_rel=.."
(max_rel: max |y - ref| / max |ref|).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np


def conv3x3(x, w):
    """float64 3x3 convolution, padding 1, stride 1: x[N,C,H,W], w[O,C,3,3] (im2col)."""
    n, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.empty((n, h, wd, c, 3, 3))
    for i in range(3):
        for j in range(3):
            cols[..., i, j] = xp[:, :, i:i + h, j:j + wd].transpose(0, 2, 3, 1)
    y = cols.reshape(n * h * wd, c * 9) @ w.reshape(w.shape[0], -1).T
    return y.reshape(n, h, wd, -1).transpose(0, 3, 1, 2)


def block64(p):
    """The BasicBlock in float64 on the inputs p (float32 arrays)."""
    d = {k: v.astype(np.float64) for k, v in p.items()}

    def bn(y, i):
        sh = (1, -1, 1, 1)
        return ((y - d[f"bn{i}.running_mean"].reshape(sh)) * d[f"bn{i}.weight"].reshape(sh) /
                np.sqrt(d[f"bn{i}.running_var"].reshape(sh) + 1e-5) + d[f"bn{i}.bias"].reshape(sh))
    h = np.maximum(bn(conv3x3(d["x"], d["conv1.weight"]), 1), 0)
    return np.maximum(bn(conv3x3(h, d["conv2.weight"]), 2) + d["x"], 0)


def report(side, y, ref):
    """One ACC line."""
    err = np.abs(y.astype(np.float64) - ref)
    print(f"ACC side={side} max_abs={err.max():.3g} max_rel={err.max() / np.abs(ref).max():.3g}",
          flush=True)


def main(argv):
    plans = [a.split("=", 1) for a in argv[argv.index("--plan") + 1:]] if "--plan" in argv else []
    plans = [p for p in plans if len(p) == 2]
    pos = [a for a in (argv[:argv.index("--plan")] if "--plan" in argv else argv)]
    dev = ([a[9:] for a in pos if a.startswith("--device=")] or ["cuda"])[0]
    pos = [a for a in pos if not a.startswith("--device=")]
    tinyc, uop = pos[0], pos[1]
    n, c, hw = (int(v) for v in pos[2:5]) if len(pos) >= 5 else (32, 64, 56)
    rng = np.random.default_rng(7)
    f = np.float32
    p = {"x": rng.standard_normal((n, c, hw, hw)).astype(f)}
    for i in (1, 2):
        p[f"conv{i}.weight"] = (rng.standard_normal((c, c, 3, 3)) * np.sqrt(2.0 / (9 * c))).astype(f)
        p[f"bn{i}.running_mean"] = rng.uniform(-0.5, 0.5, c).astype(f)
        p[f"bn{i}.weight"] = rng.uniform(0.5, 1.5, c).astype(f)
        p[f"bn{i}.running_var"] = rng.uniform(0.5, 1.5, c).astype(f)
        p[f"bn{i}.bias"] = rng.uniform(-0.5, 0.5, c).astype(f)
    ref = block64(p)
    print(f"ACC reference float64 (NumPy) max|y|={np.abs(ref).max():.4g}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        args = [tinyc, "run", uop, "--device=" + dev]
        for k, v in p.items():
            np.save(os.path.join(tmp, k + ".npy"), v)
            args += ["--in", f"{k}={os.path.join(tmp, k + '.npy')}"]
        for label, env in plans:
            e = dict(os.environ)
            for kv in env.split(","):
                if "=" in kv:
                    e[kv.split("=", 1)[0]] = kv.split("=", 1)[1]
            out = os.path.join(tmp, "y.npy")
            r = subprocess.run(args + ["--out", "y=" + out], env=e, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"ACC side=tinyc-{label} failed: {(r.stdout + r.stderr)[-400:]}", flush=True)
                continue
            report("tinyc-" + label, np.load(out), ref)
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("ACC side=torch skipped (no torch)")
        return 0
    if not torch.cuda.is_available():
        print("ACC side=torch skipped (no GPU)")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    t = {k: torch.from_numpy(v).cuda() for k, v in p.items()}

    def bn(y, i):
        return F.batch_norm(y, t[f"bn{i}.running_mean"], t[f"bn{i}.running_var"], t[f"bn{i}.weight"],
                            t[f"bn{i}.bias"], False, 0.0, 1e-5)
    with torch.no_grad():
        h = F.relu(bn(F.conv2d(t["x"], t["conv1.weight"], padding=1), 1))
        y = F.relu(bn(F.conv2d(h, t["conv2.weight"], padding=1), 2) + t["x"])
    report("torch-fp32", y.cpu().numpy(), ref)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
