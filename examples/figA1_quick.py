"""A quick numeric Fig. A1 (a-d): parallel/antiparallel regions in hidden weights (App. A).

Trains a rich (gamma = 1) and a lazy (gamma = 1e-5) model on PSVRT and on
Pentomino, two cells per side as in App. A, reshapes each hidden weight
vector into the image with ``task.weights_as_images`` / ``task.as_cells``,
and prints, for the units with the largest positive and the most negative
readout a_i, the correlations between the unit's cells (the regions of
Fig. A1): near +-1 in a rich model (parallel / antiparallel regions), near 0
in a lazy one, whose weights stay at their random initialisation. Also
prints |a| and |w| of those units (small in the lazy model, App. A).

    python examples/figA1_quick.py      # about a minute on two cores
"""
import numpy as np

from fastsd import train_ensemble
from fastsd.tasks import PSVRT, Pentomino

GAMMAS = {"lazy": 1e-5, "rich": 1.0}
TRAIN = {"width": 256, "steps": 3000, "eval_every": 500}


def cell_correlations(task, w):
    """Correlation matrix (4 x 4) between the cells of each unit: shape (m, 4, 4)."""
    cells = task.as_cells(w).reshape(len(w), 4, -1)
    cells = cells - cells.mean(axis=2, keepdims=True)
    cells /= np.linalg.norm(cells, axis=2, keepdims=True)
    return cells @ cells.transpose(0, 2, 1)


def main():
    tasks = {"PSVRT": PSVRT(patch=5, n_patches=2, n_train_patterns=256, seed=0),
             "Pentomino": Pentomino(width=2, n_train_shapes=14, seed=0)}
    for name, task in tasks.items():
        res = train_ensemble(task, list(GAMMAS.values()), 0, **TRAIN)
        for label, r in zip(GAMMAS, res):
            w, a = r.final_params.w, r.final_params.a
            print(f"{name} {label}: best test accuracy {r.best_test_accuracy:.3f}")
            corr = cell_correlations(task, w)
            iu = np.triu_indices(4, 1)                  # the 6 pairs of cells
            for sign, k in (("a max", np.argmax(a)), ("a min", np.argmin(a))):
                print(f"  unit {k:>3} ({sign} = {a[k]:+.3f}, |w| = {np.linalg.norm(w[k]):.2f}): "
                      f"cell correlations {np.round(np.sort(corr[k][iu]), 2).tolist()}")
            top = np.argsort(-np.abs(a))[:16]
            print(f"  16 largest |a|: mean |cell correlation| "
                  f"{np.abs(corr[top][:, iu[0], iu[1]]).mean():.2f}; all units: "
                  f"{np.abs(corr[:, iu[0], iu[1]]).mean():.2f}")
            print(f"  images for Fig. A1: weights_as_images(w) -> "
                  f"{task.weights_as_images(w).shape}")


if __name__ == "__main__":
    main()
