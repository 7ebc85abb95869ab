"""solver="kron": the all-pairs kernel as a sum of Kronecker products, against the dense kernel.

- the structured operator (products, rows, diagonal) against the exact P x P
  kernel the dense solver stores, within the error bound it records, at
  L = 4..24 and d = 3, 8, 32 (float64), and for drawn symbols with varied
  norms, duplicates and near-collinear pairs (hypothesis);
- the recorded bound is honest (true error <= bound), also when it is
  estimated from sampled rows, and a tighter target is met on request;
- logistic_flow, logistic_sgd and regression with solver="kron" give the test
  logits of solver="dense" to 1e-6 relative and the same accuracies, also
  with the test logits from cross approximations of the test pairs' blocks;
- those blocks against their exact entries, fresh pairs and training pairs
  (whose blocks hold a kink) alike;
- the record (terms, bound, bytes, products), "auto"'s choice and the errors.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastsd import SameDifferent
from fastsd.kernels import SolveTooLargeError, lazy_limit
from fastsd.kernels.backend import KERNELS
from fastsd.kernels.dynamics import POWER_ITERS
from fastsd.kernels import kron as kron_module
from fastsd.kernels.kron import DEFAULT_RTOL, KronSolver, cross_logits, factorise
from fastsd.kernels.pairs import Logits, PairKernel, choose_pairs
from fastsd.kernels.solvers import SolveSize, choose_solver


def pair_kernel(S, backend="numpy", pairs="all", kind="ntk"):
    _, ops = KERNELS.load(backend)
    u, v, _ = choose_pairs(len(S), pairs, 0)
    return PairKernel(ops, np.asarray(S, np.float64), u, v, kind)


def kron(kernel, kernel_tol=None, max_bytes=1 << 40):
    L = kernel.G.shape[0]
    return KronSolver(kernel, SolveSize(P=L * L, L=L, all_pairs=True, max_bytes=max_bytes,
                                        kernel_tol=kernel_tol))


def relative_error(op, K):
    """||K~ - K||_F / ||K||_F with K~ formed column by column from products."""
    Kh = op @ np.eye(len(K))
    return np.linalg.norm(Kh - K) / np.linalg.norm(K), Kh


@pytest.mark.parametrize("d", [3, 8, 32])
@pytest.mark.parametrize("L", [4, 9, 16, 24])
def test_products_rows_and_diagonal_match_the_dense_kernel_within_the_bound(L, d):
    task = SameDifferent(d=d, L=L, seed=10 * L + d)
    kernel = pair_kernel(task.symbols, "cpu")
    K = kernel.matrix()
    op = kron(kernel)
    rec = op.record()
    err, Kh = relative_error(op, K)
    assert err <= rec["kron_error_bound"] <= DEFAULT_RTOL
    assert rec["kron_error_exact"] == (L * L <= 256)
    # the diagonal (the arc-cosine kernel's kink, x = x') is exact: |x|^2
    np.testing.assert_allclose(np.diag(Kh), np.diag(K), rtol=1e-13, atol=0)
    # products with a block of vectors: ||(K~ - K) V|| <= e ||K||_F ||V||_F
    V = np.random.default_rng(L).standard_normal((L * L, 3))
    gap = np.linalg.norm(op @ V - K @ V)
    assert gap <= rec["kron_error_bound"] * np.linalg.norm(K) * np.linalg.norm(V)
    idx = np.array([0, L + 1, L * L - 1, 3])
    np.testing.assert_allclose(op.rows(idx), Kh[idx], rtol=0, atol=1e-13 * np.abs(K).max())
    assert rec["kernel_bytes"] == 16 * rec["kron_terms"] * L * L + 8 * L * L
    # a few terms stand for the L^2 x L^2 rearrangement at d >= 8
    assert rec["kron_terms"] <= L * L and (d < 8 or L < 16 or rec["kron_terms"] < L * L / 2)


def test_the_bound_from_sampled_rows_is_honest_and_a_tighter_target_is_met():
    task = SameDifferent(d=16, L=24, seed=3)
    kernel = pair_kernel(task.symbols)
    K = kernel.matrix()
    default = kron(kernel)
    tight = kron(kernel, kernel_tol=1e-12)
    for op, target in ((default, DEFAULT_RTOL), (tight, 1e-12)):
        rec = op.record()
        assert rec["kron_error_exact"] is False and rec["kron_error_probed_rows"] == 256
        err, _ = relative_error(op, K)
        assert err <= rec["kron_error_bound"] <= target, (err, rec)
        assert rec["kron_error_estimate"] <= rec["kron_error_bound"]
    assert tight.record()["kron_terms"] > default.record()["kron_terms"]
    # few probes: a wider confidence limit, still above the true error
    few = factorise(kernel, 1e-8, cap=576, probes=16, seed=1)
    Kh = np.stack([few.apply(e) for e in np.eye(576)], axis=1)
    err = np.linalg.norm(Kh - K) / np.linalg.norm(K)
    assert err <= few.info["kron_error_bound"] <= 1e-8


def _symbols(draw):
    L = draw(st.integers(3, 12))
    d = draw(st.integers(2, 40))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    S = rng.standard_normal((L, d)) / np.sqrt(d)
    S *= np.exp(rng.uniform(-1.5, 1.5, size=(L, 1)))           # varied norms
    kind = draw(st.sampled_from(["plain", "duplicate", "collinear", "near"]))
    a, b = rng.choice(L, size=2, replace=False)
    if kind == "duplicate":
        S[b] = S[a]
    elif kind == "collinear":                                   # same direction, other norm
        S[b] = draw(st.sampled_from([0.5, 2.0, 3.0])) * S[a]
    elif kind == "near":
        S[b] = S[a] + draw(st.sampled_from([1e-3, 1e-6, 1e-9])) * rng.standard_normal(d)
    return S


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_drawn_symbols_with_duplicates_and_near_collinear_pairs(data):
    S = _symbols(data.draw)
    kernel = pair_kernel(S, kind=data.draw(st.sampled_from(["ntk", "nngp"])))
    K = kernel.matrix()
    op = kron(kernel)
    rec = op.record()
    err, Kh = relative_error(op, K)
    assert rec["kron_error_exact"]                              # L^2 <= 144 rows: all probed
    assert err <= rec["kron_error_bound"] <= DEFAULT_RTOL
    np.testing.assert_allclose(np.diag(Kh), np.diag(K), rtol=1e-13, atol=0)
    c = np.random.default_rng(0).standard_normal(len(K))
    assert np.linalg.norm(op @ c - K @ c) <= rec["kron_error_bound"] * np.linalg.norm(K) * \
        np.linalg.norm(c)


@pytest.mark.parametrize("kind", ["one-hot", "orthonormal", "duplicates", "zero-padded"])
def test_an_exactly_low_rank_kernel_ends_after_a_few_rows_and_meets_its_bound(kind):
    """One-hot, orthonormal and repeated symbols give a rearranged kernel of exact low
    rank, so every row after the first terms has a zero (or rounding-level) residual;
    the cross approximation used to walk all L^2 rows of it (L = 64: 4354 exact rows)."""
    L = 48
    rng = np.random.default_rng(7)
    if kind == "one-hot":
        S = np.eye(L)
    elif kind == "orthonormal":
        S = np.linalg.qr(rng.standard_normal((L, L)))[0]
    elif kind == "duplicates":                      # 6 distinct symbols, each 8 times
        S = np.repeat(rng.standard_normal((6, 16)) / 4.0, 8, axis=0)
    else:                                           # one-hot in d = 3 L, rows scaled
        S = np.hstack([np.eye(L), np.zeros((L, 2 * L))]) * 1.5
    kernel = pair_kernel(S, "cpu")
    op = kron(kernel)
    rec = op.record()
    assert rec["kron_build_rows"] < L * L / 2, rec        # the walk took L^2 + 2 terms + probes
    K = kernel.matrix()
    err, Kh = relative_error(op, K)
    assert err <= rec["kron_error_bound"] <= DEFAULT_RTOL
    np.testing.assert_allclose(np.diag(Kh), np.diag(K), rtol=1e-13, atol=0)


@pytest.mark.parametrize("d, L, kernel", [(8, 12, "ntk"), (32, 16, "ntk"), (32, 16, "nngp")])
@pytest.mark.parametrize("method", ["logistic_flow", "logistic_sgd", "regression"])
def test_lazy_limit_with_kron_gives_the_dense_logits_and_accuracies(method, d, L, kernel):
    task = SameDifferent(d=d, L=L, seed=d + L)
    xt, _ = task.sample_test(100, seed=1)
    kw = dict(test_x=xt, n_test=256, seed=3, backend="cpu", kernel=kernel)
    if method == "logistic_sgd":
        kw.update(steps=2000, eval_every=500)
    elif method == "regression":
        kw.update(tol=1e-12)
    dense = lazy_limit(task, method, solver="dense", **kw)
    structured = lazy_limit(task, method, solver="kron", **kw)
    assert structured.solver == "kron"
    scale = np.max(np.abs(dense.predictions))
    assert np.max(np.abs(structured.predictions - dense.predictions)) <= 1e-6 * scale
    assert structured.test_accuracy == dense.test_accuracy
    assert structured.history.get("test_accuracy") == dense.history.get("test_accuracy")
    info = structured.solver_info
    assert info["kron_error_bound"] <= DEFAULT_RTOL and info["kron_terms"] >= 1
    if method == "logistic_flow":
        # two power iterations, the logits at c = 0, then 4 products a step (the 4th at the
        # step's end: the next step's start, and the logits of the loss)
        assert info["kron_products"] == info["flow_products"]
        assert info["flow_products"] == 2 * POWER_ITERS + 1 + 4 * info["flow_steps"]
    if method == "logistic_sgd":
        assert info["kron_rows"] == 2000 * 128
    if method == "regression":
        assert info["kron_products"] == info["cg_iterations"]


@pytest.mark.parametrize("d, L", [(3, 20), (8, 30), (32, 24), (256, 40)])
def test_test_blocks_by_cross_approximation_match_their_exact_entries(d, L):
    task = SameDifferent(d=d, L=L, seed=d * L)
    kernel = pair_kernel(task.symbols, "cpu")
    x, _ = task.sample_test(24, seed=2)
    u, v = kernel.u[:: L + 3], kernel.v[:: L + 3]
    x = np.vstack([x, np.hstack([task.symbols[u], task.symbols[v]])])   # rho = 1 in a block
    lg = Logits(kernel, x)
    exact = kernel.backend.pair_kernel(lg.T1, lg.r, lg.T2, lg.r, lg.n2, kernel.u, kernel.v,
                                       kernel.n2).reshape(len(x), L, L)
    blocks = kron_module._TestBlocks(kernel.backend, lg.T1, lg.T2, lg.n2, np.diag(kernel.G),
                                     DEFAULT_RTOL / 10)
    approx = blocks.blocks(np.arange(len(x)))
    size = np.linalg.norm(exact.reshape(len(x), -1), axis=1)
    err = np.linalg.norm((approx - exact).reshape(len(x), -1), axis=1) / size
    assert err.max() <= 10 * DEFAULT_RTOL
    c = np.random.default_rng(1).standard_normal(L * L)
    got, probed = cross_logits(kernel, x, c, probes=len(x))
    # |logit error_i| <= ||F~_i - F_i||_F ||C||_F (Cauchy-Schwarz), and the probe is exact
    gap = np.abs(got - Logits(kernel, x).logits(c))
    assert np.all(gap <= 1.01 * err * size * np.linalg.norm(c) + 1e-14 * size)
    assert probed == pytest.approx(err.max(), rel=1e-6, abs=1e-15)


def test_lazy_limit_with_structured_test_logits_gives_the_dense_ones(monkeypatch):
    monkeypatch.setattr(kron_module, "TEST_CROSS_MIN_L", 2)
    task = SameDifferent(d=32, L=16, seed=5)
    xt, _ = task.sample_test(100, seed=1)
    kw = dict(test_x=xt, n_test=256, seed=3, backend="cpu", steps=5000)
    dense = lazy_limit(task, solver="dense", **kw)
    structured = lazy_limit(task, solver="kron", **kw)
    scale = np.max(np.abs(dense.predictions))
    assert np.max(np.abs(structured.predictions - dense.predictions)) <= 1e-6 * scale
    assert structured.history["test_accuracy"] == dense.history["test_accuracy"]
    info = structured.solver_info
    assert info["kron_test_pairs"] == 5 * 256 + 100
    assert 0 < info["kron_test_block_error"] <= 10 * DEFAULT_RTOL


@pytest.mark.parametrize("method, L, d, expected", [
    ("logistic_flow", 47, 256, "dense"), ("logistic_flow", 48, 2, "kron"),
    ("regression", 63, 256, "dense"), ("regression", 64, 31, "dense"),
    ("regression", 64, 32, "kron"), ("logistic_sgd", 256, 256, "dense")])
def test_auto_prefers_kron_for_all_pairs_where_it_was_measured_faster(method, L, d, expected):
    size = SolveSize(P=L * L, L=L, all_pairs=True, max_bytes=1 << 40, method=method, d=d)
    assert choose_solver("auto", size).name == expected
    sample = SolveSize(P=L * L, L=L, all_pairs=False, max_bytes=1 << 40, method=method, d=d)
    assert choose_solver("auto", sample).name == "dense"
    # no room for AUTO_MIN_TERMS terms (nor, at these L, for the dense kernel): cg
    tight = SolveSize(P=L * L, L=L, all_pairs=True, method=method, d=d,
                      max_bytes=kron_module.AUTO_MIN_TERMS * kron_module.BYTES_PER_TERM * L * L - 1)
    assert choose_solver("auto", tight).name == "cg"


def test_auto_takes_the_flow_at_l_48_to_kron_and_its_result_follows_dense():
    task = SameDifferent(d=8, L=48, seed=0)
    kw = dict(method="logistic_flow", steps=400, n_test=64, seed=1, backend="cpu")
    auto, dense = lazy_limit(task, **kw), lazy_limit(task, solver="dense", **kw)
    assert (auto.solver, dense.solver) == ("kron", "dense")
    assert auto.history["test_accuracy"] == dense.history["test_accuracy"]


def test_auto_takes_kron_where_dense_does_not_fit():
    task = SameDifferent(d=64, L=20, seed=0)                   # P = 400: dense 1.28 MB
    kw = dict(method="regression", n_test=64, seed=1)
    assert lazy_limit(task, **kw).solver == "dense"
    assert lazy_limit(task, max_bytes=12 * 10 ** 5, **kw).solver == "kron"    # 64 terms: 819 kB
    assert lazy_limit(task, max_bytes=12 * 10 ** 5, pairs=400, **kw).solver == "cg"
    assert lazy_limit(task, max_bytes=5 * 10 ** 5, **kw).solver == "cg"  # no room for 64 terms
    big = SameDifferent(d=2, L=400, seed=0)
    with pytest.raises(SolveTooLargeError, match=r"P = 160000 training pairs .* 64 Kronecker "
                                                 r"terms need 312.5 MiB"):
        lazy_limit(big, max_bytes=1 << 20)


def test_bad_requests_fail_early_with_the_parameter_named():
    task = SameDifferent(d=3, L=6, seed=0)
    with pytest.raises(ValueError, match="`pairs` must be 'all' with solver='kron'"):
        lazy_limit(task, solver="kron", pairs=20)
    with pytest.raises(ValueError, match=r"`kernel_tol` must be a relative error in \[1e-13"):
        lazy_limit(task, solver="kron", kernel_tol=0.5)
    with pytest.raises(TypeError, match="`kernel_tol` must be a real number"):
        lazy_limit(task, solver="kron", kernel_tol="tight")
    with pytest.raises(SolveTooLargeError, match=r"needs 1152 bytes a Kronecker term .* "
                                                 r"`max_bytes` = 100 bytes"):
        lazy_limit(task, solver="kron", max_bytes=100)
    kernel = pair_kernel(task.symbols, pairs=20)
    with pytest.raises(ValueError, match="`pairs` must be 'all'"):
        kron(kernel)
    # d = 3: the rank approaches L^2; two terms are not enough for 1e-10
    with pytest.raises(SolveTooLargeError, match=r"needs more than 2 Kronecker terms .* "
                                                 r"`kernel_tol` = 1e-10"):
        factorise(pair_kernel(task.symbols), 1e-10, cap=2)



@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=st.integers(2, 64), L=st.integers(2, 12), seed=st.integers(0, 2 ** 32 - 1),
       kind=st.sampled_from(["ntk", "nngp"]),
       how=st.sampled_from(["equal", "scaled", "near", "half-equal"]),
       backend=st.sampled_from(["numpy", "cpu"]))
def test_test_logits_at_and_near_training_pairs_match_the_closed_form_on_the_vectors(
        d, L, seed, kind, how, backend):
    """A test pair equal (or collinear, or within 1e-9) to a training pair: the dot-product
    formula puts rho a rounding error from 1 and sin t ~1e-8 off; the test path refines
    those entries from the vectors as ``ntk()`` does (was 3e-8 relative per entry)."""
    from fastsd.kernels.arccos import nngp, ntk
    rng = np.random.default_rng(seed)
    S = rng.standard_normal((L, d)) / np.sqrt(d) * np.exp(rng.uniform(-1, 1, (L, 1)))
    kernel = pair_kernel(S, backend, kind=kind)
    u, v = rng.integers(L, size=20), rng.integers(L, size=20)
    x = np.concatenate([S[u], S[v]], axis=1)
    if how == "scaled":
        x *= rng.uniform(0.3, 3.0, size=(20, 1))
    elif how == "near":
        x += 1e-9 * rng.standard_normal(x.shape) / np.sqrt(d)
    elif how == "half-equal":                       # only the first item is a symbol
        x[:, d:] = rng.standard_normal((20, d)) / np.sqrt(d)
    X = np.concatenate([S[kernel.u], S[kernel.v]], axis=1)
    c = rng.standard_normal(L * L)
    want = (ntk if kind == "ntk" else nngp)(x, X) @ c
    scale = np.abs((ntk if kind == "ntk" else nngp)(x, X)).max() * np.abs(c).sum()
    got = Logits(kernel, x).logits(c)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-14 * scale)
    structured, _ = cross_logits(kernel, x, c)      # the kron solver's test path
    np.testing.assert_allclose(structured, want, rtol=0, atol=1e-9 * scale)


def test_float32_products_are_within_their_recorded_error_and_give_the_same_flow():
    """lazy_limit(dtype="float32"): factors and products in float32 (issue 28 item 5); the
    measured product error is recorded, the flow's logits stay within it of float64's."""
    task = SameDifferent(d=64, L=40, seed=2)
    xt, _ = task.sample_test(200, seed=1)
    kw = dict(test_x=xt, n_test=256, seed=3, backend="cpu", steps=3000, solver="kron")
    f64 = lazy_limit(task, **kw)
    f32 = lazy_limit(task, dtype="float32", **kw)
    i32, i64 = f32.solver_info, f64.solver_info
    assert (i32["kron_dtype"], i64["kron_dtype"]) == ("float32", "float64")
    assert "kron_product_error" not in i64
    assert 1e-9 < i32["kron_product_error"] < 1e-5
    assert i32["kernel_bytes"] - 8 * 40 ** 2 == (i64["kernel_bytes"] - 8 * 40 ** 2) // 2
    scale = np.sqrt(np.mean(f64.predictions ** 2))
    gap = np.sqrt(np.mean((f32.predictions - f64.predictions) ** 2))
    assert gap <= 100 * i32["kron_product_error"] * scale
    assert f32.history["test_accuracy"] == f64.history["test_accuracy"]
    # the same products through "auto"; the exact solvers have no float32 products
    assert lazy_limit(task, "regression", dtype="float32", n_test=64, seed=1).solver == "kron"
    # "auto" takes "kron" for float32 at any L, also where it wants room for more terms
    # than L^2 (L = 4: 16) before it prefers "kron" to "dense"
    small = lazy_limit(SameDifferent(d=3, L=4, seed=0), dtype="float32", steps=100,
                       eval_every=50, n_test=32, seed=1)
    assert small.solver == "kron" and small.solver_info["kron_dtype"] == "float32"
    with pytest.raises(SolveTooLargeError, match="solver='kron' needs .* a Kronecker term"):
        lazy_limit(task, "regression", dtype="float32", max_bytes=1000, n_test=64, seed=1)
    with pytest.raises(ValueError, match="`dtype` = 'float32' needs solver='kron'"):
        lazy_limit(task, "regression", dtype="float32", solver="dense", n_test=64, seed=1)
    # an option "kron" cannot take is a clash of options, not a size (no MemoryError)
    with pytest.raises(ValueError, match="`dtype` = 'float32' runs only on solver 'kron', "
                                         "which cannot take this problem: .*`pairs`='all'.* "
                                         "Use dtype='float64'"):
        lazy_limit(task, "regression", dtype="float32", pairs=40, n_test=64, seed=1)
    with pytest.raises(ValueError, match="`dtype` must be one of"):
        lazy_limit(task, "regression", dtype="float16", n_test=64, seed=1)
