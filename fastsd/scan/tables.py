"""Summaries of MLP scan records as the tables the CLI prints."""
from collections import defaultdict

import numpy as np

from ..conventions import gamma_group, gamma_name


def summarize(records, axis, columns="gamma", value="best_test_accuracy"):
    """Mean best test accuracy (or ``value``) per (axis value, column), with the Eq. 3
    prediction.

    Parameters
    ----------
    records : sequence of dict
        Records of the "mlp" predictor (``d``, ``L``, ``gamma``,
        ``best_test_accuracy``).
    axis : str
        The table's rows: "L", "d", or another numeric record field (e.g.
        "n_patches" for Fig. 3c).
    columns : {"gamma", "d"}, default "gamma"
        The table's columns: gamma groups (gamma 0.0 for the lazy
        1e-5/sqrt(d)), or d (the heatmaps of Fig. 1b/1e).
    value : str, default "best_test_accuracy"
        The record field averaged (Fig. 1e: the paper's reading,
        ``fastsd.figures.fig1e.PROTOCOL``).

    Returns
    -------
    dict
        JSON-ready: ``axis``; ``columns``, in increasing order, each
        ``{"name", <columns>: value}``; and ``rows``, one per axis value in
        increasing order, each ``{axis: value, "L": L, "eq3": Eq. 3 at that
        row's L (None when the row mixes several L), "mean": {name: mean},
        "std": {name: std}, "n": {name: seeds}}``.
        Cells with no record are absent from ``mean``, ``std`` and ``n``.

    Raises
    ------
    ValueError
        For unknown columns, or columns equal to the rows.
    """
    from ..theory import rich_test_accuracy

    if columns not in ("gamma", "d") or columns == axis:
        raise ValueError(f"`columns` must be 'gamma' or 'd' (not the rows, {axis!r}); "
                         f"got {columns!r}.")
    if columns == "gamma":
        column_of, name_of = (lambda r: gamma_group(r["gamma"], r.get("d", 1))), gamma_name
    else:
        column_of, name_of = (lambda r: r[columns]), (lambda v: f"{columns}={v}")
    acc = defaultdict(list)
    Ls = defaultdict(set)
    for r in records:
        acc[r[axis], column_of(r)].append(r[value])
        Ls[r[axis]].add(r["L"])
    groups = sorted({g for _, g in acc})
    rows = []
    for at in sorted(Ls):
        L = Ls[at].pop() if len(Ls[at]) == 1 else None
        eq3 = None if L is None else float(rich_test_accuracy(L))
        row = {axis: at, "L": L, "eq3": eq3,
               "mean": {}, "std": {}, "n": {}}
        for g in groups:
            a = acc.get((at, g))
            if a:
                name = name_of(g)
                row["mean"][name] = float(np.mean(a))
                row["std"][name] = float(np.std(a))
                row["n"][name] = len(a)
        rows.append(row)
    return {"axis": axis, "columns": [{"name": name_of(g), columns: g} for g in groups],
            "rows": rows}


def format_table(summary, eq3=True):
    """Render ``summarize``'s output as a fixed-width text table ("-" for missing cells).

    ``eq3=False`` leaves out the Eq. 3 column (for tables that are not rich networks).
    """
    axis = summary["axis"]
    names = [c["name"] for c in summary["columns"]]
    width = max([9] + [len(n) for n in names])
    first = max(6, len(axis))
    lines = [f"{axis:>{first}}" + "".join(f"{n:>{width + 2}}" for n in names)
             + (f"{'Eq.3':>8}" if eq3 else "")]
    for row in summary["rows"]:
        cells = "".join(f"{row['mean'][n]:>{width + 2}.3f}" if n in row["mean"]
                        else f"{'-':>{width + 2}}" for n in names)
        lines.append(f"{row[axis]:>{first}}{cells}" + (f"{row['eq3']:>8.3f}" if eq3 else ""))
    return "\n".join(lines)


def summarize_activation(records):
    """Mean activation change per (gamma, d, root_d), for Fig. F1.

    Returns
    -------
    dict
        JSON-ready: ``columns``, names like "d=128" or "d=128 no-sqrt-d" in
        (root_d, d) order; ``rows``, one per gamma in increasing order, each
        ``{"gamma": gamma, "mean": {name: mean over seeds}}``.
    """
    vals = defaultdict(list)
    for r in records:
        name = f"d={r['d']}" + ("" if r.get("root_d", True) else " no-sqrt-d")
        vals[r["gamma"], (not r.get("root_d", True), r["d"]), name].append(r["activation_change"])
    columns = [n for _, n in sorted({(c, n) for _, c, n in vals})]
    rows = []
    for g in sorted({g for g, _, _ in vals}):
        rows.append({"gamma": g, "mean": {n: float(np.mean(v)) for (gg, _, n), v in vals.items()
                                          if gg == g}})
    return {"columns": columns, "rows": rows}


def format_activation_table(summary):
    """Render ``summarize_activation``'s output as a fixed-width text table."""
    names = summary["columns"]
    width = max(len(n) for n in names) + 2
    lines = [f"{'gamma':>8}" + "".join(f"{n:>{width}}" for n in names)]
    for row in summary["rows"]:
        lines.append(f"{row['gamma']:>8.0e}" + "".join(
            f"{row['mean'][n]:>{width}.3g}" if n in row["mean"] else f"{'-':>{width}}"
            for n in names))
    return "\n".join(lines)
