"""PyTorch eager training throughput of strata's gpt_tiny model (nanoGPT's CPU
Shakespeare configuration), for bench/cpu_speed.sh.

The model is test/reference/torch_models.py (independent of strata) with the
same sizes as examples/gpt_tiny.textproto, trained with AdamW on random
char-level batches of Tiny Shakespeare. Prints one line: `tokens_per_s N`.
Run with Debian's /usr/bin/python3 (python3-torch).
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "reference"))
from torch_models import TransformerLM  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup-steps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1337)

    text = open(args.data, encoding="utf-8").read()
    chars = sorted(set(text))
    data = torch.tensor([chars.index(c) for c in text[:200000]], dtype=torch.long)
    cfg = dict(family="gpt", vocab=128, hidden=128, layers=4, heads=4, kv_heads=4,
               ffn=512, seq=64, norm_eps=1e-5, rope_theta=10000.0, dropout=0.0)
    B, S = 12, 64
    model = TransformerLM(cfg, torch.float32, "cpu")
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": rest, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.99))

    def step():
        ix = torch.randint(len(data) - S - 1, (B,))
        x = torch.stack([data[i:i + S] for i in ix]).to(torch.int32)
        y = torch.stack([data[i + 1:i + 1 + S] for i in ix]).to(torch.int32)
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()

    for _ in range(args.warmup_steps):
        step()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        step()
    dt = time.perf_counter() - t0
    print(f"tokens_per_s {args.steps * B * S / dt:.0f}")


if __name__ == "__main__":
    main()
