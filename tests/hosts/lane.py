"""The host lane (issue 54): a Debian 12 guest booted as a person's server
is (systemd as PID 1, the unified cgroup hierarchy only, Debian's docker.io
as a systemd service), and isobench installed and used in it as a new user
would, from the wheel of this checkout. One line per step: name, pass or
fail, seconds. Run by tests/hosts/run.sh (docs/testing.md#the-host-lane).

The guest is isobench's own VM disk (envs/vm/disk.py) booted with
guest_init = "systemd", driven through its guest agent, under KVM where
the host's cached KVM probe says a guest runs, else TCG ("emulated").
Everything it makes lives under --work and is removed when it ends, on
failure and Ctrl-C too; the QEMU process dies with this one."""

from __future__ import annotations

import argparse
import base64
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from isobench import images
from isobench.envs.vm import disk, kvm_probe
from isobench.envs.vm.guestagent import GuestAgent
from isobench.envs.vm.qemu import QemuProcess
from isobench.envs.vm.qemu_cmdline import QemuConfig, build_argv

HERE = os.path.dirname(os.path.abspath(__file__))
# a person's server: systemd's unified hierarchy and no v1 controller at all
USER_NET = "198.18.250"  # the guest side of QEMU's user network: outside Docker's 198.18.0/24 and 198.18.64.0/18
CGROUP_ARGS = ("systemd.unified_cgroup_hierarchy=1", "cgroup_no_v1=all")
# the image's own files setup would otherwise build (debootstrap, apt: ~10 min under TCG)
IMAGE_FILES = ("rootfs.tar", "image.json", "packages.tsv", "vmlinuz", "initrd.img")
# guest steps, their time limits (s) under TCG; KVM is several times faster
GUEST_STEPS = (
    ("prepare", 600),
    ("install", 600),
    ("setup", 1500),
    ("check", 300),
    ("doctor", 300),
    ("try", 900),
    ("study", 1200),
    ("resume", 900),
    ("clean", 300),
)


@dataclass
class Step:
    name: str
    ok: bool
    seconds: float
    note: str = ""

    def line(self) -> str:
        note = f"  {self.note}" if self.note else ""
        return f"{self.name:<10} {'pass' if self.ok else 'FAIL':<5} {self.seconds:7.1f} s{note}"


def choose_accel() -> tuple[str, str]:
    """kvm when the host's cached probe says a guest boots there, else tcg."""
    problem = kvm_probe.kvm_device_problem()
    if problem is not None:
        return "tcg", f"emulated (TCG): {problem}"
    cached = kvm_probe.load(kvm_probe.host_key(images.recipe_hash()))
    if cached is not None and cached.usable:
        return "kvm", f"KVM: {cached.reason}"
    why = cached.reason if cached is not None else kvm_probe.NOT_PROBED
    return "tcg", f"emulated (TCG): {why}"


def run(argv: list[str], timeout: float) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or [""]
        raise RuntimeError(f"exit {proc.returncode}: {' '.join(argv)}: {tail[0]}")


def make_seed(work: str, wheel: str, seed_image: bool) -> str:
    """A read-only ext4 disk for the guest: the wheel, uv, the guest's
    step script and studies, and (seed_image) the built image's files."""
    tree = os.path.join(work, "seed")
    os.makedirs(tree)
    shutil.copy(wheel, tree)
    uv = shutil.which("uv") or os.path.join(os.path.dirname(sys.executable), "uv")
    shutil.copy(uv, os.path.join(tree, "uv"))
    for name in ("guest.sh", "study.toml", "resume.toml"):
        shutil.copy(os.path.join(HERE, name), tree)
    # this host's certificate bundle (its network's TLS proxy among them), for uv in the guest
    bundle = os.environ.get("SSL_CERT_FILE") or "/etc/ssl/certs/ca-certificates.crt"
    if os.path.isfile(bundle):
        shutil.copy(bundle, os.path.join(tree, "ca-certificates.crt"))
    # this host's apt lists of Debian's archive (the image's sources): a
    # server has them from its last `apt-get update`, which then only checks
    lists = [f for f in os.listdir("/var/lib/apt/lists") if f.startswith("deb.debian.org_")]
    if lists:
        os.makedirs(os.path.join(tree, "apt-lists"))
        for name in lists:
            shutil.copy(os.path.join("/var/lib/apt/lists", name), os.path.join(tree, "apt-lists"))
    if seed_image:
        h = images.recipe_hash()
        dest = os.path.join(tree, "images", h)
        os.makedirs(dest)
        for name in IMAGE_FILES:
            os.link(os.path.join(images.image_dir(h), name), os.path.join(dest, name))
    size_mb = disk._tree_size(tree) // 2**20 + 256
    path = os.path.join(work, "seed.raw")
    run(["mkfs.ext4", "-q", "-F", "-L", "hostlane-seed", "-d", tree, path, f"{size_mb}M"], 600)
    shutil.rmtree(tree)
    return path


def qemu_argv(work: str, accel: str, base: str, seed: str, vcpus: int, memory_mb: int) -> tuple[QemuConfig, list]:
    kernel, initrd = images.kernel_paths() or (None, None)
    if kernel is None:
        raise RuntimeError("the image's kernel is not built (isobench images build)")
    root = os.path.join(work, "root.qcow2")
    # a larger virtual size than the base: the guest grows its ext4 to it (resize2fs)
    run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", base, root, "20G"], 60)
    data = os.path.join(work, "data.raw")
    disk.make_data_disk(data, 2048)
    cfg = QemuConfig(
        name="hostlane-debian12",  # not isobench-*: no `isobench clean` on this host kills it
        accel=accel,
        vcpus=vcpus,
        memory_mb=memory_mb,
        cpu_model="host" if accel == "kvm" else "max",
        kernel=kernel,
        initrd=initrd,
        root_disk=root,
        data_disk=data,
        qga_socket=os.path.join(work, "qga.sock"),
        qmp_socket=os.path.join(work, "qmp.sock"),
        serial_log=os.path.join(work, "serial.log"),
        pidfile=os.path.join(work, "qemu.pid"),
        guest_init="systemd",
        extra_disks=(seed,),
        kernel_args=CGROUP_ARGS,
    )
    argv = build_argv(cfg)
    # QEMU's user network instead of none: the guest reaches Debian's mirror and PyPI through it,
    # on a /24 of the benchmarking range (guest.sh's addresses), not slirp's default private-range /24
    i = argv.index("-nic")
    user = f"user,id=n0,net={USER_NET}.0/24,host={USER_NET}.2,dns={USER_NET}.3"
    argv[i : i + 2] = ["-netdev", user, "-device", "virtio-net-pci,netdev=n0"]
    return cfg, argv


def boot(work: str, cfg: QemuConfig, argv: list[str], limit: float) -> tuple[QemuProcess, GuestAgent]:
    qemu = QemuProcess("hostlane", work)
    qemu.spawn(argv)
    deadline = time.monotonic() + limit
    ga = qemu.connect(cfg, deadline)
    qemu.wait_agent(ga, deadline, limit, cfg.accel)
    return qemu, ga


def guest_step(ga: GuestAgent, name: str, limit: float, log) -> Step:
    t0 = time.monotonic()
    r = ga.exec(["/bin/bash", "/run/hostlane/seed/guest.sh", name], limit)
    seconds = time.monotonic() - t0
    log.write(f"\n===== {name}: exit {r.returncode}{' (timed out)' if r.timed_out else ''}, {seconds:.1f} s\n")
    log.write(r.stdout)
    if r.stderr.strip():
        log.write("----- stderr\n" + r.stderr)
    log.flush()
    notes = [ln[len("NOTE ") :] for ln in r.stdout.splitlines() if ln.startswith("NOTE ")]
    if r.timed_out:  # its output died with it: the copies guest.sh kept, and what still runs
        seen = ga.exec(["/bin/bash", "-c", TIMED_OUT_LOOK.format(step=name)], 60)
        log.write(f"----- {name} at its deadline\n{seen.stdout}{seen.stderr}")
        log.flush()
        said = seen.stdout.split("-----")[0].splitlines()
        last = [ln for ln in said if ln.strip() and not ln.startswith("==> ")][-1:]
        notes.append(f"timed out after {limit:.0f} s" + (f", last said: {last[0][:120]}" if last else ""))
    elif not r.ok:
        notes.append(why_failed(r.stderr or r.stdout))
    return Step(name, r.ok, seconds, "; ".join(notes))


# what a step killed at its deadline had said (guest.sh keeps a copy), and the processes still there
TIMED_OUT_LOOK = (
    "tail -n 30 /run/hostlane/steps/{step}.out /run/hostlane/steps/{step}.err 2>&1; "
    "echo -----; ps -eo pid,etime,args --forest | grep -v ' \\[' | tail -n 40"
)


def why_failed(text: str) -> str:
    """The line that says why: the last naming an error (uv's and apt's
    explanations come after it), else the last line."""
    lines = [ln.strip(" │├╰─▶×") for ln in text.strip().splitlines() if ln.strip()]
    said = [ln for ln in lines if "error" in ln.lower() or "failed" in ln.lower()]
    return ((said or lines or ["?"])[-1])[:160]


def mount_seed(ga: GuestAgent) -> None:
    """The seed disk on /run/hostlane/seed: the one step not in guest.sh (it brings guest.sh)."""
    script = (
        "mkdir -p /run/hostlane/seed && for i in $(seq 100); do "
        "[ -e /dev/disk/by-id/virtio-isobench-ro0 ] && break; sleep 0.2; done; "
        "mount -o ro /dev/disk/by-id/virtio-isobench-ro0 /run/hostlane/seed"
    )
    r = ga.exec(["/bin/sh", "-c", script], 120)
    if not r.ok:
        raise RuntimeError(f"cannot mount the seed disk: {r.describe()}")


def save_fixtures(ga: GuestAgent, dest: str) -> None:
    """The guest's cgroup files the steps captured, unpacked into dest."""
    r = ga.exec(["/bin/bash", "/run/hostlane/seed/guest.sh", "fixtures"], 60)
    if r.ok:
        os.makedirs(dest, exist_ok=True)
        subprocess.run(["tar", "-x", "-C", dest], input=base64.b64decode(r.stdout), timeout=60, check=True)


def host_layout() -> str:
    """This host's own cgroup layout, said beside the guest's (item 3)."""
    with open("/proc/self/mountinfo") as fh:
        kinds = {ln.split(" - ")[1].split()[0] for ln in fh if " - cgroup" in ln}
    if kinds == {"cgroup2"}:
        return "unified (cgroup2 only)"
    if kinds == {"cgroup", "cgroup2"}:
        return "hybrid (v1 controllers and cgroup2)"
    return "v1 only" if kinds == {"cgroup"} else "no cgroups mounted"


def lane(args, log, steps: list[Step]) -> None:
    accel, why = choose_accel()
    print(f"host lane: guest Debian 12, systemd, unified cgroups; accel {accel}: {why}", flush=True)
    print(f"host lane: this host's cgroup layout: {host_layout()}", flush=True)
    t0 = time.monotonic()
    base = disk.ensure_vm_disk(log=lambda s: log.write(s + "\n"))
    seed = make_seed(args.work, args.wheel, not args.no_seed_image)
    seeded = "" if args.no_seed_image else "the host's built image files on the seed disk"
    steps.append(Step("disks", True, time.monotonic() - t0, seeded))
    print(steps[-1].line(), flush=True)
    cfg, argv = qemu_argv(args.work, accel, base, seed, args.vcpus, args.memory_mb)
    log.write("qemu: " + " ".join(argv) + "\n")
    t0 = time.monotonic()
    qemu, ga = boot(args.work, cfg, argv, 900 if accel == "tcg" else 180)
    try:
        mount_seed(ga)
        steps.append(Step("boot", True, time.monotonic() - t0, "emulated (TCG)" if accel == "tcg" else "KVM"))
        print(steps[-1].line(), flush=True)
        for name, limit in GUEST_STEPS:
            if args.only and name not in args.only and name != "prepare":
                continue
            steps.append(guest_step(ga, name, limit, log))
            print(steps[-1].line(), flush=True)
            if not steps[-1].ok and name in ("prepare", "install", "setup"):
                break  # nothing after them can run
        if args.fixtures:
            save_fixtures(ga, args.fixtures)
    finally:
        ga.close()
        qemu.stop()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--wheel", required=True)
    p.add_argument("--work", default="/var/tmp/isobench-hostlane")
    p.add_argument("--log", default="/var/tmp/isobench-hostlane.log")
    p.add_argument("--vcpus", type=int, default=2)
    p.add_argument("--memory-mb", type=int, default=4096)
    p.add_argument("--no-seed-image", action="store_true", help="let setup build the image in the guest")
    p.add_argument("--fixtures", help="unpack the guest's captured cgroup files here")
    p.add_argument("--only", nargs="*", help="run only these guest steps (prepare always runs)")
    args = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    if os.path.exists(args.work):
        shutil.rmtree(args.work)
    os.makedirs(args.work)
    steps: list[Step] = []
    started = time.monotonic()
    with open(args.log, "w") as log:
        try:
            lane(args, log, steps)
        except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - said as the failing step, then cleaned up
            steps.append(Step("lane", False, 0.0, f"{type(exc).__name__}: {exc}"[:300]))
            print(steps[-1].line(), flush=True)
        finally:
            with contextlib.suppress(OSError):
                shutil.rmtree(args.work)
    ok = bool(steps) and all(s.ok for s in steps)
    total = time.monotonic() - started
    when = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    print(
        f"host lane: {'PASS' if ok else 'FAIL'} in {total / 60:.1f} min ({total:.0f} s), ended {when} UTC; "
        f"log {args.log}",
        flush=True,
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
