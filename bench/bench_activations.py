"""Each built-in activation's infinite-width kernels against independent computations.

Mostly not a speed benchmark: it measures how close ``fastsd.activations``' kernels are to
(1) the tangent kernel of finite networks of width m = 1k, 4k, 16k, 64k
(``fastsd.kernels.empirical_ntk(X, X, m, seed, activation=name)``: hidden units
sigma(sqrt(m) w.x) / sqrt(m), w ~ N(0, I/m), readout a ~ N(0, 1/m)), whose relative
Frobenius error should fall like m^-1/2 (the fitted slope of log error on log m, about -0.5);
(2) neural-tangents' kernels for the same activation where it has one, elsewhere its
``ElementwiseNumerical`` quadrature of the exact function (skipped with a note without
neural-tangents); (3) a direct two-dimensional integration (scipy's dblquad over the Gaussian
pair's density, quadrant by quadrant) at a few entries off the diagonal, and a
one-dimensional one (scipy's quad) on it, where the pair is degenerate; (4) the time of the
kernels without a closed form by Mehler's series against two-dimensional quadrature.
Inputs: same-different pairs x = (z1; z2) of symbols z ~ N(0, I/d), half of them "same", as
the task draws them (|x|^2 near 2).

Conventions, (2): fastsd's kernels are k1(x, y) = E[sigma(w.x) sigma(w.y)] and
k0 = E[sigma'(w.x) sigma'(w.y)] over w ~ N(0, I), ntk = (x.y) k0 + k1. neural-tangents'
``Dense(n, W_std, b_std=None)`` in its default NTK parameterization is
h = (W_std / sqrt(fan_in)) W x with W ~ N(0, 1) entries and no bias, and contributes
W_std^2 / fan_in (x.y) to the tangent kernel; so the network
``serial(Dense(1, W_std=sqrt(p)), activation, Dense(1, W_std=1))`` on inputs of length p
has u = w.x with w ~ N(0, I), nngp = k1 and ntk = (x.y) k0 + k1 exactly (the same as
``W_std=1`` on inputs scaled by sqrt(p)). Layers: ``Relu()``, ``LeakyRelu(0.01)``,
``Abs()``, ``Erf(a=1, b=1, c=0)`` and ``Gelu(approximate=False)`` in closed form; tanh,
sigmoid and softplus by ``ElementwiseNumerical(fn, deg=512)`` (Gauss-Hermite quadrature of
``jnp.tanh``, ``jax.nn.sigmoid``, ``jax.nn.softplus``, derivatives by JAX autodiff): NT has
no closed form for them (its ``Sigmoid_like`` is the erf approximation
1/2 (1 + erf(x / 2.4020)), another function, so it is not used). JAX in float64
(``jax_enable_x64``).

neural-tangents is not a fastsd dependency; run this with an interpreter that has it and
fastsd, e.g. (what worked, on Python 3.11)::

    python3 -m venv /tmp/ntvenv
    /tmp/ntvenv/bin/pip install neural-tangents==0.6.5 "jax[cpu]==0.4.30" jaxlib==0.4.30 \
        tf2jax==0.3.6 numpy scipy numba threadpoolctl
    PYTHONPATH=$PWD /tmp/ntvenv/bin/python bench/bench_activations.py

(neural-tangents 0.6.5 with a current JAX or tf2jax >= 0.3.8 fails to import.)

    python bench/bench_activations.py            # d = 64, 48 inputs, 4 seeds a width
    python bench/bench_activations.py --quick    # fewer inputs, seeds and widths

Output: the tables on stdout, and one JSON line (every number printed, the versions and the
machine) appended to ``bench/out/bench_activations.jsonl`` (``--out`` to change).
"""
import argparse
import datetime
import json
import math
import os
import sys
import uuid
import warnings

import numpy as np

from bench_train import OUT_DIR, machine_info
from fastsd.activations import ACTIVATIONS
from fastsd.kernels import empirical_ntk

#: ElementwiseNumerical's Gauss-Hermite degree for the activations neural-tangents has no
#: closed form for (deg = 256 leaves tanh's ntk(x, x) 5e-10 off a one-dimensional quad).
NT_DEG = 512


def pairs(d, n, seed):
    """n same-different inputs (2d,), half of them same."""
    rng = np.random.default_rng(seed)
    z1 = rng.standard_normal((n, d)) / math.sqrt(d)
    z2 = rng.standard_normal((n, d)) / math.sqrt(d)
    z2[: n // 2] = z1[: n // 2]
    return np.hstack([z1, z2])


def finite_width(X, widths, seeds):
    print("\n(1) finite networks' tangent kernels (fastsd.kernels.empirical_ntk) against the "
          f"limit (Activation.ntk): relative Frobenius error, mean of {seeds} networks")
    print(f"{'activation':>11} " + " ".join(f"{'m=' + str(m):>10}" for m in widths)
          + f"  {'slope':>6}")
    out = {}
    for name, act in ACTIVATIONS.items():
        limit = act.ntk(X, X)
        errs = [float(np.mean([np.linalg.norm(empirical_ntk(X, X, m, seed=100 * s + 1,
                                                            activation=name) - limit)
                               / np.linalg.norm(limit) for s in range(seeds)]))
                for m in widths]
        slope = float(np.polyfit(np.log(widths), np.log(errs), 1)[0])
        out[name] = {"widths": list(widths), "rel_error": errs, "slope": slope}
        print(f"{name:>11} " + " ".join(f"{e:10.2e}" for e in errs) + f"  {slope:6.2f}")
    return out


def neural_tangents(X):
    print("\n(2) against neural-tangents: serial(Dense(1, W_std = sqrt(p)), activation, "
          "Dense(1, W_std = 1)), NTK parameterization, no biases, float64")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")     # tf2jax imports TensorFlow
    try:
        import jax
        import neural_tangents
        from neural_tangents import stax
    except Exception as exc:              # not installed, or a JAX it does not support
        print(f"    skipped: neural-tangents is not importable here ({exc!r:.120})")
        return None
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    print(f"    neural-tangents {neural_tangents.__version__}, jax {jax.__version__}; "
          "max |difference| (nngp, ntk), over all entries and over pairs with |rho| < 0.999; "
          "rel = max |difference| / max |NT's ntk|")
    layers = {"relu": stax.Relu(), "leaky_relu": stax.LeakyRelu(0.01), "abs": stax.Abs(),
              "erf": stax.Erf(a=1.0, b=1.0, c=0.0), "gelu": stax.Gelu(approximate=False)}
    numerical = {"tanh": jnp.tanh, "sigmoid": jax.nn.sigmoid, "softplus": jax.nn.softplus}
    p = X.shape[1]
    norms = np.sqrt((X * X).sum(1))
    apart = np.abs(X @ X.T / np.outer(norms, norms)) < 0.999     # not x with itself or its twin
    print(f"{'activation':>11} {'NT layer':>26} {'nngp':>10} {'ntk':>10} {'ntk, rho<.999':>14} "
          f"{'rel ntk':>10}")
    out = {}
    for name, act in ACTIVATIONS.items():
        if name in layers:
            layer, what = layers[name], "closed form"
        elif name in numerical:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                layer = stax.ElementwiseNumerical(numerical[name], deg=NT_DEG)
            what = f"ElementwiseNumerical({NT_DEG})"
        else:
            print(f"{name:>11} {'(none)':>26}")
            continue
        # ElementwiseNumerical holds deg^2 values an entry (several arrays of them): blocks of
        # rows of at most 2^24 / deg^2 entries (the whole 48 x 48 at once ran out of 23 GB)
        step = len(X) if name in layers else max(1, (1 << 24) // (len(X) * NT_DEG ** 2))
        nt_nngp, nt_ntk = np.empty((len(X), len(X))), np.empty((len(X), len(X)))
        with warnings.catch_warnings():          # ElementwiseNumerical's notes on deg, autodiff
            warnings.simplefilter("ignore", UserWarning)
            _, _, kernel_fn = stax.serial(stax.Dense(1, W_std=math.sqrt(p)), layer,
                                          stax.Dense(1, W_std=1.0))
            for s in range(0, len(X), step):
                k = kernel_fn(jnp.asarray(X[s:s + step]), jnp.asarray(X), ("nngp", "ntk"))
                nt_nngp[s:s + step], nt_ntk[s:s + step] = np.asarray(k.nngp), np.asarray(k.ntk)
        _, k1, ntk = act.kernels(X, X)
        gap = np.abs(nt_ntk - ntk)
        row = {"layer": what, "nngp": float(np.abs(nt_nngp - k1).max()),
               "ntk": float(gap.max()), "ntk_apart": float(gap[apart].max()),
               "ntk_rel": float(gap.max() / np.abs(nt_ntk).max())}
        out[name] = row
        print(f"{name:>11} {what:>26} {row['nngp']:10.1e} {row['ntk']:10.1e} "
              f"{row['ntk_apart']:14.1e} {row['ntk_rel']:10.1e}")
    return out


def direct(X, entries):
    from scipy import integrate

    print(f"\n(3) against dblquad at {entries} entries off the diagonal and quad at {entries} "
          "on it (rho = 1): max |difference| of k0 and k1")
    print(f"{'activation':>11} {'dblquad':>10} {'quad, x=y':>10}")
    rows = [(i, j) for i, j in zip(range(entries), range(1, entries + 1))]
    dot = np.array([X[i] @ X[j] for i, j in rows])
    nx2 = np.array([X[i] @ X[i] for i, _ in rows])
    ny2 = np.array([X[j] @ X[j] for _, j in rows])
    out = {}
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
        # on the diagonal u = v: E[f(|x| z)^2], z ~ N(0, 1), each half-line on its own
        d0, d1 = act.kernels_from_gram(nx2, nx2, nx2)
        diagonal = 0.0
        for e in range(len(rows)):
            s = math.sqrt(nx2[e])
            for f, got in ((act.derivative, d0[e]), (act, d1[e])):
                def h(z):
                    return float(f(np.float64(s * z))) ** 2 * math.exp(-0.5 * z * z) \
                        / math.sqrt(2 * math.pi)
                want = sum(integrate.quad(h, lo, hi, epsabs=1e-14, epsrel=1e-13, limit=200)[0]
                           for lo, hi in ((-12.0, 0.0), (0.0, 12.0)))
                diagonal = max(diagonal, abs(got - want))
        out[name] = {"dblquad": worst, "quad_diagonal": diagonal}
        print(f"{name:>11} {worst:10.1e} {diagonal:10.1e}")
    return out


def series_time(X, repeats=3):
    import time

    from fastsd.activations import gauss_hermite, hermite_series

    dot, n2 = X @ X.T, (X * X).sum(1)
    print(f"\n(4) the {len(X)} x {len(X)} kernels without a closed form: Mehler's series "
          f"(kernels_from_gram) against two-dimensional quadrature, best of {repeats}; max "
          f"|difference| off the diagonal (on it the series takes a one-dimensional sum)")
    print(f"{'activation':>11} {'series s':>9} {'quad s':>8} {'speed-up':>8} {'max diff':>9}")
    off = ~np.eye(len(X), dtype=bool)
    out = {}
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
        out[name] = {"series_s": times["series"][0], "quad_s": times["quad"][0],
                     "max_diff": diff}
        print(f"{name:>11} {times['series'][0]:9.3f} {times['quad'][0]:8.3f} "
              f"{times['quad'][0] / times['series'][0]:8.1f} {diff:9.1e}")
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer inputs, seeds and widths")
    parser.add_argument("--d", type=int, default=64, help="symbol dimension (default 64)")
    parser.add_argument("--out", default=os.path.join(OUT_DIR, "bench_activations.jsonl"),
                        help="JSON lines file to append the run to")
    args = parser.parse_args(argv)
    n, seeds = (16, 2) if args.quick else (48, 4)
    widths = (1024, 4096, 16384) if args.quick else (1024, 4096, 16384, 65536)
    X = pairs(args.d, n, 0)
    print(f"python {sys.executable}, numpy {np.__version__}")
    print(f"inputs: {n} same-different pairs, d = {args.d}, |x|^2 in "
          f"[{(X * X).sum(1).min():.2f}, {(X * X).sum(1).max():.2f}]")
    row = {"run": uuid.uuid4().hex[:8], "date": datetime.datetime.now(datetime.UTC)
           .isoformat(timespec="seconds"), "quick": args.quick, "d": args.d, "inputs": n,
           "seeds": seeds}
    row["finite_width"] = finite_width(X, widths, seeds)
    row["neural_tangents"] = neural_tangents(X)
    row["direct"] = direct(X, 2 if args.quick else 4)
    row["series_time"] = series_time(X)
    row["machine"] = machine_info()
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "a") as fh:
        fh.write(json.dumps(row) + "\n")
    print(f"appended 1 line to {args.out}")


if __name__ == "__main__":
    main()
