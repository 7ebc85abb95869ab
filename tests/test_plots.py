"""What a reader of the paper sees: titles, legends, bands, scales and colour bars."""
import re

import numpy as np
import pytest

from fastsd import plots
from fastsd.figures import fig2, fig3, figA1, figC1
from fastsd.conventions import lazy_gamma


@pytest.fixture
def drawn(monkeypatch):
    """The figures the plot functions save, in order."""
    figures = []
    save = plots._save

    def keep(fig, out_prefix, title=None):
        figures.append(fig)
        return save(fig, out_prefix, title)

    monkeypatch.setattr(plots, "_save", keep)
    return figures


def _records(seeds=3):
    rng = np.random.default_rng(1)
    return [{"d": 64, "L": L, "gamma": g, "seed": s, "width": 32,
             "best_test_accuracy": float(0.6 + 0.3 * (g == 1.0) + rng.normal(0, 0.03))}
            for L in (2, 4, 8) for g in (lazy_gamma(64), 1.0) for s in range(seeds)]


def _legend_texts(fig):
    return [t.get_text() for ax in fig.axes if ax.get_legend()
            for t in ax.get_legend().get_texts()]


def _check_lines_in_legend(fig):
    texts = _legend_texts(fig)
    for ax in fig.axes:
        for line in ax.get_lines():
            assert not line.get_label().startswith("_"), f"unlabelled line on {ax.get_title()!r}"
            assert line.get_label() in texts


def test_every_line_and_the_band_are_in_the_legend(tmp_path, drawn):
    recs = _records()
    bayes = [{"sigma2": s2, "L": L, "prior": p, "accuracy": 0.8}
             for s2 in (0.0, 1.0) for L in (2, 4, 8) for p in ("generalizing", "memorizing")]
    plots.plot_accuracy_vs(recs, "L", tmp_path / "L")
    plots.plot_accuracy_vs([dict(r, d=r["L"] * 8, L=4) for r in recs], "d", tmp_path / "d")
    fig2.plot_noisy([dict(r, sigma2=s2) for r in recs for s2 in (0.0, 1.0)], bayes,
                     tmp_path / "noisy")
    fig3.plot_panels([("(b) L", recs, "L"), ("(c) d", recs, "d")], tmp_path / "panels")
    rows = [{"L": L, "P": P, "top_alignment": 0.9, "bottom_alignment": -0.9,
             "relative_distance": 1.0 / P} for L in (16, 64) for P in (64, 256)]
    figC1.plot_max_margin(np.eye(8), np.eye(8), rows, tmp_path / "mm")
    plots.plot_heatmap(recs, tmp_path / "hm", lines=[("$L \\propto d^2$", 64, 4, 2.0)])
    assert len(drawn) == 6
    for fig in drawn:
        _check_lines_in_legend(fig)
    for fig in drawn[:4]:                       # the accuracy figures say what the band is
        assert plots.BAND_LABEL in _legend_texts(fig) and "95%" in plots.BAND_LABEL


def test_no_band_entry_for_one_seed(tmp_path, drawn):
    plots.plot_accuracy_vs(_records(seeds=1), "L", tmp_path / "L")
    assert plots.BAND_LABEL not in _legend_texts(drawn[0])


def test_the_band_is_the_bootstrap_interval_of_the_seeds(tmp_path, drawn):
    recs = _records()
    plots.plot_accuracy_vs(recs, "L", tmp_path / "L")
    ax = drawn[0].axes[0]
    rich = [c for c in ax.collections][-1]          # the last gamma group drawn is gamma = 1
    ys = rich.get_paths()[0].vertices[:, 1]
    for L in (2, 4, 8):
        seeds = [r["best_test_accuracy"] for r in recs if r["gamma"] == 1.0 and r["L"] == L]
        lo, hi = plots.bootstrap_ci(seeds)
        assert np.isclose(ys, lo).any() and np.isclose(ys, hi).any()


def test_bootstrap_ci_brackets_the_mean_inside_the_range():
    rng = np.random.default_rng(0)
    for n in (2, 3, 6):
        v = rng.normal(size=n)
        lo, hi = plots.bootstrap_ci(v)
        assert v.min() <= lo <= v.mean() <= hi <= v.max()
        assert plots.bootstrap_ci(v) == (lo, hi)            # drawn the same every time
    assert plots.bootstrap_ci([0.7]) == (0.7, 0.7)


@pytest.mark.parametrize("width", range(8, 90, 3))
def test_titles_wrap_at_spaces_never_inside_a_number_or_formula(width):
    text = ("Fig. 1e (quick): lazy (gamma -> 0) test accuracy over d and L; fitted L* ~ "
            "d^1.50 +- 0.10, d = 128\nfitted $L^* \\propto d^{1.50 \\pm 0.10}$ at 0.75")
    out = plots.figure_title(text, width)
    assert "gamma" not in out and "+-" not in out and "->" not in out
    lines = out.split("\n")
    for piece in ("γ\u00a0→\u00a00", "d^1.50\u00a0±\u00a00.10", "$L^* \\propto d^{1.50 \\pm 0.10}$",
                  "d\u00a0=\u00a0128", "0.75"):
        assert any(piece in line for line in lines), (piece, lines)
    words = re.findall(r"\S+", text.replace("+-", "±"))
    assert sum(len(line.split()) for line in lines) <= len(words)   # no word was split


def test_heatmap_axes_are_logarithmic_with_plain_labels(tmp_path, drawn):
    recs = [{"d": d, "L": L, "best_test_accuracy": 0.8} for d in (16, 64, 256, 1024)
            for L in (2, 3, 5, 10, 28)]
    plots.plot_heatmap(recs, tmp_path / "hm")
    ax = drawn[0].axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    drawn[0].canvas.draw()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["16", "64", "256", "1024"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["2", "3", "5", "10", "28"]


def test_weight_images_share_one_colour_scale_per_task_with_a_colour_bar(tmp_path, drawn):
    rng = np.random.default_rng(0)
    shown = [(task, model, rng.normal(size=(4, 4)) * s, rng.normal(size=(4, 4)) * s)
             for task in ("PSVRT", "Pentomino") for model, s in (("rich", 3.0), ("lazy", 0.1))]
    figA1.plot_weight_images(shown, tmp_path / "a1")
    fig = drawn[0]
    images = [ax.images[0] for ax in fig.axes if ax.images]
    bars = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert len(images) == 8 and len(bars) == 2
    for task in ("PSVRT", "Pentomino"):
        clims = {ax.images[0].get_clim() for ax in fig.axes
                 if ax.images and ax.get_title().startswith(task)}
        assert len(clims) == 1
