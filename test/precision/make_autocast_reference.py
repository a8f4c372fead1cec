"""PyTorch CPU bf16 autocast on the reference model (test/reference).

usage: python make_autocast_reference.py --config CONFIG.json --out DIR [--seed N]

Writes tensor archives (test/reference/tensor_archive.py):
  DIR/init/  every parameter by contract name (f32), `tokens`, `labels`
  DIR/bf16/  `logits` (as f32), `loss`, `grad.<name>` for every parameter:
             one forward / backward under torch.autocast("cpu", bfloat16)
             from fp32 parameters (the grads land on the fp32 parameters)
  DIR/f32/   the same in plain f32, for the size of bf16's error
  DIR/config.json  the config plus seed
Parameters and the batch are build_initial's (make_reference.py), so the
numbers are those of the f32 parity test. torch is required: a missing torch
is a failure, not a skip.
"""

import argparse
import json
import os
import sys

import torch

REFERENCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference")
sys.path.insert(0, REFERENCE)
import tensor_archive  # noqa: E402
from make_reference import build_initial  # noqa: E402


def forward_backward(model, tokens, labels, autocast):
    for p in model.parameters():
        p.grad = None
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        logits, _ = model(tokens)
    # The loss in f32, as Megatron (and strata) compute cross-entropy.
    B, S = tokens.shape
    loss = torch.nn.functional.cross_entropy(
        logits.float().reshape(B * S, -1), labels.long().reshape(B * S))
    loss.backward()
    params = dict(model.named_parameters())
    out = [("logits", logits.float()), ("loss", loss)]
    out += [("grad." + n, params[n].grad) for n, _, _ in model.specs]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    with open(args.config) as f:
        cfg = json.load(f)
    torch.set_num_threads(1)
    model, tokens, labels = build_initial(cfg, args.seed, torch.float32)
    model.train()
    params = dict(model.named_parameters())
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(dict(cfg, seed=args.seed), f, indent=1)
        f.write("\n")
    init = [(n, params[n].detach().clone()) for n, _, _ in model.specs]
    tensor_archive.write(os.path.join(args.out, "init"),
                         init + [("tokens", tokens), ("labels", labels)])
    for name, autocast in (("bf16", True), ("f32", False)):
        out = forward_backward(model, tokens, labels, autocast)
        tensor_archive.write(os.path.join(args.out, name), out)
        print("%s loss %.6f" % (name, float(out[1][1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
