"""The resumable JSON Lines store and the resumable grid runner."""
import json

import pytest

import fastsd.scan.predictors
from fastsd.scan import Grid, load, run
from fastsd.store import ResultStore


TINY = Grid(L=[2, 3], gamma=[0.1, 1.0], seed=[0, 1], d=8, width=16, steps=20, eval_every=10,
            n_test=64)


def test_write_then_load_roundtrip(tmp_path):
    store = ResultStore(tmp_path / "sub" / "r.jsonl")
    assert store.load() == [] and store.done_keys() == set()
    records = [{"key": f"k{i}", "acc": i / 10, "history": {"step": [1, 2]}} for i in range(3)]
    for r in records:
        store.write(r)
    assert store.load() == records
    assert store.done_keys() == {"k0", "k1", "k2"}
    lines = (tmp_path / "sub" / "r.jsonl").read_text().splitlines()
    assert len(lines) == 3 and all(json.loads(line) for line in lines)


def test_torn_last_line_is_skipped_and_the_next_write_is_intact(tmp_path):
    path = tmp_path / "r.jsonl"
    store = ResultStore(path)
    store.write({"key": "a", "acc": 0.5})
    store.write({"key": "b", "acc": 0.6})
    with open(path, "a") as fh:            # a kill -9 in the middle of a write
        fh.write('{"key": "c", "acc": 0.')
    with pytest.warns(RuntimeWarning, match="r.jsonl:3"):
        assert [r["key"] for r in store.load()] == ["a", "b"]
    store.write({"key": "d", "acc": 0.7})
    with pytest.warns(RuntimeWarning, match="r.jsonl:3"):
        assert store.done_keys() == {"a", "b", "d"}


def test_write_rejects_a_record_without_key(tmp_path):
    store = ResultStore(tmp_path / "r.jsonl")
    with pytest.raises(ValueError, match="key"):
        store.write({"acc": 1.0})
    with pytest.raises(TypeError, match="record"):
        store.write([("key", "a")])


def test_rerun_skips_done_cells_and_resumes_after_a_lost_cell(tmp_path, monkeypatch):
    calls = []
    real = fastsd.scan.predictors.train_cells

    def counting(cells, **kwargs):
        calls.append(len(cells))
        return real(cells, **kwargs)

    monkeypatch.setattr(fastsd.scan.predictors, "train_cells", counting)
    store = ResultStore(tmp_path / "grid.jsonl")

    first = run(TINY, "mlp", store, "serial", progress=False)
    assert sorted(calls) == [2, 2, 2, 2]      # on the CPU, one ensemble per (L, seed)
    assert len({r["key"] for r in first}) == len(TINY) == 8

    calls.clear()
    assert run(TINY, "mlp", store, "serial", progress=False) == []
    assert calls == []

    # Lose the last record as a kill -9 would (torn line): only that cell reruns.
    text = (tmp_path / "grid.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "grid.jsonl").write_text("".join(text[:-1]) + text[-1][:40])
    with pytest.warns(RuntimeWarning):
        again = run(TINY, "mlp", store, "serial", progress=False)
    assert calls == [1] and [r["key"] for r in again] == [first[-1]["key"]]
    assert again[0]["best_test_accuracy"] == first[-1]["best_test_accuracy"]
    with pytest.warns(RuntimeWarning):
        assert store.done_keys() == {r["key"] for r in first}


def test_records_hold_the_configuration(tmp_path):
    store = ResultStore(tmp_path / "r.jsonl")
    grid = Grid(d=8, L=2, gamma=0.1, seed=[3], width=16, steps=20, eval_every=10, n_test=64)
    run(grid, "mlp", store, "serial", progress=False)
    rec, = store.load()
    settings = grid.cells()[0][1]
    for name, value in settings.items():
        assert rec[name] == value and rec["settings"][name] == value
    assert rec["coords"] == {"seed": 3} and rec["predictor"] == "mlp"
    assert rec["task_seed"] == rec["settings"]["task_seed"]
    for name in ("version", "backend", "dtype", "path", "wall_time", "best_test_accuracy",
                 "final_test_accuracy", "history", "finished_at", "key"):
        assert name in rec


def test_load_frame_and_xarray(tmp_path):
    store = ResultStore(tmp_path / "r.jsonl")
    run(Grid(L=[2, 3, 5]), "theory", store, "serial", progress=False)
    frame = load(store)
    assert list(frame["L"]) == [2, 3, 5] and frame["test_accuracy"].iloc[0] == 0.75
    ds = load(store.path, xarray=True)
    assert list(ds["L"].values) == [2, 3, 5]
    assert float(ds["test_accuracy"].sel(L=2)) == 0.75
    with pytest.raises(ValueError, match="bound to a grid"):
        bare = ResultStore(tmp_path / "bare.jsonl")
        bare.write({"key": "a", "acc": 0.5})
        load(bare, xarray=True)
