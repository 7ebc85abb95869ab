"""PSVRT (Sec. 4.1, App. G.3): images read back independently of the generator.

Each image is decoded from its pixels alone: the cells of the patch grid that
are entirely nonzero hold the patterns, every other pixel must be zero. The
labels, the placement and the train/test split are checked on the decoded
patterns, not on the generator's internal indices.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsd import train_ensemble
from fastsd.tasks import PSVRT
from fastsd.tasks.psvrt import codes_to_patterns, patterns_to_codes

SETTINGS = settings(max_examples=20, deadline=None)


def decode(task, x):
    """Codes of the two patterns of each image (row-major cell order) and their cells.

    Asserts that exactly two cells are filled with +-1 and all else is 0.
    """
    g, s = task.n_patches, task.patch
    img = x.reshape(-1, g, s, g, s).transpose(0, 1, 3, 2, 4).reshape(len(x), g * g, s, s)
    filled = np.all(np.abs(img) == 1.0, axis=(2, 3))
    empty = np.all(img == 0.0, axis=(2, 3))
    assert np.all(filled | empty), "a cell is partly filled: patterns overlap or straddle cells"
    assert np.all(filled.sum(axis=1) == 2), "an image does not hold exactly two patterns"
    cells = np.nonzero(filled)[1].reshape(-1, 2)
    pats = img[np.arange(len(x))[:, None], cells]
    return patterns_to_codes(pats), cells


def test_codes_round_trip():
    codes = np.arange(2 ** 9, dtype=np.int64)
    pats = codes_to_patterns(codes, 3)
    assert set(np.unique(pats)) == {-1.0, 1.0}
    np.testing.assert_array_equal(patterns_to_codes(pats), codes)
    assert len({p.tobytes() for p in pats}) == codes.size


def test_test_codes_enumerate_the_complement_in_order():
    task = PSVRT(patch=2, n_patches=2, n_train_patterns=9, seed=3)
    expected = np.setdiff1d(np.arange(16), task.codes)          # the 7 unused codes
    np.testing.assert_array_equal(task.test_codes(np.arange(7)), expected)
    np.testing.assert_array_equal(patterns_to_codes(task.patterns), task.codes)


def test_must_show_labels_balanced_and_images_well_formed():
    """10^5 images of each kind: 50/50 labels, patterns never overlap, different
    never shows identical patterns, same always does, no test pattern is a
    training pattern and training images use only training patterns (2 x 2 patches
    to keep the arrays small; examples/image_task_checks.py runs the 5 x 5 default)."""
    n = 100_000
    task = PSVRT(patch=5, n_patches=2, n_train_patterns=64, seed=0)
    train_set = set(task.codes.tolist())
    for kind in ("train", "test"):
        x, y = (task.sample_train if kind == "train" else task.sample_test)(n, seed=11)
        assert x.shape == (n, 100)
        assert abs(y.mean() - 0.5) <= 0.01
        codes, cells = decode(task, x)
        assert np.all(cells[:, 0] != cells[:, 1])
        same = codes[:, 0] == codes[:, 1]
        np.testing.assert_array_equal(same, y == 1.0)
        inside = np.isin(codes, task.codes)
        if kind == "train":
            assert inside.all()
            assert set(np.unique(codes).tolist()) == train_set      # every pattern is used
        else:
            assert not inside.any()
            # fresh patterns: almost all of the 1.5e5 test patterns are distinct
            assert np.unique(codes).size > 0.99 * (n + n // 2)


def test_small_pattern_space_test_patterns_avoid_training_set():
    """patch=2: 16 patterns, 14 for training, so only 2 remain for every test image."""
    task = PSVRT(patch=2, n_patches=3, n_train_patterns=14, seed=5)
    rest = np.setdiff1d(np.arange(16), task.codes)
    x, y = task.sample_test(4000, seed=1)
    codes, _ = decode(task, x)
    assert np.all(np.isin(codes, rest))
    np.testing.assert_array_equal(codes[:, 0] == codes[:, 1], y == 1.0)
    # each of the two test patterns is used about half the time
    frac = np.mean(codes == rest[0])
    assert abs(frac - 0.5) < 5 * np.sqrt(0.25 / codes.size)


def test_cells_uniform_over_ordered_distinct_pairs():
    task = PSVRT(patch=2, n_patches=2, n_train_patterns=4, seed=0)
    x, _ = task.sample_train(40_000, seed=2)
    _, cells = decode(task, x)
    # decode returns cells in row-major order; an unordered pair of 4 cells: 6 choices
    pair = cells[:, 0] * 4 + cells[:, 1]
    counts = np.bincount(pair, minlength=16)[[1, 2, 3, 6, 7, 11]]
    p = 1 / 6
    assert np.all(np.abs(counts / len(x) - p) < 5 * np.sqrt(p * (1 - p) / len(x)))


@SETTINGS
@given(patch=st.integers(2, 4), n_patches=st.integers(2, 4), frac=st.floats(0, 1),
       seed=st.integers(0, 2 ** 32 - 1), n=st.integers(1, 60))
def test_properties_any_geometry(patch, n_patches, frac, seed, n):
    n_train = 2 + int(frac * (2 ** (patch * patch) - 4))
    task = PSVRT(patch=patch, n_patches=n_patches, n_train_patterns=n_train, seed=seed)
    assert task.input_dim == (patch * n_patches) ** 2
    assert task.codes.size == n_train == np.unique(task.codes).size
    for sampler, in_train in ((task.sample_train, True), (task.sample_test, False)):
        x, y = sampler(n, seed=seed)
        assert x.shape == (n, task.input_dim) and x.dtype == np.float64
        if n % 2 == 0:
            assert y.sum() == n // 2
        codes, _ = decode(task, x)
        np.testing.assert_array_equal(codes[:, 0] == codes[:, 1], y == 1.0)
        assert np.all(np.isin(codes, task.codes) == in_train)


def test_seed_rebuilds_task_and_samples():
    a = PSVRT(n_train_patterns=32, seed=7)
    b = PSVRT(n_train_patterns=32, seed=a.seed_entropy)
    np.testing.assert_array_equal(a.patterns, b.patterns)
    np.testing.assert_array_equal(a.sample_test(50, seed=1)[0], b.sample_test(50, seed=1)[0])
    assert not np.array_equal(PSVRT(n_train_patterns=32, seed=8).codes, a.codes)


def test_weights_as_images_and_cells():
    task = PSVRT(patch=3, n_patches=2, n_train_patterns=8, seed=0)
    w = np.arange(5 * 36, dtype=float).reshape(5, 36)
    img = task.weights_as_images(w)
    assert img.shape == (5, 6, 6)
    np.testing.assert_array_equal(img[2, 4], w[2, 24:30])           # row 4 of unit 2
    cells = task.as_cells(w)
    assert cells.shape == (5, 2, 2, 3, 3)
    np.testing.assert_array_equal(cells[1, 1, 0], img[1, 3:6, 0:3])
    with pytest.raises(ValueError, match="`w` must have 36 columns"):
        task.weights_as_images(np.zeros((5, 35)))


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(patch=0, n_train_patterns=4), ValueError, r"`patch` must be an integer >= 2; got 0"),
    (dict(patch=1, n_train_patterns=4), ValueError, r"`patch` must be an integer >= 2; got 1"),
    (dict(patch=8, n_train_patterns=4), ValueError, r"`patch` must be an integer <= 7"),
    (dict(patch=2.0, n_train_patterns=4), TypeError, r"`patch` must be an integer"),
    (dict(n_patches=1, n_train_patterns=4), ValueError, r"`n_patches` must be an integer >= 2"),
    (dict(patch=2, n_train_patterns=15), ValueError, r"<= 14 \(2\*\*\(patch\*\*2\) - 2 for patch=2, "
     r"so that two patterns are left for testing\); got 15"),
    (dict(n_train_patterns=1), ValueError, r"`n_train_patterns` must be an integer >= 2"),
    (dict(), TypeError, r"`n_train_patterns` must be given"),
    (dict(n_train_patterns=4, seed=-1), ValueError, r"`seed` must be an integer >= 0"),
    (dict(n_train_patterns=4, seed=np.random.default_rng(0)), TypeError, r"got a Generator"),
])
def test_bad_input_clear_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        PSVRT(**kwargs)


def test_sample_bad_n():
    task = PSVRT(n_train_patterns=4, seed=0)
    with pytest.raises(ValueError, match="`n` must be an integer >= 1; got 0"):
        task.sample_test(0)


def test_trains_as_an_image_task_reference_equals_numba():
    """No 1/sqrt(d) factor, alpha = gamma^2 0.5 (App. G.3); the float64 Numba engine
    consumes the generator exactly as the NumPy reference does."""
    task = PSVRT(patch=2, n_patches=2, n_train_patterns=6, seed=0)
    kw = dict(width=8, steps=6, batch_size=16, eval_every=3, n_test=64)
    ref = train_ensemble(task, [0.1, 2.0], 4, backend="numpy", **kw)
    cpu = train_ensemble(task, [0.1, 2.0], 4, backend="cpu", dtype="float64", **kw)
    for g, r in zip((0.1, 2.0), ref):
        assert r.config["output_scale"] == pytest.approx(1 / g)
        assert r.config["lr"] == pytest.approx(g * g * 0.5 if g <= 1 else g * 0.5)
        assert r.config["L"] == 6
    for r, c in zip(ref, cpu):
        np.testing.assert_allclose(c.final_params.w, r.final_params.w, rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(c.history["test_accuracy"], r.history["test_accuracy"])
