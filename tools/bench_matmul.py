#!/usr/bin/env python3
"""The PyTorch side of tools/bench-matmul: inputs, references and the cuBLAS timings.

  tools/bench_matmul.py gen DIR MxNxK [...]     write DIR/MxNxK/{X,W,bias}.npy (fp16, seeded)
  tools/bench_matmul.py check DIR MxNxK [...]   compare DIR/MxNxK/Y.npy (tinyc's output) with
                                                relu(X @ W + bias) computed by torch in fp32
  tools/bench_matmul.py rounds DIR TINYC GRAPH MxNxK[:ITERS] [...] [--rounds R]
      the GPU timings: cuBLASLt fused (torch._addmm_activation(bias, x, w), bias + ReLU
      epilogue), cuBLAS x @ w and the unfused torch.relu(torch.addmm), each like `tinyc bench`
      times tinyc's plan: `graph`, ITERS calls captured into one CUDA graph, replayed once
      untimed and 7 times between two events, the median replay / ITERS (the kernels' time,
      no host launch overhead); `run`, ITERS back-to-back calls between two events / ITERS
      (Python and launch overhead included where they exceed the kernel's time).  Per shape,
      R rounds of tinyc's plan (`TINYC bench GRAPH` on DIR's inputs, a subprocess) and
      cuBLASLt fused, both by graph replay, alternating which goes first; prints "ROUNDS shape=.. tinyc_us=..
      tinyc_spread=.. lt_us=.. lt_spread=.. ratio_min=.. ratio_max=.." (medians over the
      rounds; spread = (max - min) / median) and the BENCH torch line (lt_us the rounds'
      median; cuBLAS x @ w, unfused and back-to-back once).  Where DIR/MxNxK/alt exists
      (bench-matmul's $BENCH_ALT_ENV or $BENCH_ALT_FILE: another plan whose CUDA differs),
      that plan (`TINYC bench` with the file's VAR=VALUE words, kernel cache
      DIR/cache-MxNxK-alt) is a third side of every round, and "ALT shape=.. alt_us=..
      alt_spread=.." is printed.
      Exit status 1 when tinyc failed.

  tools/bench_matmul.py table DIR MxNxK [...]   the markdown tables from DIR's logs (tinyc
                                                bench's cold.log / warm.log per shape,
                                                check.log, torch.log)
  tools/bench_matmul.py variants DIR TINYC GRAPH MxNxK[:ITERS] [...] --variants FILE
                        [--rounds R] [--jobs J] [--dry-run] [--target sm_XY]
      several plans of tinyc per shape against cuBLASLt fused (tools/bench-gemv-mma): FILE
      has one variant a line, "NAME [VAR=VALUE ...]" (the TINYC_* knobs that make it; NAME
      `default` with none is the default plan; TINYC_BIN=PATH runs that variant with another
      build of tinyc, to time two builds in the same rounds).  Per shape: each variant's chosen plan
      (`TINYC --dump-stage=schedule`, for --target when given, sm_90a in a dry run, else the
      GPU's; a variant that forces a tensor-core gemv tile, TINYC_MATMUL_TILE=0xBNxBKxU, is
      skipped when the plan is not that tile; one with TINYC_WGMMA_SWAP when the plan is not
      swap-AB or, forcing BMxBNxBKxSTAGES[xSPLIT] (0: any), not that tile), its cold
      compilation and
      output (J at a time, each in its own kernel cache), the output checked as `check`
      does, then R rounds of every variant's whole plan and cuBLASLt fused by graph replay
      (as `rounds`; the variants' order rotating from round to round); prints "VARIANT
      shape=.. name=.. tinyc_us=.. spread=.. lt_us=.. ratio=.. regs=.. local=.. check=..
      rel=.. plan=.." per variant and a markdown table.  --dry-run: the plans only (no GPU).

  tools/bench_matmul.py fused DIR MxNxK          cuBLASLt fused on DIR's inputs: two warm-up
                                                calls, then one in the NVTX range "prof"
  tools/bench_matmul.py ncu-table DIR MxNxK [...]
      the markdown table of tools/ncu-matmul's profiles (DIR/MxNxK.{tinyc,cublaslt}.csv)

check also compares DIR/MxNxK/Y-alt.npy where DIR/MxNxK/alt exists (as "MxNxK-alt").
check prints "CHECK shape=MxNxK rel=.. maxabs=.. ok|FAILED" (rel = |Y - ref| / |ref| in the
2-norm; ok below 5e-3, no NaN) and exits 1 when any check failed.
"""
import argparse
import os
import re
import sys

from torch_timing import graph_us, loop_us


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
    todo = []	# (label, directory, output file)
    for sh in a.shapes:
        d = os.path.join(a.dir, sh)
        todo.append((sh, d, "Y.npy"))
        if os.path.exists(os.path.join(d, "alt")):	# bench-matmul's $BENCH_ALT_ENV plan
            todo.append((sh + "-alt", d, "Y-alt.npy"))
    for sh, d, yname in todo:
        try:
            y = np.load(os.path.join(d, yname))
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


REPLAYS = 7	# graph replays timed; the median is taken (as tinyc bench does)


def tinyc_graph_us(cmd, env):
    """One `tinyc bench` run (cmd, a list): its whole plan's graph-replay time per execution
    (us), or None when it failed."""
    import subprocess
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    mm = re.search(r"^  plan time: graph ([0-9.]+) us", r.stdout, re.M)
    if r.returncode != 0 or not mm:
        sys.stdout.write(r.stdout)
        return None
    return float(mm.group(1))


def spread(xs):
    """(max - min) / median of a list of times, as a fraction."""
    import statistics
    med = statistics.median(xs)
    return (max(xs) - min(xs)) / med if med > 0 else 0.0


def cuda_torch(nrounds):
    """PyTorch with a CUDA device (its name printed with the rounds per shape), or None (said
    why)."""
    try:
        import torch
    except ImportError:
        print("bench_matmul: PyTorch is not installed")
        return None
    if not torch.cuda.is_available():
        print("bench_matmul: no CUDA device for PyTorch")
        return None
    print("bench_matmul: torch %s on %s; %d interleaved rounds per shape" % (
        torch.__version__, torch.cuda.get_device_name(), nrounds))
    return torch


def rounds(a):
    """Interleaved timing: per shape, ROUNDS rounds of (tinyc's whole plan, cuBLASLt fused),
    each by CUDA-graph replay of ITERS executions, the order alternating from round to round,
    on the same inputs (DIR/MxNxK/{X,W,bias}.npy), so that both sides see the same clocks
    and thermal state; then cuBLAS x @ w, the unfused form and the back-to-back times once.
    tinyc runs as a subprocess (`TINYC bench GRAPH`, its kernel cache in DIR/cache-MxNxK,
    warmed by the caller) while this process holds torch's tensors."""
    import statistics
    import numpy as np
    torch = cuda_torch(a.rounds)
    if torch is None:
        return 0
    bad = 0
    for arg in a.shapes:
        sh, _, it = arg.partition(":")
        iters = int(it) if it else a.iters
        m, n, k = shape_of(sh)
        d = os.path.join(a.dir, sh)
        x = torch.from_numpy(np.load(os.path.join(d, "X.npy"))).cuda()
        w = torch.from_numpy(np.load(os.path.join(d, "W.npy"))).cuda()
        b = torch.from_numpy(np.load(os.path.join(d, "bias.npy"))).cuda()
        env = dict(os.environ, TINYC_CACHE_DIR=os.path.join(a.dir, "cache-" + sh))
        cmd = [a.tinyc, "bench", a.graph, "--bind", "M=%d,N=%d,K=%d" % (m, n, k),
               "--in", "X=%s/X.npy" % d, "--in", "W=%s/W.npy" % d, "--in", "bias=%s/bias.npy" % d,
               "--warmup", "10", "--iters", str(iters)]
        lt_fn = lambda: torch._addmm_activation(b, x, w)
        # the alternative plan (bench-matmul's $BENCH_ALT_ENV), where its CUDA differs
        alt = os.path.exists(os.path.join(d, "alt"))
        alt_env = dict(env, TINYC_CACHE_DIR=os.path.join(a.dir, "cache-%s-alt" % sh))
        if alt:	# the shape's settings, as bench-matmul wrote them into the file
            with open(os.path.join(d, "alt")) as f:
                alt_env.update(kv.split("=", 1) for kv in f.read().split())
        tc, lt, at = [], [], []
        for r in range(a.rounds):
            sides = (0, 1, 2) if alt else (0, 1)
            for side in (sides if r % 2 == 0 else sides[::-1]):
                if side == 1:
                    lt.append(graph_us(lt_fn, iters, replays=REPLAYS, warmup=3))
                    continue
                us = tinyc_graph_us(cmd, env if side == 0 else alt_env)
                if us is None:
                    print("bench_matmul: tinyc bench failed at %s%s" % (sh, " (alt)" if side else ""))
                    bad = 1
                else:
                    (tc if side == 0 else at).append(us)
        mm = graph_us(lambda: x @ w, iters, replays=REPLAYS, warmup=3)
        un = graph_us(lambda: torch.relu(torch.addmm(b, x, w)), iters, replays=REPLAYS, warmup=3)
        lt_run = loop_us(lt_fn, iters, a.warmup)
        if tc:
            ratios = [l / t for l, t in zip(lt, tc)]
            print("ROUNDS shape=%s tinyc_us=%.3f tinyc_spread=%.4f lt_us=%.3f lt_spread=%.4f "
                  "ratio_min=%.4f ratio_max=%.4f rounds=%d tinyc_all=%s lt_all=%s" % (
                      sh, statistics.median(tc), spread(tc), statistics.median(lt), spread(lt),
                      min(ratios), max(ratios), len(tc), ",".join("%.2f" % v for v in tc),
                      ",".join("%.2f" % v for v in lt)))
        if at:
            print("ALT shape=%s alt_us=%.3f alt_spread=%.4f alt_all=%s" % (
                sh, statistics.median(at), spread(at), ",".join("%.2f" % v for v in at)))
        print("BENCH torch shape=%s lt_us=%.3f lt_run_us=%.3f mm_us=%.3f unfused_us=%.3f iters=%d" % (
            sh, statistics.median(lt), lt_run, mm, un, iters))
        sys.stdout.flush()
        del x, w, b
        torch.cuda.empty_cache()
    return bad


def shape_class(m, n, k):
    """Which family of the benchmark's shape set a shape belongs to."""
    llm = {4096, 11008}
    if m == n == k and m & (m - 1) == 0:
        return "square"
    if m <= 64 and n in llm and k in llm:
        return "decode"
    if m >= 512 and n in llm and k in llm:
        return "prefill"
    if 768 in (n, k) and 3072 in (m, n, k):
        return "BERT"
    if m >= 16 * n:
        return "tall-skinny"
    if n >= 16 * m:
        return "short-wide"
    return "odd" if any(v % 8 for v in (m, n, k)) or m == n == k else "other"


def plan_short(desc):
    """A plan line of tinyc bench, shortened for the table."""
    gv = re.match(r"matmul gemv (\[[0-9,]+\]) unroll (\d+)", desc)
    if gv:
        return "gemv %s unroll %s" % gv.groups()
    mm = re.match(r"matmul (\w+) (\[[0-9,]+\]) stages (\d+)(.*)", desc)
    if not mm:
        return desc.split(",")[0]
    var, tile, st, rest = mm.groups()
    out = "%s %s s%s" % (var, tile, st)
    if "swap-AB" in rest:
        out += " swap-AB"
    if "packed" in rest:
        out += " " + re.search(r"(A B|A|B) packed", rest).group(0)
    if "pingpong" in rest:
        out += " pingpong"
    ctas = re.search(r"persistent (\d+) CTAs", rest)
    if ctas:
        out += ", %s CTAs" % ctas.group(1)
    sk = re.search(r"split-K (\d+)", rest)
    if sk:
        out += ", split-K %s" % sk.group(1)
    if "TMA store" in rest:
        out += ", TMA store"
    return out


def table(a):
    def read(path):
        try:
            with open(path) as f:
                return f.read()
        except OSError:
            return ""
    torch_log = read(os.path.join(a.dir, "torch.log"))
    check_log = read(os.path.join(a.dir, "check.log"))

    def tfield(sh, name):
        mm = re.search(r"^BENCH torch shape=%s .*?\b%s=([0-9.]+)" % (re.escape(sh), name), torch_log, re.M)
        return float(mm.group(1)) if mm else None

    def num(x, fmt="%.2f"):
        return fmt % x if x is not None else "-"
    def rfield(sh, name):
        mm = re.search(r"^ROUNDS shape=%s .*?\b%s=([0-9.]+)" % (re.escape(sh), name), torch_log, re.M)
        return float(mm.group(1)) if mm else None

    def pct(x):
        return "%.1f%%" % (100 * x) if x is not None else "-"
    print("| M x N x K | class | tinyc plan | tinyc graph (us) | spread | cuBLASLt fused graph (us) | spread "
          "| cuBLASLt / tinyc | per-round ratios | tinyc b2b (us) | cuBLASLt b2b (us) | cuBLAS x@w graph (us) "
          "| tinyc TFLOP/s | check |")
    print("|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|")
    jit = []
    for sh in a.shapes:
        m, n, k = shape_of(sh)
        warm = read(os.path.join(a.dir, sh, "warm.log"))
        cold = read(os.path.join(a.dir, sh, "cold.log"))
        plans = [plan_short(d) for d in re.findall(r"^  plan k\d+_\w+: (.*)$", warm, re.M)]
        pt = re.search(r"^  plan time: graph ([0-9.]+) us .*back-to-back ([0-9.]+) us", warm, re.M)
        g = float(pt.group(1)) if pt else None
        b2b = float(pt.group(2)) if pt else None
        nk = len(re.findall(r"^  jit k\d+", warm, re.M))
        plan = " + ".join(plans) if plans else "-"
        if nk > len(plans):
            plan += " (%d kernels)" % nk
        if rfield(sh, "tinyc_us") is not None:	# interleaved rounds: their medians
            g = rfield(sh, "tinyc_us")
        lt = tfield(sh, "lt_us")
        rmin, rmax = rfield(sh, "ratio_min"), rfield(sh, "ratio_max")
        ck = re.search(r"^CHECK shape=%s rel=(\S+) .* (\w+)$" % re.escape(sh), check_log, re.M)
        print("| %d x %d x %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            m, n, k, shape_class(m, n, k), plan, num(g), pct(rfield(sh, "tinyc_spread")), num(lt),
            pct(rfield(sh, "lt_spread")), num(lt / g if lt and g else None),
            "%.2f-%.2f" % (rmin, rmax) if rmin is not None else "-", num(b2b),
            num(tfield(sh, "lt_run_us")), num(tfield(sh, "mm_us")),
            num(2.0 * m * n * k / g / 1e6 if g else None, "%.1f"),
            "%s (rel %s)" % (ck.group(2), ck.group(1)) if ck else "-"))

        def jt(log):
            mm = re.search(r"^  jit total: passes ([0-9.]+) ms \+ [a-z() ]+ ([0-9.]+) ms \+ load ([0-9.]+) ms = "
                           r"([0-9.]+) ms", log, re.M)
            return tuple(float(x) for x in mm.groups()) if mm else None
        res = re.search(r"^  jit k0_Y: .*; (\d+) regs, (\d+) B smem, (\d+) B local", warm, re.M)
        jit.append((sh, jt(cold), jt(warm), nk, res.groups() if res else None))
    alts = [sh for sh in a.shapes if os.path.exists(os.path.join(a.dir, sh, "alt"))]
    if alts:
        print()
        print("The alternative plan ($BENCH_ALT_ENV) where its CUDA differs, timed in the same "
              "interleaved rounds:")
        print()
        print("| M x N x K | alternative plan (settings) | alt graph (us) | spread | tinyc graph (us) | "
              "cuBLASLt fused graph (us) | cuBLASLt / alt | alt / tinyc time | check |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for sh in alts:
        m, n, k = shape_of(sh)
        alog = read(os.path.join(a.dir, sh, "alt.log"))
        plans = [plan_short(d) for d in re.findall(r"^  plan k\d+_\w+: (.*)$", alog, re.M)]
        settings = read(os.path.join(a.dir, sh, "alt")).strip()
        am = re.search(r"^ALT shape=%s alt_us=([0-9.]+) alt_spread=([0-9.]+)" % re.escape(sh), torch_log, re.M)
        au = float(am.group(1)) if am else None
        g, lt = rfield(sh, "tinyc_us"), tfield(sh, "lt_us")
        ck = re.search(r"^CHECK shape=%s-alt rel=(\S+) .* (\w+)$" % re.escape(sh), check_log, re.M)
        print("| %d x %d x %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            m, n, k, "%s (%s)" % (" + ".join(plans) or "-", settings), num(au), pct(float(am.group(2)) if am else None),
            num(g), num(lt), num(lt / au if lt and au else None), num(au / g if au and g else None),
            "%s (rel %s)" % (ck.group(2), ck.group(1)) if ck else "-"))
    print()
    print("JIT latency of the whole plan (compiler passes + cached compile + module load of every kernel; "
          "the driver's initialisation apart), and the matmul kernel's resources:")
    print()
    print("| M x N x K | kernels | cold: passes (ms) | cold: nvrtc (ms) | cold total (ms) | cached: passes (ms) "
          "| cached: lookup (ms) | cached total (ms) | regs | spills (B) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for sh, c, w, nk, res in jit:
        c = c or (None,) * 4
        w = w or (None,) * 4
        print("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            sh, nk, num(c[0], "%.1f"), num(c[1], "%.1f"), num(c[3], "%.1f"), num(w[0], "%.1f"),
            num(w[1], "%.1f"), num(w[3], "%.1f"), res[0] if res else "-", res[2] if res else "-"))
    return 0


def read_variants(path):
    """The variants file: [(name, {VAR: VALUE})] from lines "NAME [VAR=VALUE ...]" ('#'
    starts a comment)."""
    out = []
    with open(path) as f:
        for line in f:
            words = line.split("#", 1)[0].split()
            if words:
                out.append((words[0], dict(w.split("=", 1) for w in words[1:])))
    return out


def chosen_plan(tinyc, graph, bind, env, target=None):
    """The chosen plan of the first kernel in `tinyc --dump-stage=schedule` (for target, or
    the GPU's when None): (its tile line, its candidate description), or (None, error
    text)."""
    import subprocess
    r = subprocess.run([tinyc, "--dump-stage=schedule", graph, "--bind", bind] +
                       (["--target=" + target] if target else []), env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ch = re.search(r"^  choice: (\d+) \(matmul\).*?^  tile (.*)$", r.stdout, re.M | re.S)
    if r.returncode != 0 or not ch:
        return None, r.stdout[-400:]
    desc = re.search(r"^  candidate %s: (.*?); eff" % ch.group(1), r.stdout, re.M)
    return ch.group(2), desc.group(1) if desc else "-"


def forced_tile_matches(settings, tile_line, desc=""):
    """Whether a variant got the plan it asks for: with TINYC_WGMMA_SWAP a swap-AB plan (desc,
    the candidate's description) and, forcing TINYC_MATMUL_TILE=BMxBNxBKxSTAGES[xSPLIT], that
    tile (0 fields any; no SPLIT: no split-K); forcing a tensor-core gemv tile
    (TINYC_MATMUL_TILE=0xBNxBKxU with TINYC_GEMV_MMA), the tile line "[BM,BN,BK] = [m,BN,BK],
    stages U (unroll: U 16-row k blocks ...".  Other variants always match."""
    ft = settings.get("TINYC_MATMUL_TILE")
    if settings.get("TINYC_WGMMA_SWAP"):
        if "swap-AB" not in (desc or ""):
            return False
        if not ft:
            return True
        want = [int(v) for v in ft.split("x")] + [0, 0]
        mm = re.match(r"\[BM,BN,BK\] = \[(\d+),(\d+),(\d+)\], stages (\d+)", tile_line or "")
        sk = re.search(r"split-K (\d+)", desc)
        if not mm:
            return False
        got = [int(v) for v in mm.groups()] + [int(sk.group(1)) if sk else 0]
        return all(w == 0 or w == g for w, g in zip(want[:4], got[:4])) and want[4] == got[4]
    if not ft or not settings.get("TINYC_GEMV_MMA"):
        return True
    want = [int(v) for v in ft.split("x")]
    mm = re.match(r"\[BM,BN,BK\] = \[(\d+),(\d+),(\d+)\], stages (\d+) \(unroll: \d+ 16-row k blocks",
                  tile_line or "")
    if not mm:
        return False
    got = [int(v) for v in mm.groups()]
    return all(w == 0 or w == g for w, g in zip(want[1:], got[1:]))


def bench_run(cmd, env):
    """One `tinyc bench` run: (the whole plan's graph time per execution in us or None, its
    output)."""
    import subprocess
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    mm = re.search(r"^  plan time: graph ([0-9.]+) us", r.stdout, re.M)
    return (float(mm.group(1)) if r.returncode == 0 and mm else None), r.stdout


def variants(a):
    """Several plans of tinyc per shape (a variants file) against cuBLASLt fused, by graph
    replay in interleaved rounds, outputs checked (see the module's docstring)."""
    import statistics
    from concurrent.futures import ThreadPoolExecutor
    import numpy as np
    vs = read_variants(a.variants)
    torch = None
    if not a.dry_run:
        torch = cuda_torch(a.rounds)
        if torch is None:
            return 0
    bad = 0
    rows = []
    for arg in a.shapes:
        sh, _, it = arg.partition(":")
        iters = int(it) if it else a.iters
        m, n, k = shape_of(sh)
        d = os.path.join(a.dir, sh)
        bind = "M=%d,N=%d,K=%d" % (m, n, k)
        run = []	# (name, env, plan, cmd, out)
        for name, settings in vs:
            env = {key: val for key, val in os.environ.items() if not key.startswith("TINYC_")}
            env.update(settings)
            tinyc = env.pop("TINYC_BIN", a.tinyc)
            env["TINYC_CACHE_DIR"] = os.path.join(a.dir, "cache-%s-%s" % (sh, name))
            tile, desc = chosen_plan(tinyc, a.graph, bind, env,
                                     a.target or ("sm_90a" if a.dry_run else None))
            if not forced_tile_matches(settings, tile, desc):
                print("SKIP shape=%s name=%s: the asked-for plan is not a candidate here (plan: %s)" % (
                    sh, name, (desc or "-").split(",")[0]))
                continue
            out = os.path.join(d, "Y-%s.npy" % name)
            cmd = [tinyc, "bench", a.graph, "--bind", bind, "--in", "X=%s/X.npy" % d,
                   "--in", "W=%s/W.npy" % d, "--in", "bias=%s/bias.npy" % d]
            run.append((name, env, desc, cmd, out))
            print("PLAN shape=%s name=%s plan=%s" % (sh, name, desc))
        sys.stdout.flush()
        if a.dry_run:
            continue
        # cold compilations (and each variant's output), a.jobs at a time
        with ThreadPoolExecutor(max_workers=a.jobs) as ex:
            cold = list(ex.map(lambda v: bench_run(v[3] + ["--out", "Y=" + v[4], "--warmup", "2",
                                                          "--iters", "3"], v[1]), run))
        x = torch.from_numpy(np.load(os.path.join(d, "X.npy"))).cuda()
        w = torch.from_numpy(np.load(os.path.join(d, "W.npy"))).cuda()
        b = torch.from_numpy(np.load(os.path.join(d, "bias.npy"))).cuda()
        ref = torch.relu(x.float() @ w.float() + b.float()).half().float()
        lt_fn = lambda: torch._addmm_activation(b, x, w)
        res = {}
        for (name, env, desc, cmd, out), (us, log) in zip(run, cold):
            rel, ok = float("nan"), False
            if us is not None and os.path.exists(out):
                got = torch.from_numpy(np.load(out).astype(np.float32)).cuda()
                if got.shape == ref.shape:
                    rel = ((got - ref).norm() / ref.norm().clamp_min(1e-30)).item()
                    ok = rel == rel and rel < 5e-3 and not torch.isnan(got).any().item()
            else:
                sys.stdout.write(log[-2000:])
            rg = re.search(r"^  jit k0_Y: .*; (\d+) regs, (\d+) B smem, (\d+) B local", log, re.M)
            res[name] = {"times": [], "ok": ok, "rel": rel, "desc": desc,
                         "regs": rg.group(1) if rg else "-", "local": rg.group(3) if rg else "-"}
            bad |= not ok
        lt = []
        for r in range(a.rounds):
            order = run[r % len(run):] + run[:r % len(run)] if run else []
            if r % 2 == 0:
                lt.append(graph_us(lt_fn, iters, replays=REPLAYS, warmup=3))
            for name, env, desc, cmd, out in order:
                us, log = bench_run(cmd + ["--warmup", "10", "--iters", str(iters)], env)
                if us is None:
                    sys.stdout.write(log[-2000:])
                    bad = 1
                else:
                    res[name]["times"].append(us)
            if r % 2 == 1:
                lt.append(graph_us(lt_fn, iters, replays=REPLAYS, warmup=3))
        ltm = statistics.median(lt)
        for name, env, desc, cmd, out in run:
            v = res[name]
            tm = statistics.median(v["times"]) if v["times"] else None
            print("VARIANT shape=%s name=%s tinyc_us=%s spread=%s lt_us=%.3f ratio=%s regs=%s local=%s "
                  "check=%s rel=%.3g plan=%s" % (
                      sh, name, "%.3f" % tm if tm else "-",
                      "%.4f" % spread(v["times"]) if v["times"] else "-", ltm,
                      "%.4f" % (ltm / tm) if tm else "-", v["regs"], v["local"],
                      "ok" if v["ok"] else "FAILED", v["rel"], desc))
            rows.append((sh, name, desc, v["regs"], v["local"], tm,
                         spread(v["times"]) if v["times"] else None, ltm, v["ok"], v["rel"]))
        sys.stdout.flush()
        del x, w, b, ref
        torch.cuda.empty_cache()
    if rows:
        print()
        print("| M x N x K | variant | plan | regs | local (B) | tinyc graph (us) | spread | "
              "cuBLASLt fused graph (us) | cuBLASLt / tinyc | check |")
        print("|---|---|---|---:|---:|---:|---:|---:|---:|---|")
        for sh, name, desc, regs, local, tm, sp, ltm, ok, rel in rows:
            print("| %s | %s | %s | %s | %s | %s | %s | %.2f | %s | %s (rel %.2g) |" % (
                sh.replace("x", " x "), name, desc.split(", smem")[0], regs, local,
                "%.2f" % tm if tm else "-", "%.1f%%" % (100 * sp) if sp is not None else "-", ltm,
                "%.2f" % (ltm / tm) if tm else "-", "ok" if ok else "FAILED", rel))
    return 1 if bad else 0


def fused(a):
    """cuBLASLt fused on one shape's inputs (DIR/MxNxK): two warm-up calls, then one inside
    the NVTX range "prof" (tools/ncu-matmul profiles that one)."""
    import numpy as np
    torch = cuda_torch(1)
    if torch is None:
        return 1
    d = os.path.join(a.dir, a.shapes[0])
    x = torch.from_numpy(np.load(os.path.join(d, "X.npy"))).cuda()
    w = torch.from_numpy(np.load(os.path.join(d, "W.npy"))).cuda()
    b = torch.from_numpy(np.load(os.path.join(d, "bias.npy"))).cuda()
    for _ in range(2):
        torch._addmm_activation(b, x, w)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("prof")
    torch._addmm_activation(b, x, w)
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    return 0


# ncu's details page: the metrics kept per kernel (section, metric name) -> column
NCU_METRICS = [("Duration", "duration (us)"), ("Compute (SM) Throughput", "SM %"),
               ("Memory Throughput", "memory %"), ("L2 Cache Throughput", "L2 %"),
               ("DRAM Throughput", "DRAM %"), ("SM Frequency", "SM clock"),
               ("Registers Per Thread", "regs"), ("Achieved Occupancy", "occupancy %"),
               ("Warp Cycles Per Issued Instruction", "cycles / issue"),
               ("lts__t_bytes.sum", "L2 MB"), ("lts__t_sector_hit_rate.pct", "L2 hit %"),
               ("dram__bytes_read.sum", "DRAM read MB")]


def ncu_table(a):
    """The markdown table of tools/ncu-matmul's CSV files (DIR/MxNxK.{tinyc,cublaslt}.csv,
    ncu --csv --page details --print-units base): per shape and side, each kernel profiled,
    its grid and block and NCU_METRICS."""
    import csv
    print("| M x N x K | side | kernel | grid x block | " +
          " | ".join(c for _, c in NCU_METRICS) + " |")
    print("|---|---|---|---|" + "---:|" * len(NCU_METRICS))
    for sh in a.shapes:
        for side in ("tinyc", "cublaslt"):
            path = os.path.join(a.dir, "%s.%s.csv" % (sh, side))
            kern = {}	# ID -> {name, grid, block, metrics}
            try:
                with open(path) as f:
                    lines = [ln for ln in f if ln.startswith('"')]
            except OSError:
                lines = []
            for row in csv.DictReader(lines):
                k = kern.setdefault(row["ID"], {"name": row.get("Kernel Name", "?"),
                                                "grid": row.get("Grid Size", "?"),
                                                "block": row.get("Block Size", "?"), "m": {}})
                k["m"].setdefault(row.get("Metric Name", ""), row.get("Metric Value", ""))
            if not kern:
                print("| %s | %s | (no profile) |" % (sh.replace("x", " x "), side))
            for kid in sorted(kern, key=int):
                k = kern[kid]
                vals = []
                for name, col in NCU_METRICS:
                    v = k["m"].get(name, "-").replace(",", "")
                    try:
                        f = float(v)
                        if name == "Duration":
                            f /= 1e3	# ns -> us
                        if name == "SM Frequency":
                            f /= 1e6	# Hz -> MHz
                        if name.endswith("bytes.sum") or name.endswith("bytes_read.sum"):
                            f /= 1e6	# bytes -> MB
                        v = "%.2f" % f if f != int(f) else "%d" % f
                    except ValueError:
                        pass
                    vals.append(v)
                print("| %s | %s | `%s` | %s x %s | %s |" % (sh.replace("x", " x "), side, k["name"][:160],
                                                          k["grid"], k["block"], " | ".join(vals)))
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["gen", "check", "rounds", "table", "variants", "fused",
                                     "ncu-table"])
    ap.add_argument("args", nargs="+")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--variants", help="variants mode: the variants file")
    ap.add_argument("--jobs", type=int, default=8, help="variants mode: cold compilations at a time")
    ap.add_argument("--dry-run", action="store_true", help="variants mode: the plans only")
    ap.add_argument("--target", help="variants mode: plan for this target (default: the GPU's; "
                    "sm_90a in a dry run)")
    a = ap.parse_args()
    if a.mode in ("gen", "check", "table", "fused", "ncu-table"):
        a.dir, a.shapes = a.args[0], a.args[1:]
    else:
        a.dir, a.tinyc, a.graph, a.shapes = a.args[0], a.args[1], a.args[2], a.args[3:]
    return {"gen": gen, "check": check, "rounds": rounds, "table": table,
            "variants": variants, "fused": fused, "ncu-table": ncu_table}[a.mode](a)


if __name__ == "__main__":
    sys.exit(main())
