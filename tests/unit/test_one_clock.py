"""One clock: a duet's two sides run at once, so the run's time is wall time
(each duet counted once), and the time a suggestion names comes from that
wall pace, not from the sum of both sides' samples."""

from __future__ import annotations

from isobench.core.metric import Metric
from isobench.report.section import ReportContext
from isobench.report.sections.time_spent import TimeSpentSection
from isobench.store.db import Sample, Store
from synthetic_runs import fake_study

ENVS = ["native", "docker-nat", "docker-host"]
ROUNDS = 4  # one warm-up, three measured


def _duet_store(path: str) -> str:
    """Native beside each other environment every round, both sides 10 s;
    fio one sample at a time, 5 s each."""
    store = Store(path)
    store.create_run("r-duet", fake_study(ENVS), {"cores": 2})
    store.define_metrics("r-duet", "compression", "default", [Metric("throughput_mbs", "MB/s", True)])
    store.define_metrics("r-duet", "fio", "seqread", [Metric("bw_mbs", "MB/s", True)])
    for r in range(ROUNDS):
        at = f"2026-11-27T10:{r:02d}:00+0000"
        for other in ENVS[1:]:
            for env, partner in (("native", other), (other, "native")):
                duet = {"duet": {"partner": partner, "cpus": "0" if env == "native" else "1"}}
                store.add_sample(
                    Sample(
                        "r-duet",
                        env,
                        "compression",
                        "default",
                        r,
                        r == 0,
                        "ok",
                        at,
                        10.0,
                        {"throughput_mbs": 3.0},
                        duet,
                    )
                )
        for env in ENVS:
            store.add_sample(Sample("r-duet", env, "fio", "seqread", r, r == 0, "ok", at, 5.0, {"bw_mbs": 800.0}))
    store.finish_run("r-duet", "complete")
    store.close()
    return "r-duet"


def test_a_duet_counts_its_wall_time_once(tmp_path):
    path = str(tmp_path / "s.sqlite")
    run = Store(path).load_run(_duet_store(path))
    # per round: two duets of 10 s (not four samples of 10 s) and three fio samples of 5 s
    assert run.overlap_s == {"compression": ROUNDS * 2 * 10.0}
    assert run.wall_s() == ROUNDS * (2 * 10.0 + 3 * 5.0)
    assert run.rounds_run == ROUNDS and run.seconds_per_round() == 2 * 10.0 + 3 * 5.0
    blocks = TimeSpentSection().blocks(ReportContext(run))
    assert "2 min (starting" in blocks[0].text and "ran at once" in blocks[0].text  # 140 s, not 220
    compression = next(r for r in blocks[1].rows if r[0] == "compression")
    assert compression[-2:] == ("80 s", "57%")  # its wall time and share of 140 s


def test_validate_says_a_budget_in_one_rounds_figure():
    """The budget's rounds are said once (the size line), and the outlook,
    when the host's noise is known, says the same figure."""
    import re
    from pathlib import Path

    from click.testing import CliRunner

    from isobench.cli.main import main

    quick = Path(__file__).resolve().parents[2] / "studies" / "quick.toml"
    r = CliRunner().invoke(main, ["validate", str(quick), "--budget", "30m"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())  # folded to the console's width: one line
    head, size = out[: out.index("size:")], out[out.index("size:") : out.index(" min", out.index("size:"))]
    assert re.findall(r"(\d+) rounds", head) == ["100"]  # only the cap: "up to 100 rounds"
    (figure,) = re.findall(r"about (\d+) rounds", size)
    assert int(figure) > 9  # what 30 minutes pay for at the study's estimate, not the first block
    said = re.findall(r"about (\d+) rounds of every case", out)
    assert said in ([], [figure])


def test_a_duets_settle_line_counts_an_environments_rounds_not_the_pooled_baseline(tmp_path):
    """The baseline ran beside each partner, so its column holds twice the
    rounds; the settle line's n is what one environment ran (3 here)."""
    from isobench.report.markdown import render_markdown

    path = str(tmp_path / "s.sqlite")
    store = Store(path)
    store.create_run("r-noisy", fake_study(ENVS), {"cores": 2})
    store.define_metrics("r-noisy", "compression", "default", [Metric("throughput_mbs", "MB/s", True)])
    for r in range(ROUNDS):
        at = f"2026-11-27T10:{r:02d}:00+0000"
        for i, other in enumerate(ENVS[1:]):
            ratio = 1.0 + (0.12 if (r + i) % 2 else -0.06)  # about +3% at a 10% paired SD: inconclusive
            for env, partner, value in (("native", other, 3.0), (other, "native", 3.0 * ratio)):
                duet = {"duet": {"partner": partner, "cpus": "0" if env == "native" else "1"}}
                vals = {"throughput_mbs": value}
                store.add_sample(
                    Sample("r-noisy", env, "compression", "default", r, r == 0, "ok", at, 10.0, vals, duet)
                )
    store.finish_run("r-noisy", "complete")
    store.close()
    md = render_markdown(Store(path).load_run("r-noisy"))
    text = " ".join(md.split())
    assert "Inconclusive" in text, text[:2000]
    assert f"(this run has n = {ROUNDS - 1})" in text


def test_the_quick_studys_minutes_agree_in_the_readme_its_comment_and_validate():
    """README and quick.toml's comment name validate's estimate, in whole
    minutes: the three within 10% (the README said 10 minutes, validate
    10.0 min, for runs of 8.6 to 9.0 min on 2026-11-28; the models were
    refitted to those runs)."""
    import re
    from pathlib import Path

    from isobench.checks.preflight import study_size
    from isobench.host.hostinfo import HostInfo
    from isobench.study import load_study

    root = Path(__file__).resolve().parents[2]
    quick = root / "studies" / "quick.toml"
    readme = re.search(r"`studies/quick\.toml` \([^)]*about (\d+) minutes", (root / "README.md").read_text())
    comment = re.search(r"Takes about (\d+) minutes", quick.read_text())
    assert readme and comment
    # this host's figures: HPL's N follows the memory, fio's file the free disk
    host = HostInfo(cores=2, mem_bytes=25_276_510_208, disk_free_bytes=64 * 2**30, llc_bytes=32 * 2**20)
    estimate_min = study_size(load_study(quick), host).estimated_s / 60
    for said in (int(readme.group(1)), int(comment.group(1))):
        assert abs(said - estimate_min) <= 0.1 * estimate_min, (said, estimate_min)
