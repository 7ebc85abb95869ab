"""Scans: a grid of cells, a predictor for each cell, a resumable store, any executor.

>>> from fastsd.scan import Grid, run, load          # doctest: +SKIP
>>> grid = Grid(gamma=[1.0, 0.1], L=[4, 8], seed=[0, 1], d=64, width=256, steps=2000)
>>> run(grid, "mlp", "results/scan.jsonl")           # local processes by default
>>> load("results/scan.jsonl", xarray=True)          # axes gamma, L, seed as dimensions
"""
from ..conventions import derive_task_seed, gamma_group, gamma_label, gamma_name, lazy_gamma
from .cells import Cell
from .grid import Grid
from .plans import ScanPlan, plan, plan_many
from .predictors import PREDICTORS, Predictor, cell_record, get_predictor, train_cells
from .records import cell_records, load
from .runner import ScanError, run, run_many
from .tables import format_activation_table, format_table, summarize, summarize_activation

__all__ = ["Cell", "Grid", "PREDICTORS", "Predictor", "ScanError", "ScanPlan", "cell_record",
           "cell_records", "derive_task_seed", "format_activation_table", "format_table",
           "gamma_group",
           "gamma_label", "gamma_name", "get_predictor", "lazy_gamma", "load", "plan", "plan_many",
           "run", "run_many",
           "summarize", "summarize_activation", "train_cells"]
