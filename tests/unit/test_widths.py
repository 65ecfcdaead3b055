"""Every command that prints a table or text, at 80 and 120 columns: no line
over the width (docs/output.md#width). The commands run as a pipe sees them
(CliRunner, COLUMNS set; the shared consoles get the width the program reads
from COLUMNS at start), on stored runs and faked host readings, without
Docker. Those that need the run lock, Docker or a measurement (clean,
calibrate, try) are drawn by the functions that print them, from
constructed inputs, on the same consoles; `images` has only `images build`,
whose output needs Docker: its --help is here. What may be wider says so
below, each with its rule:

- `report --format md`, `compare --format md`: Markdown is not drawn to a
  width (a table row is one line; docs/output.md);
- `runs` at 80: a run id, its start time, status and counts are never cut
  (docs/output.md), so the listing is as narrow as it gets whole (the
  environments wrap) and may be wider than 80; it fits 120.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from types import SimpleNamespace

import click
import pytest
from click.testing import CliRunner

from isobench.cli import common
from isobench.cli.main import main
from isobench.store.db import Store
from isobench.store.transfer import import_run
from synthetic_runs import Synthetic, history_run, write_run

ROOT = Path(__file__).resolve().parents[2]
WIDTHS = (80, 120)


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    """The quick study as run on this host, two synthetic runs (one with a
    regression) and a history series."""
    path = str(tmp_path_factory.mktemp("w") / "w.sqlite")
    s = Store(path)
    quick = import_run(s, json.load(gzip.open(ROOT / "tests" / "data" / "quick-20261125.run.json.gz")))
    write_run(s, Synthetic("a", seed=1))
    write_run(s, Synthetic("c", seed=1, inject={("docker-nat", "fio", "iops"): 0.8}))
    for day in (1, 2, 3, 4, 5):
        history_run(s, f"h{day}", day, 0.95 if day < 4 else 0.85, seed=day)
    s.close()
    return path, quick


@pytest.fixture
def width(request, monkeypatch):
    """COLUMNS as the program reads it: click's help and the consoles built
    at start (cli/common.py: a pipe gets COLUMNS)."""
    w = request.param
    monkeypatch.setenv("COLUMNS", str(w))
    monkeypatch.setattr(common.console, "width", w)
    monkeypatch.setattr(common.err_console, "width", w)
    return w


def run(width: int, *args: str):
    r = CliRunner().invoke(main, list(args), catch_exceptions=False, env={"COLUMNS": str(width)})
    return r


def over(text: str, width: int, allowed=lambda line: False) -> list[str]:
    return [ln for ln in text.splitlines() if len(ln) > width and not allowed(ln)]


def _commands(cmd=main, path=()):
    if isinstance(cmd, click.Group):
        for name, sub in sorted(cmd.commands.items()):
            yield from _commands(sub, path + (name,))
    yield path


@pytest.mark.parametrize("width", WIDTHS, indirect=True)
def test_every_help_fits(width):
    seen = 0
    for path in _commands():
        r = run(width, *path, "--help")
        assert r.exit_code == 0, (path, r.output)
        assert not over(r.output, width), (" ".join(path), over(r.output, width))
        seen += 1
    assert seen > 20


@pytest.mark.parametrize("width", (80, 100), indirect=True)
def test_the_main_help_shows_try_and_every_command_whole(width):
    """issue 55: its typical use lacked `try`, and click cut every command's
    line with "..." even at 100 columns."""
    from isobench.cli.main import main as group

    text = run(width, "--help").output
    assert "isobench try -- " in text.split("Options:")[0] and not over(text, width)
    listed = text.split("Commands:")[1]
    assert "..." not in listed and all(f"  {name} " in listed for name, c in group.commands.items() if not c.hidden)


def _stored(store_path):
    path, quick = store_path
    return [
        ("report", quick, "--store", path),
        ("report", quick, "--store", path, "--all"),
        ("report", "a", "--store", path),
        ("compare", "a", "c", "--store", path),
        ("compare", "a", "c", "--store", path, "--overhead"),
        ("history", "synthetic", "--store", path),
        ("fleet", "list", "--store", path),
    ]


@pytest.mark.parametrize("width", WIDTHS, indirect=True)
def test_commands_on_stored_runs_fit(width, store_path):
    for args in _stored(store_path):
        r = run(width, *args)
        assert r.exit_code in (0, 1), (args, r.output)  # 1: compare's gate, when given
        assert not over(r.stdout, width), (args, over(r.stdout, width))
        assert not over(r.stderr, width), (args, over(r.stderr, width))


@pytest.mark.parametrize("width", WIDTHS, indirect=True)
def test_runs_fits_but_never_cuts_a_run_id(width, store_path):
    path, quick = store_path
    r = run(width, "runs", "--store", path)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert all(any(ln.startswith(i + " ") for ln in lines) for i in (quick, "a", "h1"))  # whole
    if width >= 120:
        assert not over(r.stdout, width), over(r.stdout, width)
    else:
        # the rule: a run id, its start time, status and counts are never cut,
        # so at 80 the listing is as narrow as it gets whole: the environments wrap
        assert "native, docker-nat, docker-host, vm-tcg" not in r.stdout
        assert len({len(ln) for ln in lines}) == 1  # one table, no line longer than it


@pytest.mark.parametrize("width", WIDTHS, indirect=True)
def test_validate_fits(width):
    for study in ("quick.toml", "network-attribution.toml"):
        r = run(width, "validate", str(ROOT / "studies" / study))
        assert r.exit_code == 0, r.output
        assert not over(r.stdout, width), (study, over(r.stdout, width))


@pytest.mark.parametrize("width", WIDTHS, indirect=True)
def test_envs_and_doctor_fit(width, monkeypatch):
    """With the kinds' own texts (the KVM sentence, the longest) and the
    doctor's findings judged from readings of a biased host."""
    from isobench.checks import doctor, noisepilot
    from isobench.envs import kinds
    from isobench.envs.vm import kvm_probe

    details = {
        "native": "the host itself",
        "docker": "Docker 20.10.24 (overlay2, cgroup v2); runtimes: runc, runsc (gVisor): not installed",
        "vm": f"QEMU 7.2.0; KVM: {kvm_probe.NOT_PROBED} ({kvm_probe.when_probed()}); huge pages: none "
        "reserved, THP madvise; vhost-net: yes; guest kernel: not built yet (isobench images build)",
    }
    monkeypatch.setattr(
        kinds, "probe_all", lambda: [SimpleNamespace(name=n, available=True, details=d) for n, d in details.items()]
    )
    r = run(width, "envs")
    assert r.exit_code == 0 and "boots its" in r.stdout, r.output
    assert not over(r.stdout, width), over(r.stdout, width)

    readings = {
        "governors": ["powersave"],
        "turbo": "on",
        "thp": "always",
        "irqbalance": True,
        "swap_devices": 1,
        "loadavg1": 1.9,
        "cores": 2,
        "busy": [("stress-ng", 99.0), ("a-process-with-a-rather-long-name", 12.0)],
        "hugepages_total": 0,
        "kinds": {"vm": {"kvm_present": True, "kvm_verdict": None, "vhost_net": False}, "docker": {}},
        "mem_available": 1 * 2**30,
        "disk_free": 2 * 2**30,
    }
    judged = doctor.judge(readings)
    monkeypatch.setattr(noisepilot, "without_a_run", lambda fresh, on_measure: (None, "no pilot in a test"))
    monkeypatch.setattr(doctor, "read_host", lambda: None)
    monkeypatch.setattr(doctor, "judge", lambda host: judged)
    r = run(width, "doctor")
    assert r.exit_code == 0 and "boots its" in " ".join(r.stdout.split()), r.output
    assert not over(r.stdout, width), over(r.stdout, width)


# -- what clean, calibrate and try print, drawn from constructed inputs: clean's
# leftovers, a calibration's rates, try's study and a stored run. The commands
# themselves take the run lock, Docker and a measurement; their printing is
# these functions (cli/host.print_removed, cli/calibrate.print_rates,
# cli/execution.say_resolution, cli/try_cmd.print_answer).

RUN_ID = "20261125-070348-quick-66a6"


def drawn(out, draw) -> str:
    with out.capture() as captured:
        draw(out)
    return captured.get()


@pytest.mark.parametrize("width", WIDTHS, indirect=True)
def test_clean_fits(width):
    from isobench.cli.host import print_removed

    rule = f"-A FORWARD -i ib-66a6-br -o ib-66a6-br -m comment --comment isobench-{RUN_ID} -j ACCEPT"  # as saved
    removed = [
        f"container isobench-{RUN_ID}-docker-nat",
        f"volume isobench-{RUN_ID}-docker-nat-data",
        f"iptables rule {rule}",
        f"network namespace isobench-{RUN_ID}-client",
        "link ib-66a6-br",
        "server process 4242 (/usr/bin/redis-server) bound to a benchmark address",
        "stress-ng pid 4711",
        f"directory /var/lib/isobench/scratch/{RUN_ID}",
    ]
    assert len(f"removed iptables rule {rule}") > width  # a line printed whole would not fit
    text = drawn(common.console, lambda out: print_removed(removed, out))
    assert not over(text, width), over(text, width)
    lines = text.splitlines()
    assert len(lines) > len(removed) + 1 and lines[-1] == "8 items removed"
    # every item whole (only folded at spaces), a continuation indented
    assert all(f"removed {item}" in " ".join(text.split()) for item in removed)
    assert all(ln.startswith(("removed ", "  ")) for ln in lines[:-1])


@pytest.mark.parametrize("width", WIDTHS, indirect=True)
def test_calibrate_fits(width):
    from isobench.cli.calibrate import print_rates
    from isobench.run.calibration import Calibration, Planted, Rate, wilson

    env = "an-environment-named-at-31-char"  # NAME_MAX

    def plants(size: float) -> tuple[Planted, ...]:
        name, cell = f"{env}-slow{size:g}-16", "compression-16 default throughput_mbs"
        return (Planted(name, cell, size, size * 0.97, True, "−4.9% [−6.1, −3.7] changed"),) if size else ()

    rates = tuple(
        Rate("A/A" if size == 0 else f"planted {size:g}%", size, hits, n, *wilson(hits, n), measured, (), plants(size))
        for size, hits, n, measured in ((0, 3, 126, -0.43), (2.5, 7, 18, 2.31), (10, 18, 18, 9.87), (20, 18, 18, 19.6))
    )
    result = Calibration(f"20261125-070348-{env[:21].rstrip('-')}-calibrate-9f3c", env, rates)
    assert len(f"calibration of {env} (run {result.run_id})") > 80  # the title must wrap at 80
    text = drawn(common.console, lambda out: print_rates(result, out))
    assert not over(text, width), over(text, width)
    assert "3 of 126" in text and "false alarms" in text and "+19.6%" in text and result.run_id in text
    assert "+19.4%" in text and "slow20-16" in text  # each plant, its name folded, not cut


@pytest.mark.parametrize("width", WIDTHS, indirect=True)
def test_try_plan_and_answer_fit(width, store_path):
    """Before measuring, `try` (as `run`) says on stderr what its rounds can
    resolve here (with a pilot, or none measured lately); after, Table I,
    the answer and where the run is stored."""
    import time

    from isobench.checks.noisepilot import KernelNoise, Pilot
    from isobench.checks.preflight import study_size
    from isobench.cli.execution import resolution_text, say_resolution
    from isobench.cli.try_cmd import default_envs, print_answer, study_text
    from isobench.host.hostinfo import host_info
    from isobench.study import parse_study, with_budget

    kernels = {
        k: KernelNoise(k, k, 20, sd, sd * 0.8, sd * 1.5, 0.1, -0.2, 0.4, 0.5)
        for k, sd in (("cpu", 0.021), ("io", 0.129))
    }
    pilot = Pilot(1, {}, "2026-11-25 07:00:00", time.time() - 600, 30.4, kernels, {})
    argv = ("sysbench", "cpu", "--cpu-max-prime=5000", "--events=2000", "run")
    study = parse_study(study_text(argv, default_envs(), 5, 1, 1, None, None), "isobench try")
    for s, p in ((study, pilot), (with_budget(study, "30m"), pilot), (study, None)):
        size = study_size(s, host_info())
        said = resolution_text(s, size, p)
        assert said and max(map(len, said)) > width  # printed whole, they would not fit
        text = drawn(common.err_console, lambda out, s=s, size=size, p=p: say_resolution(s, size, p, out))
        assert not over(text, width), over(text, width)
        assert " ".join(text.split()) == " ".join(" ".join(said).split())  # folded, nothing cut

    path, quick = store_path
    store = Store(path)
    text = drawn(common.console, lambda out: print_answer(store.load_run(quick), out))
    store.close()
    assert not over(text, width), over(text, width)
    assert text.rstrip().endswith("shows the whole report") and quick in text


def _intervals(pct: float, low: float, high: float, short: bool) -> str | None:
    """A change and its interval as printed (Table I's terminal cells drop the
    interval's % signs); None for a capped bound (printed as < or >)."""
    from isobench.results.numbers import fmt_pct

    if low < -99.9 or high > 999:
        return None
    lo, hi = fmt_pct(low), fmt_pct(high)
    if short:
        lo, hi = lo.removesuffix("%"), hi.removesuffix("%")
    return f"{fmt_pct(pct)} [{lo}, {hi}]"


def _whole(out: str, wanted: list[str]) -> list[str]:
    """The wanted values that no line of the output holds whole."""
    lines = out.splitlines()
    return [w for w in wanted if not any(w in ln for ln in lines)]


@pytest.mark.parametrize("width", (80, 100), indirect=True)
def test_no_number_interval_verdict_or_run_id_is_cut(width, store_path):
    """report, compare and history at 80 and 100 columns, read against their
    own JSON: every change with its interval, every centre and run id is on
    one line whole, and no line holds an ellipsis (a cut value)."""
    path, quick = store_path
    doc = json.loads(run(width, "report", quick, "--store", path, "--format", "json").stdout)
    report = run(width, "report", quick, "--store", path).stdout
    wanted = [
        x
        for c in doc["cells"]
        if c["pct_ci95_low"] is not None
        and (x := _intervals(c["pct_vs_baseline"], c["pct_ci95_low"], c["pct_ci95_high"], True))
    ]
    from isobench.results.numbers import fmt_num

    wanted += [fmt_num(c["centre"]) for c in doc["cells"] if c["centre"] is not None]
    assert len(wanted) > 100 and _whole(report, wanted) == []
    assert "\u2026" not in report
    cmp = json.loads(run(width, "compare", "a", "c", "--store", path, "--format", "json").stdout)
    shown = run(width, "compare", "a", "c", "--store", path).stdout
    wanted = [x for c in cmp["cells"] if (x := _intervals(c["pct"], c["pct_low"], c["pct_high"], False))]
    assert len(wanted) > 50 and _whole(shown, wanted + ["a (A) \u2192 c (B)"]) == [] and "\u2026" not in shown
    hist = json.loads(run(width, "history", "synthetic", "--store", path, "--format", "json").stdout)
    shown = run(width, "history", "synthetic", "--store", path).stdout
    points = [p for g in hist["groups"] for s in g["series"] for p in s["points"]]
    wanted = [
        x
        for p in points
        if p.get("pct_low") is not None and (x := _intervals(p["pct"], p["pct_low"], p["pct_high"], False))
    ]
    assert len(wanted) > 10 and _whole(shown, wanted + [p["run_id"] for p in points]) == [] and "\u2026" not in shown


def test_a_long_fact_is_cut_between_values():
    from isobench.report.terminal import _clip

    noise = "paired SD 4.1% per sample on CPU [3.2%, 5.8%], 22.4% on I/O [16.6%, 31.0%] (host noise pilot, 30 rounds)"
    assert _clip(noise) == noise  # the host-noise fact is never cut
    sentence = "; ".join(f"{noise}, then {i} pairs in 40 s" for i in range(4))
    assert _clip(sentence) == sentence  # nor any sentence: it wraps (issue 55)
    packages = json.dumps({f"package{i}": f"1.{i}.0" for i in range(40)}, separators=(",", ":"))
    cut = _clip(packages)
    assert len(cut) <= 205 and cut.endswith(", \u2026}")
    kept = cut.count('"package')
    assert kept > 3 and cut == "{" + ", ".join(f'"package{i}": "1.{i}.0"' for i in range(kept)) + ", \u2026}"
    assert _clip('["a","b"]') == '["a", "b"]'  # a space between members: it wraps there


LONG_NOISE = (
    "CPU noise 0.9% [0.7%, 1.3%] (paired SD of one-thread kernels beside each other), cpu-duet 1.1% [0.8%, 1.6%], "
    "I/O noise 2.1% [1.5%, 3.4%]; drift cpu +0.2%/min; 13 pairs in 40 s, measured 2026-11-25 07:00, 3 min before "
    "the run; cpu-duet: one thread a side"
)


@pytest.mark.parametrize("width", (80,), indirect=True)
def test_the_reports_facts_wrap_and_are_never_cut_mid_value(width, store_path, tmp_path):
    """issue 55: at 80 columns the report cut the host-noise line after "13
    pairs in 40 s" and the schedule fact between a key and its value."""
    path, quick = store_path
    mine = str(tmp_path / "facts.sqlite")
    Store(path).db.execute("VACUUM INTO ?", (mine,))
    store = Store(mine)
    facts = store.run_facts(quick)
    facts["host_noise"] = {"line": LONG_NOISE, "summary": "cpu 0.9%"}
    facts["schedule"] = {"name": "duet", "sides": [[0], [1]], "cells": {"mine/default": "duet"}}
    store.set_run_facts(quick, facts)
    store.close()
    report = run(width, "report", quick, "--store", mine, "--all").stdout
    assert LONG_NOISE in " ".join(report.split()) and over(report, width) == []
    assert '{"cells": {"mine/default": "duet"}, "name": "duet", "sides": [[0], [1]]}' in " ".join(report.split())
    assert "\u2026" not in report
