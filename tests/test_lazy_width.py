"""Finite lazy networks converge to the exact lazy limit as the width grows (issue 28).

The network at gamma = 1e-5/sqrt(d) is linear in its weights about initialisation; its
tangent kernel fluctuates about the limit's NTK by O(1/sqrt(m)), and so do its logits
about the limit's on the same symbols, test pairs and batches (``logistic_sgd``).
examples/lazy_width.py measures it over d = 64..256 and m up to 65536.
"""
import math

import numpy as np
import pytest

from fastsd import SameDifferent, train
from fastsd.kernels import lazy_limit


@pytest.mark.parametrize("method", ["logistic_sgd", "logistic_flow"])
def test_the_logit_gap_to_the_limit_falls_like_one_over_root_width(method):
    task = SameDifferent(d=16, L=24, seed=0)
    xt, _ = task.sample_test(256, seed=5)
    kw = dict(steps=600, eval_every=300, n_test=256, seed=1)
    lim = lazy_limit(task, method, test_x=xt, backend="cpu", **kw).predictions
    gaps = {}
    for m in (256, 1024, 4096):
        f = train(task, "lazy", width=m, **kw).predict(xt)
        gaps[m] = math.sqrt(np.mean((f - lim) ** 2) / np.mean(lim ** 2))
    slope = np.polyfit(np.log(list(gaps)), np.log(list(gaps.values())), 1)[0]
    assert gaps[256] > gaps[1024] > gaps[4096]
    assert -0.7 < slope < -0.35, gaps               # 1/sqrt(m): -0.5
