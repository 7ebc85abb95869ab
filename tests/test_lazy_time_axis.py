"""examples/lazy_time_axis.py and examples/mean_difference.py run as a user runs them (issue 44)."""
import importlib.util
import json
import pathlib

import pytest


def _example(name):
    path = pathlib.Path(__file__).parents[1] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_time_axis_example_stores_the_limit_and_reads_L_star_at_each_time(tmp_path,
                                                                              capsys):
    ex = _example("lazy_time_axis")
    argv = ["--ds", "8", "16", "--seeds", "0", "1", "--steps", "50", "--eval-every", "50",
            "--L-max", "2", "--n-test", "128", "--n-boot", "0", "--workers", "1",
            "--out", str(tmp_path), "--json"]
    ex.main(argv)
    rows = json.loads(capsys.readouterr().out)["L_star"]["limit"]
    assert list(rows) == ["1", "3", "10", "30", "best", "protocol"]
    stored = sorted(p.name for p in tmp_path.glob("*.jsonl"))
    assert stored == ["limit-d16.jsonl", "limit-d8.jsonl"]
    lines = (tmp_path / "limit-d8.jsonl").read_text().splitlines()
    assert len(lines) == 2 * len(ex.lattice(8, 2, 2))
    assert json.loads(lines[0])["history"]["step"] == [1, 2, 3, 5, 10, 20, 30, 50]
    ex.main(argv)                                   # a rerun computes nothing
    assert (tmp_path / "limit-d8.jsonl").read_text().splitlines() == lines
    capsys.readouterr()
    # networks beside it: their L* over the limit's, cell by cell on the same symbols
    ex.main(argv[:-1] + ["--widths", "64", "--ds", "8", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert set(out["L_star"]) == {"limit", "m=64"}
    for at, ratio in out["ratio_to_limit"]["m=64"].items():
        for d, r in ratio.items():
            assert r == pytest.approx(out["L_star"]["m=64"][at]["L_star"][d]
                                      / out["L_star"]["limit"][at]["L_star"][d])


@pytest.mark.parametrize("name, argv, message", [
    ("lazy_time_axis", ["--ds", "0"], "--ds must be integers >= 1; got 0"),
    ("lazy_time_axis", ["--seeds", "1", "1"], "--seeds must be distinct; got 1 1"),
    ("lazy_time_axis", ["--level", "0.4"], r"--level must be an accuracy in \(0.5, 1\)"),
    ("lazy_time_axis", ["--no-limit"], "--no-limit needs --widths"),
    ("lazy_time_axis", ["--network-L", "1"], "--network-L must be integers >= 2; got 1"),
    ("mean_difference", ["--Ls", "2"], "--Ls must be integers >= 3; got 2")])
def test_the_examples_refuse_bad_arguments_before_running(name, argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        _example(name).main(argv)
    assert e.value.code == 2
    assert __import__("re").search(message, capsys.readouterr().err)


def test_the_classifier_example_prints_measured_and_theory(capsys):
    _example("mean_difference").main(["--ds", "128", "--Ls", "8", "--seeds", "0", "1",
                                      "--n-test", "1000", "--json"])
    row, = json.loads(capsys.readouterr().out)
    assert row["theory"] == pytest.approx(0.8326, abs=1e-3)
    assert abs(row["measured"] - row["theory_tasks"]) < 0.05
