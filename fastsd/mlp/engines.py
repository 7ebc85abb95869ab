"""The engines that train an ensemble: one per path (and L, on the symbol path).

``build_engines`` is the one place where ``train_ensemble``'s models become a
backend's engines (``fastsd.mlp._cpu``, ``_cuda``, ``_numpy``: ``ENGINES``), for
the trainer and for the cost model's timings (``fastsd.mlp.calibration.step_timer``).
"""
import numpy as np

from .. import _philox


def build_engines(module, tasks, paths, params0, scales, lrs, dtype, device_sources=None,
                  activation=None):
    """One engine of the backend ``module`` per path (and L, on the symbol path).

    Parameters
    ----------
    module : module
        The backend's engine module, with ``ENGINES`` {path: class} ("dense", and
        "symbol" and "sparse" where it has them).
    tasks : list of fastsd.tasks.Task
        One per model, with one input dimension.
    paths : list of {"dense", "symbol", "sparse"}
        Each model's path, resolved (not "auto").
    params0 : list of fastsd.mlp.model.Params
        Each model's initial weights.
    scales, lrs : list of float
        Each model's output scale 1/(gamma sqrt(d)) and learning rate gamma^2 d alpha0.
    dtype : {"float32", "float64"}
    device_sources : (streams, noise), optional
        For batches drawn on the GPU: each model's streams (``fastsd._rng.train_streams``)
        and noise sources, which key its on-device generators (Philox). None: batches come
        from the host.
    activation : fastsd.activations.Activation, optional
        The hidden units' activation; None: ReLU. An engine that trains another one has
        ``any_activation`` true and takes it as ``activation=``; the others train ReLU only.

    Returns
    -------
    list of (list of int, engine)
        The models each engine trains (indices into ``tasks``), in order of first model.

    Raises
    ------
    ValueError
        Naming ``activation``, where a path's engine trains ReLU only (``train_ensemble``
        refuses it before this, naming the paths that take it).
    """
    relu = activation is None or activation.name == "relu"
    groups = {}
    for k, (t, pth) in enumerate(zip(tasks, paths)):
        key = ("symbol", t.L) if pth == "symbol" else (pth,)
        groups.setdefault(key, []).append(k)
    engines = []
    for key, idx in groups.items():
        args = ([tasks[k] for k in idx], [params0[k] for k in idx], [scales[k] for k in idx],
                [lrs[k] for k in idx], dtype)
        cls = module.ENGINES[key[0]]
        kw = {} if relu else {"activation": activation}
        if not (relu or getattr(cls, "any_activation", False)):
            raise ValueError(f"`activation` must be 'relu' on the {key[0]!r} path of "
                             f"{module.__name__}; got {activation.name!r}.")
        if device_sources is not None:
            # Philox keys: the pairs' from the model's pairs stream; the noise's that of its
            # NormalStream, so that the GPU draws the noise the host would (none if clean)
            streams, noise = device_sources
            keys = [[_philox.keys(streams[k]["pairs"].integers(2**64, dtype=np.uint64)),
                     getattr(noise[k], "key", np.zeros(2, np.uint64))] for k in idx]
            engines.append((idx, cls(*args, device_keys=keys, **kw)))
        else:
            engines.append((idx, cls(*args, **kw)))
    return engines
