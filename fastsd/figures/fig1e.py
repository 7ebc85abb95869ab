"""Fig. 1e: the lazy model's test accuracy over d and L, with the L ~ d^2 line (Theorem 2).

The paper uses finite networks (m = 4096, gamma = 1e-5) on d, L in 128..1024
(round(2^linspace(7, 10, 20)) for both). Here the heatmap is the exact
gamma -> 0, infinite-width network (``fastsd.kernels.lazy_limit``, logistic
flow over all L^2 ordered pairs, solver "kron" as "auto" takes it), on the
paper's grid (``paper_lattice``), with finite gamma ~ 0 networks (m = 4096) on
a few of the same cells (same symbols) to compare. ``lazy_scaling`` reads L*(d) off the
heatmap and fits L* ~ d^b with a bootstrap confidence interval. ``fastsd reproduce fig1e
--dry-run`` predicts its time on this machine (``fastsd.kernels.costs``); bench/README.md
has measured times.
"""
import numpy as np

from .._validation import check_int
from ..presets import Preset
from ..scan import Grid

HELP = "lazy limit over d x L with the L ~ d^2 line"
QUICK_WALL_TIME = "294 s"


def paper_lattice(lo, hi):
    """The paper's lattice of d and L, round(2^(7 + 3k/19)) for integers k, from lo to hi.

    Its points from 128 to 1024 are round(2^linspace(7, 10, 20)), the grid of
    Fig. 1e in the paper; k < 0 extends it below 128 at the same spacing.

    Parameters
    ----------
    lo, hi : int
        Smallest and largest value kept, 1 <= lo <= hi.

    Returns
    -------
    list of int
        Increasing, without repeats (rounding merges points below about 20).

    Raises
    ------
    ValueError
        For lo < 1 or hi < lo.
    """
    lo = check_int("lo", lo, minimum=1)
    hi = check_int("hi", hi, minimum=lo)
    ks = np.arange(np.floor(19 * (np.log2(lo) - 7) / 3), np.ceil(19 * (np.log2(hi) - 7) / 3) + 1)
    return [v for v in sorted({int(round(x)) for x in 2.0 ** (7 + 3 * ks / 19)}) if lo <= v <= hi]


#: The paper's d and L: round(2^linspace(7, 10, 20)), 128..1024.
PAPER_DL = paper_lattice(128, 1024)
FULL = Preset(
    "fig1e", "lazy_heatmap", "Fig. 1e: lazy (gamma -> 0) test accuracy over d and L",
    (("lazy_limit", "lazy_limit", Grid(d=PAPER_DL, L=PAPER_DL, seed=[0, 1, 2], steps=25_000,
                                       eval_every=1000, n_test=1024)),
     ("mlp", "mlp", Grid(d=[128, 256], L=[128, 512], gamma="lazy", seed=[0, 1, 2],
                         width=4096, steps=25_000, eval_every=1000, n_test=1024))))
QUICK = Preset(
    "fig1e-quick", "lazy_heatmap", "Fig. 1e (quick): lazy (gamma -> 0) test accuracy "
    "over d and L",
    (("lazy_limit", "lazy_limit", Grid(d=[128, 256], L=[128, 181, 256, 362, 512], seed=[0, 1],
                                       steps=5000, eval_every=1000, n_test=1024)),
     ("mlp", "mlp", Grid(d=[128], L=[128, 362], gamma="lazy", seed=0, width=1024,
                         steps=5000, eval_every=1000, n_test=1024))))
#: Bootstrap replicates of the exponent's confidence interval.
N_BOOT = 2000


def lazy_scaling(records, level=0.75, n_boot=N_BOOT, seed=0):
    """L*(d) where the mean accuracy first reaches ``level``; the fitted L* ~ d^b and its CI.

    Parameters
    ----------
    records : sequence of dict
        Records with ``d``, ``L`` and ``best_test_accuracy`` (e.g. of the
        "lazy_limit" predictor over a d x L grid).
    level : float, default 0.75
    n_boot : int, default ``N_BOOT``
        Bootstrap replicates: each cell's seeds are resampled with
        replacement (cells are independent: every (seed, L, d) has its own
        symbols), L*(d) and b are read again; 0 skips the bootstrap.
    seed : int, default 0
        Seed of the bootstrap.

    Returns
    -------
    dict
        ``level``; ``L_star``, {d: L*} for the d whose accuracy crosses
        ``level`` inside the grid; ``exponent`` and ``exponent_se`` of the
        log-log least-squares fit (None with fewer than 2 crossings);
        ``exponent_ci``, the bootstrap's 2.5 and 97.5 percentiles of b (None
        without a bootstrap, with one seed a cell, or when fewer than 90% of
        the replicates cross at 2 d or more), and ``n_boot``.
    """
    from collections import defaultdict

    from ..analysis import power_law_fit, threshold_crossing

    acc = defaultdict(lambda: defaultdict(list))
    for r in records:
        acc[r["d"]][r["L"]].append(r["best_test_accuracy"])
    ds = sorted(acc)

    def crossings(mean):
        out = {}
        for d in ds:
            Ls = sorted(acc[d])
            hit = threshold_crossing(Ls, [mean(d, L) for L in Ls], level)
            if hit is not None:
                out[d] = hit
        return out

    L_star = crossings(lambda d, L: np.mean(acc[d][L]))
    b = se = ci = None
    if len(L_star) >= 2:
        b, se = power_law_fit(list(L_star), list(L_star.values()))
        se = None if se != se else se
    seeds = max((len(v) for row in acc.values() for v in row.values()), default=0)
    if b is not None and n_boot and seeds > 1:
        rng = np.random.default_rng(seed)
        means = {(d, L): np.asarray(v)[rng.integers(0, len(v), size=(n_boot, len(v)))].mean(1)
                 for d in ds for L, v in acc[d].items()}
        fits = []
        for k in range(n_boot):
            hits = crossings(lambda d, L: means[d, L][k])
            if len(hits) >= 2:
                fits.append(power_law_fit(list(hits), list(hits.values()))[0])
        if len(fits) >= 0.9 * n_boot:
            ci = [float(q) for q in np.percentile(fits, [2.5, 97.5])]
    return {"level": level, "L_star": L_star, "exponent": b, "exponent_se": se,
            "exponent_ci": ci, "n_boot": n_boot}


def report(preset, records, prefix):
    """Tabulate and draw Fig. 1e (``fastsd.figures``): the limit's accuracy and L*(d), a heatmap.

    ``records`` holds the "lazy_limit" part and the finite "mlp" part; ``summary`` holds
    ``limit`` (``fastsd.scan.summarize``, rows L, columns d), ``scaling`` (``lazy_scaling``)
    and ``finite_vs_limit``, the finite networks against the limit on the same cells.
    """
    from collections import defaultdict

    from .. import plots
    from ..scan import format_table, summarize

    limit, finite = records["lazy_limit"], records.get("mlp", [])
    scaling = lazy_scaling(limit)
    ci = scaling["exponent_ci"]
    fit = ("" if scaling["exponent"] is None else
           f"; fitted L* ~ d^{scaling['exponent']:.2f}"
           + ("" if scaling["exponent_se"] is None else f" +- {scaling['exponent_se']:.2f} (se)")
           + ("" if ci is None else f", bootstrap 95% CI [{ci[0]:.2f}, {ci[1]:.2f}] over "
              f"seeds ({scaling['n_boot']} replicates)"))
    lines, title = [], preset.title
    if scaling["L_star"]:
        d0, L0 = next(iter(scaling["L_star"].items()))
        lines.append((r"$L \propto d^2$ (Theorem 2)", d0, L0, 2.0))
        if scaling["exponent"] is not None:
            b, se = scaling["exponent"], scaling["exponent_se"]
            lines.append((rf"fit: $L^* \propto d^{{{b:.2f}}}$", d0, L0, b))
            power = f"{b:.2f}" if se is None or ci is not None else rf"{b:.2f} \pm {se:.2f}"
            interval = "" if ci is None else f", 95% CI [{ci[0]:.2f}, {ci[1]:.2f}]"
            title += (f"\nfitted $L^* \\propto d^{{{power}}}${interval} "
                      f"(L* where accuracy first reaches {scaling['level']})")
    figures = plots.plot_heatmap(limit, prefix, title=title, lines=lines)
    means = defaultdict(list)
    for r in limit:
        means[r["d"], r["L"]].append(r["best_test_accuracy"])
    nets = defaultdict(list)
    for r in finite:
        nets[r["d"], r["L"], r["width"]].append(r["best_test_accuracy"])
    compare = [{"d": d, "L": L, "width": m, "finite": float(np.mean(v)),
                "limit": float(np.mean(means[d, L])) if means.get((d, L)) else None}
               for (d, L, m), v in sorted(nets.items())]
    limit_table = summarize(limit, "L", columns="d")
    text = [format_table(limit_table, eq3=False), "",
            f"L*(d) at accuracy {scaling['level']}: "
            + ", ".join(f"d={d}: {v:.1f}" for d, v in scaling["L_star"].items()) + fit, "",
            "finite gamma ~ 0 networks (1e-5/sqrt(d)) against the limit, same symbols",
            f"{'d':>5} {'L':>5} {'width':>6} {'finite':>7} {'limit':>7} {'gap':>7}"]
    for c in compare:
        lim = "-" if c["limit"] is None else f"{c['limit']:.3f}"
        gap = "-" if c["limit"] is None else f"{c['finite'] - c['limit']:+.3f}"
        text.append(f"{c['d']:>5} {c['L']:>5} {c['width']:>6} {c['finite']:>7.3f} {lim:>7} "
                    f"{gap:>7}")
    heading = ("best test accuracy of the gamma -> 0, infinite-width network (logistic flow, "
               "App. D), rows L, columns d")
    return heading, "\n".join(text), {"limit": limit_table, "scaling": scaling,
                                       "finite_vs_limit": compare}, figures
