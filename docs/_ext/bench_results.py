"""The results page from the benchmarks' recorded output (``bench/results/*.json``).

``bench/record.py NAME -- COMMAND`` runs a benchmark or a figure and keeps what it printed
with its command, date, machine (CPU, measured GEMM peak, BLAS) and commit. At every build
this extension writes, under ``docs/_generated/`` (not tracked), one Markdown file per record
(``<name>.md``: what it measured, on what, when, by which command, and its output) and
``results.md`` (a table of every record, then each one), which the pages include. Nothing in
them is typed by hand, so a page cannot disagree with the record it shows.
"""
import glob
import json
import os

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(os.path.dirname(HERE), "bench", "results")
GENERATED = os.path.join(HERE, "_generated")


def _machine(m):
    """One line naming the machine of a record."""
    blas = (m.get("blas") or [{}])[0]       # record.py's list of BLAS libraries: the first
    kernel = blas.get("architecture") or blas.get("corename") or ""
    parts = [f"{m.get('cpu', '?')}, {m.get('logical_cpus', '?')} logical CPUs"]
    if m.get("gpu"):
        parts.append(f"GPU {m['gpu']}")
    if m.get("gemm_gflops_f32"):
        parts.append(f"measured GEMM peak {m['gemm_gflops_f32']:.0f} GFLOP/s fp32, "
                     f"{m.get('gemm_gflops_f64', 0):.0f} fp64")
    if blas:
        parts.append(f"{blas.get('internal_api', 'BLAS')} {blas.get('version', '')} "
                     f"{kernel}".strip())
    env = m.get("env") or {}
    parts.append(", ".join(f"{k}={v}" for k, v in sorted(env.items())) or "no thread variables set")
    return "; ".join(parts)


def _processor(m):
    """What ran a record: its GPU where it names one, else its CPU."""
    return (m.get("gpu") or "").split(" (")[0].split(",")[0] or m.get("cpu", "?")


def _fence(text):
    """A code fence long enough for ``text``."""
    n = 3
    while "`" * n in text:
        n += 1
    return "`" * n


def record_markdown(rec, heading="###"):
    """The Markdown of one record: its title, provenance and output."""
    commit = (rec.get("commit") or "?")[:12] + (" (with local changes)" if rec.get("dirty") else "")
    out = rec.get("output", "").rstrip() or "(no output)"
    fence = _fence(out)
    cmd = rec["command"]
    return "\n".join([
        f"{heading} {rec.get('title') or rec['name']}" if heading else "",
        "",
        f"- command: `{cmd}`" if "`" not in cmd else f"- command: ``{cmd}``",
        f"- date: {rec['date']}, wall time {rec['wall_s']:.0f} s",
        f"- machine: {_machine(rec.get('machine', {}))}",
        f"- fastsd commit: {commit}",
        "",
        f"{fence}text", out, fence, ""])


def load_records(folder=RESULTS):
    """Every record in ``folder``, sorted by name."""
    records = []
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        with open(path, encoding="utf-8") as f:
            rec = json.load(f)
        rec.setdefault("name", os.path.splitext(os.path.basename(path))[0])
        records.append(rec)
    return records


def write_pages(app=None):
    """Write ``_generated/<name>.md`` for every record and ``_generated/results.md``."""
    os.makedirs(GENERATED, exist_ok=True)
    records = load_records()
    rows = ["| record | what | date | wall time | machine |", "|---|---|---|---|---|"]
    body = []
    for rec in records:
        text = record_markdown(rec, heading="")
        _write(os.path.join(GENERATED, f"{rec['name']}.md"), text)
        anchor = rec["name"]
        rows.append(f"| {{ref}}`{rec['name']} <{anchor}>` | {rec.get('title') or ''} | "
                    f"{rec['date'][:10]} | {rec['wall_s']:.0f} s | "
                    f"{_processor(rec.get('machine', {}))} |")
        body += [f"({anchor})=", f"## {rec['name']}: {rec.get('title') or ''}".rstrip(": "),
                 text]
    if not records:
        rows = ["No records in `bench/results/`."]
    _write(os.path.join(GENERATED, "results.md"), "\n".join(rows + [""] + body) + "\n")


def _write(path, text):
    """Write ``text`` to ``path`` unless it already holds it (so Sphinx sees no change)."""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def setup(app):
    """Generate the pages before Sphinx reads the sources."""
    app.connect("builder-inited", write_pages)
    return {"parallel_read_safe": True}
