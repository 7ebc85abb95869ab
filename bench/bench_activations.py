"""Each built-in activation's infinite-width kernels against independent computations.

Mostly not a speed benchmark: it measures how close ``fastsd.activations``' kernels are to
(1) the tangent kernel of finite networks of width m = 1k, 4k, 16k, 64k, sampled (hidden units
sigma(sqrt(m) w.x) / sqrt(m), sqrt(m) w ~ N(0, I), readout a ~ N(0, 1/m)): the relative error
should fall like m^-1/2; (2) neural-tangents' kernels for the same activation where it has one
(`pip install neural-tangents` with a JAX it supports, e.g. neural-tangents 0.6.5, jax and
jaxlib 0.4.30, tf2jax 0.3.6; skipped without it); (3) a direct
two-dimensional integration (scipy's dblquad over the Gaussian pair's density, quadrant by
quadrant) at a few entries; (4) the time of the kernels without a closed form by Mehler's
series against two-dimensional quadrature. Inputs: same-different pairs x = (z1; z2) of symbols
z ~ N(0, I/d), half of them "same", as the task draws them (|x|^2 near 2).

    python bench/bench_activations.py            # d = 64, 48 inputs, 4 seeds a width
    python bench/bench_activations.py --quick    # fewer inputs, seeds and widths
"""
import argparse
import math

import numpy as np

from fastsd.activations import ACTIVATIONS


def pairs(d, n, seed):
    """n same-different inputs (2d,), half of them same."""
    rng = np.random.default_rng(seed)
    z1 = rng.standard_normal((n, d)) / math.sqrt(d)
    z2 = rng.standard_normal((n, d)) / math.sqrt(d)
    z2[: n // 2] = z1[: n // 2]
    return np.hstack([z1, z2])


def sampled_ntk(act, X, m, seed, block=8192):
    """The tangent kernel of one width-m network at its initialization (both layers)."""
    rng = np.random.default_rng(seed)
    out = np.zeros((X.shape[0], X.shape[0]))
    dots = X @ X.T
    for s in range(0, m, block):
        k = min(block, m - s)
        W, a = rng.standard_normal((k, X.shape[1])), rng.standard_normal(k)
        U = X @ W.T
        S, D = act(U), act.derivative(U)
        out += S @ S.T + dots * ((D * a * a) @ D.T)
    return out / m


def finite_width(X, widths, seeds):
    print("\n(1) finite networks' tangent kernels against the limit: relative Frobenius error, "
          f"mean of {seeds} networks")
    print(f"{'activation':>11} " + " ".join(f"{'m=' + str(m):>10}" for m in widths)
          + f"  {'slope':>6}")
    for name, act in ACTIVATIONS.items():
        limit = act.ntk(X, X)
        errs = [np.mean([np.linalg.norm(sampled_ntk(act, X, m, 100 * s + 1) - limit)
                         / np.linalg.norm(limit) for s in range(seeds)]) for m in widths]
        slope = np.polyfit(np.log(widths), np.log(errs), 1)[0]
        print(f"{name:>11} " + " ".join(f"{e:10.2e}" for e in errs) + f"  {slope:6.2f}")


def neural_tangents(X):
    print("\n(2) against neural-tangents (Dense(W_std = sqrt(p)), activation, Dense(W_std = 1), "
          "NTK parameterization): max |difference|")
    try:
        import jax
        from neural_tangents import stax
    except Exception as exc:              # not installed, or a JAX it does not support
        print(f"    skipped: neural-tangents is not importable here ({exc!r:.120})")
        return
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    layers = {"relu": stax.Relu(), "leaky_relu": stax.LeakyRelu(0.01), "abs": stax.Abs(),
              "erf": stax.Erf(a=1.0, b=1.0, c=0.0), "gelu": stax.Gelu(approximate=False)}
    numerical = {"tanh": jnp.tanh, "sigmoid": jax.nn.sigmoid, "softplus": jax.nn.softplus}
    p = X.shape[1]
    norms = np.sqrt((X * X).sum(1))
    apart = np.abs(X @ X.T / np.outer(norms, norms)) < 0.999     # not x with itself or its twin
    print(f"{'activation':>11} {'NT layer':>26} {'nngp':>10} {'ntk':>10} {'ntk, rho<.999':>14}")
    for name, act in ACTIVATIONS.items():
        if name in layers:
            layer, what = layers[name], "closed form"
        else:
            layer, what = stax.ElementwiseNumerical(numerical[name], deg=256), \
                "ElementwiseNumerical(256)"
        _, _, kernel_fn = stax.serial(stax.Dense(1, W_std=math.sqrt(p)), layer,
                                      stax.Dense(1, W_std=1.0))
        k = kernel_fn(jnp.asarray(X), None, ("nngp", "ntk"))
        _, k1, ntk = act.kernels(X, X)
        gap = np.abs(np.asarray(k.ntk) - ntk)
        print(f"{name:>11} {what:>26} {np.abs(np.asarray(k.nngp) - k1).max():10.1e} "
              f"{gap.max():10.1e} {gap[apart].max():14.1e}")


def direct(X, entries):
    from scipy import integrate

    print(f"\n(3) against dblquad at {entries} entries: max |difference| of k0 and k1")
    rows = [(i, j) for i, j in zip(range(entries), range(1, entries + 1))]
    dot = np.array([X[i] @ X[j] for i, j in rows])
    nx2 = np.array([X[i] @ X[i] for i, _ in rows])
    ny2 = np.array([X[j] @ X[j] for _, j in rows])
    for name, act in ACTIVATIONS.items():
        k0, k1 = act.kernels_from_gram(dot, nx2, ny2)
        worst = 0.0
        for e in range(len(rows)):
            inv = np.linalg.inv([[nx2[e], dot[e]], [dot[e], ny2[e]]])
            norm = 2 * math.pi * math.sqrt(nx2[e] * ny2[e] - dot[e] ** 2)
            for f, got in ((act.derivative, k0[e]), (act, k1[e])):
                def g(v, u):
                    q = inv[0, 0] * u * u + 2 * inv[0, 1] * u * v + inv[1, 1] * v * v
                    return float(f(np.float64(u))) * float(f(np.float64(v))) \
                        * math.exp(-0.5 * q) / norm
                bu, bv = 12 * math.sqrt(nx2[e]), 12 * math.sqrt(ny2[e])
                want = sum(integrate.dblquad(g, lu, hu, lv, hv, epsabs=1e-12, epsrel=1e-11)[0]
                           for lu, hu in ((-bu, 0.0), (0.0, bu))
                           for lv, hv in ((-bv, 0.0), (0.0, bv)))
                worst = max(worst, abs(got - want))
        print(f"{name:>11} {worst:10.1e}")


def series_time(X, repeats=3):
    import time

    from fastsd.activations import gauss_hermite, hermite_series

    dot, n2 = X @ X.T, (X * X).sum(1)
    print(f"\n(4) the {len(X)} x {len(X)} kernels without a closed form: Mehler's series "
          f"(kernels_from_gram) against two-dimensional quadrature, best of {repeats}; max "
          f"|difference| off the diagonal (on it the series takes a one-dimensional sum)")
    print(f"{'activation':>11} {'series s':>9} {'quad s':>8} {'speed-up':>8} {'max diff':>9}")
    off = ~np.eye(len(X), dtype=bool)
    for name, act in ACTIVATIONS.items():
        if act.closed is not None:
            continue
        times = {}
        for key, f in (("series", hermite_series), ("quad", gauss_hermite)):
            best = float("inf")
            for _ in range(repeats):
                start = time.perf_counter()
                got = f(act, dot, n2[:, None], n2[None, :])
                best = min(best, time.perf_counter() - start)
            times[key] = (best, got)
        diff = max(float(np.abs(a - b)[off].max()) for a, b in zip(times["series"][1],
                                                                   times["quad"][1]))
        print(f"{name:>11} {times['series'][0]:9.3f} {times['quad'][0]:8.3f} "
              f"{times['quad'][0] / times['series'][0]:8.1f} {diff:9.1e}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer inputs, seeds and widths")
    parser.add_argument("--d", type=int, default=64, help="symbol dimension (default 64)")
    args = parser.parse_args(argv)
    n, seeds = (16, 2) if args.quick else (48, 4)
    widths = (1024, 4096, 16384) if args.quick else (1024, 4096, 16384, 65536)
    X = pairs(args.d, n, 0)
    print(f"inputs: {n} same-different pairs, d = {args.d}, |x|^2 in "
          f"[{(X * X).sum(1).min():.2f}, {(X * X).sum(1).max():.2f}]")
    finite_width(X, widths, seeds)
    neural_tangents(X)
    direct(X, 2 if args.quick else 4)
    series_time(X)


if __name__ == "__main__":
    main()
