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


def _width_example():
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).parents[1] / "examples" / "lazy_width.py"
    spec = importlib.util.spec_from_file_location("lazy_width", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("argv, message", [
    (["--seeds", "0", "0"], "--seeds must be distinct integers >= 0; got 0 0"),
    (["--seeds", "-1"], "--seeds must be distinct integers >= 0; got -1"),
    (["--steps", "0"], "--steps must be an integer >= 1; got 0"),
    (["--eval-every", "0"], r"--eval-every must be an integer in \[1, --steps = 1000\]; got 0"),
    (["--widths", "0", "64"], "--widths must be integers >= 1; got 0 64"),
    (["--report-only", "--out", "/nonexistent/x.jsonl"], "--report-only reports the runs in "
                                                         "--out, which does not exist")])
def test_the_width_example_refuses_bad_arguments_before_running(argv, message, monkeypatch,
                                                                capsys):
    import re
    ex = _width_example()
    monkeypatch.setattr(ex, "run", lambda *a: pytest.fail("ran"))
    monkeypatch.setattr("sys.argv", ["lazy_width.py", "--quick", *argv])
    with pytest.raises(SystemExit) as stop:
        ex.main()
    assert stop.value.code == 2
    assert re.search(message, capsys.readouterr().err)


def test_the_width_example_json_is_one_object(tmp_path, monkeypatch, capsys):
    import json
    ex = _width_example()
    monkeypatch.setattr(ex, "run", lambda key, args: {
        "d": key[0], "L": key[1], "seed": key[2], "what": key[3], "steps": args.steps,
        "eval_every": args.eval_every, "dtype": "float64" if isinstance(key[3], str) else
        args.dtype, "best_test_accuracy": 0.5, "test_accuracy": [0.5], "wall_s": 0.0,
        "predictions": [1.0, -1.0] if isinstance(key[3], str) else [1.0 + 1 / key[3], -1.0]})
    monkeypatch.setattr("sys.argv", ["lazy_width.py", "--quick", "--json",
                                     "--out", str(tmp_path / "w.jsonl")])
    ex.main()
    out = json.loads(capsys.readouterr().out)           # nothing but the one object
    assert len(out["rows"]) == 2 * 3 and {f["reference"] for f in out["fits"]} == {"sgd", "flow"}
    # the gap here is 1/m over an RMS logit of 1: the fitted exponent is -1
    assert all(abs(f["b"] + 1) < 1e-9 for f in out["fits"])


def test_the_limits_first_step_is_the_kernel_mean_difference_and_generalizes_early():
    """The exact limit's logistic flow starts as the kernel mean-difference classifier,
    sign(mean over same training pairs of K(x, .) - mean over different ones), computed here
    from ntk() on the raw vectors: its logits after one step correlate with it to 1e-4. With
    16 symbols at d = 128 that classifier is far better than chance on fresh symbols, and the
    flow's test accuracy then falls as it fits the training pairs: the best over a history
    depends on how early it is evaluated (the L*(d) of App. G.1's protocol, evaluations every
    1000 steps, is read after the fall)."""
    from fastsd.kernels import ntk

    task = SameDifferent(d=128, L=16, seed=3)
    S = task.symbols
    u, v = (a.ravel() for a in np.meshgrid(np.arange(16), np.arange(16), indexing="ij"))
    same = u == v
    xt, yt = task.sample_test(512, seed=7)
    K = np.asarray(ntk(xt, np.concatenate([S[u], S[v]], axis=1)))
    mean_difference = K[:, same].mean(axis=1) - K[:, ~same].mean(axis=1)
    one = lazy_limit(task, "logistic_flow", steps=1, eval_every=1, n_test=64, seed=0,
                     test_x=xt, backend="cpu")
    assert np.corrcoef(mean_difference, one.predictions)[0, 1] > 1 - 1e-4
    assert ((mean_difference > 0) == (yt > 0.5)).mean() > 0.85
    r = lazy_limit(task, "logistic_flow", steps=60, eval_every=5, n_test=1024, seed=0,
                   backend="cpu")
    acc = r.history["test_accuracy"]
    assert acc[0] > 0.85 and acc[-1] < acc[0] - 0.2
