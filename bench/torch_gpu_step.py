"""PyTorch's step time for the model of strata's GPU benchmark, for
scripts/gpu_check.sh (on the lent GPU machine, whose venv has PyTorch 2.x).

The model is test/reference/torch_models.py (independent of strata) at
GPT-2 124M's sizes (12 layers, width 768, 12 heads, context 1024) with the
vocabulary of the benchmark's spec, trained with AdamW (fused when torch
has it) and grad-norm clipping on random tokens, as strata trains it.
Modes: eager f32 (TF32 off, as strata's f32 GEMMs), eager bf16 autocast,
torch.compile bf16. Prints one line per mode:
`torch MODE ms_per_step X tokens_per_s Y` (mean over --steps after
--warmup-steps; a mode that fails prints why and the others still run).
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "test", "reference"))
from torch_models import TransformerLM  # noqa: E402


def run(mode, args):
    torch.manual_seed(1337)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cfg = dict(family="gpt", vocab=args.vocab, hidden=768, layers=12, heads=12,
               kv_heads=12, ffn=3072, seq=args.seq, norm_eps=1e-5,
               rope_theta=10000.0, dropout=0.0)
    model = TransformerLM(cfg, torch.float32, "cuda")
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.1},
              {"params": rest, "weight_decay": 0.0}]
    try:
        opt = torch.optim.AdamW(groups, lr=6e-4, betas=(0.9, 0.95), fused=True)
    except (TypeError, RuntimeError):
        opt = torch.optim.AdamW(groups, lr=6e-4, betas=(0.9, 0.95))
    fwd = torch.compile(model) if mode == "compile-bf16" else model
    B, S = args.batch, args.seq
    x = torch.randint(args.vocab, (B, S), device="cuda", dtype=torch.int32)
    y = torch.randint(args.vocab, (B, S), device="cuda", dtype=torch.int32)

    def step():
        with torch.autocast("cuda", torch.bfloat16, enabled=mode != "eager-f32"):
            _, loss = fwd(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    for _ in range(args.warmup_steps):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        step()
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1000 / args.steps
    print(f"torch {mode} ms_per_step {ms:.1f} tokens_per_s {B * S * 1000 / ms:.0f}",
          flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=65)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup-steps", type=int, default=3)
    ap.add_argument("--modes", default="eager-f32,eager-bf16,compile-bf16")
    args = ap.parse_args()
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}",
          flush=True)
    for mode in args.modes.split(","):
        try:
            run(mode, args)
        except Exception as e:  # report and go on: the table keeps the rest
            print(f"torch {mode} failed: {type(e).__name__}: {e}", flush=True)


if __name__ == "__main__":
    main()
