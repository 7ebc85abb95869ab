#!/usr/bin/env python
"""Benchmark: model-steps per second on the visual tasks (PSVRT, Pentomino), against the peers.

The four cells of Fig. 3 that issue 29 names, m = 512, B = 128, float32:

=================  ======  ==============
cell               p       non-zeros
=================  ======  ==============
PSVRT 5 x 5        625     ~50 an image
PSVRT 10 x 10      2500    ~50
Pentomino w = 2    196     ~46
Pentomino w = 8    3136    ~47
=================  ======  ==============

Rows, side by side and interleaved (``bench_train.prepare`` / ``interleave``):

* ``fastsd-auto`` / ``fastsd-dense``: ``fastsd.train`` of one model (auto path, and
  the dense path for reference), images drawn and rendered inside the run;
* ``fastsd-ens6-auto``: ``fastsd.train_ensemble`` of one seed's 6 gammas (the group
  a Fig. 3 cell trains), which draws each step's images once for all 6;
* ``jax-jit`` / ``jax-vmap6``: one ``jax.jit`` step (forward, grad, SGD) of one model,
  and of 6 models under ``jax.vmap`` on a shared batch;
* ``torch-eager`` / ``torch-eager-ens6``: PyTorch autograd + ``torch.optim.SGD``, one
  model, and 6 stacked models (batched matmuls) on a shared batch.

The peers get their images pre-generated (``POOL`` batches rendered by the same
task, float32, cycled), so only the training is timed on their side; fastsd's
rows count the image generation (the strictest comparison). The model is that
of the image tasks (App. G.3-G.4): centered, output scale 1/gamma, lr =
gamma^2 alpha0 with alpha0 = 0.5.

Run from the repository root::

    python bench/bench_images.py --threads 1     # one pinned CPU for every library
    python bench/bench_images.py --threads 1 --quick

It prints a table with the ratio of each row to ``jax-jit`` (one model) or
``jax-vmap6`` (ensembles) and appends JSON lines to
``bench/out/bench_images.jsonl``. A benchmark, not a test: it asserts nothing.
"""
import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_train as bt  # noqa: E402  (applies --threads before numpy loads)

import numpy as np  # noqa: E402

WIDTH = 512
BATCH = 128
ALPHA0 = 0.5
GAMMA = 1.0
ENSEMBLE_GAMMAS = [1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0]
POOL = 16
#: cell name -> (task class name, keyword arguments)
CELLS = {
    "psvrt-5x5": ("PSVRT", dict(patch=5, n_patches=5, n_train_patterns=1024, seed=0)),
    "psvrt-10x10": ("PSVRT", dict(patch=5, n_patches=10, n_train_patterns=1024, seed=0)),
    "pentomino-w2": ("Pentomino", dict(width=2, n_train_shapes=14, blur=0.5, seed=0)),
    "pentomino-w8": ("Pentomino", dict(width=8, n_train_shapes=14, blur=0.5, seed=0)),
}
E = len(ENSEMBLE_GAMMAS)


def make_task(cell):
    import fastsd
    name, kw = CELLS[cell]
    return getattr(fastsd, name)(**kw)


def image_pool(cell):
    """``POOL`` training batches of the cell's task, float32, shape (POOL, B, p)."""
    task = make_task(cell)
    rng = np.random.default_rng(1)
    batches = []
    for _ in range(POOL):
        u, v, _y = task.draw_pairs(rng, (BATCH,))
        batches.append(task.training_inputs(u, v, rng))
    return np.asarray(batches, np.float32)


def labels():
    y = np.zeros(BATCH, np.float32)
    y[: BATCH // 2] = 1.0         # draw_pairs: the first half of a batch are same pairs
    return y


def fastsd_runner(cell, *, path="auto", ensemble=False):
    import fastsd
    task = make_task(cell)
    kw = dict(width=WIDTH, batch_size=BATCH, n_test=128, backend="cpu", path=path)
    info = {}

    def run(n):
        t = time.perf_counter()
        if ensemble:
            res = fastsd.train_ensemble(task, ENSEMBLE_GAMMAS, [1] * E, steps=n, eval_every=n,
                                        **kw)
        else:
            res = [fastsd.train(task, GAMMA, steps=n, eval_every=n, seed=1, **kw)]
        el = time.perf_counter() - t
        info["path"] = sorted({r.config["path"] for r in res})
        return el, n * len(res)

    run(2)
    return run, info


def jax_runner(cell, *, ensemble=False):
    import jax
    import jax.numpy as jnp
    pool = jnp.asarray(image_pool(cell))
    p = pool.shape[2]
    k = E if ensemble else 1
    gammas = jnp.asarray(ENSEMBLE_GAMMAS if ensemble else [GAMMA], jnp.float32)
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    W0 = jax.random.normal(k1, (k, WIDTH, p), jnp.float32) / math.sqrt(p)
    a0 = jax.random.normal(k2, (k, WIDTH), jnp.float32) / math.sqrt(WIDTH)
    sign = jnp.asarray(1.0 - 2.0 * labels())

    def model_step(W, a, W0, a0, gamma, X):
        def loss_fn(W, a):
            f = (jax.nn.relu(X @ W.T) @ a - jax.nn.relu(X @ W0.T) @ a0) / gamma
            return jnp.mean(jax.nn.softplus(sign * f))
        loss, (gW, ga) = jax.value_and_grad(loss_fn, argnums=(0, 1))(W, a)
        lr = gamma ** 2 * ALPHA0
        return W - lr * gW, a - lr * ga, loss

    if ensemble:
        vstep = jax.vmap(model_step, in_axes=(0, 0, 0, 0, 0, None))
        step = jax.jit(lambda W, a, X: vstep(W, a, W0, a0, gammas, X), donate_argnums=(0, 1))
        state = [W0 + 0.0, a0 + 0.0]
    else:
        step = jax.jit(lambda W, a, X: model_step(W, a, W0[0], a0[0], gammas[0], X),
                       donate_argnums=(0, 1))
        state = [W0[0] + 0.0, a0[0] + 0.0]
    xs = [pool[i] for i in range(POOL)]
    info = {}

    def run(n):
        t = time.perf_counter()
        W, a = state
        for i in range(n):
            W, a, loss = step(W, a, xs[i % POOL])
        jax.block_until_ready(loss)
        el = time.perf_counter() - t
        state[:] = [W, a]
        return el, n * k

    run(2)
    return run, info


def torch_runner(cell, *, ensemble=False):
    import torch
    torch.set_num_threads(bt.THREADS or 2)
    pool = torch.from_numpy(image_pool(cell))
    p = pool.shape[2]
    k = E if ensemble else 1
    gammas = torch.tensor(ENSEMBLE_GAMMAS if ensemble else [GAMMA])
    g = torch.Generator().manual_seed(0)
    W0 = torch.randn(k, WIDTH, p, generator=g) / math.sqrt(p)
    a0 = torch.randn(k, WIDTH, 1, generator=g) / math.sqrt(WIDTH)
    W = W0.clone().requires_grad_(True)
    a = a0.clone().requires_grad_(True)
    y = torch.from_numpy(labels()).expand(k, BATCH)
    # SGD at lr = gamma^2 alpha0 a model: the gradient of the sum over models of each
    # model's loss times gamma^2 is each model's own step at lr = alpha0.
    weight = gammas ** 2
    opt = torch.optim.SGD([W, a], lr=ALPHA0)

    def step(X):
        f = ((torch.relu(X @ W.transpose(1, 2)) @ a - torch.relu(X @ W0.transpose(1, 2)) @ a0)
             .squeeze(2) / gammas[:, None])
        losses = torch.nn.functional.binary_cross_entropy_with_logits(
            f, y, reduction="none").mean(1)
        opt.zero_grad(set_to_none=True)
        (losses * weight).sum().backward()
        opt.step()
        return losses

    info = {"threads": torch.get_num_threads()}

    def run(n):
        t = time.perf_counter()
        for i in range(n):
            loss = step(pool[i % POOL])
        float(loss.detach().mean())
        return time.perf_counter() - t, n * k

    run(2)
    return run, info


def build_methods():
    ens = f"ens{E}"
    methods = [
        ("fastsd-auto", "fastsd", lambda c: fastsd_runner(c), 1),
        ("fastsd-dense", "fastsd", lambda c: fastsd_runner(c, path="dense"), 1),
        (f"fastsd-{ens}-auto", "fastsd", lambda c: fastsd_runner(c, ensemble=True), E),
    ]
    notes = []
    try:
        import jax  # noqa: F401
        methods += [("jax-jit", "jax", lambda c: jax_runner(c), 1),
                    (f"jax-vmap{E}", "jax", lambda c: jax_runner(c, ensemble=True), E)]
    except ImportError as exc:
        notes.append(f"JAX not importable ({exc}); skipping jax rows")
    try:
        import torch  # noqa: F401
        methods += [("torch-eager", "torch", lambda c: torch_runner(c), 1),
                    (f"torch-eager-{ens}", "torch", lambda c: torch_runner(c, ensemble=True), E)]
    except ImportError as exc:
        notes.append(f"PyTorch not importable ({exc}); skipping torch rows")
    return methods, notes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="~0.3 s per measurement, 2 repeats")
    ap.add_argument("--repeats", type=bt.positive(int), default=None,
                    help="timed repeats (default 4)")
    ap.add_argument("--target", type=bt.positive(float), default=None,
                    help="seconds per measurement (default 1.5)")
    ap.add_argument("--threads", type=bt.positive(int), default=None,
                    help="threads for every library; --threads 1 also pins the process to "
                         "one CPU (see bench_train.py)")
    ap.add_argument("--cells", default=",".join(CELLS),
                    help="comma-separated cells among %s" % list(CELLS))
    ap.add_argument("--only", default=None, help="comma-separated method names to run")
    ap.add_argument("--out", default=os.path.join(bt.OUT_DIR, "bench_images.jsonl"))
    args = ap.parse_args(argv)
    repeats = args.repeats or (2 if args.quick else 4)
    target = args.target or (0.3 if args.quick else 1.5)
    cells = args.cells.split(",")
    unknown = sorted(set(cells) - set(CELLS))
    if unknown:
        ap.error(f"--cells: unknown {unknown}; valid: {list(CELLS)}")
    settings = [(c,) for c in cells]
    methods, notes = build_methods()
    methods = bt.pick(ap, methods, args.only)
    for note in notes:
        print("note:", note)
    machine = bt.machine_info()
    machine["threads_option"] = bt.THREADS
    print(f"machine: {machine['cpu_count']} CPUs ({machine['cpu_model']}), load "
          f"{os.getloadavg()[0]:.2f}; threads {bt.THREADS}; versions {machine['versions']}")

    def settle_fn():
        return bt.settle(0.2, 5.0, 0.10)

    runners = bt.prepare(settings, methods, target, settle_fn, lambda c: c)
    bt.interleave(runners, settings, methods, repeats, target, settle_fn)

    rows = []
    for (cell,) in settings:
        best = {name: max(rec["meas"], key=lambda x: x["rate"])
                for (name, s), rec in runners.items() if s == (cell,) and rec["meas"]}
        for name, kind, _, count in methods:
            if name not in best:
                continue
            ref = "jax-jit" if count == 1 else f"jax-vmap{E}"
            ratio = best[name]["rate"] / best[ref]["rate"] if ref in best else None
            rec = runners[(name, (cell,))]
            rows.append(dict(cell=cell, method=name, kind=kind, n_models=count,
                             us_per_model_step=1e6 / best[name]["rate"], vs_jax=ratio,
                             reference=ref, measurements=rec["meas"], info=rec["info"]))
    print(f"\n{'cell':14s} {'method':20s} {'us/model-step':>14s} {'vs jax':>8s}  reference")
    for row in rows:
        r = "-" if row["vs_jax"] is None else f"{row['vs_jax']:.2f}x"
        print(f"{row['cell']:14s} {row['method']:20s} {row['us_per_model_step']:14.1f} "
              f"{r:>8s}  {row['reference']}")
    print(f"\n(best of {repeats} interleaved repeats; m = {WIDTH}, B = {BATCH}, float32; the "
          f"peers on {POOL} pre-generated batches, fastsd drawing its own images)")
    bt.write_rows(args.out, "bench_images", rows, repeats=repeats, target_s=target,
                  notes=notes, machine=machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
