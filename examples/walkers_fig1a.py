#!/usr/bin/env python
"""Fig. 1a and 1d: hidden-weight alignment against readout, for a rich and a lazy model.

Trains a rich (gamma = 1) and a lazy (gamma = 1e-5 / sqrt(d)) centered MLP on
the same task (L = 16, d = 128, m = 1024, 15,000 SGD steps, as the published
code's Fig. 1a/1d cell) and plots, per hidden unit, the alignment
v1.v2 / (|v1||v2|) of the two halves of its weights against its readout a_i.
Rich units become parallel (a > 0) or antiparallel (a < 0), with larger |a|
on the negative side; lazy units stay near their random initial alignment.
Prints the mean alignment per readout sign and the readout ratio of each.

``plot_weight_structure`` below is meant to move to ``fastsd.plots``.

Usage::

    python examples/walkers_fig1a.py --out results/fig1a      # ~1 minute on 2 cores
    python examples/walkers_fig1a.py --quick --out /tmp/fig1a
"""
import argparse
import math

import numpy as np

from fastsd import SameDifferent, train_ensemble
from fastsd.walkers import weight_structure


def plot_weight_structure(rich, lazy, out_prefix, title=None):
    """Fig. 1a/1d: alignment v1.v2/(|v1||v2|) against readout a_i, rich beside lazy.

    Parameters
    ----------
    rich, lazy : WeightStructure
        ``fastsd.walkers.weight_structure`` of a rich and a lazy model.
    out_prefix : str
        Output path without extension; writes .png and .svg.
    title : str, optional

    Returns
    -------
    list of str
        The paths written.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.2, 3.2), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2)
    for ax, ws, name in zip(axes, (rich, lazy), ("(a) rich", "(d) lazy")):
        ax.scatter(ws.readout, ws.alignment, s=4, alpha=0.5, color="C0" if ws is rich else "C1")
        ax.axhline(0, color="0.7", lw=0.5)
        ax.axvline(0, color="0.7", lw=0.5)
        ax.set_ylim(-1.05, 1.05)
        ax.set_xlabel("readout $a_i$")
        ax.set_title(f"{name}: |mean a-|/|mean a+| = {ws.readout_ratio:.2f}", fontsize=9)
    axes[0].set_ylabel(r"alignment $v^1\cdot v^2/(|v^1||v^2|)$")
    if title:
        fig.suptitle(title, fontsize=9)
    paths = []
    for ext in ("png", "svg"):
        fig.savefig(f"{out_prefix}.{ext}", dpi=150)
        paths.append(f"{out_prefix}.{ext}")
    return paths


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="fig1a", help="output path without extension")
    p.add_argument("--L", type=int, default=16)
    p.add_argument("--d", type=int, default=128)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--steps", type=int, default=15000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="m = 256, 2000 steps")
    args = p.parse_args()
    if args.quick:
        args.width, args.steps = 256, 2000
    task = SameDifferent(d=args.d, L=args.L, seed=args.seed)
    gammas = [1.0, 1e-5 / math.sqrt(args.d)]
    results = train_ensemble(task, gammas, args.seed, width=args.width, steps=args.steps,
                             eval_every=max(args.steps // 5, 1), backend="cpu")
    rich, lazy = (weight_structure(r) for r in results)
    for name, ws, r in zip(("rich", "lazy"), (rich, lazy), results):
        print(f"{name}: best test accuracy {r.best_test_accuracy:.3f}; mean alignment "
              f"a>0 {np.mean(ws.alignment[ws.readout > 0]):+.3f}, "
              f"a<0 {np.mean(ws.alignment[ws.readout < 0]):+.3f}; "
              f"readout ratio {ws.readout_ratio:.3f}")
    paths = plot_weight_structure(
        rich, lazy, args.out,
        title=f"L = {args.L}, d = {args.d}, m = {args.width}, {args.steps} steps")
    print("figures:", ", ".join(paths))


if __name__ == "__main__":
    main()
