"""Checks of the visual task generators, measured from the pixels
==============================================================

Prints: the pentomino piece counts (18 one-sided pieces, 12 free classes, 63
fixed orientations) and, over 10^5 images, that different pairs are never
the same piece after rotation; for PSVRT over 10^5 training and 10^5 test
images, the label split, overlaps, identical patterns in different images
and test patterns found in the training set; and the errors for bad input.
Each image is decoded from its pixels (cells of the grid), not from the
generator's indices.

    python examples/image_task_checks.py
"""
import numpy as np

from fastsd.tasks import PSVRT, CifarPairs, Pentomino
from fastsd.tasks.pentomino import (
    PIECE_ORIENTATIONS,
    PIECE_TEMPLATES,
    canonical,
    fixed_key,
)
from fastsd.tasks.psvrt import patterns_to_codes

N = 100_000


def pentomino():
    print("Pentomino pieces")
    print(f"  one-sided pieces:                       {len(PIECE_TEMPLATES)}")
    print(f"  distinct under rotation:                {len({canonical(t) for t in PIECE_TEMPLATES})}")
    print(f"  classes under rotation + reflection:    "
          f"{len({canonical(t, reflect=True) for t in PIECE_TEMPLATES})}")
    print(f"  distinct fixed orientations:            "
          f"{len({fixed_key(o) for o in PIECE_ORIENTATIONS.reshape(-1, 5, 5)})}")
    rotation_class = {fixed_key(np.rot90(t, k)): i for i, t in enumerate(PIECE_TEMPLATES)
                      for k in range(4)}
    task = Pentomino(width=2, n_train_shapes=12, blur=0.0, seed=0)
    for kind, sampler in (("train", task.sample_train), ("test", task.sample_test)):
        x, y = sampler(N, seed=1)
        cells = task.as_cells(x).reshape(N, 4, 7, 7)
        filled = cells.any(axis=(2, 3))
        shapes = cells[np.nonzero(filled)].reshape(N, 2, 7, 7)
        keys = {}
        ids = np.array([[rotation_class[keys.setdefault(s.tobytes(), fixed_key(s))]
                         for s in pair] for pair in shapes])
        same_piece = ids[:, 0] == ids[:, 1]
        print(f"  {kind} (unblurred), {N} images: same labels {y.mean():.4f}; "
              f"different pairs that are one piece after rotation: "
              f"{int(np.sum(same_piece & (y == 0)))}; same pairs that are not: "
              f"{int(np.sum(~same_piece & (y == 1)))}; two filled cells in every image: "
              f"{bool(np.all(filled.sum(axis=1) == 2))}")


def psvrt():
    print("PSVRT (patch 5, 5 x 5 patches, 1024 training patterns)")
    task = PSVRT(patch=5, n_patches=5, n_train_patterns=1024, seed=0)
    for kind, sampler in (("train", task.sample_train), ("test", task.sample_test)):
        x, y = sampler(N, seed=1)
        cells = task.as_cells(x).reshape(N, 25, 5, 5)
        full = np.all(np.abs(cells) == 1, axis=(2, 3))
        empty = np.all(cells == 0, axis=(2, 3))
        ok = np.all(full | empty) and np.all(full.sum(axis=1) == 2)
        codes = patterns_to_codes(cells[np.nonzero(full)].reshape(N, 2, 5, 5))
        same = codes[:, 0] == codes[:, 1]
        in_train = np.isin(codes, task.codes)
        print(f"  {kind}, {N} images: same labels {y.mean():.4f} (|0.5 - p| = "
              f"{abs(y.mean() - 0.5):.4f}); exactly two non-overlapping patterns in every "
              f"image: {bool(ok)}; different images with identical patterns: "
              f"{int(np.sum(same & (y == 0)))}; same images with distinct patterns: "
              f"{int(np.sum(~same & (y == 1)))}; patterns from the training set: "
              f"{int(in_train.sum())} of {in_train.size}")


def errors():
    print("Bad input")
    calls = {
        "PSVRT(patch=0, n_train_patterns=4)": lambda: PSVRT(patch=0, n_train_patterns=4),
        "PSVRT(patch=2, n_patches=5, n_train_patterns=15)":
            lambda: PSVRT(patch=2, n_patches=5, n_train_patterns=15),
        "PSVRT(n_patches=1, n_train_patterns=4)": lambda: PSVRT(n_patches=1, n_train_patterns=4),
        "Pentomino(n_train_shapes=17)": lambda: Pentomino(n_train_shapes=17),
        "Pentomino(width=1, n_train_shapes=4)": lambda: Pentomino(width=1, n_train_shapes=4),
        "CifarPairs('/nonexistent/cifar', n_train_classes=90)":
            lambda: CifarPairs("/nonexistent/cifar", n_train_classes=90),
    }
    for text, call in calls.items():
        try:
            call()
        except (ValueError, TypeError, FileNotFoundError) as exc:
            print(f"  {text}\n    -> {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    pentomino()
    psvrt()
    errors()
