"""Fig. 1e: the lazy model's test accuracy over d and L, with the L ~ d^2 line (Theorem 2).

Two panels on the paper's grid (``paper_lattice``: d, L in 128..1024 for the
full preset). The main one is the paper's protocol: finite lazy networks
(m = 4096, gamma = 1e-5/sqrt(d), 50,000 SGD steps, 3 seeds, the best of 50
evaluations on 1024 fresh pairs; published-code notes). The second is the
exact gamma -> 0, infinite-width network (``fastsd.kernels.lazy_limit``,
logistic flow over all L^2 ordered pairs for the same steps, solver "kron"
with float32 products, which ``bench/bench_kron.py --dtypes`` compares with
float64 in time and logits) on the same symbols. ``lazy_scaling`` reads L*(d)
off each heatmap and fits it as a power law L* ~ d^b and as an affine law
L* = a d + c, with bootstrap intervals over the seeds: Theorem 2's d^2 bounds
the number of training pairs, L^2 here, so L*(d) itself may grow as d (the
fitted laws are on the documentation's results page). Near L* the best of the
evaluations can be the first (step 1000): both models lose test accuracy as
they fit the training pairs, and the limit's early-time classifier generalizes
from a few symbols at any d, so L*(d) depends on when the history is first
evaluated. Both parts therefore also evaluate at 1, 2, 3, 5, 10, ... steps
(``eval_at="log"``, ``fastsd.schedules``; the heatmaps keep the paper's
reading, the best of the evaluations every 1000 steps), and a third panel draws
L*(d) against the reading time t for the limit and the networks, the paper's
step 1000 marked (``scaling_in_time``; the table beside it has L*(d, t) and its
fits at every t). The finite part is long on a CPU (``fastsd reproduce fig1e
--dry-run`` predicts both parts on this machine; ``--workers`` / ``--dask`` /
``--cluster`` spread it; every cell is stored as it finishes, and a rerun
computes only the missing ones).
"""
import json

import numpy as np

from .._validation import check_int
from ..presets import Preset
from ..scan import Grid

HELP = ("lazy networks (m = 4096) and the exact lazy limit over d x L, with L*(d) fitted, and "
        "L*(d) against the time the accuracy is read")


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
#: The paper's protocol of the lazy networks (published-code notes), and the limit's steps.
STEPS, WIDTH, SEEDS = 50_000, 4096, [0, 1, 2]
#: Both parts evaluate every 1000 steps (the paper's protocol, the heatmaps) and at 1, 2, 3,
#: 5, 10, 20, ... steps (``eval_at="log"``, the time panel).
EVALS = dict(eval_every=1000, eval_at="log", n_test=1024)
FULL = Preset(
    "fig1e", "lazy_heatmap", "Fig. 1e: lazy (gamma ~ 0) test accuracy over d and L",
    (("mlp", "mlp", Grid(d=PAPER_DL, L=PAPER_DL, gamma="lazy", seed=SEEDS, width=WIDTH,
                         steps=STEPS, **EVALS)),
     ("lazy_limit", "lazy_limit", Grid(d=PAPER_DL, L=PAPER_DL, seed=SEEDS, steps=STEPS,
                                       dtype="float32", **EVALS))))
#: The quick preset's grid: every third point of the lattice, below the paper's range, L
#: from 2 (the early readings cross the level at a few symbols).
QUICK_D, QUICK_L = paper_lattice(48, 92)[::3], paper_lattice(2, 247)[::3]
QUICK = Preset(
    "fig1e-quick", "lazy_heatmap", "Fig. 1e (quick): lazy (gamma ~ 0) test accuracy "
    "over d and L",
    (("mlp", "mlp", Grid(d=QUICK_D, L=QUICK_L, gamma="lazy", seed=[0, 1], width=1024,
                         steps=5000, **EVALS)),
     ("lazy_limit", "lazy_limit", Grid(d=QUICK_D, L=QUICK_L, seed=[0, 1], steps=5000,
                                       dtype="float32", **EVALS))))
#: Bootstrap replicates of the exponent's confidence interval; of each reading time's
#: (the time panel's table).
N_BOOT, N_BOOT_TIME = 2000, 500
#: The settings the records of one L*(d) must share: its cells differ in d, L and seed only
#: (the lazy gamma is 1e-5/sqrt(d), so it differs with d).
SHARED = ("method", "kernel", "pairs", "steps", "eval_every", "eval_at", "alpha0", "n_test",
          "dtype", "width", "batch_size", "sigma2", "root_d", "init")


def check_records(records, level):
    """Refuse what ``lazy_scaling`` would read wrongly: no records, records of different
    runs pooled as if they were seeds (``SHARED``), a level outside (0, 1).

    Raises
    ------
    ValueError
        Naming the setting and two of its values.
    """
    if not records:
        raise ValueError("`records` must hold at least one record (d, L and the accuracies "
                         "of a d x L grid); got none.")
    if not 0.0 < level < 1.0:
        raise ValueError(f"`level` must be an accuracy in (0, 1); got {level!r}.")
    for name in SHARED:
        values = {json.dumps(r.get(name), sort_keys=True, default=str) for r in records}
        if len(values) > 1:
            a, b = sorted(values)[:2]
            raise ValueError(f"`records` must share one `{name}` (they are pooled over seeds "
                             f"for each d and L); got {a} and {b}: pass one run's records.")


def lazy_scaling(records, level=0.75, n_boot=N_BOOT, seed=0, at="best"):
    """L*(d) where the mean accuracy first reaches ``level``; L*(d) fitted as a power law
    L* ~ d^b and as an affine law L* = a d + c, with bootstrap intervals.

    Parameters
    ----------
    records : sequence of dict
        Records with ``d``, ``L`` and ``best_test_accuracy`` (e.g. of the
        "lazy_limit" or the lazy "mlp" part over a d x L grid), and their
        ``history`` where ``at`` reads it.
    level : float, default 0.75
    n_boot : int, default ``N_BOOT``
        Bootstrap replicates: each cell's seeds are resampled with
        replacement (cells are independent: every (seed, L, d) has its own
        symbols), L*(d) and both fits are read again; 0 skips the bootstrap.
    seed : int, default 0
        Seed of the bootstrap.
    at : "best", "protocol" or int, default "best"
        Which accuracy of each record (``fastsd.schedules.accuracy_at``): the best
        over its evaluations, the best at the paper's (every ``eval_every`` steps),
        or the accuracy after step t (L*(d, t), issue 44).

    Returns
    -------
    dict
        ``level``, ``at``; ``L_star``, {d: L*} for the d whose accuracy crosses
        ``level`` inside the grid; ``exponent`` and ``exponent_se`` of the
        log-log least-squares fit (None with fewer than 2 crossings);
        ``exponent_ci``, the bootstrap's 2.5 and 97.5 percentiles of b (None
        without a bootstrap, with one seed a cell, or when fewer than 90% of
        the replicates cross at 2 d or more); ``affine``, None or {"slope",
        "intercept", "slope_se", "slope_ci", "intercept_ci"} of L* = a d + c
        (the same rules for its intervals); and ``n_boot``.

    Raises
    ------
    ValueError
        For no records, records of different runs (``check_records``: another
        method, steps, schedule, width, ...), a level outside (0, 1), or a step
        ``at`` that a record did not evaluate.
    TypeError
        For ``at`` of another kind.
    """
    from collections import defaultdict

    from ..analysis import affine_fit, power_law_fit, threshold_crossing

    from ..schedules import accuracy_at

    check_records(records, level)
    acc = defaultdict(lambda: defaultdict(list))
    for r in records:
        acc[r["d"]][r["L"]].append(accuracy_at(r, at))
    ds = sorted(acc)

    def crossings(mean):
        out = {}
        for d in ds:
            Ls = sorted(acc[d])
            hit = threshold_crossing(Ls, [mean(d, L) for L in Ls], level)
            if hit is not None:
                out[d] = hit
        return out

    def nan_none(v):
        return None if v != v else v

    L_star = crossings(lambda d, L: np.mean(acc[d][L]))
    b = se = ci = affine = None
    if len(L_star) >= 2:
        b, se = power_law_fit(list(L_star), list(L_star.values()))
        se = nan_none(se)
        a, c, a_se = affine_fit(list(L_star), list(L_star.values()))
        affine = {"slope": a, "intercept": c, "slope_se": nan_none(a_se), "slope_ci": None,
                  "intercept_ci": None}
    seeds = max((len(v) for row in acc.values() for v in row.values()), default=0)
    if b is not None and n_boot and seeds > 1:
        rng = np.random.default_rng(seed)
        means = {(d, L): np.asarray(v)[rng.integers(0, len(v), size=(n_boot, len(v)))].mean(1)
                 for d in ds for L, v in acc[d].items()}
        fits = []
        for k in range(n_boot):
            hits = crossings(lambda d, L: means[d, L][k])
            if len(hits) >= 2:
                fits.append((power_law_fit(list(hits), list(hits.values()))[0],
                             *affine_fit(list(hits), list(hits.values()))[:2]))
        if len(fits) >= 0.9 * n_boot:
            q = np.percentile(np.asarray(fits), [2.5, 97.5], axis=0)
            ci = [float(v) for v in q[:, 0]]
            affine["slope_ci"] = [float(v) for v in q[:, 1]]
            affine["intercept_ci"] = [float(v) for v in q[:, 2]]
    return {"level": level, "at": at, "L_star": L_star, "exponent": b, "exponent_se": se,
            "exponent_ci": ci, "affine": affine, "n_boot": n_boot}


def _fits(scaling):
    """One line on L*(d)'s power-law and affine fits and their intervals."""
    if scaling["exponent"] is None:
        return "fewer than two d cross the level inside the grid: no fit"
    ci, aff = scaling["exponent_ci"], scaling["affine"]
    text = f"L* ~ d^{scaling['exponent']:.2f}"
    if scaling["exponent_se"] is not None:
        text += f" +- {scaling['exponent_se']:.2f} (se)"
    if ci is not None:
        text += f", 95% CI [{ci[0]:.2f}, {ci[1]:.2f}]"
    text += f"; L* = {aff['slope']:.2f} d {aff['intercept']:+.1f}"
    if aff["slope_ci"] is not None:
        text += (f", 95% CI of the slope [{aff['slope_ci'][0]:.2f}, {aff['slope_ci'][1]:.2f}], "
                 f"of the intercept [{aff['intercept_ci'][0]:.1f}, {aff['intercept_ci'][1]:.1f}]")
    if ci is not None:
        text += f" (bootstrap over seeds, {scaling['n_boot']} replicates)"
    return text


def _panel(records, prefix, title):
    """One heatmap of the paper's protocol with its L*(d): (figures, table, scaling)."""
    from .. import plots
    from ..scan import summarize

    scaling = lazy_scaling(records, at="protocol")
    lines = []
    if scaling["L_star"]:
        d0, L0 = next(iter(scaling["L_star"].items()))
        lines.append((r"$L \propto d^2$ (Theorem 2)", d0, L0, 2.0))
        if scaling["exponent"] is not None:
            b = scaling["exponent"]
            lines.append((rf"fit: $L^* \propto d^{{{b:.2f}}}$", d0, L0, b))
            aff = scaling["affine"]
            title += (f"\n$L^* \\propto d^{{{b:.2f}}}$, $L^* = {aff['slope']:.2f}\\,d "
                      f"{aff['intercept']:+.0f}$ (accuracy {scaling['level']})")
    figures = plots.plot_heatmap(records, prefix, title=title, lines=lines, value=PROTOCOL)
    return figures, summarize(records, "L", columns="d", value=PROTOCOL), scaling


#: The records' field of the paper's reading: the best at the evaluations every 1000 steps.
PROTOCOL = "protocol_test_accuracy"


def with_protocol(records):
    """Copies of ``records`` with ``PROTOCOL``, the best accuracy at the paper's evaluations
    (``fastsd.schedules.accuracy_at(r, "protocol")``)."""
    from ..schedules import accuracy_at

    return [dict(r, **{PROTOCOL: accuracy_at(r, "protocol")}) for r in records]


def reading_times(records):
    """The steps every record evaluated, increasing."""
    return sorted(set.intersection(*(set(r["history"]["step"]) for r in records)))


def scaling_in_time(records, level=0.75, n_boot=N_BOOT_TIME):
    """L*(d, t) at every step all ``records`` evaluated, and at "best" and "protocol":
    {reading: ``lazy_scaling(records, level, n_boot, at=reading)``}.

    Parameters
    ----------
    records : sequence of dict
        Records over a d x L grid with their histories (run with ``eval_at``,
        ``fastsd.schedules``, to read early times).
    level : float, default 0.75
    n_boot : int, default ``N_BOOT_TIME``

    Returns
    -------
    dict
        Keys the steps (int), then "best" and "protocol".

    Raises
    ------
    ValueError
        As ``lazy_scaling`` (``check_records``).
    """
    check_records(records, level)
    return {at: lazy_scaling(records, level=level, n_boot=n_boot, at=at)
            for at in [*reading_times(records), "best", "protocol"]}


def _time_table(name, rows, ds, eval_every):
    """The text of one model's L*(d, t): a row a reading, L* per d, then the fits."""
    lines = [f"L*(d) of the {name} against the reading time t (SGD steps; accuracy "
             f"{next(iter(rows.values()))['level']}); 'best': over all evaluations, "
             f"'protocol': over the paper's (every {eval_every} steps)",
             f"{'t':>9} " + " ".join(f"{'d=' + str(d):>7}" for d in ds) + "  fit"]
    for at, sc in rows.items():
        cells = " ".join(f"{sc['L_star'][d]:>7.1f}" if d in sc["L_star"] else f"{'-':>7}"
                         for d in ds)
        lines.append(f"{at!s:>9} {cells}  " + (_fits(sc) if sc["exponent"] is not None
                                               else "-"))
    return lines


def _time_figure(in_time, prefix, title, eval_every, labels):
    """L*(d) against the reading time, a line per d and model (limit solid, networks
    dashed, named by ``labels``), the paper's first evaluation marked."""
    from matplotlib.ticker import FuncFormatter

    from .. import plots

    fig = plots._new_figure(6.4, 3.8)
    ax = fig.add_subplot()
    ds = sorted({d for rows in in_time.values() for sc in rows.values() for d in sc["L_star"]})
    colours = {d: f"C{k}" for k, d in enumerate(ds)}
    styles = {name: ("-" if name == "limit" else "--") for name in in_time}
    for name, rows in in_time.items():
        times = [t for t in rows if not isinstance(t, str)]
        for d in ds:
            pts = [(t, rows[t]["L_star"][d]) for t in times if d in rows[t]["L_star"]]
            if pts:
                ax.plot(*zip(*pts), styles[name], color=colours[d], marker=".", lw=1.2,
                        label=f"{labels[name]}, d = {d}")
    ax.axvline(eval_every, color="0.4", ls=":", lw=1,
               label=f"the paper's first evaluation (step {eval_every})")
    ax.set_xscale("log")
    ax.set_yscale("log", base=2)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("reading time t (SGD steps)")
    ax.set_ylabel(r"$L^*(d)$: first L at accuracy 0.75")
    plots._legend(ax, False, fontsize=7)
    ax.set_title(plots.figure_title(title, 60), fontsize=9)
    return plots._save(fig, prefix)


def report(preset, records, prefix):
    """Tabulate and draw Fig. 1e (``fastsd.figures``): both heatmaps and their L*(d).

    ``records`` holds the finite "mlp" part (the paper's protocol, the main
    panel, ``prefix``) and the "lazy_limit" part (``prefix``-limit); ``summary``
    holds ``finite`` and ``limit`` (``fastsd.scan.summarize``, rows L, columns
    d), ``scaling`` ({"finite": ..., "limit": ...}, ``lazy_scaling``) and
    ``finite_vs_limit``, the networks against the limit cell by cell (same
    symbols).
    """
    from collections import defaultdict

    from ..scan import format_table

    finite = with_protocol(records.get("mlp", []))
    limit = with_protocol(records["lazy_limit"])
    widths = sorted({r["width"] for r in finite})
    figures, tables, scaling, text = [], {}, {}, []
    panels = [("limit", limit, f"{prefix}-limit", f"{preset.title}: the exact limit "
               f"(infinite width)")]
    if finite:
        panels.insert(0, ("finite", finite, prefix, f"{preset.title}: networks of width "
                          f"{', '.join(map(str, widths))}"))
    for name, recs, out, title in panels:
        figs, tables[name], scaling[name] = _panel(recs, out, title)
        figures += figs
        what = ("lazy networks (gamma = 1e-5/sqrt(d), width " + ", ".join(map(str, widths))
                + ")" if name == "finite" else
                "the gamma -> 0, infinite-width network (logistic flow, App. D)")
        text += [f"test accuracy of {what}, the best of the evaluations every "
                 f"{recs[0]['eval_every']} steps (the paper's protocol), rows L, columns d",
                 format_table(tables[name], eq3=False),
                 f"L*(d) at accuracy {scaling[name]['level']}: "
                 + (", ".join(f"d={d}: {v:.1f}" for d, v in scaling[name]["L_star"].items())
                    or "none inside the grid"),
                 "  " + _fits(scaling[name]), ""]
    in_time = {name: scaling_in_time(recs) for name, recs, *_ in panels}
    ds = sorted({r["d"] for r in limit} | {r["d"] for r in finite})
    for name, rows in in_time.items():
        text += _time_table("limit" if name == "limit" else "lazy networks", rows, ds,
                            limit[0]["eval_every"])
        text.append("")
    labels = {"limit": "limit", "finite": f"m = {', '.join(map(str, widths))}"}
    figures += _time_figure(in_time, f"{prefix}-time", f"{preset.title}: L*(d) against "
                            f"the time the accuracy is read", limit[0]["eval_every"], labels)
    means = defaultdict(list)
    for r in limit:
        means[r["d"], r["L"]].append(r[PROTOCOL])
    nets = defaultdict(list)
    for r in finite:
        nets[r["d"], r["L"], r["width"]].append(r[PROTOCOL])
    compare = [{"d": d, "L": L, "width": m, "finite": float(np.mean(v)),
                "limit": float(np.mean(means[d, L])) if means.get((d, L)) else None}
               for (d, L, m), v in sorted(nets.items())]
    if compare:
        text += ["lazy networks against the limit, same symbols (mean best accuracy over seeds)",
                 f"{'d':>5} {'L':>5} {'width':>6} {'finite':>7} {'limit':>7} {'gap':>7}"]
    for c in compare:
        lim = "-" if c["limit"] is None else f"{c['limit']:.3f}"
        gap = "-" if c["limit"] is None else f"{c['finite'] - c['limit']:+.3f}"
        text.append(f"{c['d']:>5} {c['L']:>5} {c['width']:>6} {c['finite']:>7.3f} {lim:>7} "
                    f"{gap:>7}")
    heading = ("Fig. 1e: best test accuracy of lazy networks (the paper's protocol) and of the "
               "exact lazy limit over d and L, with L*(d), and L*(d) against the reading time")
    return heading, "\n".join(text), {"finite": tables.get("finite"), "limit": tables["limit"],
                                      "scaling": scaling,
                                      "in_time": {name: {str(at): sc for at, sc in rows.items()}
                                                  for name, rows in in_time.items()},
                                      "finite_vs_limit": compare}, figures
