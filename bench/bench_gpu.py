#!/usr/bin/env python
"""GPU benchmark: SGD model-steps per second of 1-, 16- and 64-model ensembles, and roofline.

Measured side by side in one run, best of ``--repeats``, on one GPU:

* fastsd ``backend="cuda"``, dense path (batched cuBLAS GEMMs through CuPy,
  Numba-CUDA fused kernels), batches drawn on the device;
* fastsd ``backend="cuda"``, symbol-basis path, batches on the device;
* PyTorch CUDA eager: the M models' losses in a Python loop, one backward
  of their sum, one SGD step over all parameters;
* PyTorch ``torch.func``: ``vmap(grad(loss))`` over the stacked ensemble.

All train the same model (the centered MLP f~ = f(x; theta) - f(x; theta0),
f = (1/(gamma sqrt d)) sum_i a_i relu(w_i . x), BCE, plain SGD, float32) on
the same task shape: d = 256 (inputs p = 512), m = 1024, batch 128, L = 16
clean symbols, pairs drawn on the GPU in every method.

Roofline: the FLOP/s of fastsd's per-step GEMMs (X dw^T and X^T G, timed
alone) as a fraction of the FP32 peak, and the bytes/s of its fused kernels
(``forward_backward`` + ``readout_update``, timed alone; bytes counted as the
arrays they must read and write once) as a fraction of peak bandwidth. Both
peaks are given as the datasheet-style figure from the device's attributes
and as measured here (a large SGEMM; a device-to-device copy).

Run from the repository root on a GPU machine::

    python bench/bench_gpu.py [--out bench/out/bench_gpu.jsonl]

It prints a table and appends JSON lines to ``--out``. This is a benchmark,
not a test: it asserts nothing about speed.
"""
import argparse
import datetime
import json
import math
import os
import sys
import time
import uuid

if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
    sys.exit("bench_gpu: NUMBA_ENABLE_CUDASIM is set; unset it to measure the GPU")
os.environ["NUMBA_ENABLE_CUDASIM"] = "0"

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, HERE]

D, WIDTH, BATCH, L_SYMBOLS = 256, 1024, 128, 16
MODELS = (1, 16, 64)
GAMMA, ALPHA0 = 1.0, 0.1
# FP32 lanes per SM by compute capability (CUDA C programming guide, arithmetic throughput)
FP32_LANES = {(7, 0): 64, (8, 0): 64, (9, 0): 128}
PEERS = {"torch eager": "speedup_vs_torch_eager", "torch.func vmap": "speedup_vs_torch_vmap"}


# ---------------------------------------------------------------- device ---
def _event_time(fn, reps):
    """Seconds per call of fn, timed with CUDA events around ``reps`` calls."""
    import cupy
    fn()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for _ in range(reps):
        fn()
    stop.record()
    stop.synchronize()
    return cupy.cuda.get_elapsed_time(start, stop) / 1e3 / reps


def device_info():
    """Name, attributes, datasheet-style peaks and measured peaks of GPU 0."""
    import cupy
    props = cupy.cuda.runtime.getDeviceProperties(0)
    cc = (props["major"], props["minor"])
    sms = props["multiProcessorCount"]
    lanes = FP32_LANES.get(cc, 128)
    info = dict(name=props["name"].decode() if isinstance(props["name"], bytes) else props["name"],
                compute_capability=f"{cc[0]}.{cc[1]}", sms=sms, fp32_lanes_per_sm=lanes,
                memory_gib=props["totalGlobalMem"] / 2**30)
    clock_khz = props.get("clockRate", 0)
    mem_khz = props.get("memoryClockRate", 0)
    bus = props.get("memoryBusWidth", 0)
    info["peak_fp32_flops_attr"] = 2.0 * sms * lanes * clock_khz * 1e3 if clock_khz else None
    info["peak_bandwidth_attr"] = 2.0 * mem_khz * 1e3 * bus / 8 if mem_khz and bus else None
    a = cupy.ones((8192, 8192), cupy.float32)
    c = cupy.empty_like(a)
    t = min(_event_time(lambda: cupy.matmul(a, a, out=c), 5) for _ in range(3))
    info["measured_sgemm_flops"] = 2.0 * 8192**3 / t
    big = cupy.ones(2**28, cupy.float32)             # 1 GiB
    dst = cupy.empty_like(big)
    t = min(_event_time(lambda: dst.__setitem__(Ellipsis, big), 5) for _ in range(3))
    info["measured_copy_bandwidth"] = 2.0 * big.nbytes / t
    return info


def software_info():
    vers = {}
    for mod in ("numpy", "numba", "cupy", "torch", "fastsd"):
        try:
            vers[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - optional packages
            vers[mod] = None
    try:
        import numba_cuda
        vers["numba_cuda"] = numba_cuda.__version__
    except Exception:  # noqa: BLE001
        vers["numba_cuda"] = None
    return vers


# ---------------------------------------------------------------- fastsd ---
def fastsd_engine(path, M):
    """A fastsd CUDA engine of M models, as ``train_ensemble`` builds it."""
    import fastsd
    from fastsd import _philox
    from fastsd._rng import train_streams
    from fastsd.mlp import _cuda
    from fastsd.mlp.model import init_params
    task = fastsd.SameDifferent(d=D, L=L_SYMBOLS, seed=0)
    streams = [train_streams(k) for k in range(M)]
    params = [init_params(st["init"], WIDTH, 2 * D) for st in streams]
    keys = [[_philox.keys([k])[0], _philox.keys([k + 1000])[0]] for k in range(M)]
    cls = _cuda.DenseEngine if path == "dense" else _cuda.SymbolEngine
    return cls([task] * M, params, [task.output_scale(GAMMA)] * M,
               [task.learning_rate(GAMMA, ALPHA0)] * M, "float32", device_keys=keys)


def fastsd_runner(path, M):
    eng = fastsd_engine(path, M)
    info = {"path": path}

    def run(n):
        t = time.perf_counter()
        loss, _ = eng.run_device(n, BATCH)          # returns host arrays: synchronised
        info["final_train_loss"] = float(loss[:, -1].mean())
        return time.perf_counter() - t
    return run, info, eng


def roofline(eng, reps=50):
    """Achieved FLOP/s of the dense path's GEMMs and bytes/s of its fused kernels."""
    xp = eng.xp
    M, p, m = eng.w0T.shape
    B = BATCH
    eng.run_device(2, B)                             # the buffers exist after a step
    X, h0, dh, G = (eng._scratch[k] for k in ("X", "h0", "dh", "G"))
    tmp = eng._scratch["dwT_step"]
    Y = eng._scratch["Y"]

    def gemms():
        xp.matmul(X, eng.dwT, out=dh)
        xp.matmul(X.transpose(0, 2, 1), G, out=tmp)

    t_gemm = min(_event_time(gemms, reps) for _ in range(3))
    flops = 2 * (2.0 * M * B * p * m)

    def fused():
        eng._forward_backward(h0, dh, Y, 0)

    t_fused = min(_event_time(fused, reps) for _ in range(3))
    item = eng.dtype.itemsize
    # forward_backward: read h0, dh, a0, da; write dh, G. readout_update: read h, write da.
    fused_bytes = item * (5 * M * B * m + 4 * M * m) + 8 * 4 * M * B
    return dict(gemm_seconds=t_gemm, gemm_flops=flops, gemm_flops_per_s=flops / t_gemm,
                fused_seconds=t_fused, fused_bytes=fused_bytes,
                fused_bytes_per_s=fused_bytes / t_fused)


# ----------------------------------------------------------------- torch ---
def torch_setup(M):
    import torch
    dev = torch.device("cuda")
    g = torch.Generator(device="cpu").manual_seed(0)
    p = 2 * D
    S = (torch.randn(L_SYMBOLS, D, generator=g) / math.sqrt(D)).to(dev)
    W0 = (torch.randn(M, WIDTH, p, generator=g) / math.sqrt(WIDTH)).to(dev)
    a0 = (torch.randn(M, WIDTH, generator=g) / math.sqrt(WIDTH)).to(dev)
    y = torch.zeros(M, BATCH, device=dev)
    y[:, : BATCH // 2] = 1.0
    scale = 1.0 / (GAMMA * math.sqrt(D))
    lr = GAMMA**2 * D * ALPHA0
    return torch, dev, S, W0, a0, y, scale, lr


def _torch_batch(torch, dev, S, y):
    M = y.shape[0]
    u = torch.randint(0, L_SYMBOLS, (M, BATCH), device=dev)
    off = torch.randint(1, L_SYMBOLS, (M, BATCH), device=dev)
    v = torch.where(y > 0.5, u, (u + off) % L_SYMBOLS)
    return torch.cat([S[u], S[v]], dim=2)            # (M, B, p)


def torch_eager_runner(M):
    torch, dev, S, W0, a0, y, scale, lr = torch_setup(M)
    Ws = [W0[k].clone().requires_grad_(True) for k in range(M)]
    As = [a0[k].clone().requires_grad_(True) for k in range(M)]
    opt = torch.optim.SGD(Ws + As, lr=lr)
    bce = torch.nn.functional.binary_cross_entropy_with_logits

    def step():
        X = _torch_batch(torch, dev, S, y)
        opt.zero_grad(set_to_none=True)
        total = 0.0
        for k in range(M):
            f = (torch.relu(X[k] @ Ws[k].T) @ As[k] - torch.relu(X[k] @ W0[k].T) @ a0[k]) * scale
            total = total + bce(f, y[k])
        total.backward()
        opt.step()
        return total

    return _torch_run(torch, step)


def torch_vmap_runner(M):
    torch, dev, S, W0, a0, y, scale, lr = torch_setup(M)
    from torch.func import grad, vmap
    W, a = W0.clone(), a0.clone()
    bce = torch.nn.functional.binary_cross_entropy_with_logits

    def loss(W, a, W0, a0, X, y):
        f = (torch.relu(X @ W.T) @ a - torch.relu(X @ W0.T) @ a0) * scale
        return bce(f, y)

    grads = vmap(grad(loss, argnums=(0, 1)))

    def step():
        X = _torch_batch(torch, dev, S, y)
        gW, ga = grads(W, a, W0, a0, X, y)
        W.sub_(lr * gW)
        a.sub_(lr * ga)
        return W

    return _torch_run(torch, step)


def _torch_run(torch, step):
    info = {"torch": torch.__version__}

    def run(n):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            step()
        torch.cuda.synchronize()
        return time.perf_counter() - t
    return run, info, None


# ------------------------------------------------------------------ main ---
def calibrate(run, target_s, max_steps):
    """Steps n so that run(n) takes about target_s (after a warm-up of 3 steps)."""
    run(3)
    n = 4
    while True:
        el = run(n)
        if el >= target_s / 4 or n >= max_steps:
            return max(4, min(max_steps, int(n * target_s / max(el, 1e-9))))
        n *= 4


def measure(M, repeats, target):
    """The four methods' rows for an ensemble of M models, interleaved, best of ``repeats``."""
    methods = [("fastsd cuda dense", lambda: fastsd_runner("dense", M)),
               ("fastsd cuda symbol", lambda: fastsd_runner("symbol", M)),
               ("torch eager", lambda: torch_eager_runner(M)),
               ("torch.func vmap", lambda: torch_vmap_runner(M))]
    runners, errors = {}, {}
    for name, make in methods:
        try:
            run, info, eng = make()
            n = calibrate(run, target, 20000)
            runners[name] = (run, info, eng, n)
        except Exception as exc:  # noqa: BLE001 - a missing peer is reported, not fatal
            errors[name] = f"{type(exc).__name__}: {exc}"
    best = {name: math.inf for name in runners}
    for _ in range(repeats):                         # interleaved, best of repeats
        for name, (run, info, eng, n) in runners.items():
            best[name] = min(best[name], run(n) / n)
    rows = []
    for name, (run, info, eng, n) in runners.items():
        rows.append(dict(method=name, models=M, steps=n, seconds_per_step=best[name],
                         model_steps_per_s=M / best[name], **info))
    for name, err in errors.items():
        rows.append(dict(method=name, models=M, error=err))
    for r in rows:
        for peer, key in PEERS.items():
            p = next((q for q in rows if q["method"] == peer and "error" not in q), None)
            if p is not None and "error" not in r:
                r[key] = r["model_steps_per_s"] / p["model_steps_per_s"]
    return rows, runners


def attach_roofline(ours, eng, dev):
    """Add the dense path's GEMM and fused-kernel fractions of the peaks to its row."""
    roof = roofline(eng)
    for peak_name, key in (("attr", "peak_fp32_flops_attr"),
                           ("measured", "measured_sgemm_flops")):
        if dev.get(key):
            roof[f"gemm_fraction_of_peak_{peak_name}"] = roof["gemm_flops_per_s"] / dev[key]
    for peak_name, key in (("attr", "peak_bandwidth_attr"),
                           ("measured", "measured_copy_bandwidth")):
        if dev.get(key):
            roof[f"fused_fraction_of_peak_{peak_name}"] = roof["fused_bytes_per_s"] / dev[key]
    ours["roofline"] = roof
    print(f"  M={ours['models']}: dense GEMMs {roof['gemm_flops_per_s'] / 1e12:.1f} TFLOP/s = "
          f"{roof.get('gemm_fraction_of_peak_attr', float('nan')):.2f} of the FP32 peak, "
          f"{roof.get('gemm_fraction_of_peak_measured', float('nan')):.2f} of a large SGEMM; "
          f"fused kernels {roof['fused_bytes_per_s'] / 1e9:.0f} GB/s = "
          f"{roof.get('fused_fraction_of_peak_attr', float('nan')):.2f} of peak bandwidth, "
          f"{roof.get('fused_fraction_of_peak_measured', float('nan')):.2f} of a D2D copy")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "out", "bench_gpu.jsonl"))
    ap.add_argument("--models", type=int, nargs="+", default=list(MODELS),
                    help="ensemble sizes (default: 1 16 64)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--target", type=float, default=1.0, help="seconds per measurement")
    args = ap.parse_args(argv)
    if min(args.models) < 1 or args.repeats < 1 or not args.target > 0:
        ap.error("--models and --repeats must be >= 1 and --target > 0")

    run_id = uuid.uuid4().hex[:8]
    stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    from fastsd._dispatch import cuda_unavailable_reason
    reason = cuda_unavailable_reason(needs_cupy=True)
    if reason is not None:
        print(f"bench_gpu: cannot measure: {reason}", file=sys.stderr)
        _write(args.out, [dict(bench="bench_gpu", run_id=run_id, time=stamp, error=reason,
                               software=software_info())])
        return 3
    dev = device_info()
    sw = software_info()
    print(f"{dev['name']} (cc {dev['compute_capability']}, {dev['sms']} SMs); d={D}, m={WIDTH}, "
          f"B={BATCH}, L={L_SYMBOLS}, float32, best of {args.repeats}; measured SGEMM "
          f"{dev['measured_sgemm_flops'] / 1e12:.1f} TFLOP/s, copy "
          f"{dev['measured_copy_bandwidth'] / 1e9:.0f} GB/s", flush=True)
    print(f"{'models':>6}  {'method':<22}{'model-steps/s':>15}{'vs eager':>10}{'vs vmap':>10}")
    for M in args.models:
        rows, runners = measure(M, args.repeats, args.target)
        for r in rows:
            if "error" in r:
                print(f"{M:>6}  {r['method']:<22}  unavailable: {r['error']}")
                continue
            print(f"{M:>6}  {r['method']:<22}{r['model_steps_per_s']:>15.0f}"
                  + "".join(f"{r.get(key, float('nan')):>10.2f}" for key in PEERS.values()))
        ours = next((r for r in rows if r["method"] == "fastsd cuda dense" and "error" not in r),
                    None)
        if ours is not None:
            attach_roofline(ours, runners["fastsd cuda dense"][2], dev)
        sys.stdout.flush()
        _write(args.out, [dict(bench="bench_gpu", run_id=run_id, time=stamp, device=dev,
                               software=sw, d=D, width=WIDTH, batch_size=BATCH, L=L_SYMBOLS,
                               repeats=args.repeats, **r) for r in rows])
    print(f"appended JSON lines to {args.out} (run_id {run_id})")
    return 0


def _write(path, records):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "a") as fh:
        for r in records:
            fh.write(json.dumps(r, default=float) + "\n")


if __name__ == "__main__":
    sys.exit(main())
