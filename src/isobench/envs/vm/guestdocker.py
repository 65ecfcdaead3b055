"""Docker Engine inside the guest (vm-docker): dockerd started through the
guest agent, the image imported from the rootfs disk once (the data disk
holding it is kept for later runs), one long-lived container the
workloads run in."""

from __future__ import annotations

import json
import time

from isobench.core import sink
from isobench.core.errors import EnvironmentError_
from isobench.core.proc import ExecResult
from isobench.core.workspace import GUEST_DATA_DIR, GUEST_TMP_DIR, LABEL
from isobench.envs.vm.guestagent import GuestAgent

# Docker Engine inside the guest: its own addresses in the benchmarking
# range, distinct from the host's 198.18.0.1/24 bridge
GUEST_DOCKER_BIP = "198.19.250.1/24"
GUEST_DOCKER_POOL = "base=198.19.252.0/22,size=24"
GUEST_DOCKER_SOCK = "unix:///run/docker.sock"
DOCKERD_TIMEOUT_S = 180
STAGING = f"{GUEST_DATA_DIR}/.isobench-xfer"
ROOTFS_DEV = "/dev/isobench-ro0"
MiB = 1 << 20


def import_room(tar_bytes: int, avail_bytes: int, disk_bytes: int) -> str | None:
    """Why the image cannot be imported onto the guest's data disk, with the
    data_disk_mb that fits it, or None when it fits. The import unpacks
    about the tar's size (plus a tenth for the file system and dockerd)."""
    need = tar_bytes + tar_bytes // 10 + 64 * MiB
    if avail_bytes >= need:
        return None
    fits = -(-(disk_bytes + need - avail_bytes) // (512 * MiB)) * 512
    return (
        f"the image ({tar_bytes // MiB} MiB) does not fit the guest's data disk ({avail_bytes // MiB} MiB free "
        f"of {disk_bytes // MiB} MiB): set data_disk_mb = {fits} or more for this environment in the study"
    )


def exec_argv(container: str, argv: list[str], cwd: str | None) -> list[str]:
    """The guest-side argv that runs argv in the container."""
    return ["docker", "-H", GUEST_DOCKER_SOCK, "exec", *(["-w", cwd] if cwd else []), container, *argv]


class GuestDocker:
    def __init__(self, ga: GuestAgent) -> None:
        self.ga = ga
        self.owner = ga.owner

    def cmd(self, argv: list[str], timeout: float) -> ExecResult:
        return self.ga.exec(["docker", "-H", GUEST_DOCKER_SOCK, *argv], timeout)

    def start(
        self,
        *,
        image: str,
        data_disk: str,
        container: str,
        run_id: str,
        tmpfs_mb: int | None,
        publish_on: str | None,
        ports: list[tuple[int, str]],
    ) -> tuple[dict, float, dict | None]:
        """dockerd up, the image there, the container running. Returns the
        boot facts to add, the seconds that count as startup (dockerd and
        the container, not the one-off import) and the published ports
        (None when nothing is published: no NIC or no server)."""
        t0 = time.monotonic()
        boot: dict = {}
        self._spawn_dockerd()
        boot["guest_docker_version"] = self._wait_dockerd(time.monotonic() + DOCKERD_TIMEOUT_S)
        t_docker = time.monotonic()
        from isobench.images import DOCKER_CHANGES, image_tag

        tag = image_tag(image)
        have = self.cmd(["image", "inspect", "--format", "{{.Id}}", tag], 60)
        if not have.ok:
            self._check_room()
            changes = [a for c in DOCKER_CHANGES for a in ("--change", c)]
            r = self.cmd(["import", *changes, ROOTFS_DEV, tag], 1800)
            if not r.ok:
                raise EnvironmentError_(f"{self.owner}: docker import in the guest failed: {r.describe()}")
            boot["guest_docker_version"] = self._save_disk(data_disk, image)
        t_import = time.monotonic()
        tmpfs = f"{GUEST_TMP_DIR}:size={int(tmpfs_mb)}m" if tmpfs_mb else GUEST_TMP_DIR
        # NAT as on the host's docker-nat: each server port published on the
        # guest's bridge address only, the guest port chosen by dockerd
        publish = [
            a
            for port, proto in (ports if publish_on is not None else [])
            for a in ("-p", f"{publish_on}::{port}/{proto}")
        ]
        r = self.cmd(
            [
                "run",
                "-d",
                "--name",
                container,
                "--label",
                f"{LABEL}=1",
                "--label",
                f"{LABEL}.run={run_id}",
                "--tmpfs",
                tmpfs,
                "--shm-size",
                "1g",
                *publish,
                tag,
                "sleep",
                "infinity",
            ],
            300,
        )
        if not r.ok:
            raise EnvironmentError_(f"{self.owner}: cannot start the container in the guest: {r.describe()}")
        published = self._published(container) if publish else None
        t_run = time.monotonic()
        boot.update(
            {
                "guest_dockerd_s": round(t_docker - t0, 3),
                "guest_image_import_s": round(t_import - t_docker, 3),
                "guest_container_start_s": round(t_run - t_import, 3),
            }
        )
        return boot, (t_docker - t0) + (t_run - t_import), published

    def write(self, container: str, path: str, content: bytes) -> None:
        """Through a staging file on the guest's data disk, then `docker exec
        -i ... cat` into the container."""
        self.ga.write(STAGING, content)
        r = self.ga.exec(
            [
                "sh",
                "-c",
                'docker -H "$4" exec -i "$1" sh -c \'mkdir -p "$(dirname "$1")" && cat > "$1"\' '
                'sh "$2" < "$3"; rc=$?; rm -f "$3"; exit $rc',
                "sh",
                container,
                path,
                STAGING,
                GUEST_DOCKER_SOCK,
            ],
            600,
        )
        if not r.ok:
            raise EnvironmentError_(f"{self.owner}: could not write {path}: {r.describe()}")

    def _check_room(self) -> None:
        """Refuse in seconds what a half-hour import under TCG would end with:
        no space left on device."""
        tar = self.ga.exec(["blockdev", "--getsize64", ROOTFS_DEV], 30)
        df = self.ga.exec(["df", "-B1", "--output=avail,size", GUEST_DATA_DIR], 30)
        try:
            avail, size = (int(x) for x in df.stdout.split()[-2:])
            why = import_room(int(tar.stdout), avail, size)
        except ValueError:
            return  # unreadable: the import itself will say what is wrong
        if why:
            raise EnvironmentError_(f"{self.owner}: {why}")

    def _spawn_dockerd(self) -> None:
        r = self.ga.exec(
            [
                "sh",
                "-c",
                'setsid dockerd "$@" </dev/null >/run/dockerd.log 2>&1 &',
                "sh",
                "--host",
                GUEST_DOCKER_SOCK,
                "--bip",
                GUEST_DOCKER_BIP,
                "--default-address-pool",
                GUEST_DOCKER_POOL,
                "--pidfile",
                "/run/docker.pid",
                "--data-root",
                "/isobench/data/docker",
                "--storage-driver",
                "overlay2",
            ],
            30,
        )
        if not r.ok:
            raise EnvironmentError_(f"{self.owner}: cannot start dockerd in the guest: {r.describe()}")

    def _wait_dockerd(self, deadline: float) -> str:
        """dockerd's version once it answers."""
        while True:
            r = self.cmd(["version", "--format", "{{.Server.Version}}"], 30)
            if r.ok:
                return r.stdout.strip()
            if time.monotonic() > deadline:
                log = self.ga.exec(["tail", "-n", "3", "/run/dockerd.log"], 10).stdout.strip().replace("\n", " | ")
                raise EnvironmentError_(f"{self.owner}: dockerd in the guest did not answer in 180 s: {log[:300]}")
            time.sleep(0.2)

    def _published(self, container: str) -> dict[str, int]:
        r = self.cmd(["inspect", "--format", "{{json .NetworkSettings.Ports}}", container], 60)
        published: dict[str, int] = {}
        try:
            ports = json.loads(r.stdout) if r.ok else None
            published = {k: int(v[0]["HostPort"]) for k, v in (ports or {}).items() if v}
        except (ValueError, KeyError, IndexError, TypeError):
            ports = None
        if not ports:
            raise EnvironmentError_(f"{self.owner}: cannot read the ports dockerd published: {r.describe()}")
        return published

    def _save_disk(self, data_disk: str, image: str) -> str:
        """Keep the data disk with the imported image for later vm-docker
        runs: dockerd stopped and the file system unmounted in the guest
        while the host copies the raw file, then both back. Returns
        dockerd's version once it answers again."""
        from isobench.envs.vm.disk import docker_data_disk_path, save_data_disk

        stop = self.ga.exec(
            [
                "sh",
                "-c",
                'kill "$(cat /run/docker.pid)"; i=0; while [ -e /run/docker.pid ] && '
                "[ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; pkill containerd; sleep 0.5; sync; "
                "umount /isobench/data",
            ],
            120,
        )
        if stop.ok:
            try:
                save_data_disk(data_disk, docker_data_disk_path(image))
            except Exception as exc:  # noqa: BLE001 - only a cache
                sink.say(f"isobench: {self.owner}: could not keep the guest's Docker disk: {exc}")
        r = self.ga.exec(
            [
                "sh",
                "-c",
                'for b in /sys/block/vd*; do [ "$(cat $b/serial)" = isobench-data ] && '
                'mount -o noatime "/dev/${b##*/}" /isobench/data; done; mountpoint -q /isobench/data',
            ],
            60,
        )
        if not r.ok:
            raise EnvironmentError_(f"{self.owner}: could not remount the data disk: {r.describe()}")
        self._spawn_dockerd()
        return self._wait_dockerd(time.monotonic() + DOCKERD_TIMEOUT_S)
