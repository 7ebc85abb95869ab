"""A tiny Fig. 1c with the Python API: test accuracy vs L, rich against lazy.
==========================================================================

Trains, for each number of training symbols L, a lazy (gamma = 1e-5/sqrt(d))
and a rich (gamma = 1) centered MLP on the same-different task, all models of
one L in one lockstep ensemble, and prints the best test accuracy on unseen
symbols next to the rich-regime theory (Eq. 3). ``fastsd reproduce fig1c --quick`` is
the larger, resumable version.

    python examples/fig1c_quick.py
"""
import math

from fastsd import SameDifferent, train_ensemble
from fastsd.theory import rich_test_accuracy

D, WIDTH, STEPS, EVAL_EVERY = 128, 512, 3000, 200
GAMMAS = {"lazy": 1e-5 / math.sqrt(D), "rich": 1.0}
SEEDS = (0, 1)


def main():
    print(f"d={D}, m={WIDTH}, {STEPS} steps; mean best test accuracy over {len(SEEDS)} seeds")
    print(f"{'L':>4} {'lazy':>7} {'rich':>7} {'Eq. 3':>7}")
    for L in (2, 3, 4, 8, 16):
        runs = [(name, seed) for name in GAMMAS for seed in SEEDS]
        tasks = [SameDifferent(D, L, seed=1000 * seed + L) for _, seed in runs]
        results = train_ensemble(tasks, [GAMMAS[name] for name, _ in runs],
                                 [seed for _, seed in runs], width=WIDTH, steps=STEPS,
                                 eval_every=EVAL_EVERY)
        mean = {name: sum(r.best_test_accuracy for (n, _), r in zip(runs, results) if n == name)
                / len(SEEDS) for name in GAMMAS}
        print(f"{L:>4} {mean['lazy']:>7.3f} {mean['rich']:>7.3f} "
              f"{float(rich_test_accuracy(L)):>7.3f}")


if __name__ == "__main__":
    main()
