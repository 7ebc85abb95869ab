"""Pentomino (Sec. 4.2, App. G.4): the pieces against known counts, images read back from pixels.

Known facts checked: 12 free pentominoes, 18 one-sided ones (6 of the 12 are
chiral), 63 fixed ones, each piece 5 edge-connected squares. Images are
decoded by cutting the grid into 7 x 7 cells: exactly two cells hold a
piece, with a one-pixel empty border; pieces are identified by rotating the
decoded shape, not through the generator's indices.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import ndimage

from fastsd import train_ensemble
from fastsd.tasks import Pentomino
from fastsd.tasks._images import place_blurred
from fastsd.tasks.pentomino import (
    PIECE_NAMES,
    PIECE_ORIENTATIONS,
    PIECE_TEMPLATES,
    canonical,
    fixed_key,
)

SETTINGS = settings(max_examples=20, deadline=None)
#: Every rotation of every template (up to translation) -> its piece.
ROTATION_CLASS = {fixed_key(np.rot90(t, k)): i for i, t in enumerate(PIECE_TEMPLATES)
                  for k in range(4)}


def decode(task, x):
    """Piece index (by rotation class) of the two shapes of each unblurred image, and their keys."""
    cells = task.as_cells(x).reshape(len(x), -1, 7, 7)
    filled = cells.any(axis=(2, 3))
    assert np.all(filled.sum(axis=1) == 2)
    assert np.all(cells[..., 0, :] == 0) and np.all(cells[..., -1, :] == 0)      # border
    assert np.all(cells[..., :, 0] == 0) and np.all(cells[..., :, -1] == 0)
    k, c = np.nonzero(filled)
    shapes = cells[k, c].reshape(len(x), 2, 7, 7)
    keys = [[fixed_key(s) for s in pair] for pair in shapes]
    ids = np.array([[ROTATION_CLASS[k] for k in pair] for pair in keys])
    return ids, keys


# -- the pieces --------------------------------------------------------------------

def test_must_show_piece_counts():
    """18 pieces, no two equal under rotation, 12 classes under rotation plus
    reflection, 63 distinct fixed orientations; every piece is 5 connected squares."""
    assert len(PIECE_NAMES) == len(PIECE_TEMPLATES) == 18
    assert len({canonical(t) for t in PIECE_TEMPLATES}) == 18
    assert len({canonical(t, reflect=True) for t in PIECE_TEMPLATES}) == 12
    assert len({fixed_key(o) for o in PIECE_ORIENTATIONS.reshape(-1, 5, 5)}) == 63
    for t in PIECE_TEMPLATES:
        assert t.sum() == 5 and set(np.unique(t)) == {0.0, 1.0}
        assert ndimage.label(t)[1] == 1                # 4-connected: glued by edges
    # the mirror pieces are exactly the mirror images of chiral free pieces
    for name, t in zip(PIECE_NAMES, PIECE_TEMPLATES):
        if name.startswith("R"):
            base = PIECE_TEMPLATES[PIECE_NAMES.index(name[1:])]
            assert canonical(np.fliplr(base)) == canonical(t) != canonical(base)
    assert sorted(n for n in PIECE_NAMES if n.startswith("R")) == ["RF", "RL", "RN", "RP", "RY",
                                                                   "RZ"]


def test_orientations_are_rotations_of_the_template():
    for t, ors in zip(PIECE_TEMPLATES, PIECE_ORIENTATIONS):
        for k, o in enumerate(ors):
            assert fixed_key(o) == fixed_key(np.rot90(t, k))
    n_distinct = {n: len({fixed_key(o) for o in ors})
                  for n, ors in zip(PIECE_NAMES, PIECE_ORIENTATIONS)}
    assert n_distinct["X"] == 1 and n_distinct["I"] == 2 and n_distinct["Z"] == 2
    assert n_distinct["F"] == n_distinct["RF"] == 4


# -- images --------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["train", "test"])
def test_must_show_pairs_labelled_by_rotation_class(kind):
    """A pair labelled different is never pixel-identical after rotation; a pair
    labelled same always is; mirror images come labelled different."""
    task = Pentomino(width=2, n_train_shapes=10, blur=0.0, seed=3)
    x, y = (task.sample_train if kind == "train" else task.sample_test)(3000, seed=1)
    assert set(np.unique(x)) == {0.0, 1.0}
    ids, keys = decode(task, x)
    np.testing.assert_array_equal(ids[:, 0] == ids[:, 1], y == 1.0)
    pieces = task.train_pieces if kind == "train" else task.test_pieces
    assert set(np.unique(ids)) == set(pieces.tolist())
    mirror = np.array([canonical(PIECE_TEMPLATES[a], True) == canonical(PIECE_TEMPLATES[b], True)
                       for a, b in ids]) & (ids[:, 0] != ids[:, 1])
    assert np.all(y[mirror] == 0.0)
    # same pairs: each copy rotated independently, so an asymmetric piece shows
    # two different orientations in 3/4 of its same pairs
    asym = np.array([len({fixed_key(o) for o in PIECE_ORIENTATIONS[i]}) == 4 for i in ids[:, 0]])
    sel = (y == 1.0) & asym
    diff_orient = np.mean([keys[i][0] != keys[i][1] for i in np.flatnonzero(sel)])
    assert abs(diff_orient - 0.75) < 5 * np.sqrt(0.75 * 0.25 / sel.sum())


def test_split_disjoint_and_complete():
    task = Pentomino(n_train_shapes=14, seed=9)
    assert task.train_pieces.size == 14 and task.test_pieces.size == 4
    assert sorted(np.concatenate([task.train_pieces, task.test_pieces]).tolist()) == list(range(18))


@SETTINGS
@given(width=st.integers(2, 4), n_train=st.integers(2, 16), seed=st.integers(0, 2 ** 32 - 1),
       n=st.integers(1, 40))
def test_properties_any_geometry(width, n_train, seed, n):
    task = Pentomino(width=width, n_train_shapes=n_train, blur=0.0, seed=seed)
    assert task.input_dim == (7 * width) ** 2
    for sampler, pieces in ((task.sample_train, task.train_pieces),
                            (task.sample_test, task.test_pieces)):
        x, y = sampler(n, seed=seed)
        if n % 2 == 0:
            assert y.sum() == n // 2
        ids, _ = decode(task, x)
        np.testing.assert_array_equal(ids[:, 0] == ids[:, 1], y == 1.0)
        assert np.all(np.isin(ids, pieces))


# -- blur -------------------------------------------------------------------------------

@SETTINGS
@given(seed=st.integers(0, 2 ** 32 - 1), smax=st.floats(0, 3), grid=st.integers(1, 3),
       s=st.integers(1, 5), border=st.integers(0, 2))
def test_place_blurred_equals_scipy_on_the_sharp_image(seed, smax, grid, s, border):
    """Stamps blurred in windows and folded at the border = gaussian_filter of the image."""
    rng = np.random.default_rng(seed)
    n, cell = 3, s + 2 * border
    H = W = grid * cell
    k = min(2, grid * grid)
    stamps = rng.random((n, k, s, s))
    sigma = rng.uniform(0, smax, n)
    sigma[0] = 0.0
    cells = np.stack([rng.permutation(grid * grid)[:k] for _ in range(n)])
    origins = np.stack([cells // grid * cell + border, cells % grid * cell + border], axis=-1)
    out = place_blurred((H, W), stamps, origins, sigma)
    for i in range(n):
        sharp = np.zeros((H, W))
        for j in range(k):
            r, c = origins[i, j]
            sharp[r:r + s, c:c + s] = stamps[i, j]
        np.testing.assert_allclose(out[i].reshape(H, W), ndimage.gaussian_filter(sharp, sigma[i]),
                                   rtol=1e-12, atol=1e-14)


def test_training_images_blurred_test_images_not():
    sharp = Pentomino(n_train_shapes=12, blur=0.0, seed=0)
    fixed = Pentomino(n_train_shapes=12, blur=0.5, seed=0, random_blur=False)
    xs, ys = sharp.sample_train(200, seed=4)
    xf, yf = fixed.sample_train(200, seed=4)          # same draws, then blur sigma = 0.5
    np.testing.assert_array_equal(ys, yf)
    for a, b in zip(xs[:20], xf[:20]):
        np.testing.assert_allclose(b.reshape(14, 14), ndimage.gaussian_filter(a.reshape(14, 14),
                                                                              0.5), atol=1e-12)
    rand = Pentomino(n_train_shapes=12, blur=0.5, seed=0)
    xr, _ = rand.sample_train(200, seed=4)
    assert not np.all(np.isin(xr, [0.0, 1.0]))
    # sigma ~ U(0, 0.5): the blurred mass outside the pieces spans from ~0 to the sigma=0.5 value
    out_mass = np.where(xs == 0, xr, 0).sum(axis=1)
    assert out_mass.min() < 0.05 * np.where(xs == 0, xf, 0).sum(axis=1).max()
    xt, _ = rand.sample_test(200, seed=4)
    assert set(np.unique(xt)) == {0.0, 1.0}


def test_weights_as_images_shape():
    task = Pentomino(width=3, n_train_shapes=12, seed=0)
    assert task.weights_as_images(np.zeros((4, 441))).shape == (4, 21, 21)
    assert task.as_cells(np.zeros((4, 441))).shape == (4, 3, 3, 7, 7)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(width=1, n_train_shapes=4), ValueError, r"`width` must be an integer >= 2; got 1"),
    (dict(n_train_shapes=17), ValueError,
     r"`n_train_shapes` must be an integer <= 16, so that at least two .* for testing; got 17"),
    (dict(n_train_shapes=1), ValueError, r"`n_train_shapes` must be an integer >= 2"),
    (dict(), TypeError, r"`n_train_shapes` must be given"),
    (dict(n_train_shapes=4, blur=-0.1), ValueError, r"`blur` must be a finite number >= 0"),
    (dict(n_train_shapes=4, random_blur=1), TypeError, r"`random_blur` must be True or False"),
])
def test_bad_input_clear_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        Pentomino(**kwargs)


def test_trains_as_an_image_task():
    task = Pentomino(n_train_shapes=12, seed=0)
    kw = dict(width=8, steps=4, batch_size=16, eval_every=2, n_test=64)
    ref = train_ensemble(task, [0.5], 1, backend="numpy", **kw)[0]
    cpu = train_ensemble(task, [0.5], 1, backend="cpu", dtype="float64", **kw)[0]
    assert ref.config["lr"] == pytest.approx(0.25 * 0.5)
    assert ref.config["output_scale"] == pytest.approx(2.0)
    np.testing.assert_allclose(cpu.final_params.w, ref.final_params.w, rtol=1e-10, atol=1e-12)
