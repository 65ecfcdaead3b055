"""Run one study on many hosts through Ansible (ansible-runner and the
playbook shipped in isobench/fleet/playbooks), then import every host's run
into the local store. Ansible runs the hosts in parallel (forks) and drops a
failed or unreachable host from the play without stopping the others."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import isobench
from isobench.core.readbound import BoundedReadError, read_bounded
from isobench.fleet import record
from isobench.fleet.inventory import ansible_bin
from isobench.store.transfer import TransferError, import_run, read_export

FACTS_CAP = 1 << 20

PLAYBOOKS = Path(__file__).parent / "playbooks"
WHEEL_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "isobench" / "fleet-wheels"


class FleetError(RuntimeError):
    pass


@dataclass(frozen=True)
class Outcome:
    host: str
    run_id: str
    status: str  # record.COMPLETE | FAILED | UNREACHABLE
    detail: str


def new_fleet_id(study_name: str) -> str:
    return f"fleet-{time.strftime('%Y%m%d-%H%M%S')}-{study_name}-{secrets.token_hex(2)}"


def project_root() -> Path:
    """The source tree of the running isobench (pyproject.toml, the lock)."""
    root = Path(isobench.__file__).resolve().parents[2]
    if not (root / "pyproject.toml").exists() or not (root / "requirements.lock").exists():
        raise FleetError(
            f"{root}: the fleet deploys isobench from its source tree (pyproject.toml, "
            "requirements.lock); run it from a clone"
        )
    return root


def _run(argv: list[str], timeout: float, what: str) -> None:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise FleetError(f"{what}: no result after {timeout:.0f}s") from None
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise FleetError(f"{what} failed: {last}")


def dependency_wheels(lock: Path, log) -> Path:
    """Wheels of every locked dependency, built once per lock file on the
    controller so targets install without reaching PyPI (same Python)."""
    given = os.environ.get("ISOBENCH_FLEET_WHEELS")
    if given:
        return Path(given)
    d = WHEEL_CACHE / hashlib.sha256(lock.read_bytes()).hexdigest()[:12]
    if not (d / ".complete").exists():
        log(f"building dependency wheels into {d} (once per lock file)")
        d.mkdir(parents=True, exist_ok=True)
        _run([sys.executable, "-m", "pip", "wheel", "-q", "-r", str(lock), "-w", str(d)], 1800, "pip wheel")
        (d / ".complete").touch()
    return d


def ansible_env() -> dict[str, str]:
    """ansible-playbook's environment. Pipelining sends each task's module
    through the open SSH connection instead of copying it first: about a
    second less per task and host, on a playbook of twenty-odd tasks (it
    needs sudo without requiretty, Debian's default)."""
    return {
        "PATH": f"{Path(ansible_bin('ansible-playbook')).parent}:{os.environ.get('PATH', '')}",
        "ANSIBLE_TIMEOUT": "15",
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
        "ANSIBLE_LOCALHOST_WARNING": "False",
        "ANSIBLE_PIPELINING": "True",
    }


def dependency_archive(lock: Path, digest: str, log) -> Path:
    """The dependency wheels as one tar (wheels/...), made once per lock file
    (``digest``, its SHA-256) beside the wheels' cache: the controller does
    not copy and pack 128 MB every run for hosts that mostly already have them."""
    tar = WHEEL_CACHE / f"{digest[:12]}-deps.tar"
    if not tar.exists():
        wheels = dependency_wheels(lock, log)
        tar.parent.mkdir(parents=True, exist_ok=True)
        part = tar.with_name(f"{tar.name}.{os.getpid()}.part")
        with tarfile.open(part, "w") as archive:
            archive.add(wheels, arcname="wheels", filter=lambda i: None if i.name.endswith("/.complete") else i)
        os.replace(part, tar)  # whole or not at all, should two controllers race
    return tar


def build_wheel(root: Path, dest: Path) -> Path:
    """isobench's wheel from its source tree ROOT into DEST: the one way it is
    built, for the fleet's hosts and for `uv tool install` (docs/install.md)."""
    dest.mkdir(parents=True, exist_ok=True)
    _run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dest), str(root)],
        300,
        "building the isobench wheel",
    )
    return next(dest.glob("isobench-*.whl"))


def make_bundle(study_path: str, dest: Path, log) -> tuple[Path, Path, str]:
    """DEST.tar (the isobench wheel, the lock file, install-host.sh, the study),
    the dependency archive and the lock file's digest. The dependencies
    travel only to a host whose venv was not built from this lock (run.yml
    compares the digest): 128 MB a host otherwise, every run."""
    root = project_root()
    build_wheel(root, dest)
    lock = root / "requirements.lock"
    shutil.copy(lock, dest / "requirements.lock")
    shutil.copy(root / "scripts" / "install-host.sh", dest / "install-host.sh")
    shutil.copy(study_path, dest / "study.toml")
    # one archive each: a single transfer per host instead of one per file
    bundle = Path(shutil.make_archive(str(dest), "tar", root_dir=dest))
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()
    return bundle, dependency_archive(lock, digest, log), digest


def run_args(allow_packages: bool) -> list[str]:
    """Each host's `isobench run` options beyond those run.yml sets (its
    ``ib_run_args``): --allow-packages agrees to the study's packages on a
    host, where no terminal asks; each host still refuses a plan that
    removes a package or touches isobench's own, and keeps its plan with
    its run."""
    return ["--allow-packages"] if allow_packages else []


def _one_line(text: str) -> str:
    lines = [ln.strip() for ln in str(text).strip().splitlines() if ln.strip()]
    return (lines[-1] if lines else "no message")[:300]


def host_problems(events) -> dict[str, tuple[str, str]]:
    """host -> (status, first failure message) from ansible-runner events."""
    out: dict[str, tuple[str, str]] = {}
    for ev in events:
        kind = ev.get("event")
        data = ev.get("event_data", {})
        host = data.get("host")
        if host is None or host in out or data.get("ignore_errors"):
            continue
        res = data.get("res", {}) or {}
        if kind == "runner_on_unreachable":
            out[host] = (record.UNREACHABLE, _one_line(res.get("msg", "unreachable")))
        elif kind == "runner_on_failed":
            msg = res.get("msg") or ""
            if res.get("stderr"):
                msg = f"{msg}: {_one_line(res['stderr'])}" if msg else res["stderr"]
            if res.get("attempts") and data.get("task", "").startswith("wait for"):
                msg = f"still running after the per-host timeout ({res['attempts']} polls)"
            out[host] = (record.FAILED, f"{data.get('task', 'task')}: {_one_line(msg)}")
    return out


def _runner(ansible_runner, **kw):
    try:
        return ansible_runner.run(**kw)
    except (ValueError, RuntimeError, OSError) as exc:  # its configuration errors: one line, not a traceback
        raise FleetError(f"ansible-runner: {exc}") from None


def run_fleet(
    store,
    fleet_id: str,
    study_path: str,
    inventory: str,
    hosts: list[str],
    runs: dict[str, str],
    forks: int,
    setup: bool,
    timeout: float,
    poll: float,
    log,
    allow_packages: bool = False,
) -> list[Outcome]:
    """Run the playbook on HOSTS (their run ids in RUNS), import what came
    back, record every host's outcome."""
    import ansible_runner

    with tempfile.TemporaryDirectory(prefix="isobench-fleet-") as tmp_dir:
        tmp = Path(tmp_dir)
        bundle, deps, lock_sha = make_bundle(study_path, tmp / "bundle", log)
        fetch = tmp / "fetch"
        fetch.mkdir()
        log(f"running the playbook on {len(hosts)} host(s), {forks} at a time")
        env = ansible_env()
        (tmp / "runner").mkdir()
        result = _runner(
            ansible_runner,
            private_data_dir=str(tmp / "runner"),
            playbook=str(PLAYBOOKS / "run.yml"),
            inventory=str(Path(inventory).resolve()),
            limit=",".join(hosts),
            forks=forks,
            quiet=True,
            envvars=env,
            timeout=int(timeout + 3600),
            extravars={
                "ib_bundle": str(bundle),
                "ib_deps": str(deps),
                "ib_lock_sha": lock_sha,
                "ib_fetch": str(fetch),
                "ib_runs": runs,
                "ib_setup": setup,
                "ib_timeout": int(timeout),
                "ib_poll": int(poll),
                "ib_run_args": run_args(allow_packages),
            },
        )
        problems = host_problems(result.events)
        outcomes = []
        for host in hosts:
            outcome = _collect(store, fleet_id, host, runs[host], fetch / host, problems.get(host))
            record.save(
                store,
                record.HostRecord(
                    fleet_id, host, runs[host], outcome.status, outcome.detail, str(study_path), str(inventory)
                ),
            )
            outcomes.append(outcome)
        return outcomes


def _collect(store, fleet_id: str, host: str, run_id: str, fetched: Path, problem) -> Outcome:
    export = fetched / "run.json"
    if not export.exists():
        status, detail = problem or (record.FAILED, "no run came back (the playbook ended early)")
        return Outcome(host, run_id, status, detail)
    try:
        facts = (
            json.loads(read_bounded(fetched / "facts.json", FACTS_CAP, "host facts"))
            if (fetched / "facts.json").exists()
            else {}
        )
    except (BoundedReadError, ValueError):
        facts = {}  # Ansible's facts are a label; the run itself is what counts
    try:
        # the run is stored under the id the controller chose, whatever id the host wrote
        import_run(
            store, read_export(export), rename=run_id, tag={"fleet_id": fleet_id, "host": host, "ansible_facts": facts}
        )
    except TransferError as exc:
        return Outcome(host, run_id, record.FAILED, f"import: {exc}")
    return Outcome(host, run_id, record.COMPLETE, "")


def clean_fleet(inventory: str, hosts: list[str], forks: int) -> dict[str, tuple[str, str]]:
    """The clean playbook on HOSTS; host -> (status, cause) for those that failed."""
    import ansible_runner

    with tempfile.TemporaryDirectory(prefix="isobench-fleet-") as tmp:
        env = ansible_env()
        result = _runner(
            ansible_runner,
            private_data_dir=tmp,
            playbook=str(PLAYBOOKS / "clean.yml"),
            inventory=str(Path(inventory).resolve()),
            limit=",".join(hosts),
            forks=forks,
            quiet=True,
            envvars=env,
            timeout=900,
        )
        return host_problems(result.events)
