"""Small and full-size models built from tinygrad 0.14.0 nn modules, for the bridge tests
(tests/bridge/) and the committed exports (tools/export-models, examples/models/).

Each builder takes its sizes and a `leaf(name, shape, dtype)` function that makes the
model's input and weight tensors (Tensor.empty placeholders when exporting, tensors
holding random data when testing), and returns (outputs, inputs, params): dicts
name -> Tensor, ready for tinyc.from_tinygrad.  The tinygrad modules are built as usual,
then their weights are replaced by leaves, so nothing random is realized.
"""

from tinygrad import Tensor, dtypes, nn
from tinygrad.helpers import Context


def _swap_weights(model, dtype, leaf, prefix=""):
    """Replace every tensor of nn.state.get_state_dict(model) by leaf(name, shape, dtype);
    returns the new state dict (name -> Tensor).  BatchNorm's counter stays out."""
    params = {}
    for name, t in nn.state.get_state_dict(model).items():
        if name.endswith("num_batches_tracked"):
            continue
        *path, attr = name.split(".")
        obj = model
        for p in path:
            obj = obj[int(p)] if isinstance(obj, (list, tuple)) else getattr(obj, p)
        new = leaf(prefix + name, t.shape, dtype)
        setattr(obj, attr, new)
        params[prefix + name] = new
    return params


class _Mlp:
    """Linear -> GELU -> Linear."""

    def __init__(self, d, h):
        self.fc1, self.fc2 = nn.Linear(d, h), nn.Linear(h, d)

    def __call__(self, x):
        return self.fc2(self.fc1(x).gelu())


def mlp(leaf, rows=8192, d=1024, h=4096, dtype=dtypes.half):
    """MLP of issue 12: x[rows,d] -> Linear(d,h) -> GELU -> Linear(h,d)."""
    model = _Mlp(d, h)
    params = _swap_weights(model, dtype, leaf)
    x = leaf("x", (rows, d), dtype)
    return {"y": model(x)}, {"x": x}, params


class _GptBlock:
    """A GPT-2 block: x + attn(ln_1(x)), then + mlp(ln_2(x)); causal SDPA, GELU MLP."""

    def __init__(self, d, heads):
        self.d, self.heads = d, heads
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.c_fc, self.c_mlp = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def attn(self, x):
        """Causal multi-head self-attention: c_attn -> q, k, v per head -> SDPA -> c_proj."""
        b, t, d = x.shape
        q, k, v = [y.reshape(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for y in self.c_attn(x).split(d, dim=2)]
        y = q.scaled_dot_product_attention(k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).reshape(b, t, d))

    def __call__(self, x):
        h = x + self.attn(self.ln_1(x))
        return h + self.c_mlp(self.c_fc(self.ln_2(h)).gelu())


def gpt2_block(leaf, b=8, t=512, d=768, heads=12, dtype=dtypes.half):
    """GPT-2 block of issue 12: x[b,t,d], `heads` heads."""
    model = _GptBlock(d, heads)
    params = _swap_weights(model, dtype, leaf)
    x = leaf("x", (b, t, d), dtype)
    return {"y": model(x)}, {"x": x}, params


def layernorm_softmax(leaf, rows=16384, d=4096, dtype=dtypes.float):
    """LayerNorm(d) then softmax over the last axis, x[rows,d]."""
    ln = nn.LayerNorm(d)
    params = _swap_weights(ln, dtype, leaf, "ln.")
    x = leaf("x", (rows, d), dtype)
    return {"y": ln(x).softmax(-1)}, {"x": x}, params


class _BasicBlock:
    """ResNet BasicBlock (stride 1, no downsample): relu(bn2(conv2(relu(bn1(conv1 x)))) + x),
    BatchNorm in eval mode (running statistics)."""

    def __init__(self, c):
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def __call__(self, x):
        out = self.bn1(self.conv1(x)).relu()
        return (self.bn2(self.conv2(out)) + x).relu()


def resnet_block(leaf, n=32, c=64, hw=56, dtype=dtypes.float):
    """ResNet BasicBlock of issue 15: x[n,c,hw,hw]."""
    model = _BasicBlock(c)
    params = _swap_weights(model, dtype, leaf)
    x = leaf("x", (n, c, hw, hw), dtype)
    with Context(TRAINING=0):		# BatchNorm uses the running statistics
        y = model(x)
    return {"y": y}, {"x": x}, params


def embedding(leaf, vocab=50, d=16, b=2, t=7):
    """nn.Embedding(vocab, d) applied to int32 indices idx[b,t]."""
    emb = nn.Embedding(vocab, d)
    params = _swap_weights(emb, dtypes.float, leaf, "emb.")
    idx = leaf("idx", (b, t), dtypes.int32)
    return {"y": emb(idx)}, {"idx": idx}, params


def cumsum(leaf, rows=3, n=40, axis=1):
    """x.cumsum(axis) on x[rows,n] (n > 512 takes tinygrad's two-stage form)."""
    x = leaf("x", (rows, n), dtypes.float)
    return {"y": x.cumsum(axis)}, {"x": x}, {}


def cat_full(leaf, rows=3, n=5):
    """cat of two equal and one unequal part, Tensor.full/ones buffers, where, int math."""
    a = leaf("a", (rows, n), dtypes.float)
    b = leaf("b", (rows, n), dtypes.float)
    y = a.cat(b, dim=1)					# equal sizes: STACK then reshape
    y = y.cat(Tensor.ones(rows, 2) * 3.5, dim=1)	# unequal: PAD + ADD; full buffer
    y = (y > 0).where(y, Tensor.full((rows, 2 * n + 2), -1.0) * y)
    i = (a * 10).cast(dtypes.int32)
    z = (i // 3).cast(dtypes.float) + (i % 3).cast(dtypes.float) * 0.25
    return {"y": y, "z": z}, {"a": a, "b": b}, {}


def attention(leaf, b=8, t=512, heads=12, kv_heads=12, d=64, mask="causal",
              dtype=dtypes.half):
    """Scaled dot-product attention as a transformer layer calls it (issue 16): q from
    x_q[b,t,heads*d], k and v from [b,t,kv_heads*d], heads split and transposed, K/V heads
    repeated for GQA/MQA (kv_heads < heads); mask "causal", "none" or "bias" (an additive
    float mask input [t,t])."""
    xq = leaf("q", (b, t, heads * d), dtype)
    xk = leaf("k", (b, t, kv_heads * d), dtype)
    xv = leaf("v", (b, t, kv_heads * d), dtype)
    q = xq.reshape(b, t, heads, d).transpose(1, 2)
    k = xk.reshape(b, t, kv_heads, d).transpose(1, 2)
    v = xv.reshape(b, t, kv_heads, d).transpose(1, 2)
    if kv_heads != heads:
        k = k.repeat_interleave(heads // kv_heads, dim=1)
        v = v.repeat_interleave(heads // kv_heads, dim=1)
    ins = {"q": xq, "k": xk, "v": xv}
    if mask == "bias":
        ins["bias"] = leaf("bias", (t, t), dtype)
        y = q.scaled_dot_product_attention(k, v, attn_mask=ins["bias"])
    else:
        y = q.scaled_dot_product_attention(k, v, is_causal=mask == "causal")
    return {"y": y}, ins, {}


# name -> (builder, full-size keyword arguments, small keyword arguments)
EXPORTS = {
    "gpt2_block_fp16": (gpt2_block, dict(b=8, t=512, d=768, heads=12, dtype=dtypes.half),
                        dict(b=2, t=8, d=32, heads=4, dtype=dtypes.half)),
    "gpt2_block_fp32": (gpt2_block, dict(b=8, t=512, d=768, heads=12, dtype=dtypes.float),
                        dict(b=2, t=8, d=32, heads=4, dtype=dtypes.float)),
    "mlp_fp16": (mlp, dict(rows=8192, d=1024, h=4096, dtype=dtypes.half),
                 dict(rows=16, d=32, h=64, dtype=dtypes.half)),
    "layernorm_softmax_fp32": (layernorm_softmax, dict(rows=16384, d=4096, dtype=dtypes.float),
                               dict(rows=16, d=64, dtype=dtypes.float)),
    "resnet_block_fp32": (resnet_block, dict(n=32, c=64, hw=56, dtype=dtypes.float),
                          dict(n=2, c=8, hw=8, dtype=dtypes.float)),
}
