"""Fig. 1e: the lazy model's test accuracy over d and L, with the L ~ d^2 line (Theorem 2).

The paper uses finite networks (m = 4096, gamma = 1e-5, 50k steps) on d, L in
128..1024; here the heatmap is the exact gamma -> 0, infinite-width network
(``fastsd.kernels.lazy_limit``, logistic flow over all ordered pairs), whose
cost grows like L^4, so its grid sits at smaller d and L, with finite gamma ~ 0
networks on a few of the same cells (same symbols) to compare.
"""
import numpy as np

from ..presets import Preset
from ..scan import Grid

HELP = "lazy limit over d x L with the L ~ d^2 line"
QUICK_WALL_TIME = "12 s"
DS = sorted({int(round(v)) for v in 2.0 ** np.linspace(2, 6, 9)})
LS = sorted({int(round(v)) for v in 2.0 ** np.linspace(2, 7, 11)})
FULL = Preset(
    "fig1e", "lazy_heatmap", "Fig. 1e: lazy (gamma -> 0) test accuracy over d and L",
    (("lazy_limit", "lazy_limit", Grid(d=DS, L=LS, seed=[0, 1, 2], steps=25_000,
                                       eval_every=1000, n_test=1024)),
     ("mlp", "mlp", Grid(d=[8, 16, 32, 64], L=[8, 32, 128], gamma="lazy", seed=[0, 1, 2],
                         width=4096, steps=25_000, eval_every=1000, n_test=1024))))
QUICK = Preset(
    "fig1e-quick", "lazy_heatmap", "Fig. 1e (quick): lazy (gamma -> 0) test accuracy "
    "over d and L",
    (("lazy_limit", "lazy_limit", Grid(d=[4, 8, 16, 32], L=[4, 8, 16, 32, 64], seed=0,
                                       steps=5000, eval_every=1000, n_test=1024)),
     ("mlp", "mlp", Grid(d=[8, 16, 32], L=[16, 64], gamma="lazy", seed=0, width=1024,
                         steps=5000, eval_every=1000, n_test=1024))))


def lazy_scaling(records, level=0.75):
    """L*(d) where the mean accuracy first reaches ``level``, and the fitted L* ~ d^b.

    Parameters
    ----------
    records : sequence of dict
        Records with ``d``, ``L`` and ``best_test_accuracy`` (e.g. of the
        "lazy_limit" predictor over a d x L grid).
    level : float, default 0.75

    Returns
    -------
    dict
        ``level``; ``L_star``, {d: L*} for the d whose accuracy crosses
        ``level`` inside the grid; ``exponent`` and ``exponent_se`` of the
        log-log least-squares fit (None with fewer than 2 crossings).
    """
    from collections import defaultdict

    from ..analysis import power_law_fit, threshold_crossing

    acc = defaultdict(lambda: defaultdict(list))
    for r in records:
        acc[r["d"]][r["L"]].append(r["best_test_accuracy"])
    L_star = {}
    for d in sorted(acc):
        Ls = sorted(acc[d])
        hit = threshold_crossing(Ls, [np.mean(acc[d][L]) for L in Ls], level)
        if hit is not None:
            L_star[d] = hit
    b = se = None
    if len(L_star) >= 2:
        b, se = power_law_fit(list(L_star), list(L_star.values()))
        se = None if se != se else se
    return {"level": level, "L_star": L_star, "exponent": b, "exponent_se": se}


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
    fit = ("" if scaling["exponent"] is None else
           f"; fitted L* ~ d^{scaling['exponent']:.2f}"
           + ("" if scaling["exponent_se"] is None else f" +- {scaling['exponent_se']:.2f}"))
    lines, title = [], preset.title
    if scaling["L_star"]:
        d0, L0 = next(iter(scaling["L_star"].items()))
        lines.append((r"$L \propto d^2$ (Theorem 2)", d0, L0, 2.0))
        if scaling["exponent"] is not None:
            b, se = scaling["exponent"], scaling["exponent_se"]
            lines.append((rf"fit: $L^* \propto d^{{{b:.2f}}}$", d0, L0, b))
            power = f"{b:.2f}" if se is None else rf"{b:.2f} \pm {se:.2f}"
            title += (f"\nfitted $L^* \\propto d^{{{power}}}$ "
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
