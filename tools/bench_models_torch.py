#!/usr/bin/env python3
"""PyTorch eager timings of issue 12's models, the peer of `tinyc bench` on the same shapes.

Usage: tools/bench_models_torch.py [--iters 50]

Times, on the first CUDA device, the MLP fp16 (x[8192,1024] -> Linear(1024,4096) -> GELU(tanh)
-> Linear(4096,1024)) and the GPT-2 block (B=8 T=512 D=768, 12 heads, causal SDPA, GELU MLP)
in fp16 and fp32, each whole and per contraction (every Linear alone).  Each figure is one
CUDA graph holding `--iters` back-to-back calls, replayed 5 times; the median replay divided by
--iters is printed (kernels, not launches).  fp32 matmuls run without TF32 (torch's default).
One line per figure: "TORCH <name> us=<time>".
"""
import argparse

from torch_timing import graph_us


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=50)
    a = ap.parse_args()
    import torch
    import torch.nn.functional as F
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    print("bench_models_torch: torch %s on %s, CUDA graph of %d calls, median of 5 replays"
          % (torch.__version__, torch.cuda.get_device_name(0), a.iters))

    def timed(name, fn):
        """Print fn's median time (microseconds) by CUDA graph replay."""
        print("TORCH %s us=%.2f" % (name, graph_us(fn, a.iters, replays=5)))

    gen = torch.Generator(device=dev)
    gen.manual_seed(0)

    def rnd(*shape, dt):
        return (torch.rand(*shape, generator=gen, device=dev, dtype=torch.float32) - 0.5).to(dt)

    # MLP fp16
    h = torch.float16
    x = rnd(8192, 1024, dt=h)
    w1, b1 = rnd(4096, 1024, dt=h) * 0.06, rnd(4096, dt=h)
    w2, b2 = rnd(1024, 4096, dt=h) * 0.03, rnd(1024, dt=h)
    hid = F.gelu(F.linear(x, w1, b1), approximate="tanh")
    timed("mlp_fp16", lambda: F.linear(F.gelu(F.linear(x, w1, b1), approximate="tanh"), w2, b2))
    timed("mlp_fp16.fc1+gelu", lambda: F.gelu(F.linear(x, w1, b1), approximate="tanh"))
    timed("mlp_fp16.fc2", lambda: F.linear(hid, w2, b2))

    # GPT-2 block
    B, T, D, H = 8, 512, 768, 12
    for dt, tag in ((torch.float16, "fp16"), (torch.float32, "fp32")):
        xb = rnd(B, T, D, dt=dt)
        p = {n: rnd(*s, dt=dt) * (0.03 if len(s) == 2 else 1) for n, s in (
            ("ln1w", (D,)), ("ln1b", (D,)), ("attnw", (3 * D, D)), ("attnb", (3 * D,)),
            ("projw", (D, D)), ("projb", (D,)), ("ln2w", (D,)), ("ln2b", (D,)),
            ("fcw", (4 * D, D)), ("fcb", (4 * D,)), ("mlpw", (D, 4 * D)), ("mlpb", (D,)))}

        def block():
            y = F.layer_norm(xb, (D,), p["ln1w"], p["ln1b"])
            q, k, v = F.linear(y, p["attnw"], p["attnb"]).split(D, dim=2)
            q, k, v = (t.view(B, T, H, D // H).transpose(1, 2) for t in (q, k, v))
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            o = o.transpose(1, 2).reshape(B, T, D)
            x1 = xb + F.linear(o, p["projw"], p["projb"])
            y2 = F.layer_norm(x1, (D,), p["ln2w"], p["ln2b"])
            return x1 + F.linear(F.gelu(F.linear(y2, p["fcw"], p["fcb"]), approximate="tanh"),
                                 p["mlpw"], p["mlpb"])

        timed("gpt2_block_%s" % tag, block)
        y = F.layer_norm(xb, (D,), p["ln1w"], p["ln1b"])
        timed("gpt2_block_%s.c_attn" % tag, lambda: F.linear(y, p["attnw"], p["attnb"]))
        timed("gpt2_block_%s.c_proj" % tag, lambda: F.linear(y, p["projw"], p["projb"]))
        hf = F.gelu(F.linear(y, p["fcw"], p["fcb"]), approximate="tanh")
        timed("gpt2_block_%s.c_fc+gelu" % tag,
              lambda: F.gelu(F.linear(y, p["fcw"], p["fcb"]), approximate="tanh"))
        timed("gpt2_block_%s.c_mlp" % tag, lambda: F.linear(hf, p["mlpw"], p["mlpb"]))
        qh = rnd(B, H, T, D // H, dt=dt)
        timed("gpt2_block_%s.sdpa" % tag,
              lambda: F.scaled_dot_product_attention(qh, qh, qh, is_causal=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
