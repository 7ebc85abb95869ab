"""The resumable JSON Lines store and the resumable grid runner."""
import json
import os

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
    with pytest.warns(RuntimeWarning, match=r"r.jsonl: skipped, not records: line 3: not "
                                            r"JSON: torn by an interrupted write\?$"):
        assert [r["key"] for r in store.load()] == ["a", "b"]
    store.write({"key": "d", "acc": 0.7})
    with pytest.warns(RuntimeWarning, match="r.jsonl: skipped, not records: line 3: "):
        assert store.done_keys() == {"a", "b", "d"}


def test_lines_that_are_json_but_no_object_are_named_in_one_warning(tmp_path):
    path = tmp_path / "r.jsonl"
    ResultStore(path).write({"key": "a"})
    with open(path, "a") as fh:
        fh.write('[1, 2]\n"hello"\n\n   \n{"key": "b"}\n')
    with pytest.warns(RuntimeWarning) as caught:
        assert [r["key"] for r in ResultStore(path).load()] == ["a", "b"]
    assert len(caught) == 1 and str(caught[0].message).endswith(
        "skipped, not records: line 2: a JSON list, not an object; line 3: a JSON str, not an "
        "object")


@pytest.mark.parametrize("bad", ["", "   "])
def test_a_blank_store_path_is_refused(bad):
    with pytest.raises(ValueError, match="`path` of a store must name a file"):
        ResultStore(bad)


def test_a_store_under_a_file_is_refused_naming_the_file(tmp_path):
    (tmp_path / "afile").write_text("x")
    store = ResultStore(tmp_path / "afile" / "s.jsonl")
    for create in (True, False):
        with pytest.raises(ValueError, match=r"`store` must be a file that can be written; "
                                             r".*afile is a file\)"):
            store.check_writable(create=create)
    fresh = ResultStore(tmp_path / "new" / "deeper" / "s.jsonl")
    fresh.check_writable(create=False)                  # a dry run makes nothing
    assert not (tmp_path / "new").exists()
    fresh.check_writable()
    assert (tmp_path / "new" / "deeper").is_dir() and not os.path.exists(fresh.path)


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


MLP_DEFAULTS = fastsd.scan.get_predictor("mlp").defaults
FIXED = dict(d=8, width=16, steps=10, eval_every=10, n_test=64)


def _sidecar(store):
    return json.loads(open(store.grid_path, encoding="utf-8").read())


def test_bind_fills_defaults_and_extends_the_sidecar_to_the_union(tmp_path):
    store = ResultStore(tmp_path / "r.jsonl")
    store.bind({"predictor": "mlp", "fixed": {"seed": 0, **FIXED}, "axes": ["gamma", "L"]},
               MLP_DEFAULTS)
    first = _sidecar(store)
    assert first["fixed"] == {**MLP_DEFAULTS, "seed": 0, **FIXED}
    # an explicit default, a fixed setting turned axis, a new axis, axes in another order
    store.bind({"predictor": "mlp", "fixed": {**FIXED, "sigma2": 0.0},
                "axes": ["L", "root_d", "seed", "gamma"]}, MLP_DEFAULTS)
    union = _sidecar(store)
    assert union["axes"] == ["gamma", "L", "root_d", "seed"]
    assert union["fixed"] == {k: v for k, v in first["fixed"].items()
                              if k not in ("seed", "root_d")}
    assert not list(tmp_path.glob("*.tmp"))               # written through a renamed temp file


def test_bind_refuses_real_conflicts_and_leaves_the_sidecar_alone(tmp_path):
    store = ResultStore(tmp_path / "r.jsonl")
    store.bind({"predictor": "mlp", "fixed": {"seed": 0, **FIXED}, "axes": ["L"]},
               MLP_DEFAULTS)
    before = open(store.grid_path).read()
    with pytest.raises(ValueError, match=r"`store` .*r\.jsonl belongs to a different grid "
                                         r"\(fixed setting `sigma2`: stored 0\.0, this grid "
                                         r"0\.5\); to add cells with this `sigma2` to the "
                                         r"store, make it an axis: sigma2=\[0\.5\]; or use "
                                         r"another store path"):
        store.bind({"predictor": "mlp", "fixed": {"seed": 0, **FIXED, "sigma2": 0.5},
                    "axes": ["L"]}, MLP_DEFAULTS)
    with pytest.raises(ValueError, match=r"different grid \(predictor: stored 'mlp', this "
                                         r"grid 'theory'\); use another store path"):
        store.bind({"predictor": "theory", "fixed": {}, "axes": ["L"]})
    assert open(store.grid_path).read() == before


def test_a_store_with_a_fixed_seed_extended_by_seeds_equals_the_union_grid(tmp_path):
    xr = pytest.importorskip("xarray")
    extended, union = ResultStore(tmp_path / "ext.jsonl"), ResultStore(tmp_path / "all.jsonl")
    kw = dict(L=[3, 2], gamma=[1.0, "lazy"], **FIXED)
    first = run(Grid(**kw, seed=0), "mlp", extended, "serial", backend="numpy", progress=False)
    more = run(Grid(**kw, seed=[1, 0]), "mlp", extended, "serial", backend="numpy",
               progress=False)
    assert len(first) == len(more) == 4 and {r["seed"] for r in more} == {1}
    assert all("seed" not in r["coords"] for r in first)
    run(Grid(**kw, seed=[1, 0]), "mlp", union, "serial", backend="numpy", progress=False)
    ds = load(extended, xarray=True).drop_vars("wall_time")
    assert ds["best_test_accuracy"].dims == ("L", "gamma", "seed")
    assert [list(ds[a].values) for a in ("L", "gamma", "seed")] == [[2, 3], [0.0, 1.0], [0, 1]]
    xr.testing.assert_identical(ds, load(union, xarray=True).drop_vars("wall_time"))


def test_a_sidecar_of_the_previous_version_is_still_accepted(tmp_path):
    store = ResultStore(tmp_path / "r.jsonl")
    kw = dict(L=[3, 2], gamma=[1.0], **FIXED)
    run(Grid(**kw, seed=0), "mlp", store, "serial", backend="numpy", progress=False)
    # what the previous version wrote: the settings as given, the axes sorted
    with open(store.grid_path, "w") as fh:
        json.dump({"predictor": "mlp", "fixed": {"seed": 0, **FIXED}, "axes": ["L", "gamma"]},
                  fh)
    again = Grid(gamma=[1.0], L=[3, 2], seed=0, sigma2=0.0, **FIXED)
    assert run(again, "mlp", store, "serial", backend="numpy", progress=False) == []
    assert _sidecar(store)["axes"] == ["L", "gamma"]
    assert _sidecar(store)["fixed"] == {**MLP_DEFAULTS, "seed": 0, **FIXED}
    assert len(run(Grid(**kw, seed=[0, 1]), "mlp", store, "serial", backend="numpy",
                   progress=False)) == 2
    assert load(store, xarray=True)["best_test_accuracy"].shape == (2, 1, 2)


def test_a_folder_or_an_unwritable_place_is_refused_with_the_stores_name(tmp_path):
    # a folder used to give a raw IsADirectoryError after a stray sidecar was written
    for path in (tmp_path, f"{tmp_path}/sub/"):
        with pytest.raises(ValueError, match=r"`path` of a store must name a file.*folder"):
            ResultStore(path)
    assert os.listdir(tmp_path) == []
    blocker = tmp_path / "file"
    blocker.write_text("x")
    store = ResultStore(blocker / "scan.jsonl")       # its folder would be a file
    with pytest.raises(OSError, match=r"the store .*scan.jsonl cannot be written there"):
        store.bind({"predictor": "theory", "fixed": {}, "axes": ["L"]})


def test_a_store_in_use_is_refused_naming_its_run_and_released_however_the_run_ends(tmp_path):
    from fastsd import StoreLockedError

    store = ResultStore(tmp_path / "r.jsonl")
    lock = f"{store.path}.lock"
    with store.lock():
        holder = json.loads(open(lock).read())
        assert holder["pid"] == os.getpid() and {"host", "command", "started"} <= set(holder)
        with pytest.raises(StoreLockedError) as refused:        # a second run, even in-process
            with store.lock():
                pass
    message = str(refused.value)
    assert message.startswith(f"`store` must not be in use by another run; got {store.path}, "
                              f"which pid {os.getpid()} on ")
    assert f"(lock file {lock})" in message and f"delete {lock}." in message
    assert not os.path.exists(lock)
    with pytest.raises(FloatingPointError):
        with store.lock():
            raise FloatingPointError("boom")
    assert not os.path.exists(lock)


def test_a_lock_left_by_a_killed_run_is_taken_over_with_a_warning(tmp_path):
    store = ResultStore(tmp_path / "r.jsonl")
    with open(store.lock_path, "w") as fh:       # what kill -9 leaves: the file, unlocked
        json.dump({"pid": 999999999, "host": "h", "command": "fastsd reproduce fig2",
                   "started": "2024-01-01T00:00:00Z"}, fh)
    with pytest.warns(RuntimeWarning, match=r"taking over the lock .*r\.jsonl\.lock of a run "
                                            r"that ended without releasing it: pid 999999999"):
        with store.lock():
            assert json.loads(open(store.lock_path).read())["pid"] == os.getpid()
    assert not os.path.exists(store.lock_path)


def test_a_corrupt_grid_file_is_named_with_what_to_do(tmp_path):
    store = ResultStore(tmp_path / "r.jsonl")
    run(TINY, "mlp", store.path, "serial", progress=False)
    with open(store.grid_path, "w") as fh:
        fh.write("garbage{")
    with pytest.raises(ValueError) as exc:
        run(TINY, "mlp", store.path, "serial", progress=False)
    assert str(exc.value) == (
        f"`store` must have a readable grid file; got {store.grid_path}, which is not valid "
        f"JSON (Expecting value at line 1); restore it, or delete it to bind the store to the "
        f"next run's grid.")
    os.remove(store.grid_path)                 # as advised: the store is bound again, kept
    run(TINY, "mlp", store.path, "serial", progress=False)
    assert len(store.load()) == 8 and os.path.exists(store.grid_path)
