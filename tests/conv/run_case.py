"""Run one convolution case of tests/conv/Inputs with tinyc and compare with tinygrad.

    run_case.py TINYC INPUTS CASE DEVICE [tinyc options...]

runs `TINYC run CASE.uop --in NAME=CASE.NAME.npy ... --device=DEVICE --check --out y=..`
(--check: against the reference evaluator) and then compares y with tinygrad's output
CASE.y.npy (tools/conv_cases.py).  Exit 0 when both agree, 1 otherwise, 77 (skipped)
for DEVICE cuda without a GPU."""
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np


def main(argv):
    tinyc, inputs, case, device = argv[:4]
    base = os.path.join(inputs, case)
    args = [tinyc, "run", base + ".uop", "--device=" + device, "--check"]
    for f in sorted(glob.glob(base + ".*.npy")):
        name = f[len(base) + 1:-4]
        if name != "y":
            args += ["--in", f"{name}={f}"]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "y.npy")
        p = subprocess.run(args + ["--out", "y=" + out] + argv[4:], capture_output=True, text=True)
        sys.stdout.write(p.stdout + p.stderr)
        if device == "cuda" and p.returncode != 0 and "NoGpu" in p.stdout + p.stderr:
            return 77
        if p.returncode != 0:
            print(f"{case}: tinyc exited {p.returncode}")
            return 1
        y, ref = np.load(out), np.load(base + ".y.npy")
    if y.shape != ref.shape:
        print(f"{case}: shape {y.shape}, tinygrad {ref.shape}")
        return 1
    err = np.abs(y.astype(np.float64) - ref)
    tol = 1e-4 + 1e-4 * np.abs(ref)
    print(f"{case} on {device}: max_abs vs tinygrad {err.max():.3g}")
    return 0 if (err <= tol).all() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
