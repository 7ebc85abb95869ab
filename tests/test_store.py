"""The resumable JSON Lines store and the resumable grid runner."""
import json

import pytest

import fastsd.scan
from fastsd.presets import Cell
from fastsd.scan import run_cells
from fastsd.store import ResultStore, load_frame


def _tiny_cells():
    return [Cell(d=8, L=L, gamma=g, seed=s, width=16, steps=20, eval_every=10, n_test=64)
            for L in (2, 3) for g in (0.1, 1.0) for s in (0, 1)]


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
    real = fastsd.scan.train_cells

    def counting(cells, **kwargs):
        calls.append(len(cells))
        return real(cells, **kwargs)

    monkeypatch.setattr(fastsd.scan, "train_cells", counting)
    cells = _tiny_cells()
    store = ResultStore(tmp_path / "grid.jsonl")

    first = run_cells(cells, store, progress=False)
    assert sorted(calls) == [4, 4]                       # one ensemble per L
    assert {r["key"] for r in first} == {c.key for c in cells}

    calls.clear()
    assert run_cells(cells, store, progress=False) == []
    assert calls == []

    # Lose the last record as a kill -9 would (torn line): only that cell reruns.
    text = (tmp_path / "grid.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "grid.jsonl").write_text("".join(text[:-1]) + text[-1][:40])
    with pytest.warns(RuntimeWarning):
        again = run_cells(cells, store, progress=False)
    assert calls == [1] and [r["key"] for r in again] == [first[-1]["key"]]
    assert again[0]["best_test_accuracy"] == first[-1]["best_test_accuracy"]
    with pytest.warns(RuntimeWarning):
        assert store.done_keys() == {c.key for c in cells}


def test_records_hold_the_configuration(tmp_path):
    cell = _tiny_cells()[0]
    store = ResultStore(tmp_path / "r.jsonl")
    run_cells([cell], store, progress=False)
    rec, = store.load()
    for name in ("d", "L", "gamma", "seed", "width", "steps", "batch_size", "eval_every",
                 "n_test", "init", "sigma2"):
        assert rec[name] == getattr(cell, name)
    assert rec["task_seed"] == cell.task_seed and rec["key"] == cell.key
    for name in ("version", "backend", "dtype", "path", "wall_time", "best_test_accuracy",
                 "final_test_accuracy", "history", "finished_at"):
        assert name in rec


def test_load_frame(tmp_path):
    store = ResultStore(tmp_path / "r.jsonl")
    store.write({"key": "a", "acc": 0.5})
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install pandas"):
            load_frame(store.path)
    else:
        frame = load_frame(store.path)
        assert list(frame["key"]) == ["a"] and list(frame["acc"]) == [0.5]
