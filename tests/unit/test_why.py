"""Why each inconclusive cell is inconclusive: its noise per sample against
the host's pilot, whether pairing helped, its sample length, what would settle it."""

from __future__ import annotations

import numpy as np

from isobench.report.section import ReportContext
from isobench.report.sections.inconclusive import InconclusiveSection
from isobench.results.model import MetricKey, RunData
from isobench.results.table import build_table
from isobench.results.why import same_round_correlation

RANDREAD = MetricKey("fio", "randread", "iops", "IO/s", True, "throughput", True)
PILOT = {"host_noise": {"kernels": {"cpu": {"sd": 0.021}, "io": {"sd": 0.224}}}}


def _run(shared: float) -> RunData:
    """Seven rounds of fio, 12% own noise a side; ``shared``: the round's
    noise both sides see (what pairing removes)."""
    rng = np.random.default_rng(11)
    common = rng.normal(0, shared, 7)
    native = 4000 * np.exp(common + rng.normal(0, 0.12, 7))
    docker = 3900 * np.exp(common + rng.normal(0, 0.12, 7))
    run = RunData(
        "r", "quick", "", None, "complete", dict(PILOT), "", "", "native", ["native", "docker"], {}, [RANDREAD]
    )
    for env, vals in (("native", native), ("docker", docker)):
        run.values[(RANDREAD, env)], run.rounds[(RANDREAD, env)] = list(vals), list(range(7))
        run.time_spent[("fio", env)] = (8 * 5.0, 8)
    return run


def _why(run: RunData) -> str:
    (block,) = InconclusiveSection().blocks(ReportContext(run, build_table(run)))
    (item,) = block.items
    (why,) = item.sub
    return why


def test_an_io_cell_names_the_hosts_noise_and_what_would_settle_it():
    why = _why(_run(shared=0.0))
    assert why == (
        "why: paired SD 16.2% per sample against this host's pilot 2.1% on CPU, 22.4% on I/O (about this host's "
        "I/O noise); same-round correlation \u22120.23: pairing removed nothing; 5.0 s a sample; would settle it: "
        "178 rounds, longer samples if SD² × seconds a sample falls with them (docs/statistics.md#shorter-samples), "
        "a quieter host or device, or leaving the case out of a gate"
    )  # 178: settled 4 times in 5 at the worst true change (335 asked for an interval any estimate settles)


def test_pairing_that_helped_says_so():
    run = _run(shared=0.3)
    why = _why(run)
    assert "pairing removed the noise both sides shared" in why and "longer samples" not in why
    pairs = list(zip(run.values[(RANDREAD, "docker")], run.values[(RANDREAD, "native")]))
    r = same_round_correlation(pairs)
    assert r is not None and r > 0.3 and f"same-round correlation {r:+.2f}" in why  # positive: no minus sign


def test_a_lone_remedy_reads_without_or():
    """Past the rounds cap, with pairing that helped and noise unlike the
    host's, the gate is all that is left: "would settle it: leaving the case
    out of a gate" (it read "would settle it: or leaving ..." before)."""
    from types import SimpleNamespace

    from isobench.results.why import either, remedies

    lone = remedies(SimpleNamespace(rounds_needed=1001), 0.5, 2.5, False)  # type: ignore[arg-type]
    assert either(lone) == "leaving the case out of a gate"
    assert either(["178 rounds", "leaving the case out of a gate"]) == "178 rounds or leaving the case out of a gate"


def test_the_answer_says_why_under_each_open_cell():
    """The answer's inconclusive cells carry the same why as the Inconclusive
    section (before, only `report --all`, Markdown and HTML said it)."""
    from isobench.report.blocks import Items
    from isobench.report.sections.answer import AnswerSection

    run = _run(shared=0.0)
    blocks = AnswerSection().blocks(ReportContext(run, build_table(run)))
    (open_cells,) = [b for b in blocks if isinstance(b, Items) and b.heading.startswith("Inconclusive")]
    (item,) = open_cells.items
    assert item.sub == (_why(run),) and item.sub[0].startswith("why: paired SD 16.2% per sample")
