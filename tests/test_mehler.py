"""The Hermite series' compiled parts (fastsd._mehler): the sums against the whole series summed
in NumPy, and each entry's value its own (not the call's, the blocks', the table's history)."""
import numpy as np
import pytest

from fastsd import _mehler
from fastsd.activations import (ACTIVATIONS, QUADRATURE_POINTS, SERIES_TERMS, SERIES_TOL,
                                _adaptive_coefficients, _hermite_nodes, hermite_series)

SERIES = [name for name, act in ACTIVATIONS.items() if act.closed is None]


def _pairs(seed, n, d=16):
    """Pair inputs (z1; z2) of fresh and repeated symbols: rho near 0, near 0.5 and 1."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, d)) / np.sqrt(d)
    X = np.concatenate([Z[rng.integers(0, n, n)], Z[rng.integers(0, n, n)]], axis=1)
    X[: n // 4, d:] = X[: n // 4, :d]           # same pairs
    return X


@pytest.mark.parametrize("name", SERIES)
def test_the_early_stopped_sums_are_the_whole_series_to_rounding(name):
    act = ACTIVATIONS[name]
    X = _pairs(0, 40)
    table = act.series_table()
    nx = np.sqrt(np.einsum("ij,ij->i", X, X))
    ir, = table.rows(nx)
    dot = X @ X.T
    k0, k1, state = table.entries(dot, ir[:, None], ir[None, :], SERIES_TOL)
    # the whole series in NumPy, by Horner's rule from the last term
    rho = np.clip(dot / np.outer(nx, nx), -1.0, 1.0)
    whole = []
    for C in (table.C0, table.C1):
        k = np.zeros_like(rho)
        for n in range(SERIES_TERMS, -1, -1):
            k = k * rho + np.outer(C[ir, n], C[ir, n])
        whole.append(k)
    summed = state == _mehler.SUMMED
    scale = 1.0 + np.outer(nx, nx)
    assert summed.sum() > 0.5 * summed.size
    for got, want in zip((k0, k1), whole):
        assert np.max(np.abs(got - want)[summed] / scale[summed]) < 1e-14
    # the diagonal is collinear: left to the one-dimensional sum
    assert (np.diag(state) == _mehler.COLLINEAR).all()


@pytest.mark.parametrize("name", ["tanh", "gelu"])
def test_an_entry_is_its_own_whatever_the_call_blocks_and_table(name):
    act = ACTIVATIONS[name]
    X, Y = _pairs(1, 30), _pairs(2, 20)
    dot = X @ Y.T
    nx2, ny2 = np.sum(X * X, 1)[:, None], np.sum(Y * Y, 1)[None, :]
    whole = hermite_series(act, dot, nx2, ny2)
    by_rows = [hermite_series(act, dot[i:i + 1], nx2[i:i + 1], ny2) for i in range(len(X))]
    by_columns = [hermite_series(act, dot[:, j], nx2[:, 0], ny2[0, j]) for j in range(len(Y))]
    warm = act.series_table()
    hermite_series(act, X @ X.T, nx2, nx2.T, table=warm)    # the table holds other norms first
    warmed = hermite_series(act, dot, nx2, ny2, table=warm)
    for k in range(2):
        assert np.array_equal(whole[k], np.concatenate([r[k] for r in by_rows]))
        assert np.array_equal(whole[k], np.stack([c[k] for c in by_columns], axis=1))
        assert np.array_equal(whole[k], warmed[k])


def test_a_norms_coefficients_are_its_own_when_another_needs_more_nodes():
    act = ACTIVATIONS["tanh"]
    small, large = np.array([0.9]), np.array([0.9, np.sqrt(20.0)])
    alone = _adaptive_coefficients(act, act, small, SERIES_TERMS, QUADRATURE_POINTS)
    together = _adaptive_coefficients(act, act, large, SERIES_TERMS, QUADRATURE_POINTS)
    assert np.array_equal(alone[0][0], together[0][0])
    assert np.array_equal(alone[1][0], together[1][0])


def test_the_projection_is_the_hermite_sums():
    z, w, HT = _hermite_nodes(64, 6)
    values = np.tanh(np.outer([0.5, 1.5], z))
    coef, square = np.empty((2, 7)), np.empty(2)
    _mehler.project(values, w, HT, coef, square)
    assert np.allclose(coef, (values * w) @ HT, rtol=0, atol=1e-15)
    assert np.allclose(square, (values ** 2) @ w, rtol=0, atol=1e-15)
    # h_0 .. h_6 are orthonormal under the nodes' weights
    assert np.allclose(HT.T @ (HT * w[:, None]), np.eye(7), atol=1e-12)
