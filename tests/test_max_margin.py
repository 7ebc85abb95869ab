"""Theorem 1 / App. C.1: the max-margin matrix, its eigenvectors and its limit."""
import numpy as np
import pytest

from fastsd import SameDifferent, theory


def test_ideal_matrix_has_parallel_top_and_antiparallel_bottom_eigenvectors():
    d = 5
    ideal = theory.max_margin_ideal(d)
    vals, vecs = np.linalg.eigh(ideal)
    np.testing.assert_allclose(vals[:d], -1 / (2 * d))
    np.testing.assert_allclose(vals[d:], 1 / (2 * d))
    np.testing.assert_allclose(vecs[:d, d:], vecs[d:, d:], atol=1e-12)     # (v; v)
    np.testing.assert_allclose(vecs[:d, :d], -vecs[d:, :d], atol=1e-12)    # (v; -v)


def test_matrix_is_the_signed_average_of_outer_products():
    task = SameDifferent(d=3, L=4, seed=2)
    r = theory.max_margin(task, 10, seed=5)
    x, y = task.sample_train(10, seed=5)
    want = sum((1 if yi > 0.5 else -1) * np.outer(xi, xi) for xi, yi in zip(x, y)) / 10
    np.testing.assert_allclose(r["matrix"], want, rtol=1e-12, atol=1e-15)
    vals = np.linalg.eigvalsh(want)
    assert r["top"]["eigenvalue"] == pytest.approx(vals[-1])
    assert r["bottom"]["eigenvalue"] == pytest.approx(vals[0])


def test_alignment_at_L256_d32():
    r = theory.max_margin(SameDifferent(d=32, L=256, seed=0), 4096, seed=1)
    assert r["top"]["alignment"] > 0.95
    assert r["bottom"]["alignment"] < -0.95
    assert r["top"]["norm_ratio"] == pytest.approx(1.0, abs=0.1)


def test_distance_to_ideal_shrinks_as_P_and_L_grow():
    dist = [theory.max_margin(SameDifferent(d=8, L=L, seed=0), P, seed=1)["relative_distance"]
            for L, P in ((16, 64), (256, 2048), (4096, 65536))]
    assert dist[0] > dist[1] > dist[2]
    assert dist[2] < 0.1


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"`n_pairs` must be an integer >= 2; got 1"):
        theory.max_margin(SameDifferent(d=2, L=2, seed=0), 1)
    with pytest.raises(ValueError, match=r"`d` must be an integer >= 1; got 0"):
        theory.max_margin_ideal(0)
