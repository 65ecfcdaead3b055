"""One count of open cells (issue 55, finding 15): the report's
Inconclusive section said "2 inconclusive cell(s)" where the answer said 0:
they were sys_s cells of 0 s, which no test can take ("not tested"). The
run's values are a command table's as stored: wall_s the primary, sys_s 0.0
in every sample of a program that makes no system calls worth a tick."""

from __future__ import annotations

from isobench.core.metric import Metric
from isobench.report.blocks import Grid, Items
from isobench.report.section import TERMINAL, ReportContext
from isobench.report.sections import sections_for
from isobench.store.db import Sample, Store
from synthetic_runs import fake_study

ENVS = ("native", "docker-nat")
WALL = {"native": [1.00, 1.01, 0.99, 1.00, 1.01, 0.99], "docker-nat": [1.00, 1.02, 0.98, 1.01, 1.00, 0.99]}


def _run(path: str):
    store = Store(path)
    store.create_run("r", fake_study(ENVS), {"cores": 2})
    store.define_metrics(
        "r",
        "mine",
        "default",
        [Metric("wall_s", "s", False, role="duration", primary=True), Metric("sys_s", "s", False)],
    )
    for env in ENVS:
        store.set_env_facts("r", env, {"kind": env.split("-")[0]})
        for i, wall in enumerate(WALL[env]):
            values = {"wall_s": wall, "sys_s": 0.0}
            store.add_sample(
                Sample("r", env, "mine", "default", i, False, "ok", "2026-05-01T10:00:00+0000", 1.0, values)
            )
    store.finish_run("r", "complete")
    return store.load_run("r")


def test_cells_no_test_can_take_are_not_counted_as_inconclusive(tmp_path):
    ctx = ReportContext(_run(str(tmp_path / "r.sqlite")))
    found = {section.slug: (section, blocks) for section, blocks in sections_for(ctx, TERMINAL)}
    answer = found["answer"][1]
    grid = next(b for b in answer if isinstance(b, Grid))
    assert grid.rows == (("docker-nat", "0", "1", "0", "0"),)  # equivalent, nothing open
    # the Inconclusive section lists (and its fold counts) only open cells: none
    section, blocks = found.get("inconclusive", (None, []))
    assert not any(isinstance(b, Items) and b.items for b in blocks)
    sys_s = next(r for r in ctx.table.rows if r.key.metric == "sys_s")
    assert not sys_s.cells[1].verdict.effect.tested and not sys_s.cells[1].verdict.open
