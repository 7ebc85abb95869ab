#!/usr/bin/env bash
# One unattended session on a borrowed GPU, under 9 minutes, no internet needed.
#
#   OUT=/some/dir bash bench/gpu.sh        # default OUT: bench/out/gpu-<UTC time>
#
# From the repository root's parent or anywhere: it cds to the repository.
# Steps, each under a timeout taken from one overall budget (BUDGET_S, default 540 s); ONLY="a b"
# runs only the named steps (env always runs): tests bench fig1c fig1c-full fig3 lazy-kron.
#   1. environment: nvidia-smi, python, numpy/numba/cupy/numba-cuda/torch, what sees a GPU
#      -> $OUT/gpu_env.json;
#   2. if CuPy or Numba-CUDA is missing: pip install from local wheels ($WHEELS, default
#      ./wheels) with --no-index, then (short timeout) from the index; the outcome is logged
#      and a missing package is reported, never silently skipped (SKIP_INSTALL=1: no pip);
#   3. tests: the CUDA tests on the device (NUMBA_ENABLE_CUDASIM=0: tests/test_cuda.py, and the
#      "cuda" cases of the walkers' and the backend registry's tests, whose walker loop is
#      shared with the CPU through _jitcache.jitable) -> $OUT/gpu_tests.log;
#   4. bench: bench/bench_gpu.py (1-, 16- and 64-model ensembles, d=256, m=1024: model-steps/s
#      against PyTorch CUDA eager and torch.func vmap, roofline fractions)
#      -> $OUT/bench_gpu.jsonl, .txt;
#   5. fig1c: Fig. 1c quick on backend "cuda" (and, beside it in the background, on "cpu" for
#      the comparison) -> $OUT/fig1c-{cuda,cpu}.json and their records;
#   6. fig1c-full: the full Fig. 1c (180 cells x 25k steps) on "cuda" with its wall time
#      -> $OUT/fig1c-full-cuda.json;
#   7. lazy-kron: the exact lazy limit's flow by solver "kron" on "cuda" at L = 2048 and 4096
#      (d = 256, 25k steps: issue 17's GPU timings) -> $OUT/bench_kron_cuda.txt, .jsonl;
#   8. fig3: one Fig. 3 cell on the sparse path (6 gammas; PSVRT 5 x 5 and Pentomino width 8)
#      on "cuda", and beside it in the background on "cpu" (bench/gpu_fig3_cell.py)
#      -> $OUT/gpu_fig3_cell.jsonl;
#   9. $OUT/gpu_summary.json: each step's exit status and time, what was missing, and the
#      cuda-vs-cpu Fig. 1c table differences.
# The host-side comparisons run beside the GPU's on CPU_THREADS threads each (default: a
# third of the cores), so that the process driving the GPU keeps cores of its own.
set -u
set -f   # no globbing: package names like numba-cuda[cu12] pass through as written
cd "$(dirname "$0")/.." || exit 1
REPO=$(pwd)
OUT=${OUT:-$REPO/bench/out/gpu-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
BUDGET_S=${BUDGET_S:-540}
WHEELS=${WHEELS:-$REPO/wheels}
START=$(date +%s)
export NUMBA_ENABLE_CUDASIM=0
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
STEPS="$OUT/steps.tsv"
ONLY=${ONLY:-}
CPU_THREADS=${CPU_THREADS:-$(( $(nproc) / 3 > 1 ? $(nproc) / 3 : 1 ))}
want() { [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]; }
: > "$STEPS"

left() {   # seconds left in the budget, capped at $1, at least 5
    local l=$(( BUDGET_S - ($(date +%s) - START) ))
    (( l > $1 )) && l=$1
    (( l < 5 )) && l=5
    echo "$l"
}

step() {   # step NAME MAX_SECONDS LOGFILE CMD...: run CMD under a timeout, record rc and time
    local name=$1 max=$2 log=$3; shift 3
    local t0 lim rc
    t0=$(date +%s); lim=$(left "$max")
    echo "== $name (timeout ${lim}s)" | tee -a "$OUT/session.log"
    timeout --kill-after=10 "$lim" "$@" > "$log" 2>&1
    rc=$?
    (( rc == 124 || rc == 137 )) && echo "   $name: TIMED OUT after ${lim}s" | tee -a "$OUT/session.log"
    printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" "$log" >> "$STEPS"
    tail -n 25 "$log"
    return $rc
}

# -- 1. environment -----------------------------------------------------------------------
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || echo "nvidia-smi failed" >> "$OUT/nvidia-smi.txt"
ENV_PY='
import importlib.util, json, os, sys
r = {"python": sys.version.split()[0], "executable": sys.executable, "modules": {}}
for mod in ("numpy", "scipy", "numba", "numba_cuda", "cupy", "torch", "fastsd", "pytest",
            "hypothesis"):
    spec = importlib.util.find_spec(mod)
    entry = {"installed": spec is not None}
    if spec is not None:
        try:
            entry["version"] = getattr(__import__(mod), "__version__", None)
        except Exception as exc:
            entry["import_error"] = f"{type(exc).__name__}: {exc}"
    r["modules"][mod] = entry
try:
    from numba import cuda
    r["numba_cuda_gpu"] = bool(cuda.is_available())
    if r["numba_cuda_gpu"]:
        r["numba_cuda_device"] = cuda.get_current_device().name.decode() \
            if isinstance(cuda.get_current_device().name, bytes) else cuda.get_current_device().name
    if r["numba_cuda_gpu"]:         # compiling needs NVVM and libdevice, not only a driver
        import numpy as np

        @cuda.jit
        def probe(x):
            x[cuda.grid(1)] += 1

        a = np.zeros(4)
        probe[1, 4](a)
        r["numba_cuda_kernel_ok"] = bool((a == 1).all())
except Exception as exc:
    r["numba_cuda_kernel_ok"] = False
    r["numba_cuda_error"] = f"{type(exc).__name__}: {exc}"
try:
    import cupy
    r["cupy_devices"] = cupy.cuda.runtime.getDeviceCount()
except Exception as exc:
    r["cupy_devices"] = 0
    r["cupy_error"] = f"{type(exc).__name__}: {exc}"
try:
    import torch
    r["torch_cuda"] = torch.cuda.is_available()
except Exception as exc:
    r["torch_cuda"] = False
from fastsd._dispatch import cuda_unavailable_reason
r["fastsd_cuda_unavailable_reason"] = cuda_unavailable_reason(needs_cupy=True)
json.dump(r, open(sys.argv[1], "w"), indent=1)
print(json.dumps(r, indent=1))
'
step env 60 "$OUT/gpu_env.log" "$PY" -c "$ENV_PY" "$OUT/gpu_env.json"
missing() {   # names of the GPU packages that cannot be used
    "$PY" - "$OUT/gpu_env.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
m = []
if r.get("cupy_devices", 0) < 1:
    m.append("cupy-cuda12x")
if not r.get("numba_cuda_kernel_ok"):
    m.append("numba-cuda[cu12]")
print(" ".join(m))
EOF
}
MISSING=$(missing 2>/dev/null || echo "cupy-cuda12x numba-cuda[cu12]")

# -- 2. install what is missing (offline wheels first) --------------------------------------
if [ -n "$MISSING" ] && [ "${SKIP_INSTALL:-0}" != 1 ]; then
    echo "missing: $MISSING" | tee -a "$OUT/session.log"
    if [ -d "$WHEELS" ]; then
        step install-offline 60 "$OUT/install-offline.log" \
            "$PY" -m pip install --no-index --find-links "$WHEELS" $MISSING
    else
        echo "no wheel directory $WHEELS" | tee -a "$OUT/session.log"
    fi
    step install-index 45 "$OUT/install-index.log" "$PY" -m pip install $MISSING
    step env-after-install 60 "$OUT/gpu_env_after_install.log" "$PY" -c "$ENV_PY" "$OUT/gpu_env.json"
    MISSING=$(missing 2>/dev/null || echo "cupy-cuda12x numba-cuda[cu12]")
    [ -n "$MISSING" ] && echo "STILL MISSING: $MISSING: the fastsd cuda steps will fail; the \
PyTorch peers still run" | tee -a "$OUT/session.log"
fi

# -- 3. the CUDA tests on the device ----------------------------------------------------------
if want tests; then
    # faulthandler_timeout: a test that hangs prints every thread's stack before the step's timeout
    step tests 150 "$OUT/gpu_tests.log" "$PY" -m pytest -q -p no:cacheprovider -rs \
        -o faulthandler_timeout=50 tests/test_cuda.py
    step tests-shared 90 "$OUT/gpu_tests_shared.log" "$PY" -m pytest -v -p no:cacheprovider -rs \
        -o faulthandler_timeout=40 -k cuda tests/test_walkers.py tests/test_backend_registry.py tests/test_kernels_backends.py
fi

# -- 4. benchmark ----------------------------------------------------------------------------
want bench && step bench 120 "$OUT/bench_gpu.txt" "$PY" bench/bench_gpu.py --models 1 16 64 \
    --target 0.5 --out "$OUT/bench_gpu.jsonl"

# -- 5. Fig. 1c quick on cuda, and on cpu beside it ------------------------------------------
fig1c() {   # fig1c BACKEND: the Fig. 1c quick preset through the reproduce CLI
    "$PY" -m fastsd reproduce fig1c --quick --json --quiet --backend "$1" --out "$OUT/fig1c-$1"
}
export -f fig1c
export PY OUT
if want fig1c; then
    ( export NUMBA_NUM_THREADS=$CPU_THREADS
      step fig1c-cpu 170 "$OUT/fig1c-cpu.json" bash -c 'fig1c cpu' > /dev/null ) &
    CPU_JOB=$!
    step fig1c-cuda 150 "$OUT/fig1c-cuda.json" bash -c 'fig1c cuda'
    wait "$CPU_JOB"
fi

# -- 6. the full Fig. 1c on cuda ---------------------------------------------------------------
want fig1c-full && step fig1c-full-cuda 240 "$OUT/fig1c-full-cuda.json" "$PY" -m fastsd \
    reproduce fig1c --json --quiet --backend cuda --out "$OUT/fig1c-full-cuda"

# -- 7. the lazy limit's Kronecker flow on cuda -------------------------------------------------
want lazy-kron && step lazy-kron-cuda 120 "$OUT/bench_kron_cuda.txt" "$PY" bench/bench_kron.py \
    --backend cuda --L 2048 4096 --dense-max-L 0 --product-L --estimate-L \
    --out "$OUT/bench_kron_cuda.jsonl"

# -- 8. one Fig. 3 cell on the sparse path, cuda and (beside it) cpu ---------------------------
if want fig3; then
    ( export NUMBA_NUM_THREADS=$CPU_THREADS
      step fig3-cpu 150 "$OUT/gpu_fig3_cell_cpu.txt" "$PY" bench/gpu_fig3_cell.py \
          --backends cpu --out "$OUT/gpu_fig3_cell.jsonl" > /dev/null ) &
    CPU_JOB=$!
    step fig3-cuda 120 "$OUT/gpu_fig3_cell_cuda.txt" "$PY" bench/gpu_fig3_cell.py \
        --backends cuda --out "$OUT/gpu_fig3_cell.jsonl"
    wait "$CPU_JOB"
fi

# -- 9. summary --------------------------------------------------------------------------------
timeout 30 "$PY" - "$OUT" "$START" "$MISSING" <<'EOF' | tee "$OUT/gpu_summary.txt"
import json, math, os, sys, time
out, start, missing = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
steps = {}
for line in open(os.path.join(out, "steps.tsv")):
    name, rc, sec, log = line.rstrip("\n").split("\t")
    steps[name] = {"rc": int(rc), "seconds": int(sec), "log": log}
summary = {"wall_seconds": int(time.time()) - start, "steps": steps, "missing": missing}

def last_json(path):
    try:
        lines = [l for l in open(path) if l.startswith("{")]
        return json.loads(lines[-1]) if lines else None
    except OSError:
        return None

bench = os.path.join(out, "bench_gpu.jsonl")
if os.path.exists(bench):
    rows = [json.loads(l) for l in open(bench)]
    summary["bench"] = [{k: r.get(k) for k in ("method", "models", "model_steps_per_s",
                         "speedup_vs_torch_eager", "speedup_vs_torch_vmap", "roofline", "error")}
                        for r in rows]
tabs = {b: last_json(os.path.join(out, f"fig1c-{b}.json")) for b in ("cuda", "cpu")}
if all(tabs.values()):
    diffs = []
    cpu_rows = {r["L"]: r for r in tabs["cpu"]["summary"]["rows"]}
    for r in tabs["cuda"]["summary"]["rows"]:
        c = cpu_rows.get(r["L"])
        for name, m in r["mean"].items():
            if c and name in c["mean"]:
                noise = math.sqrt((r["std"][name] ** 2 + c["std"][name] ** 2)
                                  / max(1, r["n"][name] - 1) + 1e-12)
                diffs.append({"L": r["L"], "gamma": name, "cuda": m, "cpu": c["mean"][name],
                              "diff": m - c["mean"][name], "seed_noise": noise})
    summary["fig1c_cuda_vs_cpu"] = {
        "max_abs_diff": max((abs(d["diff"]) for d in diffs), default=None),
        "cells": diffs}
print(json.dumps(summary, indent=1, default=float))
with open(os.path.join(out, "gpu_summary.json"), "w") as fh:
    json.dump(summary, fh, indent=1, default=float)
EOF
echo "gpu.sh: done in $(( $(date +%s) - START )) s; results in $OUT"
