"""Weight structure of trained networks (Fig. 1a/1d, App. C.4.3) and its helpers."""
import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

from fastsd import SameDifferent, train
from fastsd.mlp import Params
from fastsd.walkers import alignment, readout_ratio, summary, weight_structure


def fake_result(w0, w, a0, a):
    return SimpleNamespace(initial_params=Params(w=np.asarray(w0, float), a=np.asarray(a0, float)),
                           final_params=Params(w=np.asarray(w, float), a=np.asarray(a, float)),
                           config={"L": 3})


def test_weight_structure_on_known_weights():
    # d = 2: w_i = (v1; v2). Unit 0 parallel, unit 1 antiparallel, unit 2 orthogonal.
    w = [[1, 0, 2, 0], [0, 1, 0, -3], [1, 0, 0, 1]]
    w0 = [[0, 0, 0, 0], [0, 0, 0, 1], [1, 0, 0, 0]]
    a = [0.5, -2.0, 1.5]
    ws = weight_structure(fake_result(w0, w, [0.1, 0.0, 0.5], a))
    np.testing.assert_allclose(ws.alignment, [1, -1, 0], atol=1e-15)
    # changes: (1,0;2,0) parallel, (0,1;0,-4) antiparallel, (0,0;0,1) has a zero half
    np.testing.assert_allclose(ws.alignment_change, [1, -1, np.nan], atol=1e-15)
    np.testing.assert_allclose(ws.norm_ratio, [0.5, 1 / 3, 1.0])
    np.testing.assert_array_equal(ws.readout, a)
    assert ws.readout_ratio == pytest.approx(2.0 / 1.0)           # |mean a-| / |mean a+|
    assert ws.readout_ratio_change == pytest.approx(2.0 / 0.7)   # from a - a0 = (.4, -2, 1)
    rec = json.loads(json.dumps(ws.to_record(), allow_nan=False))
    assert rec["alignment_change"][2] is None and rec["config"] == {"L": 3}
    assert rec["alignment_negative"] == {"mean": -1.0, "two_sd": None, "n_runs": 1}


def test_rich_network_units_align_with_their_readout_sign():
    # Fig. 1a: in the rich regime, a > 0 units become parallel, a < 0 antiparallel
    r = train(SameDifferent(d=32, L=8, seed=0), 1.0, width=64, steps=800, batch_size=64,
              eval_every=800, n_test=64, seed=1, backend="cpu")
    ws = weight_structure(r)
    pos, neg = ws.readout > 0, ws.readout < 0
    assert np.mean(ws.alignment_change[pos]) > 0.5
    assert np.mean(ws.alignment_change[neg]) < -0.5


def test_helpers():
    assert math.isnan(readout_ratio([1.0, 2.0]))
    assert readout_ratio([-3.0, -1.0, 1.0, 0.0]) == pytest.approx(2.0)
    np.testing.assert_allclose(alignment([[3, 4]], [[-6, -8]]), [-1.0])
    s = summary([1.0, np.nan, 3.0])
    assert s == {"mean": 2.0, "two_sd": pytest.approx(2 * math.sqrt(2)), "n_runs": 2}
    assert math.isnan(summary([np.nan])["mean"])


def test_bad_inputs():
    with pytest.raises(TypeError, match=r"`result` must be a TrainResult"):
        weight_structure(np.zeros(3))
    with pytest.raises(ValueError, match=r"even input length 2d\); got input length 3"):
        weight_structure(fake_result(np.zeros((2, 3)), np.ones((2, 3)), [0, 0], [1, -1]))
    with pytest.raises(ValueError, match=r"`result.final_params.w` must be finite"):
        weight_structure(fake_result(np.zeros((2, 4)), np.full((2, 4), np.nan), [0, 0], [1, -1]))
