"""Run a grid of cells into a resumable store, and summarise the results.

``run_cells`` skips the cells already in the store, trains the others in
ensembles (one ``train_ensemble`` call per group of cells that share d, L and
the other non-gamma settings) and writes each record as soon as its call
returns. ``summarize`` turns the records into the table the CLI prints.
"""
import time
from collections import defaultdict

import numpy as np

from .presets import gamma_group, gamma_name


def cell_record(cell, result, task):
    """Return the stored record of a trained cell.

    Parameters
    ----------
    cell : fastsd.presets.Cell
    result : fastsd.TrainResult
    task : SameDifferent
        The cell's task; its fresh test pairs measure the activation change.

    Returns
    -------
    dict
        ``result.to_record()`` (configuration, package version, backend,
        dtype, path, seed, accuracies, wall time and the per-evaluation
        history) plus ``key``, ``task_seed``, ``activation_change`` (App. F,
        on ``n_test`` fresh pairs) and ``finished_at`` (UTC, ISO 8601).
    """
    from .analysis import activation_change

    x, _ = task.sample_test(cell.n_test, seed=cell.task_seed)
    record = result.to_record()
    record.update(key=cell.key, task_seed=cell.task_seed,
                  activation_change=activation_change(result, x),
                  finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    return record


def train_cells(cells, *, backend="auto", dtype=None, path="auto"):
    """Train cells that share their ensemble key in one lockstep ensemble.

    Parameters
    ----------
    cells : sequence of fastsd.presets.Cell
        All with the same ``ensemble_key()``.
    backend, dtype, path : optional
        As in ``fastsd.train``.

    Returns
    -------
    list of dict
        One record per cell (see ``cell_record``), in order.

    Raises
    ------
    ValueError
        When the cells do not share their ensemble key.
    """
    from .mlp import train_ensemble
    from .tasks import SameDifferent

    if len({c.ensemble_key() for c in cells}) != 1:
        raise ValueError("`cells` must share d, L, width, steps and the other non-gamma, "
                         "non-seed settings to train as one ensemble.")
    c0 = cells[0]
    tasks = [SameDifferent(c.d, c.L, sigma2=c.sigma2, seed=c.task_seed, root_d=c.root_d)
             for c in cells]
    results = train_ensemble(
        tasks, [c.gamma for c in cells], [c.seed for c in cells], width=c0.width,
        steps=c0.steps, batch_size=c0.batch_size, alpha0=c0.alpha0, eval_every=c0.eval_every,
        n_test=c0.n_test, backend=backend, dtype=dtype, path=path, init=c0.init)
    return [cell_record(c, r, task) for c, r, task in zip(cells, results, tasks)]


def run_cells(cells, store, *, backend="auto", dtype=None, path="auto", progress=True):
    """Train every cell not yet in ``store``, writing records as ensembles finish.

    Pending cells are grouped by ``Cell.ensemble_key`` (for the paper's grids:
    one group per (d, L), holding all gammas and seeds) and each group is one
    ``train_ensemble`` call. A killed run loses only the group in flight; a
    rerun trains only what is missing.

    Parameters
    ----------
    cells : sequence of fastsd.presets.Cell
    store : fastsd.store.ResultStore
    backend, dtype, path : optional
        As in ``fastsd.train``; recorded with each cell but not part of its key.
    progress : bool, default True
        Show a progress bar over cells (done, rate, time left) on stderr.

    Returns
    -------
    list of dict
        The records written by this call (empty when every cell was done).
    """
    from tqdm.auto import tqdm

    done = store.done_keys()
    pending = defaultdict(list)
    for cell in dict.fromkeys(cells):
        if cell.key not in done:
            pending[cell.ensemble_key()].append(cell)
    n_pending = sum(len(g) for g in pending.values())
    written = []
    with tqdm(total=len(set(cells)), initial=len(set(cells)) - n_pending, unit="cell",
              desc="cells", disable=not progress, dynamic_ncols=True) as bar:
        for group in pending.values():
            c0 = group[0]
            bar.set_postfix_str(f"d={c0.d} L={c0.L} ({len(group)} models)")
            for record in train_cells(group, backend=backend, dtype=dtype, path=path):
                store.write(record)
                written.append(record)
            bar.update(len(group))
    return written


def summarize(records, axis):
    """Mean best test accuracy per (axis value, gamma), with the Eq. 3 prediction.

    Parameters
    ----------
    records : sequence of dict
        Records of ``cell_record`` (``d``, ``L``, ``gamma``,
        ``best_test_accuracy``).
    axis : {"L", "d"}
        The table's rows.

    Returns
    -------
    dict
        JSON-ready: ``axis``; ``columns``, the gamma columns in increasing
        gamma, each ``{"name", "gamma"}`` (gamma 0.0 for the lazy
        1e-5/sqrt(d)); and ``rows``, one per axis value in increasing order,
        each ``{axis: value, "L": L, "eq3": Eq. 3 at that row's L,
        "mean": {name: mean}, "std": {name: std}, "n": {name: seeds}}``.
        Cells with no record are absent from ``mean``, ``std`` and ``n``.

    Raises
    ------
    ValueError
        For an unknown axis, or a row mixing several L (axis "d").
    """
    from .theory import rich_test_accuracy

    if axis not in ("L", "d"):
        raise ValueError(f"`axis` must be one of 'L', 'd'; got {axis!r}.")
    acc = defaultdict(list)
    Ls = defaultdict(set)
    for r in records:
        group = gamma_group(r["gamma"], r["d"])
        acc[r[axis], group].append(r["best_test_accuracy"])
        Ls[r[axis]].add(r["L"])
    groups = sorted({g for _, g in acc})
    rows = []
    for value in sorted(Ls):
        if len(Ls[value]) != 1:
            raise ValueError(f"`records` must have one L per {axis} = {value} to compare with "
                             f"Eq. 3; got L in {sorted(Ls[value])}.")
        L = Ls[value].pop()
        row = {axis: value, "L": L, "eq3": float(rich_test_accuracy(L)),
               "mean": {}, "std": {}, "n": {}}
        for g in groups:
            a = acc.get((value, g))
            if a:
                name = gamma_name(g)
                row["mean"][name] = float(np.mean(a))
                row["std"][name] = float(np.std(a))
                row["n"][name] = len(a)
        rows.append(row)
    return {"axis": axis, "columns": [{"name": gamma_name(g), "gamma": g} for g in groups],
            "rows": rows}


def format_table(summary):
    """Render ``summarize``'s output as a fixed-width text table ("-" for missing cells)."""
    axis = summary["axis"]
    names = [c["name"] for c in summary["columns"]]
    width = max([9] + [len(n) for n in names])
    lines = [f"{axis:>6}" + "".join(f"{n:>{width + 2}}" for n in names) + f"{'Eq.3':>8}"]
    for row in summary["rows"]:
        cells = "".join(f"{row['mean'][n]:>{width + 2}.3f}" if n in row["mean"]
                        else f"{'-':>{width + 2}}" for n in names)
        lines.append(f"{row[axis]:>6}{cells}{row['eq3']:>8.3f}")
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
