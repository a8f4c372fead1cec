#!/usr/bin/python3
"""Produces reference tensors for one model config (docs/models.md).

usage: /usr/bin/python3 test/reference/make_reference.py --config CONFIG.json --out DIR
           [--seed N] [--steps 10] [--dtype f32|f64] [--no-perturb]

Writes tensor archives (see tensor_archive.py):
  DIR/init/   every parameter by contract name, plus `tokens`, `labels` (i32[B,S])
  DIR/step0/  `logits` [B,S,Vp], `loss` [], `grad.<name>` for every parameter
              (one forward/backward from init)
  DIR/train/  `losses` [steps] (loss before each update), `lr` [steps],
              `grad_norm` [steps] (global norm before clipping),
              `final.<name>` for every parameter after `steps` AdamW updates
              on the same batch
  DIR/config.json  the config plus seed, dtype, steps, perturb
Floating tensors are stored in --dtype (f32 default); tokens/labels are i32.
"""

import argparse
import json
import math
import os
import sys

try:
    import torch
except ImportError:  # CTest reads exit code 77 as "skipped"
    print("skipped: python3-torch is not installed (run scripts/setup.sh)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tensor_archive  # noqa: E402
from torch_models import TransformerLM  # noqa: E402

PERTURB_STD = 0.1


def lr_at(it, cfg):
    """nanoGPT's schedule, `it` counted from 0 (docs/models.md)."""
    lr, min_lr = cfg["lr"], cfg["min_lr"]
    warmup, decay = cfg["warmup"], cfg["decay_iters"]
    if it < warmup:
        return lr * (it + 1) / (warmup + 1)
    if it > decay:
        return min_lr
    r = (it - warmup) / (decay - warmup)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * r)) * (lr - min_lr)


def build_initial(cfg, seed, dtype, perturb=True):
    """Model with contract init, then (if perturb) norm weights += N(0, 0.1)
    and every bias (zero-init vector) = N(0, 0.1) so those paths carry signal.
    Values are drawn in float32 from a seeded CPU generator and then cast, so
    the f32 and f64 references start from the same numbers. Also draws the
    batch: a random token stream of S+1 tokens per row in [0, real_vocab);
    tokens = stream[:, :-1], labels = stream[:, 1:]."""
    gen = torch.Generator().manual_seed(seed)
    model = TransformerLM(cfg, dtype=torch.float32)
    model.init_weights(gen)
    if perturb:
        with torch.no_grad():
            params = dict(model.named_parameters())
            for name, shape, init in model.specs:
                noise = torch.randn(shape, generator=gen) * PERTURB_STD
                if init[0] == "ones":
                    params[name].add_(noise)
                elif init[0] == "zeros":
                    params[name].copy_(noise)
    B, S = cfg["batch"], cfg["seq"]
    real_vocab = cfg.get("real_vocab", cfg["vocab"])
    if not 0 < real_vocab <= cfg["vocab"]:
        raise ValueError("need 0 < real_vocab <= vocab")
    stream = torch.randint(0, real_vocab, (B, S + 1), generator=gen)
    tokens = stream[:, :-1].to(torch.int32).contiguous()
    labels = stream[:, 1:].to(torch.int32).contiguous()
    return model.to(dtype), tokens, labels


def make_optimizer(model, cfg):
    """torch.optim.AdamW; group 0 = params of rank >= 2 (decayed), group 1 = the rest."""
    params = list(model.named_parameters())
    decay = [p for _, p in params if p.dim() >= 2]
    no_decay = [p for _, p in params if p.dim() < 2]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg["weight_decay"]},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=cfg["lr"], betas=(cfg["beta1"], cfg["beta2"]), eps=cfg["eps"], foreach=False)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--config", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--dtype", choices=["f32", "f64"], default="f32")
    ap.add_argument("--no-perturb", action="store_true",
                    help="keep the plain contract init (norm weights 1, biases 0)")
    args = ap.parse_args(argv)

    with open(args.config) as f:
        cfg = json.load(f)
    dtype = {"f32": torch.float32, "f64": torch.float64}[args.dtype]
    torch.set_num_threads(1)  # fixed summation order -> reproducible bits

    model, tokens, labels = build_initial(cfg, args.seed, dtype, not args.no_perturb)
    names = [n for n, _, _ in model.specs]
    params = dict(model.named_parameters())
    init_state = {n: params[n].detach().clone() for n in names}

    os.makedirs(args.out, exist_ok=True)
    meta = dict(cfg, seed=args.seed, dtype=args.dtype, steps=args.steps,
                perturb=not args.no_perturb)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")

    init = [(n, init_state[n]) for n in names] + [("tokens", tokens), ("labels", labels)]
    tensor_archive.write(os.path.join(args.out, "init"), init)

    # --- step 0: one forward / backward from init ---
    model.train()
    logits, loss = model(tokens, labels)
    loss.backward()
    step0 = [("logits", logits), ("loss", loss)]
    step0 += [("grad." + n, params[n].grad) for n in names]
    tensor_archive.write(os.path.join(args.out, "step0"), step0)

    # --- training: fresh from init, AdamW on the same batch every step ---
    with torch.no_grad():
        for n in names:
            params[n].copy_(init_state[n])
            params[n].grad = None
    opt = make_optimizer(model, cfg)
    losses, lrs, norms = [], [], []
    for it in range(args.steps):
        lr = lr_at(it, cfg)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad(set_to_none=True)
        _, loss = model(tokens, labels)
        loss.backward()
        if cfg.get("grad_clip", 0.0) > 0.0:
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg["grad_clip"])
        else:
            norm = torch.sqrt(sum((p.grad.detach() ** 2).sum() for p in model.parameters()))
        opt.step()
        losses.append(loss.item())
        lrs.append(lr)
        norms.append(float(norm))
        print("step %2d  lr %.3e  loss %.6f  grad_norm %.4f" % (it, lr, losses[-1], norms[-1]))
    train = [("losses", torch.tensor(losses, dtype=dtype)),
             ("lr", torch.tensor(lrs, dtype=dtype)),
             ("grad_norm", torch.tensor(norms, dtype=dtype))]
    train += [("final." + n, params[n]) for n in names]
    tensor_archive.write(os.path.join(args.out, "train"), train)
    print("wrote %s (init loss %.6f, ln(Vp) %.6f)"
          % (args.out, float(step0[1][1]), math.log(cfg["vocab"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
