#!/usr/bin/env python
"""Benchmark: how much a probe taken on a busy machine moves ``reproduce all --dry-run``.

For each load (busy processes beside, a Python loop each) and repeat: the cached probes
are removed (``fastsd._probe.cache_path()`` in a scratch cache root), every family's probe is taken with
that load running (the MLP's engine, the lazy limit's kernel entries, the generic rates),
the load is stopped, and ``fastsd reproduce all --dry-run --json`` reads the quiet
machine's predicted wall time with those factors. The spread over all probes (largest
over smallest) is what a user's prediction would move by with the moment the probe ran.

    python bench/bench_probe_spread.py --loads 0,2,8 --repeats 5

A benchmark, not a test: it asserts nothing.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

_PROBE = ("from fastsd.mlp import costs; from fastsd.kernels import costs as k; "
          "from fastsd import bayes; import json; "
          "print(json.dumps({'mlp': costs.machine_factors(), 'kernels': k.machine_factors(), "
          "'bayes': bayes.machine_factors()}))")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loads", default="0,2,8")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    from fastsd._threads import cpu_model

    print(f"{cpu_model()}, {os.cpu_count()} cores")
    hours = []
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, XDG_CACHE_HOME=cache)
        env.pop("FASTSD_COSTS", None)
        for load in map(int, args.loads.split(",")):
            for r in range(args.repeats):
                from fastsd._probe import cache_path

                path = cache_path(env)
                if os.path.exists(path):
                    os.remove(path)
                spin = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                        for _ in range(load)]
                try:
                    time.sleep(1.0 if load else 0.0)
                    f = json.loads(subprocess.run([sys.executable, "-c", _PROBE], env=env,
                                                  capture_output=True, text=True,
                                                  check=True).stdout)
                finally:
                    for p in spin:
                        p.kill()
                        p.wait()
                time.sleep(1.0)
                with tempfile.TemporaryDirectory() as out:
                    dry = json.loads(subprocess.run(
                        [sys.executable, "-m", "fastsd", "reproduce", "all", "--dry-run",
                         "--json", "--out", out], env=env, capture_output=True, text=True,
                        check=True).stdout.strip().splitlines()[-1])
                h = dry["modelled_wall_s"] / 3600      # the modelled figures (not fig1a, A1, C1)
                hours.append(h)
                short = {fam: {k: round(v, 2) for k, v in got.items()} for fam, got in f.items()}
                print(f"load {load}, probe {r + 1}: {h:.1f} h  {json.dumps(short)}", flush=True)
    print(f"spread over {len(hours)} probes: {min(hours):.1f}-{max(hours):.1f} h, "
          f"largest / smallest {max(hours) / min(hours):.3f}")


if __name__ == "__main__":
    main()
