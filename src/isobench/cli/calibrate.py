"""`isobench calibrate`: the gate's false-alarm and detection rates on this
host, measured with A/A copies and planted slowdowns (isobench/calibration.py)."""

from __future__ import annotations

import math

import click
from rich.markup import escape
from rich.table import Table

from isobench.cli.common import STORE_OPTION, Finite, check_output, console, shipped_or_path
from isobench.cli.common import fail as _fail
from isobench.cli.common import open_store as _open_store
from isobench.cli.execution import WaitCommand, wait_option
from isobench.cli.output import STDOUT, deprecated, document, emit, output_option, table_format_option, terminal_to
from isobench.core import sink
from isobench.core.numbers import DASH, fmt_pct

CALIBRATION_FACT = "calibration"  # run fact holding the judged rates


def _old_json(ctx, param, value: str | None) -> str | None:
    """calibrate's old spellings, each said deprecated once: --json (now
    --format json) and --json FILE (the rates to FILE besides the table)."""
    if value == STDOUT:
        deprecated("calibrate --json", "--format json")(None, None, value)
    elif value:
        deprecated("calibrate --json FILE", "--format json -o FILE")(None, None, value)
    return value


@click.command("calibrate", cls=WaitCommand)
@click.argument("study_file", type=click.Path(dir_okay=False), required=False, callback=shipped_or_path)
@STORE_OPTION
@click.option(
    "--env",
    metavar="NAME",
    help="Environment to calibrate (default: the study's baseline); for --plant quota its kind must offer a "
    "CPU quota (cpus).",
)
@click.option(
    "--sizes",
    default="5,10,20",
    show_default=True,
    metavar="PCTS",
    help="Planted slowdowns, percent of the rate of work taken away, each in (0, 50].",
)
@click.option(
    "--plant",
    type=click.Choice(["work", "quota"]),
    default="work",
    show_default=True,
    help="How a slowed copy is slowed: work does that much more of the same work per sample, counted as the "
    "base work (the same size on any host); quota gives it that much less CPU quota (docs/calibrate.md).",
)
@click.option(
    "--plants",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    metavar="N",
    help="Slowed copies per planted size (detection is counted over plants x primary cells).",
)
@click.option(
    "--copies",
    default=7,
    show_default=True,
    type=click.IntRange(min=1),
    metavar="N",
    help="A/A copies of the environment (false alarms are counted over copies x primary cells).",
)
@click.option(
    "--cpus",
    "quota",
    type=Finite(min=0, min_open=True),
    metavar="N",
    help="With --plant quota: the CPU quota every unslowed copy gets when the environment sets none (default 1).",
)
@click.option(
    "--seam",
    is_flag=True,
    help="Add the placebo container (docker-placebo: the least isolation the engine allows) beside a baseline on "
    "the host itself: its comparison, A/A across the seam, is the harness's own bias, reported apart "
    "(docs/calibrate.md).",
)
@click.option(
    "--allow-packages",
    is_flag=True,
    help="Install the study's packages on this host (a native environment) without asking (as `run --allow-packages`).",
)
@click.option("--show", "show_id", metavar="RUN_ID", help="Judge a stored calibration run again; run nothing.")
@table_format_option("calibrate", json_alias=False)
@click.option(
    "--json",
    "json_out",
    is_flag=False,
    flag_value=STDOUT,
    metavar="",
    hidden=True,
    type=click.Path(dir_okay=False, allow_dash=True),
    callback=_old_json,
    help="Deprecated: --json is --format json; --json FILE writes FILE besides the table.",
)
@output_option()
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when on a terminal).")
@click.option(
    "--schedule",
    type=click.Choice(["sequential", "duet"]),
    help="Calibrate the gate under this schedule (default: the study's): with duet, each copy's sample "
    "runs at the same time as the baseline's (docs/statistics.md#duet).",
)
@wait_option
def calibrate(
    study_file: str | None,
    store_path: str,
    env: str | None,
    sizes: str,
    plant: str,
    plants: int,
    copies: int,
    quota: float | None,
    seam: bool,
    allow_packages: bool,
    show_id: str | None,
    fmt: str,
    json_out: str | None,
    output: str | None,
    progress: bool | None,
    schedule: str | None,
    wait_s: float | None,
) -> None:
    """Measure the gate on this host: false alarms and detection per planted size.

    Runs STUDY_FILE's workloads in one environment (the baseline), in COPIES
    identical copies of it (nothing changed: any 'changed' verdict is a false
    alarm) and in PLANTS copies per planted size slowed by SIZES percent (a
    'changed for the worse' verdict is a detection), rounds interleaved as in
    `isobench run`. A work plant does SIZES/(100-SIZES) more of the same work
    per sample and counts only the base work; a quota plant gets a CPU quota
    SIZES percent smaller. Then counts, over the primary cells, the
    false-alarm rate and the detection rate per planted size, each with a
    95% Wilson interval and each plant's delivered size (its slowdown
    against the A/A copies'), and stores them with the run. With --seam, the
    placebo container beside a native baseline too: A/A across the seam.
    --json, the old spelling of --format json, works for one more release
    (and --json FILE, writing FILE besides the table: use --format json -o FILE).

    \b
    Example (about 8 minutes on 2 cores):
      isobench calibrate studies/calibrate.toml --sizes 5,10,20 --copies 7
      isobench calibrate studies/calibrate.toml --sizes 5 --plants 4
    """
    from isobench.run.calibration import derive, judge, parse_sizes
    from isobench.store.db import StoreError
    from isobench.study import StudyError, load_study, parse_study, with_schedule

    if (study_file is None) == (show_id is None):
        _fail("give a study file to calibrate with, or --show RUN_ID to judge a stored calibration run")
    if fmt == "json" and json_out not in (None, STDOUT):
        _fail(f"calibrate --json {json_out}: the old spelling of --format json -o {json_out}; give one of the two")
    store = _open_store(store_path, create=show_id is None)
    for path, what in ((json_out, "--json"), (output, "-o")):
        if path and path != STDOUT:
            check_output(path, what)  # before an hour of measuring, not after
    if show_id is not None:
        try:
            run_id = store.resolve(show_id)
        except StoreError as exc:
            _fail(str(exc))
    else:
        assert study_file is not None  # exactly one of the two, checked above
        try:
            study = load_study(study_file)
            text, _ = derive(study.text, study_file, env, parse_sizes(sizes), copies, quota, plant, plants, seam)
            derived = parse_study(text, f"{study_file} (calibration)", study.base_dir)
            if schedule is not None:
                derived = with_schedule(derived, schedule)
        except StudyError as exc:
            _fail(str(exc))
        from isobench.cli.execution import execute

        run_id = execute(derived, store, progress, allow_packages=allow_packages, wait_s=wait_s)
    result = judge(store.load_run(run_id))
    if not result.rates:
        _fail(
            f"run {run_id}: no A/A or planted environment compared on a primary cell; "
            "is it a calibration run (isobench calibrate)?"
        )
    facts = store.run_facts(run_id)
    facts[CALIBRATION_FACT] = result.as_dict()
    store.set_run_facts(run_id, facts)
    if fmt == "json" or json_out == STDOUT:
        emit(document("calibrate", result.as_dict()), output)
        return
    terminal_to(output, lambda out: print_rates(result, out), console)
    if json_out:  # the old spelling: --json FILE, the table printed as well
        emit(document("calibrate", result.as_dict()), json_out, "--json")
        console.print(f"wrote {sink.markup(json_out)}", highlight=False)


def _pct(x: float) -> str:
    return DASH if math.isnan(x) else f"{x * 100:.0f}%"


def _size(x: float) -> str:
    return DASH if math.isnan(x) else fmt_pct(x)


def print_rates(result, out) -> None:
    """The rates as a table on ``out``, drawn to its width (its title and
    cells wrap), then each plant's planted and delivered size."""
    table = Table(
        "",
        "called changed (of cells)",
        "rate [95%]",
        "measured slowdown (median)",
        "delivered (median, range)",
        title=f"calibration of {escape(result.env)} (run {escape(result.run_id)}, {escape(result.plant)} plants)",
    )
    seam = (result.seam.rate,) if result.seam else ()
    for r in (*result.rates, *seam):
        what = "false alarms" if r.planted_pct == 0 else "detected"
        lo, hi = r.delivered_range
        table.add_row(
            escape(r.label),
            f"{r.hits} of {r.n} {what}",
            f"{_pct(r.rate)} [{_pct(r.low)}, {_pct(r.high)}]",
            _size(r.measured_pct),
            DASH if not r.plants else f"{_size(r.delivered_pct)} ({_size(lo)} to {_size(hi)})",
        )
    out.print(table)
    if result.seam:
        print_seam(result.seam, out)
    plants = [p for r in result.rates for p in r.plants]
    if not plants:
        return
    each = Table("planted", "delivered", "verdict", title="each plant")
    each.add_column("environment", overflow="fold")
    each.add_column("cell", overflow="fold")
    for p in plants:
        each.add_row(_size(p.planted_pct), _size(p.delivered_pct), escape(p.text), escape(p.env), escape(p.cell))
    out.print(each)


def print_seam(seam, out) -> None:
    """The placebo's cells beside the baseline: change, interval, whether the gate called it."""
    each = Table(escape("change [interval]"), "called", title=f"{escape(seam.rate.label)}: {escape(seam.env)}")
    each.add_column("cell", overflow="fold")
    for c in seam.cells:
        where = _size(c.change_pct) + ("" if math.isnan(c.low_pct) else f" [{_size(c.low_pct)}, {_size(c.high_pct)}]")
        each.add_row(where, "changed" if c.called else "no", escape(c.cell))
    out.print(each)
