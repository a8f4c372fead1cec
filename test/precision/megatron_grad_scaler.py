#!/usr/bin/env python3
"""Writes the reference of test/precision/LossScalingTest.cpp: Megatron-LM's
DynamicGradScaler, transcribed from megatron/core/optimizer/grad_scaler.py
(its documented semantics: float32 tensors for the scale, min scale, growth
and backoff factors; Python ints for the trackers), run over found_inf
sequences that exercise backoff, the hysteresis, the floor and growth.

Output (JSON): {"cases": [{"name", "initial_scale", "min_scale",
"growth_interval", "hysteresis", "found_inf": [0/1...], "scale": [...],
"growth_tracker": [...], "hysteresis_tracker": [...]}]}, the state after
each update.
"""
import argparse
import json
import os
import random

import torch


class DynamicGradScaler:
    """megatron.core.optimizer.grad_scaler.DynamicGradScaler on the CPU."""

    def __init__(self, initial_scale, min_scale, growth_factor, backoff_factor,
                 growth_interval, hysteresis):
        self._scale = torch.tensor([initial_scale], dtype=torch.float)
        assert min_scale > 0.0 and min_scale <= initial_scale
        self.min_scale = torch.tensor([min_scale], dtype=torch.float)
        assert growth_factor > 1.0
        self.growth_factor = torch.tensor([growth_factor], dtype=torch.float)
        assert backoff_factor < 1.0 and backoff_factor > 0.0
        self.backoff_factor = torch.tensor([backoff_factor], dtype=torch.float)
        assert growth_interval > 0
        self.growth_interval = growth_interval
        assert hysteresis > 0
        self.hysteresis = hysteresis
        self._growth_tracker = 0
        self._hysteresis_tracker = self.hysteresis

    @property
    def scale(self):
        return self._scale

    def update(self, found_inf):
        if found_inf:
            self._growth_tracker = 0
            self._hysteresis_tracker -= 1
            if self._hysteresis_tracker <= 0:
                self._scale = torch.max(self._scale * self.backoff_factor,
                                        self.min_scale)
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self.growth_interval:
                self._growth_tracker = 0
                self._hysteresis_tracker = self.hysteresis
                self._scale = self._scale * self.growth_factor


def sequence(rng, pattern):
    """found_inf flags from (length, probability) runs."""
    flags = []
    for length, p in pattern:
        flags += [1 if rng.random() < p else 0 for _ in range(length)]
    return flags


def run(name, initial, minimum, interval, hysteresis, flags):
    # Megatron's get_megatron_optimizer: growth 2.0, backoff 0.5.
    s = DynamicGradScaler(initial, minimum, 2.0, 0.5, interval, hysteresis)
    out = {"name": name, "initial_scale": initial, "min_scale": minimum,
           "growth_interval": interval, "hysteresis": hysteresis,
           "found_inf": flags, "scale": [], "growth_tracker": [],
           "hysteresis_tracker": []}
    for f in flags:
        s.update(bool(f))
        out["scale"].append(float(s.scale.item()))
        out["growth_tracker"].append(s._growth_tracker)
        out["hysteresis_tracker"].append(s._hysteresis_tracker)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rng = random.Random(14)
    cases = [
        # Megatron's defaults: the start's overflows back 2^32 off, two long
        # clean runs grow it, isolated overflows spend the hysteresis.
        run("megatron_defaults", 2.0**32, 1.0, 1000, 2,
            sequence(rng, [(30, 1.0), (1200, 0.0), (5, 0.5), (1100, 0.0),
                           (400, 0.004), (1000, 0.0)])),
        # Frequent overflows: the scale hits its floor and stays there.
        run("floor", 2.0**16, 2.0**10, 5, 2, sequence(rng, [(600, 0.35)])),
        run("hysteresis1_min1", 4.0, 1.0, 3, 1, sequence(rng, [(300, 0.5)])),
        run("hysteresis3", 2.0**20, 1.0, 7, 3, sequence(rng, [(800, 0.2)])),
        # Growth every clean step, from an odd (non power of two) scale.
        run("growth", 3.0 * 2.0**60, 1.0, 1, 2,
            sequence(rng, [(20, 0.0), (60, 0.5)])),
    ]
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump({"cases": cases}, f)


if __name__ == "__main__":
    main()
