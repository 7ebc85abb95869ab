"""The package's import graph: floors, no private names across modules, and no circle.

Read from the sources (every import, at module level or inside a function,
since a function-level import is an arrow all the same). Private modules
(``fastsd._threads``, ``fastsd.mlp._cpu``) are the package's own floors and may
be imported; a private *name* (``_engines``, ``_clock``) of another module may
not: what a module shares, it names publicly.

The package stands on floors (``FLOORS``): a module imports only from floors below
its own, or from its own package (``fastsd.mlp.training`` from ``fastsd.mlp.prices``);
the ground floor's helpers may import each other and no one above. So the machine
probe (``fastsd._probe``) imports no family, and each family's time model
(``fastsd.mlp.costs``, ``fastsd.kernels.costs``, ``fastsd.bayes``) stands on it alone.
"""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "fastsd"


#: The floors, lowest first: each a set of units (a top-level module or package of fastsd).
FLOORS = (
    {"fastsd", "fastsd.exceptions", "fastsd._json", "fastsd._numerics", "fastsd._validation",
     "fastsd._rng", "fastsd._philox", "fastsd._stats", "fastsd._calls", "fastsd._stop",
     "fastsd._progress", "fastsd._blas", "fastsd._jitcache", "fastsd._threads", "fastsd._pricing",
     "fastsd._probe", "fastsd._memory", "fastsd._gemm", "fastsd._dispatch", "fastsd.conventions",
     "fastsd.store", "fastsd.schedules", "fastsd._arccos", "fastsd._mehler", "fastsd.activations",
     "fastsd.constraints", "fastsd._types"},
    {"fastsd.params"},
    {"fastsd.tasks", "fastsd.walkers"},
    {"fastsd.mlp"},
    {"fastsd.kernels", "fastsd.theory", "fastsd.bayes", "fastsd.analysis"},
    {"fastsd.scan", "fastsd.plots"},
    {"fastsd.presets"},
    {"fastsd.figures"},
    {"fastsd.reproduce"},
    {"fastsd.cli"},
    {"fastsd.__main__"},
)


def _unit(module):
    """The top-level module or package of fastsd that ``module`` belongs to."""
    return ".".join(module.split(".")[:2])


def _upward(edges, floors=FLOORS):
    """[(importer, imported)] of the imports that do not run down: to a unit on the same
    floor or above (the ground floor's among themselves excepted), or to a unit on no floor."""
    floor = {u: i for i, units in enumerate(floors) for u in units}
    bad = []
    for a, targets in sorted(edges.items()):
        for b in sorted(targets):
            ua, ub = _unit(a), _unit(b)
            if ua == ub or ub == "fastsd":
                continue
            fa, fb = floor.get(ua), floor.get(ub)
            if fa is None or fb is None or fb > fa or (fb == fa and fa != 0):
                bad.append((a, b))
    return bad


def _modules():
    """{dotted name: path} of every module of the package."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _run_nodes(tree):
    """The nodes of ``tree`` but those under ``if TYPE_CHECKING:`` (imports for type checkers
    alone, which never run: fastsd/__init__.py names its lazily loaded names so)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
        yield node


def _graph():
    """({module: set of imported modules}, [(module, imported from, private name)])."""
    modules = _modules()
    edges, private = {m: set() for m in modules}, []
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _run_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                edges[name] |= {a.name for a in node.names if a.name in modules}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[:len(base) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module
                if source not in modules:
                    continue
                for alias in node.names:
                    sub = f"{source}.{alias.name}"
                    if sub in modules:
                        edges[name].add(sub)
                        continue
                    edges[name].add(source)
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        private.append((name, source, alias.name))
    for name in edges:
        edges[name].discard(name)
    return edges, private


def _cycles(edges):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_graph_is_read_from_every_module():
    edges, _ = _graph()
    assert len(edges) > 50
    assert "fastsd.mlp.costs" in edges["fastsd.mlp.training"]          # from . import costs
    assert "fastsd._threads" in edges["fastsd.mlp._cpu"]            # from .. import _threads
    assert "fastsd.scan.runner" in edges["fastsd.scan"]


def test_no_module_imports_a_private_name_of_another():
    _, private = _graph()
    assert private == [], "\n".join(f"{m} imports {name} from {src}" for m, src, name in private)


def test_no_import_circle():
    assert _cycles(_graph()[0]) == []


def test_the_cycle_finder_finds_a_planted_circle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(edges) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_every_import_runs_down_the_floors():
    edges, _ = _graph()
    assert {_unit(m) for m in edges} <= set().union(*FLOORS), "a unit on no floor"
    bad = _upward(edges)
    assert bad == [], "\n".join(f"{a} imports {b}" for a, b in bad)


def test_the_floor_rule_finds_a_planted_upward_import():
    edges = {"fastsd._probe": {"fastsd.kernels.backend"}, "fastsd.kernels.costs": {"fastsd.mlp"},
             "fastsd.bayes": {"fastsd.kernels.costs"},
             "fastsd.mlp.training": {"fastsd.mlp.prices"},
             "fastsd.scan.plans": {"fastsd.mlp.costs", "fastsd._probe"}}
    assert _upward(edges) == [("fastsd._probe", "fastsd.kernels.backend"),
                              ("fastsd.bayes", "fastsd.kernels.costs")]
