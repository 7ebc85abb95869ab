"""``fastsd train --task NAME``: any registered task, its own settings as --task-setting."""
import json

import pytest

from fastsd.cli import build_parser, main
from fastsd.scan import get_predictor
from fastsd.tasks import PSVRT, TASKS, register_task

TINY = ["--L", "4", "--gamma", "1", "--width", "8", "--steps", "20", "--eval-every", "10",
        "--n-test", "16", "--backend", "numpy", "--quiet"]
SYMBOLS = ["--d", "8", "--L", "3", "--gamma", "1", "--width", "16", "--steps", "20",
           "--eval-every", "10", "--n-test", "64", "--backend", "numpy", "--quiet", "--json"]


def _record(capsys, argv):
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1
    return json.loads(out[0])


def _results(record):
    return {k: record[k] for k in ("best_test_accuracy", "final_test_accuracy", "history",
                                   "task_seed", "gamma", "backend", "dtype", "path")}


def test_a_visual_task_trains_as_its_mlp_image_cell(capsys):
    rec = _record(capsys, ["train", "--task", "psvrt", *TINY, "--task-setting", "patch=3",
                           "--task-setting", "n_patches=2", "--json"])
    pred = get_predictor("mlp_image")
    cell = pred.prepare(dict(task="psvrt", L=4, gamma=1.0, width=8, steps=20, eval_every=10,
                             n_test=16, patch=3, n_patches=2))
    direct, = pred.run_group([cell], backend="numpy")
    assert _results(rec) == _results(direct) and rec["key"] == pred.key(cell)
    assert (rec["task"], rec["patch"], rec["n_patches"], rec["task_class"]) == (
        "psvrt", 3, 2, "PSVRT")
    assert main(["train", "--task", "pentomino", *TINY, "--task-setting", "blur=0.25"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("pentomino(image_width=2, blur=0.25), L=4, gamma=1, m=8, 20 steps")
    assert "best test accuracy" in out and "numpy backend, dense path, float64" in out


def test_task_symbols_is_the_default(capsys):
    with_task = _record(capsys, ["train", "--task", "symbols", *SYMBOLS])
    without = _record(capsys, ["train", *SYMBOLS])
    for rec in (with_task, without):
        rec.pop("wall_time")
    assert with_task == without


@pytest.fixture
def tiny_task():
    """A task registered at test time (a 2 x 2 grid of 2 x 2 patterns), removed after."""
    register_task("tiny_grid", {}, lambda L, task_seed: PSVRT(
        patch=2, n_patches=2, n_train_patterns=L, seed=task_seed))
    try:
        yield "tiny_grid"
    finally:
        del TASKS["tiny_grid"]


def test_a_task_registered_before_the_parser_is_built_trains(tiny_task, capsys):
    train = build_parser()._subparsers._group_actions[0].choices["train"]
    assert tiny_task in train._option_string_actions["--task"].choices
    assert f"{tiny_task}: none" in train.format_help().replace("\n", " ")
    rec = _record(capsys, ["train", "--task", tiny_task, *TINY, "--json"])
    assert (rec["task"], rec["task_class"]) == (tiny_task, "PSVRT")
    assert 0.0 <= rec["best_test_accuracy"] <= 1.0


@pytest.fixture
def tiny_task_with_a_setting():
    """A task registered at test time with a setting of its own (its patch side)."""
    register_task("tiny_sided", {"side": 2}, lambda L, task_seed, side: PSVRT(
        patch=side, n_patches=2, n_train_patterns=L, seed=task_seed))
    try:
        yield "tiny_sided"
    finally:
        del TASKS["tiny_sided"]


def test_a_task_registered_late_trains_with_its_own_setting(tiny_task_with_a_setting, capsys):
    # registered after fastsd.scan.predictors was imported: its setting reaches the cells
    task = tiny_task_with_a_setting
    rec = _record(capsys, ["train", "--task", task, "--task-setting", "side=3", *TINY, "--json"])
    assert (rec["task"], rec["side"], rec["task_class"]) == (task, 3, "PSVRT")
    default = _record(capsys, ["train", "--task", task, *TINY, "--json"])
    assert default["side"] == 2 and default["key"] != rec["key"]


def test_every_tasks_settings_and_defaults_are_in_the_help(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "psvrt: patch=5 (an integer), n_patches=5 (an integer)" in text
    assert "pentomino: image_width=2 (an integer), blur=0.5 (a number)" in text


@pytest.mark.parametrize("task, bad, said", [
    ("psvrt", ["--task-setting", "bogus=1"], "KEY a setting of task 'psvrt' (patch=5"),
    ("psvrt", ["--task-setting", "patch"], "got 'patch'"),
    ("psvrt", ["--task-setting", "patch=3.5"], "must be an integer (default 5); got '3.5'"),
    ("pentomino", ["--task-setting", "blur=soft"], "must be a number (default 0.5); got 'soft'"),
    ("psvrt", ["--task-setting", "patch=3", "--task-setting", "patch=4"], "'patch' twice"),
    ("psvrt", ["--task-setting", "patch=1"], "`--task-setting patch` must be an integer >= 2"),
    ("psvrt", ["--d", "8"], "`--d` is a setting of task 'symbols' only"),
    ("psvrt", ["--sigma2", "0.5"], "`--sigma2` is a setting of task 'symbols' only"),
    ("psvrt", ["--path", "symbol"], "`--path` is a setting of task 'symbols' only"),
    ("symbols", ["--d", "8", "--task-setting", "d=8"], "task 'symbols' takes its own as --d"),
])
def test_bad_task_settings_exit_1_naming_the_option(task, bad, said, capsys):
    assert main(["train", "--task", task, *TINY, *bad]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fastsd: error: `--") and said in err and err.count("\n") == 1


def test_the_symbols_need_d_and_a_task_must_be_registered(capsys):
    for argv in (["train", *TINY], ["train", "--task", "nonesuch", *TINY]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
    assert "required: --d" in capsys.readouterr().err


def test_each_value_is_parsed_as_its_registered_default_is_typed():
    from fastsd.cli import task_settings

    register_task("tiny_typed", {"tiny_flag": False, "tiny_label": "a", "tiny_any": None},
                  lambda L, task_seed, **_: PSVRT(patch=2, n_patches=2, n_train_patterns=L,
                                                 seed=task_seed))
    try:
        got = task_settings("tiny_typed", ["tiny_flag=yes", "tiny_label=7", "tiny_any=3"])
        assert got == {"tiny_flag": True, "tiny_label": "7", "tiny_any": 3}
        assert task_settings("tiny_typed", ["tiny_any=0.5", "tiny_flag=False"]) == {
            "tiny_any": 0.5, "tiny_flag": False}
        assert task_settings("tiny_typed", ["tiny_any=wide"]) == {"tiny_any": "wide"}
        with pytest.raises(ValueError, match=r"`--task-setting tiny_flag` of task 'tiny_typed' "
                                             r"must be a bool \(true or false\)"):
            task_settings("tiny_typed", ["tiny_flag=maybe"])
    finally:
        del TASKS["tiny_typed"]
