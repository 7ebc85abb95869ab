"""The docs build's own extensions (docs/_ext/): what they do to a docstring and a record."""
import importlib.util
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / "_ext" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bars_are_escaped_as_text_but_not_in_code():
    escape_markup = _load("plain_docstrings").escape_markup
    lines = ["The alignment v1.v2 / (|v1||v2|) of ``|x|`` and :math:`|y|`.",
             "",
             "Example::",
             "",
             "    a = |b|",
             "",
             ">>> abs(-1) | 2",
             "3",
             "",
             ".. math::",
             "",
             "   |z|^2",
             "",
             "Back to |text|."]
    out = list(lines)
    escape_markup(out)
    assert out[0] == r"The alignment v1.v2 / (\|v1\|\|v2\|) of ``|x|`` and :math:`|y|`."
    assert out[4] == lines[4] and out[6] == lines[6] and out[11] == lines[11]
    assert out[13] == r"Back to \|text\|."
    stars = ["ndarray, shape (m, *image_shape), float64", "an *emphasis* kept", "2 * 3 = 6"]
    escape_markup(stars)
    assert stars == [r"ndarray, shape (m, \*image_shape), float64", "an *emphasis* kept",
                     "2 * 3 = 6"]


def test_a_record_becomes_a_page_with_its_command_machine_date_and_output(tmp_path):
    ext = _load("bench_results")
    record = {"name": "x", "title": "A title", "command": "python bench/x.py --quick",
              "date": "2026-12-05T03:00:00Z", "wall_s": 12.3, "commit": "0123456789abcdef0",
              "dirty": True,
              "machine": {"cpu": "Some CPU", "logical_cpus": 2, "gemm_gflops_f32": 150.2,
                          "gemm_gflops_f64": 75.1,
                          "blas": [{"internal_api": "openblas", "version": "0.3.27",
                                    "architecture": "Haswell"}], "env": {}},
              "output": "a table\nwith ``` inside"}
    (tmp_path / "x.json").write_text(json.dumps(record))
    [loaded] = ext.load_records(tmp_path)
    text = ext.record_markdown(loaded, heading="###")
    assert "### A title" in text and "`python bench/x.py --quick`" in text
    assert "2026-12-05T03:00:00Z, wall time 12 s" in text
    assert "Some CPU, 2 logical CPUs; measured GEMM peak 150 GFLOP/s fp32, 75 fp64" in text
    assert "openblas 0.3.27 Haswell" in text and "no thread variables set" in text
    assert "0123456789ab (with local changes)" in text
    assert "````text\na table\nwith ``` inside\n````" in text   # a fence longer than any inside
