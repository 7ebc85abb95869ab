"""Groups that would set a scan's critical path are split (fastsd.scan.scheduling._split_long).

- Hypothesis: every cell stays in exactly one group, a group is only ever cut into
  contiguous pieces, and afterwards no group of two cells or more takes longer than all the
  work over the workers; one worker splits nothing;
- a scan whose one group is longer than its share of two workers runs it as two groups and
  stores the records a serial run (no split) stores, apart from times;
- the dry run plans the same groups, and on 64 workers Fig. 1c's groups come apart.
"""
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastsd.figures import fig1c
from fastsd.scan import Grid, plan, run
from fastsd.scan.scheduling import Item, _split_long


class _Ensemble:
    """A splittable predictor whose group costs its cells' work plus a shared second."""

    splittable = True

    def seconds(self, group, target, dtype):
        return 1.0 + sum(cell["work"] for cell in group)


@given(groups=st.lists(st.lists(st.floats(0.0, 100.0), min_size=1, max_size=12), min_size=1,
                       max_size=10),
       workers=st.integers(1, 64))
def test_split_keeps_every_cell_once_and_bounds_the_longest_group(groups, workers):
    pred = _Ensemble()
    items, n = [], 0
    for sizes in groups:
        g = [(f"k{n + i}", None, {"work": w}) for i, w in enumerate(sizes)]
        n += len(sizes)
        items.append(Item(pred.seconds([c for _, _, c in g], "cpu", None), True, 0, g))
    out = _split_long([pred], items, workers, "cpu", None)
    keys = [k for it in out for k, _, _ in it.group]
    assert sorted(keys) == sorted(f"k{i}" for i in range(n))        # each cell once
    whole = {k: [c[0] for c in it.group] for it in items for k, *_ in it.group}
    for it in out:                                                  # contiguous pieces
        ks = [k for k, _, _ in it.group]
        source = whole[ks[0]]
        start = source.index(ks[0])
        assert source[start:start + len(ks)] == ks
    total = sum(it.work for it in out)
    assert all(len(it.group) < 2 or it.work <= total / workers for it in out)
    if workers == 1:
        assert out == items


def _strip(records):
    return sorted((json.dumps({k: v for k, v in r.items() if k not in ("wall_time",
                                                                        "finished_at")},
                              sort_keys=True) for r in records))


def test_a_long_group_on_two_workers_is_split_and_stores_the_same_records(tmp_path):
    grid = Grid(d=8, L=4, gamma=[0.5, 1.0, 2.0, 4.0], seed=0, width=32, steps=3000,
                eval_every=1000, n_test=128, sigma2=0.1)
    assert plan(grid, "mlp", tmp_path / "p.jsonl", "serial").group_sizes == (4,)
    two = plan(grid, "mlp", tmp_path / "p.jsonl", workers=2)
    assert two.group_sizes == (2, 2)                 # one group of 4 was twice a worker's share
    serial = run(grid, "mlp", tmp_path / "serial.jsonl", "serial", backend="cpu",
                 progress=False)
    split = run(grid, "mlp", tmp_path / "split.jsonl", backend="cpu", progress=False)
    assert len(split) == 4 and _strip(split) == _strip(serial)


@pytest.mark.parametrize("workers, split", [(2, False), (64, True)])
def test_the_dry_run_splits_fig1c_only_where_its_groups_would_set_the_wall_time(tmp_path,
                                                                                workers,
                                                                                split):
    label, predictor, grid = fig1c.FULL.parts[0]
    p = plan(grid, predictor, tmp_path / "s.jsonl", workers=workers)
    # 6 gammas of one seed and L per group; the longest first
    assert (p.group_sizes[0] < 6) == split and (set(p.group_sizes) == {6}) == (not split)
    assert all(n < 2 or s <= p.work / workers for n, s in zip(p.group_sizes, p.group_seconds))
    assert p.seconds >= p.work / workers
