"""The command-line arguments each example runs with when the docs are built (quick settings).

Each example is a command-line script; the gallery runs it as a user would, with these
arguments, so that the built page shows what the command prints. Every example must be
listed: one without settings fails the build (`reset_argv`). conf.py names the hook
(``examples_argv.reset_argv``); ``docs/_ext`` is on the path, so it is no extension.
"""
import os
import tempfile

#: A fresh folder for the stores the examples write, so that a build computes every cell.
OUT = tempfile.mkdtemp(prefix="fastsd-docs-")

#: Example file name -> its arguments for the docs build.
ARGV = {
    "fig1c_quick.py": [],
    "mean_difference.py": ["--quick"],
    "lazy_time_axis.py": ["--quick", "--workers", "1", "--out", os.path.join(OUT, "lazy-time")],
    "lazy_d2_scaling.py": ["--quick", "--workers", "1", "--out", os.path.join(OUT, "lazy_d2_scaling.jsonl")],
    "lazy_width.py": ["--quick", "--out", os.path.join(OUT, "lazy_width.jsonl")],
    "kernels_check.py": [],
    "bayes_bruteforce.py": [],
    "bayes_prior_variance.py": [],
    "bayes_stability.py": [],
    "image_task_checks.py": [],
    "walkers_alignment.py": [],
    "walkers_mu.py": [],
    "walkers_readout_ratio.py": [],
}


def reset_argv(gallery_conf, script_vars):
    """Return the arguments of the example being run (sphinx-gallery's ``reset_argv`` hook)."""
    name = os.path.basename(script_vars["src_file"])
    if name not in ARGV:
        raise KeyError(f"docs/_ext/examples_argv.py has no arguments for examples/{name}")
    return list(ARGV[name])
