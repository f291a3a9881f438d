#!/usr/bin/env python3
"""tools/bench_matmul.py ncu-table without a GPU: Nsight Compute CSV files in the form
`ncu --csv --page details --print-units base` writes (the profiled program's own output
lines mixed in), parsed into the per-kernel table; the expected cells are computed by hand
from the fixture (ns -> us, Hz -> MHz, bytes -> MB).

usage: test_ncu_table.py SOURCE_DIR      (exit 0 pass, 1 fail)
"""
import os
import subprocess
import sys
import tempfile

HEAD = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
        '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
        '"Metric Value"')


def row(kid, name, block, grid, metric, unit, value):
    return ('"%d","42","tinyc","host","%s","1","7","%s","%s","0","9.0","Section","%s","%s","%s"'
            % (kid, name, block, grid, metric, unit, value))


def main():
    src = sys.argv[1]
    d = tempfile.mkdtemp()
    tinyc = ["==PROF== Connected to process 42", "tinyc: ran matmul_bias_relu.uop", HEAD,
             row(0, "k0_Y", "(512, 1, 1)", "(132, 1, 1)", "Duration", "ns", "266,460"),
             row(0, "k0_Y", "(512, 1, 1)", "(132, 1, 1)", "SM Frequency", "Hz", "1,755,000,000"),
             row(0, "k0_Y", "(512, 1, 1)", "(132, 1, 1)", "Compute (SM) Throughput", "%", "79.21"),
             row(0, "k0_Y", "(512, 1, 1)", "(132, 1, 1)", "Registers Per Thread",
                 "register/thread", "128"),
             row(0, "k0_Y", "(512, 1, 1)", "(132, 1, 1)", "lts__t_bytes.sum", "byte",
                 "67,108,864"),
             row(1, "k1_reduce", "(256, 1, 1)", "(64, 1, 1)", "Duration", "ns", "1,410"),
             "  Y: half[8,8] sum=1"]
    with open(os.path.join(d, "8x8x8.tinyc.csv"), "w") as f:
        f.write("\n".join(tinyc) + "\n")
    r = subprocess.run([sys.executable, os.path.join(src, "tools", "bench_matmul.py"), "ncu-table",
                        d, "8x8x8"], stdout=subprocess.PIPE, text=True)
    lines = r.stdout.splitlines()
    want = [
        "| 8 x 8 x 8 | tinyc | `k0_Y` | (132, 1, 1) x (512, 1, 1) | 266.46 | 79.21 | - | - | - | "
        "1755 | 128 | - | - | 67.11 | - | - |",
        "| 8 x 8 x 8 | tinyc | `k1_reduce` | (64, 1, 1) x (256, 1, 1) | 1.41 | - | - | - | - | "
        "- | - | - | - | - | - | - |",
        "| 8 x 8 x 8 | cublaslt | (no profile) |",
    ]
    bad = r.returncode != 0 or lines[2:] != want
    if bad:
        print("ncu-table output:\n" + r.stdout + "\nwanted rows:\n" + "\n".join(want))
    print("test_ncu_table: %s" % ("FAIL" if bad else "ok"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
