#!/usr/bin/env python3
"""The peers of tinyc in tools/bench-models: issue 12's four models timed in torch eager,
torch.compile and tinygrad's CUDA backend, on the shapes of tools/tinygrad_models.py.

usage: tools/bench_models_peers.py SIDE [--models a,b] [--iters N] [--small]
                                        [--compile-mode MODE]
       tools/bench_models_peers.py table LOGDIR

SIDE is one of
  eager      torch eager: the models written with torch.nn.functional (F.linear,
             F.gelu(approximate="tanh"), F.layer_norm, F.scaled_dot_product_attention
             (is_causal=True), torch.softmax), the math of tinygrad's nn modules
  compile    the same functions through torch.compile (mode --compile-mode, default
             "default": no CUDA graphs of its own), called once to compile
  tinygrad   the tinygrad 0.14.0 models themselves (tools/tinygrad_models.py) on tinygrad's
             CUDA device, the forward pass under TinyJit
  samemath   small sizes: the tinygrad models and the torch functions on the same random
             weights, outputs compared (both on the GPU when there is one); exit 1 beyond
             tolerance.  This is what says the torch side computes what tinygrad does.

How each side is timed (kernels, not launches):
  eager, compile: --iters calls captured back to back into one CUDA graph, the graph
             replayed 5 times between two CUDA events; the median replay / --iters.
  tinygrad:  TinyJit (its CUDA backend replays the captured kernels as one CUDA graph per
             call), 3 warm-up calls, then --iters calls back to back followed by one
             device synchronize, host clock around them, / --iters; median of 3 such runs.
fp32 runs without TF32 on every side (torch's and tinygrad's defaults).  Weights and inputs
are seeded uniform random numbers (weight matrices scaled by 0.03), never zeros.

Prints one line per model: "PEER side=SIDE model=NAME us=TIME" or
"PEER side=SIDE model=NAME error=REASON" (the side goes on with the next model).
`table LOGDIR` reads the logs tools/bench-models wrote there and prints the markdown table.
"""

import argparse
import os
import re
import statistics
import sys
import time

from torch_timing import graph_us

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name -> (kind, full-size sizes, small sizes, dtype); the sizes of tinygrad_models.EXPORTS
# (the samemath side checks that they agree)
MODELS = {
    "gpt2_block_fp16": ("gpt2_block", dict(b=8, t=512, d=768, heads=12),
                        dict(b=2, t=8, d=32, heads=4), "half"),
    "gpt2_block_fp32": ("gpt2_block", dict(b=8, t=512, d=768, heads=12),
                        dict(b=2, t=8, d=32, heads=4), "float"),
    "mlp_fp16": ("mlp", dict(rows=8192, d=1024, h=4096), dict(rows=16, d=32, h=64), "half"),
    "layernorm_softmax_fp32": ("layernorm_softmax", dict(rows=16384, d=4096),
                               dict(rows=16, d=64), "float"),
}


def param_shapes(kind, s):
    """The model's input and weights: name -> shape, named as tinygrad's state dict."""
    if kind == "mlp":
        d, h = s["d"], s["h"]
        return {"x": (s["rows"], d), "fc1.weight": (h, d), "fc1.bias": (h,),
                "fc2.weight": (d, h), "fc2.bias": (d,)}
    if kind == "gpt2_block":
        d = s["d"]
        p = {"x": (s["b"], s["t"], d)}
        for ln in ("ln_1", "ln_2"):
            p[ln + ".weight"], p[ln + ".bias"] = (d,), (d,)
        for lin, (o, i) in (("c_attn", (3 * d, d)), ("c_proj", (d, d)),
                            ("c_fc", (4 * d, d)), ("c_mlp", (d, 4 * d))):
            p[lin + ".weight"], p[lin + ".bias"] = (o, i), (o,)
        return p
    return {"x": (s["rows"], s["d"]), "ln.weight": (s["d"],), "ln.bias": (s["d"],)}


def random_params(kind, s, seed):
    """Seeded NumPy float32 arrays for param_shapes: uniform in [-0.5, 0.5), matrices x 0.03."""
    import numpy as np
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in param_shapes(kind, s).items():
        a = rng.random(shape, dtype=np.float32) - 0.5
        out[name] = a * 0.03 if len(shape) == 2 and name != "x" else a
    return out


def torch_forward(kind, s):
    """The model as a torch function of a dict of tensors (param_shapes' names)."""
    import torch
    import torch.nn.functional as F

    if kind == "mlp":
        def mlp(p):
            h = F.gelu(F.linear(p["x"], p["fc1.weight"], p["fc1.bias"]), approximate="tanh")
            return F.linear(h, p["fc2.weight"], p["fc2.bias"])
        return mlp
    if kind == "layernorm_softmax":
        def ln_softmax(p):
            y = F.layer_norm(p["x"], (s["d"],), p["ln.weight"], p["ln.bias"], 1e-5)
            return torch.softmax(y, -1)
        return ln_softmax
    b, t, d, heads = s["b"], s["t"], s["d"], s["heads"]

    def block(p):
        x = p["x"]
        y = F.layer_norm(x, (d,), p["ln_1.weight"], p["ln_1.bias"], 1e-5)
        q, k, v = F.linear(y, p["c_attn.weight"], p["c_attn.bias"]).split(d, dim=2)
        q, k, v = (z.view(b, t, heads, d // heads).transpose(1, 2) for z in (q, k, v))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        o = o.transpose(1, 2).reshape(b, t, d)
        h = x + F.linear(o, p["c_proj.weight"], p["c_proj.bias"])
        y2 = F.layer_norm(h, (d,), p["ln_2.weight"], p["ln_2.bias"], 1e-5)
        f = F.gelu(F.linear(y2, p["c_fc.weight"], p["c_fc.bias"]), approximate="tanh")
        return h + F.linear(f, p["c_mlp.weight"], p["c_mlp.bias"])
    return block


def run_torch(a, names):
    """The eager and compile sides; 0 when every model was timed."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    mode = a.compile_mode if a.side == "compile" else None
    print("peers: torch %s on %s; %s; CUDA graph of %d calls, median of 5 replays / %d"
          % (torch.__version__, torch.cuda.get_device_name(0),
             "eager" if mode is None else "torch.compile(mode=%r), then captured in a CUDA "
             "graph by this script" % mode, a.iters, a.iters), flush=True)
    bad = 0
    if mode is not None:	# the quick compiles first: a timeout then costs the slow ones
        names = sorted(names, key=lambda n: MODELS[n][0] == "gpt2_block")
    for name in names:
        kind, full, small, dt = MODELS[name]
        s = small if a.small else full
        try:
            dtype = torch.float16 if dt == "half" else torch.float32
            p = {k: torch.from_numpy(v).to("cuda", dtype)
                 for k, v in random_params(kind, s, 1).items()}
            f = torch_forward(kind, s)
            if mode is not None:
                f = torch.compile(f, mode=mode)
                t0 = time.perf_counter()
                f(p)
                torch.cuda.synchronize()
                print("peers: %s compiled in %.1f s" % (name, time.perf_counter() - t0),
                      flush=True)
            us = graph_us(lambda: f(p), a.iters, replays=5)
            print("PEER side=%s model=%s us=%.2f" % (a.side, name, us), flush=True)
        except Exception as e:  # one failing model must not stop the others
            bad = 1
            msg = (type(e).__name__ + ": " + str(e)).splitlines()[0][:200]
            print("PEER side=%s model=%s error=%s" % (a.side, name, msg), flush=True)
        torch.cuda.empty_cache()
    return bad


def tinygrad_model(name, small, leaf):
    """tools/tinygrad_models.py's builder of NAME run on leaf; returns its output tensor."""
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import tinygrad_models as M
    builder, full, sm = M.EXPORTS[name]
    outs, _, _ = builder(leaf, **(sm if small else full))
    return outs["y"]


def tinygrad_setup(dev=None):
    """Make dev (default $BENCH_MODELS_TINYGRAD_DEV or CUDA) tinygrad's default device and
    open it; returns (tinygrad's version, the device).  Raises when it cannot open."""
    import importlib.metadata
    from tinygrad import Device
    from tinygrad.helpers import DEV
    dev = dev or os.environ.get("BENCH_MODELS_TINYGRAD_DEV", "CUDA")
    DEV.value = dev
    return importlib.metadata.version("tinygrad"), Device[dev]  # CUDA: libcuda, nvrtc


def tinygrad_leaf_factory(kind, s, dt):
    """A leaf(name, shape, dtype) for tinygrad_models over realized random tensors; the
    tensors dict it fills; 'x' comes from the dict (set it before building)."""
    from tinygrad import Tensor, dtypes
    arrays = random_params(kind, s, 1)
    tdt = dtypes.half if dt == "half" else dtypes.float
    tensors = {k: Tensor(v).cast(tdt).contiguous().realize() for k, v in arrays.items()}

    def leaf(name, shape, dtype):
        assert tuple(shape) == tuple(tensors[name].shape), (name, shape)
        return tensors[name]
    return leaf, tensors, arrays


def run_tinygrad(a, names):
    """The tinygrad side; 0 when every model was timed."""
    try:
        v, dev = tinygrad_setup()
    except Exception as e:
        msg = (type(e).__name__ + ": " + str(e)).splitlines()[0][:200]
        for name in names:
            print("PEER side=tinygrad model=%s error=CUDA backend did not open: %s"
                  % (name, msg), flush=True)
        return 1
    from tinygrad import Device, TinyJit
    from tinygrad.helpers import GlobalCounters
    print("peers: tinygrad %s on %s (%s); TinyJit, 3 warm-up calls, then %d calls back to "
          "back + one synchronize, host clock / %d, median of 3 runs" % (
              v, Device.DEFAULT, getattr(dev, "arch", "?"), a.iters, a.iters), flush=True)
    bad = 0
    for name in names:
        kind, full, small, dt = MODELS[name]
        s = small if a.small else full
        try:
            leaf, tensors, _ = tinygrad_leaf_factory(kind, s, dt)

            @TinyJit
            def step(x):
                tensors["x"] = x
                return tinygrad_model(name, a.small, leaf).realize()

            x = tensors["x"]
            GlobalCounters.reset()
            t0 = time.perf_counter()
            step(x)			# the plain run: counts the kernels
            nk = GlobalCounters.kernel_count
            for _ in range(2):
                step(x)			# capture, first replay
            dev.synchronize()
            print("peers: %s jitted in %.1f s, %d kernels" % (
                name, time.perf_counter() - t0, nk), flush=True)
            ts = []
            for _ in range(3):
                t0 = time.perf_counter()
                for _ in range(a.iters):
                    step(x)
                dev.synchronize()
                ts.append((time.perf_counter() - t0) * 1e6 / a.iters)
            print("PEER side=tinygrad model=%s us=%.2f" % (name, statistics.median(ts)),
                  flush=True)
        except Exception as e:
            bad = 1
            msg = (type(e).__name__ + ": " + str(e)).splitlines()[0][:200]
            print("PEER side=tinygrad model=%s error=%s" % (name, msg), flush=True)
    return bad


def run_samemath(a, names):
    """Small models: tinygrad's output against the torch function's on the same weights."""
    import numpy as np
    import torch
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import tinygrad_models as M
    try:
        tinygrad_setup()
    except Exception:
        tinygrad_setup("CPU")
    from tinygrad import Device
    where = Device.DEFAULT
    tdev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = False
    bad = 0
    for name in names:
        kind, full, small, dt = MODELS[name]
        ex = M.EXPORTS[name]
        want = {k: v for k, v in ex[1].items() if k != "dtype"}
        if want != full or {k: v for k, v in ex[2].items() if k != "dtype"} != small:
            print("SAMEMATH %s: sizes differ from tinygrad_models.EXPORTS" % name)
            bad = 1
            continue
        try:
            leaf, _, arrays = tinygrad_leaf_factory(kind, small, dt)
            y_tg = tinygrad_model(name, True, leaf).float().numpy()
            tdt = torch.float16 if dt == "half" else torch.float32
            p = {k: torch.from_numpy(v).to(tdev, tdt) for k, v in arrays.items()}
            with torch.no_grad():
                y_t = torch_forward(kind, small)(p).float().cpu().numpy()
        except Exception as e:
            print("SAMEMATH %s: FAILED: %s" % (name, (type(e).__name__ + ": " + str(e))
                                                 .splitlines()[0][:200]), flush=True)
            bad = 1
            continue
        err = float(np.max(np.abs(y_tg - y_t)))
        scale = float(np.max(np.abs(y_t)))
        tol = (0.02 if dt == "half" else 1e-4) * max(1.0, scale)
        ok = y_tg.shape == y_t.shape and err <= tol and np.isfinite(y_tg).all()
        print("SAMEMATH %s: tinygrad (%s) vs torch (%s): max_abs %.3g (max|y| %.3g, tol %.3g) %s"
              % (name, where, tdev, err, scale, tol, "ok" if ok else "FAILED"), flush=True)
        bad |= not ok
    return 1 if bad else 0


def parse_bench(text):
    """tinyc bench's output -> {model: (us, kernels, how)}.  Sections start '== bench NAME'.
    The whole plan's CUDA-graph replay per execution ('plan time: graph X us') when
    tinyc bench prints it, else the sum of the kernels' wall column (back-to-back / count)."""
    res = {}
    for sec in re.split(r"^== bench ", text, flags=re.M)[1:]:
        name = sec.split()[0]
        rows, inrows, wall = 0, False, 0.0
        for line in sec.splitlines():
            f = line.split()
            if f[:1] == ["kernel"]:
                inrows = True
            elif f[:1] == ["total"]:
                inrows = False
            elif inrows and len(f) >= 8:
                rows += 1
                wall += float(f[-1])
        m = re.search(r"plan time: graph ([0-9.]+) us", sec)
        if m and float(m.group(1)) > 0:
            res[name] = (float(m.group(1)), rows, "graph")
        elif rows:
            res[name] = (wall, rows, "wall sum")
        else:
            err = [l for l in sec.splitlines() if "error" in l or "FAILED" in l or "timed out" in l]
            res[name] = (None, 0, err[0].strip()[:120] if err else "no output")
    return res


def parse_peers(text, side):
    """'PEER side=.. model=.. us=..|error=..' lines of one side -> {model: us or reason}."""
    res = {}
    for m in re.finditer(r"^PEER side=%s model=(\S+) (us=([0-9.]+)|error=(.*))$" % side,
                         text, flags=re.M):
        res[m.group(1)] = float(m.group(3)) if m.group(3) else m.group(4).strip()
    return res


def table(logdir):
    """The markdown table of one tools/bench-models run (its logs in logdir)."""
    def read(n):
        try:
            with open(os.path.join(logdir, n)) as f:
                return f.read()
        except OSError:
            return ""
    bench = parse_bench(read("tinyc-bench.txt"))
    peers = {s: parse_peers(read(s + ".txt"), s) for s in ("eager", "compile", "tinygrad")}
    env = read("env.txt").strip()
    checks = [l for l in read("check.txt").splitlines() if l.startswith("CHECK")]

    def cell(v):
        if v is None or v == "":
            return "not run"
        if isinstance(v, float):
            return "{:,.1f}".format(v).replace(",", " ")
        return "n/a (%s)" % str(v).replace("|", "/")[:100]

    def ratio(x, y):
        return "%.2f" % (x / y) if isinstance(x, float) and isinstance(y, float) and y > 0 else ""

    out = ["%s" % env, "",
           "| model | tinyc µs | kernels | torch eager | torch.compile | tinygrad 0.14 CUDA "
           "| tinyc/eager | tinyc/compile |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    seen = set(bench) | {m for s in peers.values() for m in s}
    for name in [m for m in MODELS if m in seen] or MODELS:
        us, nk, how = bench.get(name, (None, 0, "not run"))
        t = us if us is not None else how
        e, c, g = (peers[s].get(name) for s in ("eager", "compile", "tinygrad"))
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, cell(t), nk or "", cell(e), cell(c), cell(g), ratio(us, e), ratio(us, c)))
    hows = sorted({b[2] for b in bench.values() if b[0] is not None})
    out += ["", "tinyc µs: `tinyc bench`, %s. Correctness (small models, "
            "`tinyc run --device=cuda --check` against the reference evaluator):" %
            ("; ".join({"graph": "the whole plan (every kernel in order) captured in a CUDA "
                                 "graph, replayed, per execution",
                        "wall sum": "sum over kernels of back-to-back launches / count (this "
                                    "tinyc prints no whole-plan graph time)"}[h] for h in hows)
             or "no figures")]
    out += ["- " + l[6:] for l in checks] or ["- not run"]
    sm = [l for l in read("samemath.txt").splitlines() if l.startswith("SAMEMATH")]
    if sm:
        out += ["", "Same math (the torch functions against tinygrad's modules, small sizes):"]
        out += ["- " + l[9:] for l in sm]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("side", choices=["eager", "compile", "tinygrad", "samemath", "table"])
    ap.add_argument("logdir", nargs="?", default=".")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--small", action="store_true", help="the small sizes (a quick try)")
    ap.add_argument("--compile-mode", default="default")
    a = ap.parse_args()
    if a.side == "table":
        print(table(a.logdir))
        return 0
    names = [n for n in a.models.split(",") if n]
    for n in names:
        if n not in MODELS:
            print("error: unknown model %r (known: %s)" % (n, ", ".join(MODELS)), file=sys.stderr)
            return 2
    if a.side == "tinygrad":
        return run_tinygrad(a, names)
    if a.side == "samemath":
        return run_samemath(a, names)
    return run_torch(a, names)


if __name__ == "__main__":
    sys.exit(main())
