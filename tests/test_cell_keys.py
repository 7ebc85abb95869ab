"""A scan cell's key (what its store names it by) does not change as fastsd grows.

- The keys of representative cells of every predictor, pinned: each string
  below is the key the cell had before ``Spec.always_keyed`` replaced
  ``Param.late`` (computed on main at e7efc73), so that a store written then
  still names its cells (a changed key would compute every stored cell again).
- A parameter added to a keyed spec with a default leaves every existing
  key unchanged; a cell with another value of it is a cell of its own, whose
  key names it. End to end: a store written before the parameter existed is
  read as cells by the grown predictor, without a warning.
"""
import json
import warnings

import pytest

from fastsd.params import LAZY_LIMIT, MLP, Param, Spec
from fastsd.scan import PREDICTORS, Cell, cell_records
from fastsd.scan.cells import settings_key
from fastsd.store import ResultStore

#: (predictor, settings given, the cell's key before ``always_keyed``: the regression fact).
PINNED = [
    ("mlp", dict(d=16, L=4, gamma=1.0, width=64, steps=200),
     "L=4,alpha0=None,batch_size=128,d=16,eval_every=1000,gamma=1.0,init='normal',n_test=1024,"
     "root_d=True,seed=0,sigma2=0.0,steps=200,task_seed=8302583047777773815,width=64"),
    ("mlp", dict(d=64, L=8, gamma="lazy", seed=3, width=256, steps=2000, sigma2=0.1,
                 batch_size=64, alpha0=0.05, init="truncated", task_seed=7, root_d=False),
     "L=8,alpha0=0.05,batch_size=64,d=64,eval_every=1000,gamma=1.25e-06,init='truncated',"
     "n_test=1024,root_d=False,seed=3,sigma2=0.1,steps=2000,task_seed=7,width=256"),
    ("mlp_image", dict(task="psvrt", L=8, gamma=1.0, width=64, steps=100),
     "L=8,alpha0=None,batch_size=128,blur=None,eval_every=1000,gamma=1.0,image_width=None,"
     "init='normal',n_patches=5,n_test=1024,patch=5,seed=0,steps=100,task='psvrt',"
     "task_seed=71300412144211962,width=64"),
    ("mlp_image", dict(task="pentomino", L=6, gamma="lazy", width=32, steps=50, seed=2,
                       blur=0.0),
     "L=6,alpha0=None,batch_size=128,blur=0.0,eval_every=1000,gamma=1e-05,image_width=2,"
     "init='normal',n_patches=None,n_test=1024,patch=None,seed=2,steps=50,task='pentomino',"
     "task_seed=2373715137729218579,width=32"),
    ("theory", dict(L=4), "L=4"),
    ("walkers", dict(L=4, batch_size=8, n_iters=100),
     "L=4,batch_size=8,n_iters=100,n_walkers=100,readout=1,seed=0,walker_offset=0"),
    ("walkers", dict(L=16, batch_size=3, n_iters=10, readout=-1, n_walkers=7, seed=5,
                     walker_offset=2),
     "L=16,batch_size=3,n_iters=10,n_walkers=7,readout=-1,seed=5,walker_offset=2"),
    ("lazy_limit", dict(d=4, L=6),
     "L=6,alpha0=None,d=4,eval_every=1000,kernel='ntk',method='logistic_flow',n_test=1024,"
     "pairs='all',ridge=1e-08,seed=0,solver='auto',steps=25000,task_seed=5943342328143077755"),
    ("lazy_limit", dict(d=8, L=5, method="regression", kernel="nngp", pairs=10, seed=1,
                        steps=100, solver="kron", dtype="float64"),
     "L=5,alpha0=None,d=8,eval_every=1000,kernel='nngp',method='regression',n_test=1024,"
     "pairs=10,ridge=1e-08,seed=1,solver='kron',steps=100,task_seed=8919696879992267851"),
    ("lazy_limit", dict(d=8, L=5, solver="kron", dtype="float32", alpha0=0.2, ridge=0.0),
     "L=5,alpha0=0.2,d=8,dtype='float32',eval_every=1000,kernel='ntk',method='logistic_flow',"
     "n_test=1024,pairs='all',ridge=0.0,seed=0,solver='kron',steps=25000,"
     "task_seed=2105886662135525812"),
    ("bayes", dict(d=4, L=3, sigma2=0.5),
     "L=3,d=4,n_test=20000,prior='generalizing',seed=0,sigma2=0.5,task_seed=486523371622536507"),
    ("bayes", dict(d=8, L=16, sigma2=0.0, prior="memorizing", n_test=100, seed=2, task_seed=9),
     "L=16,d=8,n_test=100,prior='memorizing',seed=2,sigma2=0.0,task_seed=9"),
    ("weight_structure", dict(d=16, L=4, model="rich", width=64, steps=100, eval_every=50),
     "L=4,d=16,eval_every=50,model='rich',seed=0,steps=100,width=64"),
    ("weight_images", dict(task="PSVRT", model="lazy", width=64, steps=100, eval_every=50,
                           seed=1),
     "eval_every=50,model='lazy',seed=1,steps=100,task='PSVRT',width=64"),
    ("max_margin", dict(d=8, L=4, P=10), "L=4,P=10,d=8"),
]

#: The pinned cells of the predictors whose settings are one spec (``Predictor.spec``).
KEYED = [case for case in PINNED if PREDICTORS[case[0]].spec is not None]


def test_every_predictor_has_a_pinned_cell():
    assert {name for name, _, _ in PINNED} == set(PREDICTORS)


@pytest.mark.parametrize("name, settings, key", PINNED,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(PINNED)])
def test_the_keys_of_stored_cells_are_those_before_always_keyed(name, settings, key):
    pred = PREDICTORS[name]
    assert pred.key(pred.prepare(settings)) == key
    if name == "mlp":
        assert Cell(**settings).key == key


def _grown(spec, param):
    """``spec`` with ``param`` added, as a new fastsd release would add it."""
    return Spec(*spec.values(), param, always_keyed=spec.always_keyed)


NEW = Param("new_setting", "float", "a setting added after the stores were written", 0.5,
            positive=True)


@pytest.mark.parametrize("name, settings, key", KEYED,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(KEYED)])
def test_a_setting_added_with_a_default_leaves_every_key_unchanged(name, settings, key):
    pred = PREDICTORS[name]
    grown = _grown(pred.spec, NEW)
    prepared = pred.prepare(settings)
    assert settings_key(grown.keyed({**prepared, "new_setting": 0.5})) == key
    other = settings_key(grown.keyed({**prepared, "new_setting": 2.0}))
    assert other != key and "new_setting=2.0" in other.split(",")
    assert other.replace(",new_setting=2.0", "").replace("new_setting=2.0,", "") == key


@pytest.mark.parametrize("name", ["lazy_limit", "bayes", "weight_structure", "weight_images",
                                  "max_margin"])
def test_a_store_written_before_a_setting_existed_still_names_its_cells(tmp_path, name):
    """The grown predictor (a release with one more parameter) reads the old store's records
    as its cells: the setting it fills in at its default leaves their keys as stored."""
    pred = PREDICTORS[name]
    grown = type(f"Grown{type(pred).__name__}", (type(pred),), {"spec": _grown(pred.spec, NEW)})()
    assert grown.defaults["new_setting"] == 0.5
    path = tmp_path / "old.jsonl"
    old = []
    for case, settings, key in KEYED:
        if case == name:
            prepared = pred.prepare(settings)
            old.append(dict({n: 0.75 for n in pred.numbers}, key=key, predictor=name,
                            settings=prepared))
            assert grown.key(grown.prepare(settings)) == key
            changed = grown.key(grown.prepare(dict(settings, new_setting=1.5)))
            assert "new_setting=1.5" in changed and changed != key
    path.write_text("".join(json.dumps(r) + "\n" for r in old))
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # a record taken for damage warns
        assert [r["key"] for r in cell_records(ResultStore(path), grown)] == \
            [r["key"] for r in old]


def test_always_keyed_names_the_settings_in_the_key_from_the_start():
    # every MLP setting from the start but eval_at (issue 44) and activation (issue 52);
    # dtype, eval_at and activation added later to LAZY_LIMIT
    assert set(MLP.always_keyed) == set(MLP) - {"eval_at", "activation"}
    assert "dtype" in LAZY_LIMIT and "dtype" not in LAZY_LIMIT.always_keyed
    assert set(LAZY_LIMIT.always_keyed) == set(LAZY_LIMIT) - {"dtype", "eval_at", "activation"}
    for pred in PREDICTORS.values():
        if pred.spec is not None:
            assert pred.spec.always_keyed, pred.name
            assert isinstance(pred.spec.always_keyed, tuple)


def test_a_spec_without_always_keyed_keys_only_what_is_off_its_default():
    p, q = Param("k", "int", "k", 3), Param("t", "int", "t")
    spec = Spec(p, q)
    assert spec.always_keyed == ()
    assert spec.keyed({"k": 3, "t": 1, "other": 0}) == {"t": 1, "other": 0}
    assert spec.keyed({"k": 4, "t": 1}) == {"k": 4, "t": 1}
    assert Spec(p, q, always_keyed=("k",)).keyed({"k": 3, "t": 1}) == {"k": 3, "t": 1}
    with pytest.raises(ValueError, match="`always_keyed` must name this spec's settings; got "
                                         "'x', which is none of k, t"):
        Spec(p, q, always_keyed=("k", "x"))


def test_a_training_setting_added_leaves_the_mlp_image_keys_unchanged(monkeypatch):
    from fastsd.params import TRAINING
    from fastsd.scan.predictors import MLPImagePredictor

    monkeypatch.setitem(TRAINING, "new_setting", NEW)       # as fastsd.params would declare it
    monkeypatch.setitem(MLP, "new_setting", NEW)
    shared = ("L", "gamma", "seed", *TRAINING, "task_seed")
    grown = type("GrownMLPImagePredictor", (MLPImagePredictor,), {
        "_SHARED": shared, "defaults": {**MLPImagePredictor.defaults, "new_setting": 0.5}})()
    for name, settings, key in PINNED:
        if name == "mlp_image":
            assert grown.prepare(settings)["new_setting"] == 0.5
            assert grown.key(grown.prepare(settings)) == key
