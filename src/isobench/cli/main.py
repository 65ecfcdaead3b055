"""The isobench command line: the click group and the commands it holds.
Each command group lives in its own module and is registered here; parsing
and printing only, the work is elsewhere."""

from __future__ import annotations

import click

from isobench.cli.calibrate import calibrate
from isobench.cli.compare import compare_cmd
from isobench.cli.explain import explain_cmd
from isobench.cli.fleet import fleet
from isobench.cli.history import history
from isobench.cli.host import clean, doctor, envs, images
from isobench.cli.reparse import reparse
from isobench.cli.reporting import export_cmd, report, runs
from isobench.cli.running import run
from isobench.cli.setup_cmd import setup
from isobench.cli.store_cmd import store_group
from isobench.cli.studies import studies
from isobench.cli.transfer import archive_cmd, export_run_cmd, import_cmd
from isobench.cli.try_cmd import try_cmd
from isobench.cli.validating import validate


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="isobench")
def main() -> None:
    """Measure what isolation costs.

    isobench runs the same workloads natively, in containers (Docker with
    runc, crun or gVisor), in QEMU/KVM virtual machines (TCG, labelled
    emulated, where KVM cannot run the guest) and in containers inside VMs,
    stores every sample in SQLite, and reports each workload per environment
    with its overhead against native, its spread and a significance verdict.

    \b
    Typical use:
      isobench studies                     the shipped studies, each run by name
      isobench run quick                   run a study, print and save its report
      isobench runs                        list stored runs
      isobench report --format md          the latest run's Table I as Markdown
      isobench explain RUN_ID              which setting costs what, cell by cell
      isobench envs                        what this host can run, and why not
    """


for _command in (
    validate,
    run,
    runs,
    report,
    compare_cmd,
    explain_cmd,
    export_cmd,
    envs,
    doctor,
    images,
    clean,
    fleet,
    archive_cmd,
    export_run_cmd,
    import_cmd,
    calibrate,
    reparse,
    history,
    try_cmd,
    studies,
    setup,
    store_group,
):
    main.add_command(_command)

if __name__ == "__main__":
    main()
