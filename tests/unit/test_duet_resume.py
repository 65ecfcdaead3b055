"""A duet that lost a side (issue 55, 19 and 22): the side that survived its
partner's failure is not kept as a good duet sample, --resume measures
every side a duet is missing (as a duet again), no side is measured alone
while its partner's environment is gone, and progress counts what is taken."""

from __future__ import annotations

import json
import time

from tests.unit.test_duet import Env

from isobench.checks import health
from isobench.core.proc import ExecResult
from isobench.host.hostinfo import HostInfo
from isobench.run import rounds
from isobench.run.duet import run_duet
from isobench.run.measure import Taken
from isobench.run.runner import run_study
from isobench.store.db import Store
from isobench.study import parse_study
from isobench.workloads.base import Measurement, WorkloadError
from isobench.workloads.compress import Compression

STUDY = (
    '[study]\nname = "lost"\nrepetitions = 3\nwarmup = 0\nbaseline = "native"\nschedule = "duet"\n'
    '[environments.native]\n[environments.native-b]\nkind = "native"\n'
    "[workloads.compression]\nsize_mb = 1\nthreads = 1\n"
)


class Counting:
    """A progress that keeps what it was told."""

    def __init__(self) -> None:
        self.total, self.done, self.notes = 0, 0, []

    def start(self, total: int) -> None:
        self.total = total

    def step(self, label: str) -> None: ...

    def advance(self) -> None:
        self.done += 1

    def note(self, message: str) -> None:
        self.notes.append(message)

    def extend(self, more: int) -> None:
        self.total += more


def _duet(fails: set[tuple[str, int]], calls: list[int]):
    """run_duet's stand-in: each side ok, but for the (env, call) in ``fails``."""

    def fake(works, case, pair, cpus, noise_facts=None):
        calls.append(1)
        out = []
        for env, partner in ((pair[0], pair[1]), (pair[1], pair[0])):
            if (env.name, len(calls)) in fails:
                t = Taken("2026-11-29T00:00:00+00:00", 0.0, 1.0, 0.0, None, "failed", "exit 1: File exists")
            else:
                t = Taken("2026-11-29T00:00:00+00:00", 0.0, 1.0, 0.0, Measurement({"throughput_mbs": 10.0}))
            t.extra["duet"] = {"partner": partner.name, "cpus": "0"}
            out.append(t)
        return out

    return fake


def _ok_rows(store: Store, run_id: str) -> dict[tuple[str, int], int]:
    rows: dict[tuple[str, int], int] = {}
    for s in store.samples(run_id):
        if s["status"] == "ok":
            rows[(s["env"], s["round"])] = rows.get((s["env"], s["round"]), 0) + 1
    return rows


def _quiet_health(monkeypatch, lost: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    monkeypatch.setattr(health, "ask_health", lambda env, timeout=10: f"{env.name}: gone" if env.name in lost else None)


def test_a_resume_measures_a_failed_baseline_whose_partner_succeeded(monkeypatch, tmp_path):
    """Native fails in the second duet, its partner is fine: the partner's
    sample is not kept as a good duet (it ran alone in part), and --resume
    measures that duet again, both sides, once (before: the resume found the
    partner's sample, measured nothing and ended incomplete again)."""
    calls: list[int] = []
    monkeypatch.setattr(rounds, "run_duet", _duet({("native", 2)}, calls))
    monkeypatch.setattr(Compression, "prepare", lambda self, env: None)
    _quiet_health(monkeypatch)
    store = Store(str(tmp_path / "r.sqlite"))
    run_id = run_study(parse_study(STUDY, "lost.toml"), store)
    assert store.load_run(run_id).status == "incomplete"
    kept = [s for s in store.samples(run_id) if s["env"] == "native-b" and s["round"] == 1]
    assert [s["status"] for s in kept] == ["failed"] and "its partner native failed" in kept[0]["error"]
    assert json.loads(kept[0]["extra"])["discarded"] == {"throughput_mbs": 10.0}  # nothing measured is lost
    progress = Counting()
    assert run_study(parse_study(STUDY, "lost.toml"), store, progress, resume=run_id) == run_id
    assert len(calls) == 4  # three duets, then the second again
    assert store.load_run(run_id).status == "complete"
    assert _ok_rows(store, run_id) == {(e, r): 1 for e in ("native", "native-b") for r in range(3)}
    assert progress.total == progress.done == 2


def test_a_resume_measures_the_one_side_a_duet_is_missing_beside_its_partner(monkeypatch, tmp_path):
    """A store where one side of a duet is ok and the other is not (stored
    before this rule, or a kill between the two records): the resume runs the
    duet again, keeps the missing side, and keeps the other's second sample
    only as a discarded one (one ok sample a side a round)."""
    calls: list[int] = []
    monkeypatch.setattr(rounds, "run_duet", _duet({("native", 2)}, calls))
    monkeypatch.setattr(Compression, "prepare", lambda self, env: None)
    _quiet_health(monkeypatch)
    store = Store(str(tmp_path / "r.sqlite"))
    run_id = run_study(parse_study(STUDY, "lost.toml"), store)
    with store.db:  # as main kept it: the partner's sample ok
        store.db.execute(
            "UPDATE samples SET status='ok', error=NULL, vals=? WHERE run_id=? AND env='native-b' AND round=1",
            (json.dumps({"throughput_mbs": 10.0}), run_id),
        )
    progress = Counting()
    run_study(parse_study(STUDY, "lost.toml"), store, progress, resume=run_id)
    assert len(calls) == 4 and store.load_run(run_id).status == "complete"
    assert _ok_rows(store, run_id) == {(e, r): 1 for e in ("native", "native-b") for r in range(3)}
    again = [s for s in store.samples(run_id) if s["env"] == "native-b" and s["round"] == 1][-1]
    assert again["status"] == "failed" and "was stored already: measured again only beside native's" in again["error"]
    assert progress.total == progress.done == 2  # the duet takes (and counts) both


def test_no_side_is_measured_alone_while_its_partner_is_gone(monkeypatch, tmp_path):
    """native-b's environment dies in the first duet: the baseline is not
    measured alone in the rounds after (before: alone, then again as a duet
    on resume, n = 6 in a 3-round run), and the resume's progress counts
    exactly what it takes."""
    calls: list[int] = []
    monkeypatch.setattr(rounds, "run_duet", _duet({("native-b", 1)}, calls))
    monkeypatch.setattr(Compression, "prepare", lambda self, env: None)
    _quiet_health(monkeypatch, lost={"native-b"})
    taken_alone: list[str] = []
    monkeypatch.setattr(rounds, "take", lambda *a, **kw: taken_alone.append("x"))
    store = Store(str(tmp_path / "r.sqlite"))
    progress = Counting()
    run_id = run_study(parse_study(STUDY, "lost.toml"), store, progress)
    assert taken_alone == [] and len(calls) == 1
    assert progress.total == progress.done == 6
    assert _ok_rows(store, run_id) == {}  # the survivor of the first duet kept as failed
    _quiet_health(monkeypatch)  # it answers again
    progress = Counting()
    run_study(parse_study(STUDY, "lost.toml"), store, progress, resume=run_id)
    assert _ok_rows(store, run_id) == {(e, r): 1 for e in ("native", "native-b") for r in range(3)}
    assert progress.total == progress.done == 6 and store.load_run(run_id).status == "complete"


HOST = HostInfo(cores=2, mem_bytes=8 << 30, disk_free_bytes=100 << 30)


def test_a_partner_killed_mid_duet_does_not_fill_and_its_end_is_its_real_end(monkeypatch):
    """The container killed 0.1 s into a 0.4 s duet: its side does not exec
    fillers into it (before: 60 'fillers' in 1.35 s, each counted busy), and
    the survivor's overlap is the partner's real end, its record saying why."""

    class Killed(Env):
        def exec(self, argv, timeout, cwd=None):
            self.execs.append(argv)
            return ExecResult(argv, -1, "", "engine error: 409 container is not running", 0.001)

    def fake_run(self, case, env):
        if env.name == "docker":
            time.sleep(0.1)
            raise WorkloadError("exit 137: killed")
        time.sleep(0.4)
        return Measurement({"throughput_mbs": 1.0, "real_s": 1.0, "user_s": 1.0, "sys_s": 0.0})

    monkeypatch.setattr(Compression, "run", fake_run)
    native, docker = Env("native"), Killed("docker")
    takens = run_duet(Compression(Compression.Params(size_mb=1), HOST), "default", (native, docker), ((0,), (1,)))
    assert docker.execs == [] and takens[1].extra["duet"]["fillers"] == 0
    record = takens[0].extra["duet"]
    assert record["overlap"] < 0.5, record
    assert record["not_as_planned"] == "its partner failed, so it ran alone in part"


def test_a_partner_whose_fillers_stop_leaves_a_duet_not_as_planned():
    from isobench.run.duet import not_as_planned

    record = {"overlap": 0.62, "swaps": 20, "home_share": 0.5, "rotate_s": 0.1}
    taken = Taken("", 0.0, 1.0, 0.0, Measurement({"x": 1.0}))
    assert not_as_planned(record, (0.0, 2.0), taken) == (
        "its partner was busy 62% of its time (it died, or its fillers stopped)"
    )
    assert not_as_planned({**record, "overlap": 0.995}, (0.0, 2.0), taken) == ""
