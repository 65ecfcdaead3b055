"""A server workload under schedule = "duet" (workloads/duetcall.py
decide_server): each case is decided as a user's command is, from what its
sample alone used, against a side's CPUs; a side must hold the server and its
client. On two CPUs (a side of one) that is known before any sample. The
call is kept with the run and said in the answer; none runs as a duet yet.

The hosts are lscpu -p listings of real machines' layouts (CPU, core,
socket, node), SMT siblings included: the duet's sides are halves of the
CPUs the kernel lists (envs/pinning.duet_sides), a sibling counted as a CPU
of its own, as a command's duet counts it."""

from __future__ import annotations

import pytest

from isobench.host.hostinfo import HostInfo
from isobench.results.model import RunData
from isobench.results.schedule import schedule_summary
from isobench.run.duetcalls import settle
from isobench.run.plan import Cell
from isobench.run.schedule import Duet
from isobench.study import StudyMeta, parse_study
from isobench.workloads.duetcall import decide_server, from_record
from isobench.workloads.netbw import Netbw
from isobench.workloads.netlat import Netlat
from isobench.workloads.oltp import Oltp
from isobench.workloads.redis import Redis

HOST = HostInfo(cores=2, mem_bytes=8 << 30, disk_free_bytes=100 << 30)

# lscpu -p=CPU,CORE,SOCKET,NODE
TWO_VCPUS = "0,0,0,0\n1,1,0,0\n"  # this host: a 2-vCPU VM
FOUR_SMT = "0,0,0,0\n1,1,0,0\n2,0,0,0\n3,1,0,0\n"  # 2 cores x 2 threads, siblings 0/2 and 1/3 (a 4-vCPU cloud VM)
FOUR_CORES = "0,0,0,0\n1,1,0,0\n2,2,0,0\n3,3,0,0\n"  # 4 cores, no SMT
EIGHT_SMT = "".join(f"{c},{c % 4},0,0\n" for c in range(8))  # 4 cores x 2 threads, siblings c and c + 4
EIGHT_SMT_ADJACENT = "".join(f"{c},{c // 2},0,0\n" for c in range(8))  # siblings 2k and 2k + 1


def cpus_of(lscpu: str) -> list[int]:
    return [int(line.split(",")[0]) for line in lscpu.splitlines() if line and not line.startswith("#")]


def cores_of(lscpu: str, cpus: tuple[int, ...]) -> set[int]:
    core = {int(a): int(b) for a, b, *_ in (line.split(",") for line in lscpu.splitlines() if line)}
    return {core[c] for c in cpus}


def window(server_cpu_s: float | None, client_cpu_s: float, wall_s: float = 5.0) -> dict:
    """A sample's extra as ServerWorkload.measure stores it (cpu_window)."""
    return {
        "cpu_window": {
            "wall_s": wall_s,
            "host_busy_s": (server_cpu_s or 0.0) + client_cpu_s + 0.4,
            "client_cpu_s": client_cpu_s,
            "ncpu": 4,
            "server_cpu_s": server_cpu_s,
        }
    }


# what each case's server and client used per wall second, over a 5 s sample
USED = {
    ("netlat", "tcp"): (0.55, 0.62),  # ping-pong: each waits for the other
    ("netbw", "tx"): (0.95, 0.41),  # iperf3 -R: the server sends
    ("redis", "clients=1"): (0.48, 0.71),
    ("redis", "clients=16"): (1.0, 0.97),  # both single-threaded, both busy
    ("oltp", "threads=4"): (1.62, 0.48),  # mariadbd's threads
}


def workloads() -> dict:
    """Each table's workload, undecided (a run's own copy)."""
    return {
        "netlat": Netlat(Netlat.Params(), HOST),
        "netbw": Netbw(Netbw.Params(), HOST),
        "redis": Redis(Redis.Params(clients=(1, 16)), HOST),
        "oltp": Oltp(Oltp.Params(threads=(4,)), HOST),
    }


class Store:
    """What settle() reads and writes of a store: each case's sample alone and the run's facts."""

    def __init__(self):
        self.facts: dict = {}
        self.asked: list = []

    def first_alone(self, run_id, env, workload, case):
        self.asked.append((workload, case))
        used = USED.get((workload, case))
        return ({}, window(used[0] * 5, used[1] * 5)) if used else None

    def run_facts(self, run_id):
        return self.facts

    def set_run_facts(self, run_id, facts):
        self.facts = facts


class Progress:
    def __init__(self):
        self.notes: list[str] = []

    def note(self, message):
        self.notes.append(message)

    def extend(self, more):
        raise AssertionError("a server never adds duet samples")


class Env:
    def __init__(self, name):
        self.name = name


def decide_all(lscpu: str) -> tuple[Store, Duet]:
    schedule = Duet("native", "interleaved", cpus=cpus_of(lscpu))
    store, progress = Store(), Progress()
    envs, tables = [Env("native"), Env("docker-nat"), Env("docker-host")], workloads()
    for key, case in USED:
        w = tables[key]
        assert schedule.decides(w, case) and schedule.used_for(w, case) == "sequential"
        settle(store, "r", schedule, Cell(key, case, w), envs, StudyMeta(name="s"), progress, 10)  # type: ignore[arg-type]
        assert not schedule.decides(w, case) and not w.duets  # decided, and never a duet yet
        assert all(not s.together for s in schedule.slots(w, envs, 0))
    assert len(progress.notes) == len(USED)
    return store, schedule


def said(store: Store) -> dict[str, str]:
    calls = store.facts["schedule"]["calls"]
    assert all(from_record(c) is not None for c in calls.values())  # kept as a run keeps it
    return {cell: call["text"] for cell, call in calls.items()}


def test_on_this_two_cpu_host_every_server_runs_alone_without_a_sample_and_the_answer_says_why():
    store, schedule = decide_all(TWO_VCPUS)
    assert schedule.side_cpus() == 1 and store.asked == []  # known before any sample
    assert set(said(store).values()) == {"one at a time: the server and its client need 2 CPUs, a side has 1"}
    run = RunData("r", "s", "", None, "complete", {}, "", "", "native", ["native", "docker-nat"], {}, [])
    run.host_facts = {"schedule": {"name": "duet", "sides": [[0], [1]], "rotate_s": 0.1, **store.facts["schedule"]}}
    assert schedule_summary(run) == (
        "Schedule: duet asked (sides on host CPUs 0 | 1), but no case ran as one: each sample ran alone. "
        "netbw/tx, netlat/tcp, oltp/threads=4, redis/clients=1, redis/clients=16: one at a time: the server and "
        "its client need 2 CPUs, a side has 1."
    )


@pytest.mark.parametrize("lscpu", [FOUR_SMT, FOUR_CORES], ids=["2 cores x 2 threads", "4 cores"])
def test_on_four_cpus_a_side_holds_a_server_and_its_client_unless_they_use_more(lscpu):
    store, schedule = decide_all(lscpu)
    assert schedule.side_cpus() == 2 and len(store.asked) == len(USED)
    fits = "within a side's 2, but isobench does not yet run a server and its client as a duet"
    assert said(store) == {
        "netlat/tcp": f"one at a time: the server and its client used 0.55 + 0.62 CPUs, {fits}",
        "netbw/tx": f"one at a time: the server and its client used 0.95 + 0.41 CPUs, {fits}",
        "redis/clients=1": f"one at a time: the server and its client used 0.48 + 0.71 CPUs, {fits}",
        "redis/clients=16": f"one at a time: the server and its client used 1.00 + 0.97 CPUs, {fits}",
        "oltp/threads=4": "one at a time: the server and its client used 1.62 + 0.48 CPUs, so they need 3 CPUs, "
        "a side has 2",
    }
    a, b = schedule.sides
    if lscpu == FOUR_SMT:  # each side one thread of each core: the two sides share both cores
        assert cores_of(lscpu, a) == cores_of(lscpu, b) == {0, 1}


@pytest.mark.parametrize("lscpu", [EIGHT_SMT, EIGHT_SMT_ADJACENT], ids=["siblings c, c+4", "siblings 2k, 2k+1"])
def test_on_eight_cpus_with_smt_every_case_fits_a_side(lscpu):
    store, schedule = decide_all(lscpu)
    assert schedule.side_cpus() == 4
    assert all(
        t.endswith("within a side's 4, but isobench does not yet run a server and its client as a duet")
        for t in said(store).values()
    )
    a, b = schedule.sides
    # siblings c and c + 4: a side is one thread of every core; 2k and 2k + 1: a side is two whole cores
    assert cores_of(lscpu, a) == ({0, 1, 2, 3} if lscpu == EIGHT_SMT else {0, 1})


def test_the_call_rounds_each_ones_cpus_up_and_counts_one_at_least():
    assert (
        decide_server("auto", 2, 0.2, 0.1, 1.0)
        .text()
        .endswith("within a side's 2, but isobench does not yet run a server and its client as a duet")
    )
    # 1.05 CPU is within the 10% margin of one; 1.2 is two
    assert "need 3 CPUs" in decide_server("auto", 2, 1.2, 1.05, 1.0).text()
    assert decide_server("false", 4, 0.5, 0.5, 1.0).text() == "one at a time: the study says duet = false"
    no_server = decide_server("auto", 2, None, 0.5, 1.0)
    assert not no_server.duet and "no sample alone said" in no_server.text()
    with pytest.raises(ValueError):
        decide_server("maybe", 2)


def test_a_server_sample_without_its_servers_cpu_is_not_a_decision():
    w = Netlat(Netlat.Params(), HOST)
    call = w.duet_decision("auto", 2, lambda: ({}, window(None, 0.6)), "native")
    said = "no sample alone said what the server and its client used"
    assert call.text() == f"one at a time: {said} (its warm-up failed, or it did not read the server's CPU time)"
    assert w.duet_decision("false", 2, lambda: pytest.fail("not asked"), "native").mode == "false"


def test_a_server_table_keeps_whole_periods_in_a_duet_study_and_counts_among_the_cells_run_alone():
    from isobench.checks.resolution import compared_cells

    text = (
        '[study]\nname = "s"\nrepetitions = 10\nschedule = "duet"\n[environments.native]\n'
        '[environments.b]\nkind = "native"\n[environments.c]\nkind = "native"\n[workloads.netlat]\n'
    )
    study = parse_study(text, "s.toml")
    w = Netlat(study.workloads[0].params, HOST)
    assert w.duet_mode() == "auto" and not w.may_duet()
    assert study.meta.rounds_for(w, 3) == 12  # one at a time: the rotation's whole periods
    assert compared_cells(study, HOST).duet_cells == 0
    off = parse_study(text + "duet = false\n", "s.toml")
    assert Netlat(off.workloads[0].params, HOST).duet_mode() == "false"
