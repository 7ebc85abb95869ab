"""The paper's grids, cell keys and seeds, the summary table and the plots."""
import math

import numpy as np
import pytest

from fastsd.figures import PRESETS, get_preset
from fastsd.scan.predictors import PREDICTORS
from fastsd.plots import plot_accuracy_vs
from fastsd.scan import (Cell, derive_task_seed, format_table, gamma_group, gamma_label,
                         gamma_name, lazy_gamma, summarize)
from fastsd.theory import rich_test_accuracy


def _axis_values(preset, name):
    return sorted({getattr(c, name) for c in preset.cells()})


def test_fig1c_is_the_papers_grid():
    p = get_preset("fig1c")
    assert p.axis == "L" and len(p.cells()) == 10 * 6 * 3
    assert _axis_values(p, "L") == [2 ** k for k in range(1, 11)]
    assert _axis_values(p, "d") == [256]
    assert {(c.width, c.steps, c.eval_every, c.n_test) for c in p.cells()} == {
        (1024, 25000, 1000, 1024)}
    assert _axis_values(p, "gamma") == [1e-5 / 16, 0.05, 0.1, 0.25, 0.5, 1.0]
    assert _axis_values(p, "seed") == [0, 1, 2]


def test_fig1f_uses_the_lazy_gamma_of_each_d():
    p = get_preset("fig1f")
    assert p.axis == "d" and len(p.cells()) == 7 * 6 * 3
    assert _axis_values(p, "d") == [16, 32, 64, 128, 256, 512, 1024]
    assert _axis_values(p, "L") == [16]
    for c in p.cells():
        if c.gamma < 0.01:
            assert math.isclose(c.gamma, 1e-5 / math.sqrt(c.d))
    assert {gamma_group(c.gamma, c.d) for c in p.cells()} == {0.0, 0.05, 0.1, 0.25, 0.5, 1.0}


@pytest.mark.parametrize("figure", ["fig1c", "fig1f", "figC3"])
def test_quick_presets_are_smaller_and_distinct(figure):
    full, quick = get_preset(figure), get_preset(figure, quick=True)
    assert quick.name == figure + "-quick" and quick.axis == full.axis
    assert len(quick.cells()) < len(full.cells())
    must = {1.0, 100.0} if figure == "figC3" else {0.0, 1.0}
    assert {gamma_group(c.gamma, c.d) for c in quick.cells()} >= must
    assert len({c.key for c in quick.cells()}) == len(quick.cells())


def test_get_preset_rejects_unknown_figures():
    with pytest.raises(ValueError, match="`figure`"):
        get_preset("fig9")


def test_cell_keys_are_stable_and_name_every_field():
    a = Cell(d=8, L=4, gamma=0.5, seed=1, width=16, steps=10)
    b = Cell(d=8, L=4, gamma=0.5, seed=1, width=16, steps=10)
    assert a.key == b.key and a == b
    assert a.key.startswith("L=4,alpha0=None,") and "gamma=0.5" in a.key
    assert a.key != Cell(d=8, L=4, gamma=0.5, seed=1, width=16, steps=11).key


def test_task_seed_is_derived_from_seed_L_d():
    c = Cell(d=8, L=4, gamma=0.5, seed=1, width=16, steps=10)
    assert c.task_seed == derive_task_seed(1, 4, 8) == Cell(
        d=8, L=4, gamma=1.0, seed=1, width=16, steps=10).task_seed
    assert len({derive_task_seed(s, L, 8) for s in range(3) for L in (2, 3)}) == 6
    assert Cell(d=8, L=4, gamma=0.5, seed=1, width=16, steps=10, task_seed=7).task_seed == 7


def test_cell_validates_its_fields():
    with pytest.raises(ValueError, match="`L`"):
        Cell(d=8, L=1, gamma=1.0, seed=0, width=16, steps=10)
    with pytest.raises(ValueError, match="`gamma`"):
        Cell(d=8, L=4, gamma=0.0, seed=0, width=16, steps=10)
    with pytest.raises(TypeError, match="`width`"):
        Cell(d=8, L=4, gamma=1.0, seed=0, width=16.0, steps=10)


def test_gamma_labels():
    assert gamma_group(lazy_gamma(64), 64) == 0.0 and gamma_group(0.1, 64) == 0.1
    assert gamma_label(0.0) == "γ≈0 (1e-5/√d)" and gamma_label(0.25) == "γ = 0.25"
    assert gamma_name(0.0) == "gamma~0" and gamma_name(1.0) == "gamma=1"


def _fake_records(axis):
    recs = []
    for v in (2, 4):
        d, L = (256, v) if axis == "L" else (v * 8, 16)
        for g in (lazy_gamma(d), 1.0):
            for s, acc in enumerate((0.6, 0.8)):
                recs.append({"d": d, "L": L, "gamma": g, "seed": s, "width": 32,
                             "best_test_accuracy": acc + (g == 1.0) * 0.1})
    return recs


def test_summarize_means_over_seeds_with_eq3():
    s = summarize(_fake_records("L"), "L")
    assert [c["name"] for c in s["columns"]] == ["gamma~0", "gamma=1"]
    assert [r["L"] for r in s["rows"]] == [2, 4]
    row = s["rows"][1]
    assert row["mean"] == pytest.approx({"gamma~0": 0.7, "gamma=1": 0.8})
    assert row["n"] == {"gamma~0": 2, "gamma=1": 2}
    assert row["eq3"] == pytest.approx(float(rich_test_accuracy(4)))
    text = format_table(s)
    assert "gamma~0" in text and "Eq.3" in text and "0.949" in text


def test_summarize_groups_the_lazy_gamma_across_d():
    s = summarize(_fake_records("d"), "d")
    assert [r["d"] for r in s["rows"]] == [16, 32]
    assert all(set(r["mean"]) == {"gamma~0", "gamma=1"} for r in s["rows"])


def test_plots_write_png_and_svg(tmp_path):
    for axis in ("L", "d"):
        paths = plot_accuracy_vs(_fake_records(axis), axis, tmp_path / "figs" / axis)
        assert [p[-3:] for p in paths] == ["png", "svg"]
        for p in paths:
            with open(p, "rb") as fh:
                assert len(fh.read()) > 1000


def test_plots_reject_mixed_grids(tmp_path):
    with pytest.raises(ValueError, match="one d"):
        plot_accuracy_vs(_fake_records("d"), "L", tmp_path / "x")
    with pytest.raises(ValueError, match="at least one"):
        plot_accuracy_vs([], "d", tmp_path / "x")
    with pytest.raises(ValueError, match="`axis` must be one of 'L', 'd'"):
        plot_accuracy_vs(_fake_records("d"), "gamma", tmp_path / "x")


def test_every_preset_is_registered_under_its_name():
    assert all(name == p.name for name, p in PRESETS.items())


def test_figC3_is_the_published_ultra_rich_grid():
    p = get_preset("figC3")
    assert {c.d for c in p.cells()} == {256} and {c.L for c in p.cells()} == set(range(2, 13))
    gammas = sorted({c.gamma for c in p.cells()})
    np.testing.assert_allclose(np.log10(gammas), [0.0, 0.4, 0.8, 1.2, 1.6, 2.0])
    assert gamma_name(10 ** 0.4) == "gamma=2.51"


def test_figF1_is_the_published_activation_grid():
    p = get_preset("figF1")
    assert p.axis == "gamma" and {c.L for c in p.cells()} == {16}
    assert {c.width for c in p.cells()} == {4096} and {c.root_d for c in p.cells()} == {True, False}
    np.testing.assert_allclose(np.log10(sorted({c.gamma for c in p.cells()})),
                               np.linspace(-5, 0, 11))
    assert {c.d for c in p.cells()} == {128, 256, 512, 1024}


def test_every_figure_module_holds_its_settings_report_and_help():
    from fastsd.figures import FIGURES, REGISTRY
    from fastsd.presets import Preset
    from fastsd.scan import get_predictor

    assert FIGURES == tuple(REGISTRY)
    for name, figure in REGISTRY.items():
        assert (figure.FULL.name, figure.QUICK.name) == (name, name + "-quick")
        # one runner: every figure is a preset of scan parts, every cell a predictor's
        assert isinstance(figure.FULL, Preset) and isinstance(figure.QUICK, Preset)
        for spec in (figure.FULL, figure.QUICK):
            for _, predictor, grid in spec.parts:
                pred = get_predictor(predictor)
                assert all(pred.prepare(s) for _, s in grid.cells())
        assert callable(figure.report) and not hasattr(figure, "collect")
        assert figure.HELP


@pytest.mark.parametrize("figure, predictor, cells", [
    ("fig1a", "weight_structure", 2), ("figA1", "weight_images", 4), ("figC1", "max_margin", 4)])
def test_the_figures_of_models_and_matrices_are_scan_parts_too(figure, predictor, cells):
    quick = get_preset(figure, quick=True)
    (_, name, grid), = quick.parts
    assert name == predictor and len(grid.cells()) == cells
    pred = PREDICTORS[predictor]
    prepared = [pred.prepare(s) for _, s in grid.cells()]
    # a figure's models train in lockstep: one group per task
    groups = {pred.group_key(s) for s in prepared}
    assert len(groups) == {"weight_structure": 1, "weight_images": 2, "max_margin": 4}[predictor]
