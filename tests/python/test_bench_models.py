#!/usr/bin/env python3
"""tools/bench-models without a GPU: the parsing of `tinyc bench` (both output formats) and
of the peers' lines, the table's figures and ratios against hand-computed values, and the
script's failure paths (no GPU, spent budget) ending in a table that says why.

usage: test_bench_models.py TINYC      (exit 0 pass, 1 fail)
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import bench_models_peers as P  # noqa: E402

# tinyc bench after branch bench (a whole-plan line), then before it (no plan line, the
# figure is the wall column's sum), then a timed-out model; rows trimmed from real runs
BENCH = """== bench mlp_fp16 (timeout 120 s)
tinyc bench: examples/models/mlp_fp16.uop on NVIDIA H100 80GB HBM3 (sm_90), 3 warm-up; ...
  kernel                    graph(us)       GB/s   %peak    TFLOP/s   %peak  bound   event(us)  wall(us)
  k0_mul                       263.24      350.6   10.5%    263.224   26.6%  compute    269.47    266.26
  k1_y                          87.86     1050.3   31.3%    782.250   79.1%  compute     91.94     90.13
  total                        351.09
  plan time: graph 400.048 us per execution (20 executions per graph, median of 7 replays); back-to-back 368.194 us per execution (20 executions between two events)
  plan k0_mul: matmul wgmma [128,256,64] stages 4 tma
  jit k0_mul: passes 1.0 ms + cache hit 0.1 ms + load 0.2 ms = 1.3 ms; 168 regs
== bench gpt2_block_fp16 (timeout 120 s)
tinyc bench: examples/models/gpt2_block_fp16.uop on NVIDIA H100 80GB HBM3 (sm_90a), 3 warm-up, median of 20 launches per kernel
  kernel                     time(us)       GB/s   %peak    TFLOP/s   %peak  bound    wall(us)
  k0_add                         5.70     2000.0   60.0%      7.000   10.0%  memory       6.25
  k1_add                        31.20      900.0   27.0%    480.000   48.0%  compute     32.50
  k2_y                          46.50     1200.0   36.0%    420.000   42.0%  compute     47.00
  total                         83.40
== bench layernorm_softmax_fp32 (timeout 3 s)
error: timed out after 3 s
error: tinyc bench exit 124
"""

PEERS = {
    "eager": "PEER side=eager model=mlp_fp16 us=242.64\n"
             "PEER side=eager model=gpt2_block_fp16 us=171.40\n",
    "compile": "peers: torch ...\nPEER side=compile model=mlp_fp16 us=200.00\n"
               "PEER side=compile model=gpt2_block_fp16 error=timed out after 93 s\n",
    "tinygrad": "PEER side=tinygrad model=mlp_fp16 us=1861.87\n",
}

fails = 0


def expect(what, got, want):
    """Counts a failure when got != want."""
    global fails
    if got != want:
        print("FAIL %s: got %r, want %r" % (what, got, want))
        fails += 1


def main():
    b = P.parse_bench(BENCH)
    expect("plan graph figure", b["mlp_fp16"], (400.048, 2, "graph"))
    # 6.25 + 32.50 + 47.00 = 85.75
    expect("old format: wall sum", (round(b["gpt2_block_fp16"][0], 6),) + b["gpt2_block_fp16"][1:],
           (85.75, 3, "wall sum"))
    expect("timed-out bench", b["layernorm_softmax_fp32"], (None, 0, "error: timed out after 3 s"))
    expect("peer lines", P.parse_peers(PEERS["compile"], "compile"),
           {"mlp_fp16": 200.0, "gpt2_block_fp16": "timed out after 93 s"})

    with tempfile.TemporaryDirectory() as d:
        for name, text in [("tinyc-bench.txt", BENCH), ("env.txt", "GPU: test\n"),
                           ("check.txt", "CHECK mlp_fp16_small ok: y: max_abs=0.0156 ok\n")] + \
                [(s + ".txt", t) for s, t in PEERS.items()]:
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        rows = {l.split(" | ")[0][2:]: l.split(" | ") for l in P.table(d).splitlines()
                if l.startswith("| ") and not l.startswith("| model")}
        # mlp: 400.048 / 242.64 = 1.649, / 200.00 = 2.000
        expect("mlp row", rows["mlp_fp16"][1:], ["400.0", "2", "242.6", "200.0", "1 861.9",
                                                  "1.65", "2.00 |"])
        # gpt2 fp16: 85.75 / 171.40 = 0.500; compile timed out: no ratio
        expect("gpt2 row", rows["gpt2_block_fp16"][1:],
               ["85.8", "3", "171.4", "n/a (timed out after 93 s)", "not run", "0.50", " |"])
        expect("ln row", rows["layernorm_softmax_fp32"][1:3],
               ["n/a (error: timed out after 3 s)", ""])
        expect("models not run left out", "gpt2_block_fp32" in rows, False)

    # the script itself, here without a GPU: every step fails or is skipped, and says so
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, TINYC=sys.argv[1], OUT=d, MODELS="layernorm_softmax_fp32",
                   SIDES="check,bench,eager", BUDGET="14", TINYC_CACHE_DIR="")
        r = subprocess.run([os.path.join(ROOT, "tools", "bench-models")], cwd=ROOT, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=120)
        expect("script exit", r.returncode, 0)
        expect("log files", sorted(os.listdir(d)),
               sorted(["env.txt", "check.txt", "tinyc-bench.txt", "eager.txt", "tinygrad.txt",
                       "samemath.txt", "compile.txt", "table.md"]))
        with open(os.path.join(d, "table.md")) as f:
            t = f.read()
        gpu = subprocess.run(["sh", "-c", "command -v nvidia-smi"],
                             stdout=subprocess.PIPE).returncode == 0
        if not gpu:
            expect("check failed without a GPU",
                   "layernorm_softmax_fp32_small FAILED (exit 1)" in t, True)
        row = [l for l in t.splitlines() if l.startswith("| layernorm_softmax_fp32 ")]
        expect("eager skipped: budget spent", len(row) == 1 and
               "n/a (skipped: the 14 s budget was spent)" in row[0], True)
        expect("compile not asked for", len(row) == 1 and "| not run |" in row[0], True)
    print("test_bench_models: %s" % ("FAILED" if fails else "ok"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
