"""Your own program as a workload, end to end against the real Docker Engine:
a study's command workload (a copied file, a setup step, a metric read from
the output) measured natively and in Docker, read back from the store and the
report; a planted difference (the host's PATH finds another program than the
image's) refused before measuring, or measured and said with same_program =
false; a package the study adds (Debian's jq, which isobench does not
install) built into an image of its own and installed on the host, the
same version in both; one that would remove docker.io (podman-docker)
refused before anything changes; and `isobench try` with its saved study."""

import hashlib
import json
import os
import re
import sqlite3
import subprocess
from datetime import datetime
from pathlib import Path

import pytest
from tests.integration.test_cli_run import isobench, isobench_containers

from isobench.core.workspace import DATA_ROOT, TMP_ROOT

pytestmark = pytest.mark.integration

STUDY = """
[study]
name = "own"
repetitions = 2
warmup = 0

[environments.native]
[environments.docker-nat]

[workloads.primes]
command = ["sysbench", "cpu", "--cpu-max-prime=3000", "--events=500", "--threads=1", "run"]
packages = ["sysbench"]

[workloads.primes.metrics.eps]
regex = 'events per second:\\s+(?P<eps>[0-9.]+)'
higher_is_better = true
unit = "ev/s"

[workloads.digest]
command = ["sha256sum", "-c", "input.sha256"]
setup = ["sh", "-c", "sha256sum input.bin > input.sha256"]
cleanup = ["rm", "-f", "input.sha256"]
files = ["input.bin"]
repeat = 2
"""


def test_a_command_workload_runs_natively_and_in_docker_and_is_stored(tmp_path):
    (tmp_path / "own.toml").write_text(STUDY)
    (tmp_path / "input.bin").write_bytes(bytes(range(256)) * 40_000)
    store = tmp_path / "r.sqlite"
    isobench("run", "own.toml", "--out", str(tmp_path / "out"), "--no-progress", store=store, cwd=tmp_path)
    db = sqlite3.connect(store)
    rows = db.execute("SELECT env, workload, status, vals, extra, error FROM samples").fetchall()
    assert len(rows) == 2 * 2 * 2 and all(r[2] == "ok" for r in rows), [r[5] for r in rows]
    for env, key, _, vals, extra, _ in rows:
        values, extra = json.loads(vals), json.loads(extra)
        assert values["wall_s"] > 0 and values["user_s"] >= 0 and values["peak_rss_mib"] > 0, (env, key, values)
        assert extra["program"]["sha256"] and extra["program"]["executable"].startswith("/usr/bin/")
        if key == "primes":
            assert values["eps"] > 0
            # the Debian package that holds the executable, read on each side (a refusal names its versions)
            assert extra["program"]["owner"].startswith("sysbench "), extra["program"]
        else:
            assert extra["runs"] == 2 and len(extra["program"]["files"]["input.bin"]) == 64
    # the same bytes everywhere: the copied file's digest, and here (the image
    # and the host are one Debian release) the executable's. The shared
    # libraries are recorded in both, by soname; their bytes may differ (the
    # image's security updates are not the host's): noted, not refused
    programs = {(env, key): json.loads(extra)["program"] for env, key, _, _, extra, _ in rows}

    def but_libraries(record: dict) -> dict:
        return {k: v for k, v in record.items() if k != "libraries"}

    for key in ("primes", "digest"):
        assert but_libraries(programs[("native", key)]) == but_libraries(programs[("docker-nat", key)])
        native, docker = programs[("native", key)]["libraries"], programs[("docker-nat", key)]["libraries"]
        assert "libc.so.6" in native and set(native) == set(docker), (native, docker)
    primaries = db.execute("SELECT workload, metric FROM metric_defs WHERE is_primary = 1").fetchall()
    assert sorted(primaries) == [("digest", "wall_s"), ("primes", "wall_s")]
    md = isobench("report", "--format", "md", store=store, cwd=tmp_path).stdout.replace("\\_", "_")
    assert "| primes | wall_s (s) ↓ |" in md and "eps (ev/s) ↑" in md and "| digest |" in md
    # the run section: what each environment ran, the same bytes on one line
    file_digest = programs[("native", "digest")]["files"]["input.bin"]
    assert "**digest:** the same in native, docker-nat" in md
    assert f"native, docker-nat: file input.bin sha256 {file_digest}" in md
    # sysbench's libraries (libpq's Kerberos among them): one line each group,
    # and the ones whose bytes differ named, not refused
    differ = programs[("native", "primes")]["libraries"] != programs[("docker-nat", "primes")]["libraries"]
    assert "shared libraries sha256 " in md
    assert ("not the bytes native loads: " in md) == differ, md[-4000:]
    run_id = db.execute("SELECT run_id FROM runs").fetchone()[0]
    facts = json.loads(db.execute("SELECT facts FROM env_facts WHERE env = 'docker-nat'").fetchone()[0])
    assert facts["programs"]["digest"] == programs[("docker-nat", "digest")]
    version = facts["programs"]["primes"]["packages"]["sysbench"]
    assert version != "not installed" and programs[("native", "primes")]["packages"] == {"sysbench": version}
    assert f"native, docker-nat: package sysbench {version}" in md
    doc = json.loads(isobench("export", run_id, "--format", "json", "-o", "-", store=store, cwd=tmp_path).stdout)
    assert doc["run"]["programs"]["primes"]["same"] is True
    assert not isobench_containers()


PLANTED = """
[study]
name = "planted-diff"
repetitions = 2
warmup = 0

[environments.native]
[environments.docker-nat]

[workloads.sum]
command = ["sha256sum", "input.bin"]
files = ["input.bin"]
env = { PATH = "SHADOW:/usr/bin:/bin" }
"""


PACKAGE_STUDY = """
[study]
name = "own-package"
repetitions = 1
warmup = 0

[environments.native]
[environments.docker-nat]

[workloads.query]
command = ["jq", "-n", "[range(100000)] | add"]
packages = ["jq"]
"""


def test_a_package_the_study_adds_is_in_an_image_of_its_own_and_on_the_host(tmp_path):
    from isobench import images
    from isobench.host.packages import tool_packages

    assert "jq" not in tool_packages()  # else this proves nothing: pick another
    (tmp_path / "own.toml").write_text(PACKAGE_STUDY)
    store = tmp_path / "r.sqlite"
    # the first run on a host builds the image (about 2 min here); later runs reuse it
    # jq may be missing or older than apt's candidate here: agreed to without a terminal
    out = isobench("run", "own.toml", "--no-progress", "--allow-packages", store=store, cwd=tmp_path, timeout=1200)
    assert isobench_containers() == [], out.stderr[-3000:]
    db = sqlite3.connect(store)
    rows = db.execute("SELECT env, status, extra FROM samples").fetchall()
    assert sorted((env, status) for env, status, _ in rows) == [("docker-nat", "ok"), ("native", "ok")], out.stderr
    programs = {env: json.loads(extra)["program"] for env, _, extra in rows}
    version = programs["native"]["packages"]["jq"]
    assert version != "not installed" and programs["docker-nat"]["packages"] == {"jq": version}
    assert programs["native"]["sha256"] == programs["docker-nat"]["sha256"]  # /usr/bin/jq, the same bytes
    host = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "jq"], capture_output=True, text=True, timeout=30)
    assert host.stdout == version  # installed, or brought to the image's version, by the native environment
    # apt's plan and the consent, kept with the run ("nothing to install" where jq was up to date)
    (run_facts,) = db.execute("SELECT host_facts FROM runs").fetchone()
    kept = json.loads(run_facts)["packages_plan"]
    assert kept["asked"] == ["jq"] and kept["consent"] in ("--allow-packages", "nothing to install"), kept
    # the container ran the study's image, not isobench's own
    facts = json.loads(db.execute("SELECT facts FROM env_facts WHERE env = 'docker-nat'").fetchone()[0])
    tag = facts["image"]
    assert tag.startswith(images.IMAGE_REPO + ":") and tag != images.image_tag(), tag
    built = json.loads((Path(images.image_dir(tag.split(":")[1])) / "image.json").read_text())
    assert built["recipe"]["study_packages"] == ["jq"] and built["tool_versions"]["jq"] == version


def dpkg_state() -> str:
    return subprocess.run(
        ["dpkg-query", "-W", "-f", "${Package} ${Version} ${db:Status-Abbrev}\n"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout


def test_a_package_that_would_remove_docker_io_is_refused_before_anything_changes(tmp_path):
    # Debian's podman-docker conflicts with docker.io: apt's real simulation (apt-get -s) says it
    # would remove it; validate and run refuse, even with --allow-packages, and nothing starts
    before, containers = dpkg_state(), isobench_containers()
    assert re.search(r"^docker\.io \S+ ii", before, re.M), "docker.io from Debian is what this test protects"
    (tmp_path / "pd.toml").write_text(PACKAGE_STUDY.replace('"jq"', '"podman-docker"'))
    store = tmp_path / "r.sqlite"
    line = "pd.toml: packages: podman-docker would remove docker.io, which isobench runs on: drop it from packages"
    checked = isobench("validate", "pd.toml", store=store, cwd=tmp_path, check=False)
    assert checked.returncode == 2 and checked.stderr.strip() == f"error: {line}", checked.stderr
    ran = isobench("run", "pd.toml", "--allow-packages", "--no-progress", store=store, cwd=tmp_path, check=False)
    assert ran.returncode == 2 and ran.stderr.strip() == f"error: {line}; nothing was changed", ran.stderr
    assert "measuring the host's noise" not in ran.stderr  # refused before the lock and the pilot
    assert dpkg_state() == before and isobench_containers() == containers
    assert not store.exists() or sqlite3.connect(store).execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0


def test_validate_names_the_service_a_new_package_brings_and_leaves_nothing(tmp_path, monkeypatch):
    # cron, not installed here, ships cron.service: apt's real simulation, then its two new .debs
    # (86 kB) fetched into a temporary directory and listed; the directory removed, nothing installed
    absent = subprocess.run(["dpkg", "-s", "cron"], capture_output=True, text=True, timeout=30)
    assert absent.returncode != 0, "cron is installed here: this test needs a package with a service the host lacks"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))  # where the .debs go, to see it emptied
    before = dpkg_state()
    study = PACKAGE_STUDY.replace('"jq"', '"cron"').replace("[environments.docker-nat]\n", "")
    (tmp_path / "cron.toml").write_text(study)
    checked = isobench("validate", "cron.toml", "--format", "json", store=tmp_path / "r.sqlite", cwd=tmp_path)
    plan = json.loads(checked.stdout)["packages_plan"]
    assert plan["services"] == [{"package": "cron", "unit": "cron.service"}], plan
    assert plan["services_unknown"] is None and plan["line"].endswith(", starts services: cron.service (cron)")
    assert list(tmp.iterdir()) == []
    assert dpkg_state() == before and not list(Path("/var/cache/apt/archives").glob("cron*.deb"))


def test_a_planted_difference_is_refused_before_measuring_or_measured_and_said(tmp_path):
    # the host's PATH finds a wrapper first (as a ~/bin or a virtualenv would); the image has none
    shadow = tmp_path / "bin"
    shadow.mkdir()
    (shadow / "sha256sum").write_text('#!/bin/sh\nexec /usr/bin/sha256sum "$@"\n')
    os.chmod(shadow / "sha256sum", 0o755)
    wrapper = hashlib.sha256((shadow / "sha256sum").read_bytes()).hexdigest()
    (tmp_path / "input.bin").write_bytes(b"same bytes everywhere\n" * 1000)
    (tmp_path / "planted.toml").write_text(PLANTED.replace("SHADOW", str(shadow)))
    store = tmp_path / "r.sqlite"
    proc = isobench("run", "planted.toml", "--no-progress", store=store, cwd=tmp_path, check=False)
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert proc.returncode == 2 and len(errors) == 1, proc.stderr[-3000:]
    m = re.fullmatch(
        rf"error: sum: docker-nat does not run the same program as native: executable {shadow}/sha256sum: "
        rf"{wrapper} in native, ([0-9a-f]{{64}}) in docker-nat \(at /usr/bin/sha256sum\); nothing was measured\. "
        r"Make them the same \(docs/workloads/command\.md\), or set same_program = false in \[workloads\.sum\] "
        r"to measure them anyway",
        errors[0],
    )
    assert m and m.group(1) != wrapper, errors[0]
    # nothing measured, nothing left: no run in the store, no container, no scratch directory
    db = sqlite3.connect(store)
    assert [db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("runs", "env_facts", "samples")] == [
        0,
        0,
        0,
    ]
    assert not isobench_containers()
    left = [
        d for root in (DATA_ROOT, TMP_ROOT) if os.path.isdir(root) for d in os.listdir(root) if "-planted-diff-" in d
    ]
    assert left == []

    # allowed: measured, and every output says the programs differ
    (tmp_path / "planted.toml").write_text(PLANTED.replace("SHADOW", str(shadow)) + "same_program = false\n")
    isobench("run", "planted.toml", "--no-progress", store=store, cwd=tmp_path)
    assert db.execute("SELECT count(*) FROM samples WHERE status = 'ok'").fetchone()[0] == 4
    run_id = db.execute("SELECT run_id FROM runs").fetchone()[0]
    note = f"docker-nat: sum ran a different program than native (same_program = false): executable {shadow}/sha256sum"
    md = isobench("report", "--format", "md", store=store, cwd=tmp_path).stdout.replace("\\_", "_")
    assert note in md and "**sum:** DIFFERENT in docker-nat than in native (same_program = false)" in md
    assert f"native: executable {shadow}/sha256sum sha256 {wrapper}" in md
    terminal = isobench("report", store=store, cwd=tmp_path).stdout
    assert "ran a different program than native" in terminal and "DIFFERENT in docker-nat" in terminal
    doc = json.loads(isobench("report", "--format", "json", store=store, cwd=tmp_path).stdout)
    assert doc["run"]["programs"]["sum"]["same"] is False
    assert doc["run"]["programs"]["sum"]["environments"]["native"]["sha256"] == wrapper
    exported = json.loads(isobench("export", run_id, "--format", "json", "-o", "-", store=store, cwd=tmp_path).stdout)
    assert exported["run"]["programs"]["sum"]["differences"] == [
        f"executable {shadow}/sha256sum: {wrapper} in native, {m.group(1)} in docker-nat (at /usr/bin/sha256sum)"
    ]
    assert not isobench_containers()


LOOP = "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; echo hi"  # one thread, CPU-bound, about 0.2 s


def test_try_runs_a_one_thread_command_as_a_duet_and_saves_its_study(tmp_path):
    store = tmp_path / "r.sqlite"
    proc = isobench(
        "try",
        "--env",
        "native",
        "--env",
        "docker-nat",
        "--rounds",
        "2",
        "--warmup",
        "0",
        "--save",
        "mine.toml",
        "--no-progress",
        "--",
        "sh",
        "-c",
        LOOP,
        store=store,
        cwd=tmp_path,
    )
    assert "The answer" in proc.stdout and "wall_s" in proc.stdout and "stored as run " in proc.stdout
    assert "sh/default: ran as a duet" in " ".join(proc.stdout.split()), proc.stdout
    saved = (tmp_path / "mine.toml").read_text()
    assert '[workloads.sh]\ncommand = [\n    "sh",\n    "-c",\n' in saved
    assert 'schedule = "duet"' in saved and "duet = true" in saved, saved
    assert isobench("validate", "mine.toml", store=store, cwd=tmp_path).returncode == 0
    db = sqlite3.connect(store)
    rows = db.execute(
        "SELECT env, round, warmup, started_at, wall_s, extra FROM samples WHERE workload = 'sh' AND status = 'ok'"
    ).fetchall()
    # warmup = 0: native's sample alone decided (kept as a warm-up), then each round one duet
    probe = [r for r in rows if r[2]]
    assert [(r[0], r[1]) for r in probe] == [("native", -1)] and "duet" not in json.loads(probe[0][5])
    measured = [r for r in rows if not r[2]]
    assert sorted((r[0], r[1]) for r in measured) == [
        ("docker-nat", 0),
        ("docker-nat", 1),
        ("native", 0),
        ("native", 1),
    ]
    for round_ in (0, 1):
        (a, b) = [r for r in measured if r[1] == round_]
        assert json.loads(a[5])["duet"]["partner"] == b[0] and json.loads(b[5])["duet"]["partner"] == a[0]
        starts = [datetime.fromisoformat(r[3]).timestamp() for r in (a, b)]
        # both sides ran at once: each started before the other ended
        assert starts[0] < starts[1] + b[4] and starts[1] < starts[0] + a[4], (a, b)
    run_id = db.execute("SELECT run_id, status FROM runs").fetchone()
    assert run_id[1] == "complete"
    assert not [c for c in isobench_containers() if run_id[0] in c]
    left = subprocess.run(["pgrep", "-f", "i -lt 30000"], capture_output=True, text=True)
    assert left.stdout == "", left.stdout
