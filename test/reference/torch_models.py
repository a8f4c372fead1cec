"""Independent PyTorch reference for the GPT and Llama models of docs/models.md.

Written from the GPT-2 / Llama papers and PyTorch's operator definitions; it
shares no code with strata. Parameters carry exactly the contract's names
(model.named_parameters() yields "wte", "layers.0.attn.q.w", ...) and shapes,
with linear weights stored [in, out] and applied as x @ W + b, so a tensor
archive maps 1:1 onto the model.

Config dict keys: family ("gpt"|"llama"), vocab (padded Vp), hidden, layers,
heads, kv_heads, ffn, seq, norm_eps, rope_theta, dropout.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

INIT_STD = 0.02


# --------------------------------------------------------------------------
# Parameter table: (name, shape, init) with init one of
#   ("normal", std) | ("ones",) | ("zeros",)
# --------------------------------------------------------------------------

def _dims(cfg):
    H, nh = cfg["hidden"], cfg["heads"]
    nkv = cfg.get("kv_heads", nh)
    if H % nh or nh % nkv:
        raise ValueError("hidden must be divisible by heads, heads by kv_heads")
    return H, nh, nkv, H // nh


def param_specs(cfg):
    """The contract's parameter list, in declaration order. Needs no torch."""
    fam, V, L, Fd = cfg["family"], cfg["vocab"], cfg["layers"], cfg["ffn"]
    H, nh, nkv, D = _dims(cfg)
    scaled = ("normal", INIT_STD / math.sqrt(2 * L))
    w, one, zero = ("normal", INIT_STD), ("ones",), ("zeros",)
    specs = []
    if fam == "gpt":
        if nkv != nh:
            raise ValueError("gpt has no grouped-query attention (kv_heads must equal heads)")
        specs += [("wte", [V, H], w), ("wpe", [cfg["seq"], H], w)]
        for i in range(L):
            p = "layers.%d." % i
            specs += [
                (p + "ln1.w", [H], one), (p + "ln1.b", [H], zero),
                (p + "attn.q.w", [H, H], w), (p + "attn.q.b", [H], zero),
                (p + "attn.k.w", [H, H], w), (p + "attn.k.b", [H], zero),
                (p + "attn.v.w", [H, H], w), (p + "attn.v.b", [H], zero),
                (p + "attn.o.w", [H, H], scaled), (p + "attn.o.b", [H], zero),
                (p + "ln2.w", [H], one), (p + "ln2.b", [H], zero),
                (p + "mlp.fc1.w", [H, Fd], w), (p + "mlp.fc1.b", [Fd], zero),
                (p + "mlp.fc2.w", [Fd, H], scaled), (p + "mlp.fc2.b", [H], zero),
            ]
        specs += [("ln_f.w", [H], one), ("ln_f.b", [H], zero)]
    elif fam == "llama":
        specs += [("wte", [V, H], w)]
        for i in range(L):
            p = "layers.%d." % i
            specs += [
                (p + "ln1.w", [H], one),
                (p + "attn.q.w", [H, nh * D], w),
                (p + "attn.k.w", [H, nkv * D], w),
                (p + "attn.v.w", [H, nkv * D], w),
                (p + "attn.o.w", [nh * D, H], scaled),
                (p + "ln2.w", [H], one),
                (p + "mlp.gate.w", [H, Fd], w),
                (p + "mlp.up.w", [H, Fd], w),
                (p + "mlp.down.w", [Fd, H], scaled),
            ]
        specs += [("ln_f.w", [H], one), ("lm_head.w", [H, V], w)]
    else:
        raise ValueError("unknown family %r" % fam)
    return specs


def param_count(cfg):
    total = 0
    for _, shape, _ in param_specs(cfg):
        n = 1
        for d in shape:
            n *= d
        total += n
    return total


# --------------------------------------------------------------------------
# Operators, written out
# --------------------------------------------------------------------------

def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * w


def rope_cos_sin(S, D, theta, dtype, device=None):
    """cos/sin tables [S, D/2] for positions 0..S-1, f_i = theta^(-2i/D).
    Angles are computed in float64 and then rounded to `dtype`."""
    i = torch.arange(D // 2, dtype=torch.float64, device=device)
    f = theta ** (-2.0 * i / D)
    ang = torch.arange(S, dtype=torch.float64, device=device)[:, None] * f[None, :]
    return ang.cos().to(dtype), ang.sin().to(dtype)


def rope(x, cos, sin):
    """Rotate-half RoPE on x [B, S, heads, D] with cos/sin [S, D/2]."""
    D = x.shape[-1]
    x1, x2 = x[..., : D // 2], x[..., D // 2:]
    c, s = cos[:, None, :], sin[:, None, :]          # broadcast over heads
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


def causal_attention(q, k, v, scale):
    """q [B,S,nh,D], k/v [B,S,nkv,D] -> [B,S,nh,D].
    softmax(q k^T * scale + causal mask) v; query head j reads kv head
    j // (nh / nkv)."""
    B, S, nh, D = q.shape
    nkv = k.shape[2]
    if nkv != nh:
        k = k.repeat_interleave(nh // nkv, dim=2)
        v = v.repeat_interleave(nh // nkv, dim=2)
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # [B, heads, S, D]
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale
    future = torch.ones(S, S, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(future, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return torch.matmul(probs, v).transpose(1, 2)


def dropout(x, p, training):
    if p == 0.0 or not training:
        return x
    # The contract's dropout mask is Philox4x32-10 counter-based; this
    # reference does not reproduce that stream, so refuse rather than be wrong.
    raise NotImplementedError("reference runs only with dropout = 0")


# --------------------------------------------------------------------------
# Modules. Attribute names mirror the contract names.
# --------------------------------------------------------------------------

class _Tree(nn.Module):
    pass


def _build_tree(root, specs, dtype, device):
    """Creates nested modules so that named_parameters() yields spec names
    ("layers.0.attn.q.w" -> root.layers[0].attn.q.w)."""
    for name, shape, _ in specs:
        parts = name.split(".")
        mod = root
        for j, part in enumerate(parts[:-1]):
            if part.isdigit():
                while len(mod) <= int(part):
                    mod.append(_Tree())
                mod = mod[int(part)]
                continue
            if part not in mod._modules:
                nxt_is_index = parts[j + 1].isdigit()
                mod.add_module(part, nn.ModuleList() if nxt_is_index else _Tree())
            mod = mod._modules[part]
        mod.register_parameter(parts[-1], nn.Parameter(torch.empty(shape, dtype=dtype, device=device)))


class TransformerLM(nn.Module):
    """GPT or Llama per docs/models.md. forward(tokens, labels=None) returns
    (logits [B,S,Vp], loss or None)."""

    def __init__(self, cfg, dtype=torch.float32, device="cpu"):
        super().__init__()
        self.cfg = dict(cfg)
        self.family = cfg["family"]
        self.H, self.nh, self.nkv, self.D = _dims(cfg)
        self.eps = float(cfg.get("norm_eps", 1e-5))
        self.p = float(cfg.get("dropout", 0.0))
        self.specs = param_specs(cfg)
        _build_tree(self, self.specs, dtype, device)
        names = [n for n, _ in self.named_parameters()]
        assert names == [n for n, _, _ in self.specs], "module tree does not match specs"

    def init_weights(self, generator=None):
        """Contract init (docs/models.md), drawn in spec order from `generator`."""
        with torch.no_grad():
            params = dict(self.named_parameters())
            for name, _, init in self.specs:
                t = params[name]
                if init[0] == "normal":
                    t.normal_(0.0, init[1], generator=generator)
                elif init[0] == "ones":
                    t.fill_(1.0)
                else:
                    t.zero_()

    # --- blocks ---
    def _gpt_layer(self, x, L):
        B, S, H = x.shape
        h = F.layer_norm(x, (H,), L.ln1.w, L.ln1.b, self.eps)
        a = L.attn
        q = (h @ a.q.w + a.q.b).view(B, S, self.nh, self.D)
        k = (h @ a.k.w + a.k.b).view(B, S, self.nh, self.D)
        v = (h @ a.v.w + a.v.b).view(B, S, self.nh, self.D)
        o = causal_attention(q, k, v, 1.0 / math.sqrt(self.D)).reshape(B, S, H)
        x = x + dropout(o @ a.o.w + a.o.b, self.p, self.training)
        h = F.layer_norm(x, (H,), L.ln2.w, L.ln2.b, self.eps)
        m = L.mlp
        u = F.gelu(h @ m.fc1.w + m.fc1.b, approximate="tanh")
        return x + dropout(u @ m.fc2.w + m.fc2.b, self.p, self.training)

    def _llama_layer(self, x, L, cos, sin):
        B, S, _ = x.shape
        h = rms_norm(x, L.ln1.w, self.eps)
        a = L.attn
        q = rope((h @ a.q.w).view(B, S, self.nh, self.D), cos, sin)
        k = rope((h @ a.k.w).view(B, S, self.nkv, self.D), cos, sin)
        v = (h @ a.v.w).view(B, S, self.nkv, self.D)
        o = causal_attention(q, k, v, 1.0 / math.sqrt(self.D)).reshape(B, S, self.nh * self.D)
        x = x + dropout(o @ a.o.w, self.p, self.training)
        h = rms_norm(x, L.ln2.w, self.eps)
        m = L.mlp
        return x + dropout((F.silu(h @ m.gate.w) * (h @ m.up.w)) @ m.down.w, self.p, self.training)

    def forward(self, tokens, labels=None):
        tokens = tokens.long()
        B, S = tokens.shape
        if S > self.cfg["seq"]:
            raise ValueError("sequence %d longer than seq %d" % (S, self.cfg["seq"]))
        if self.family == "gpt":
            x = self.wte[tokens] + self.wpe[:S]
            x = dropout(x, self.p, self.training)
            for L in self.layers:
                x = self._gpt_layer(x, L)
            x = F.layer_norm(x, (self.H,), self.ln_f.w, self.ln_f.b, self.eps)
            logits = x @ self.wte.t()
        else:
            cos, sin = rope_cos_sin(S, self.D, float(self.cfg.get("rope_theta", 10000.0)),
                                    self.wte.dtype, self.wte.device)
            x = dropout(self.wte[tokens], self.p, self.training)
            for L in self.layers:
                x = self._llama_layer(x, L, cos, sin)
            x = rms_norm(x, self.ln_f.w, self.eps)
            logits = x @ self.lm_head.w
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.reshape(B * S, -1), labels.long().reshape(B * S))
        return logits, loss
