"""A native sample's own cgroups, beside a container's.

A container's processes stand in cgroups of their own (cpu, cpuacct, cpuset,
memory: docker/ID), and a duet moves them with one cpuset write. A native
sample ran in the harness's cgroups and moved by a sched_setaffinity per
thread after a /proc walk, on whichever side's CPU the harness ran. Here a
native command stands as a container does: in isobench/NAME under each
controller (cgroup v1, the hybrid layout), or isobench/NAME in the unified
hierarchy (v2), created before it starts and removed, whatever it left
running killed, when it ends. NAME starts with the run id, so `clean` finds
a run's leftovers after a SIGKILL.

A one-at-a-time native sample's command stands in a cgroup only to be
found and ended whole (a daemon it forked, a child holding its pipes):
on v1 under the pids hierarchy alone (its cpu, cpuset and memory stay the
harness's: where it stood before), on v2 in isobench/NAME."""

from __future__ import annotations

import contextlib
import glob
import os
import signal
import subprocess
import threading
import time

ROOT = "/sys/fs/cgroup"
PARENT = "isobench"
V1_CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory")
V2_CONTROLLERS = ("cpu", "cpuset", "memory")
TRACK_V1 = ("pids",)  # a cgroup to find and kill a command's processes by, changing nothing else


def layout(root: str = ROOT) -> str:
    """ "v2" (unified), "v1" (each controller mounted on its own, the hybrid
    layout's) or "" (neither usable here)."""
    if os.path.exists(f"{root}/cgroup.controllers"):
        return "v2"
    if all(os.path.exists(f"{root}/{c}/cgroup.procs") for c in V1_CONTROLLERS):
        return "v1"
    return ""


def _write(path: str, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def _read(path: str) -> str:
    with open(path) as fh:
        return fh.read().strip()


def _systemd() -> bool:
    try:
        return _read("/proc/1/comm") == "systemd"
    except OSError:
        return False


_DELEGATION = threading.Lock()


def start_scope_argv(unit: str, pid: int) -> list[str]:
    """systemd's StartTransientUnit of a scope holding pid, delegated to it
    (Delegate=yes: systemd enables every controller on its path and leaves
    what is below it alone), as busctl says it. Pure."""
    return [
        "busctl",
        "call",
        "org.freedesktop.systemd1",
        "/org/freedesktop/systemd1",
        "org.freedesktop.systemd1.Manager",
        "StartTransientUnit",
        "ssa(sv)a(sa(sv))",
        unit,
        "fail",
        "2",
        "PIDs",
        "au",
        "1",
        str(pid),
        "Delegate",
        "b",
        "true",
        "0",
    ]


def _own() -> str:
    return own_cgroup(_read("/proc/self/cgroup")) or ""


def delegated_parent(root: str = ROOT, run=subprocess.run, own=_own) -> str:
    """Under systemd, isobench's sub-tree: this process moved into a scope of
    its own that systemd delegates to it (isobench-PID.scope), and from
    there into the scope's leaf "harness" (a cgroup that hands controllers
    down holds no process); its sample cgroups are the leaf's siblings.
    systemd never touches a delegated sub-tree and removes the scope once
    its processes are gone. Without it, cpuset and cpu are enabled at the
    root only where a unit asks (Debian 12: memory and pids), and a cgroup
    isobench made there would fight systemd over the root's controllers."""
    with _DELEGATION:
        unit = f"isobench-{os.getpid()}.scope"
        here = own()
        if here.endswith(f"/{unit}/harness"):
            return f"{root}{here[: -len('/harness')]}"
        r = run(start_scope_argv(unit, os.getpid()), capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            bus = "; no system bus: `isobench setup` installs and starts dbus" if "connect to bus" in r.stderr else ""
            raise OSError(f"systemd gave isobench no scope of its own ({unit}): {r.stderr.strip()[:200]}{bus}")
        deadline = time.monotonic() + 10  # the job moves this process a moment after it is queued
        while not here.endswith(f"/{unit}") and time.monotonic() < deadline:
            time.sleep(0.01)
            here = own()
        if not here.endswith(f"/{unit}"):
            raise OSError(f"systemd did not move isobench into {unit} within 10 s (it stands in {here})")
        scope = f"{root}{here}"
        os.makedirs(f"{scope}/harness", exist_ok=True)
        _write(f"{scope}/harness/cgroup.procs", str(os.getpid()))
        return scope


def _v2_parent(root: str) -> str:
    return delegated_parent(root) if root == ROOT and _systemd() else f"{root}/{PARENT}"


def _parent_dirs(kind: str, root: str, controllers: tuple[str, ...] = V1_CONTROLLERS) -> list[str]:
    """isobench's own parent under each hierarchy (v1: of `controllers`), made ready for children."""
    if kind == "v2":  # the controllers handed down to isobench's children (the root's own, here)
        parent = _v2_parent(root)
        os.makedirs(parent, exist_ok=True)
        enabled = set(_read(f"{parent}/cgroup.subtree_control").split())
        for c in V2_CONTROLLERS:
            if c not in enabled and c in _read(f"{parent}/cgroup.controllers").split():
                _write(f"{parent}/cgroup.subtree_control", f"+{c}")
        return [parent]
    dirs = []
    for c in controllers:
        if not os.path.exists(f"{root}/{c}/cgroup.procs"):  # never a directory made in the mount's tmpfs
            raise OSError(f"no cgroup v1 {c} hierarchy under {root}")
        parent = f"{root}/{c}/{PARENT}"
        os.makedirs(parent, exist_ok=True)
        if c == "cpuset":  # a v1 cpuset without CPUs and memory nodes takes no task
            for f in ("cpuset.cpus", "cpuset.mems"):
                if not _read(f"{parent}/{f}"):
                    _write(f"{parent}/{f}", _read(f"{root}/cpuset/{f}"))
        dirs.append(parent)
    return dirs


class SampleCgroup:
    """One command's cgroups: made, joined by the command itself (its
    cgroup.procs files), moved in one write, killed and removed. With
    `track_only`, a cgroup to end it by and nothing more (no CPUs of its
    own: set_cpus is not for it)."""

    def __init__(self, name: str, cpus: str | None, root: str = ROOT, track_only: bool = False) -> None:
        self.kind = layout(root)
        self.root = root
        if not self.kind:
            raise OSError(f"no cgroup v1 controllers or v2 hierarchy under {root}")
        controllers = TRACK_V1 if track_only else V1_CONTROLLERS
        self.dirs = [f"{parent}/{name}" for parent in _parent_dirs(self.kind, root, controllers)]
        made: list[str] = []
        try:
            for d in self.dirs:
                os.makedirs(d)
                made.append(d)
            if track_only:
                return
            cpuset = self._cpuset_dir()
            if self.kind == "v1":  # a v1 cpuset takes no task before it has memory nodes (v2 inherits them)
                _write(f"{cpuset}/cpuset.mems", _read(f"{os.path.dirname(cpuset)}/cpuset.mems"))
            self.set_cpus(cpus or ",".join(map(str, sorted(os.sched_getaffinity(0)))))
        except OSError:
            remove_dirs(made)  # none half made is left behind
            raise

    def _cpuset_dir(self) -> str:
        return next(d for d in self.dirs if "/cpuset/" in d) if self.kind == "v1" else self.dirs[0]

    @property
    def how(self) -> str:
        """A move's mechanism, as a duet's record says it."""
        return f"cgroup {self.kind} cpuset.cpus write ({os.path.relpath(self._cpuset_dir(), self.root)})"

    @property
    def procs_files(self) -> list[str]:
        """What the command writes its pid to, before it runs anything."""
        return [f"{d}/cgroup.procs" for d in self.dirs]

    def set_cpus(self, cpulist: str) -> None:
        """Every process in it onto these CPUs: a duet's move, one write."""
        _write(f"{self._cpuset_dir()}/cpuset.cpus", cpulist)

    def remove(self) -> None:
        """Kill whatever still runs in it (a daemon the command forked), then remove it."""
        remove_dirs(self.dirs)


def pids_in(dirs: list[str]) -> list[int]:
    """The processes standing in these cgroup directories."""
    out: set[int] = set()
    for d in dirs:
        with contextlib.suppress(OSError):
            out.update(int(p) for p in _read(f"{d}/cgroup.procs").split())
    return sorted(out)


def remove_dirs(dirs: list[str], wait_s: float = 5.0) -> list[str]:
    """Each cgroup directory's processes SIGKILLed, then the directory
    removed; returns those that could not be (still busy after wait_s)."""
    deadline = time.monotonic() + wait_s
    left = list(dirs)
    while left:
        for d in list(left):
            with contextlib.suppress(OSError):
                for pid in _read(f"{d}/cgroup.procs").split():
                    with contextlib.suppress(OSError):
                        os.kill(int(pid), signal.SIGKILL)
            try:
                os.rmdir(d)
                left.remove(d)
            except FileNotFoundError:
                left.remove(d)
            except OSError:
                pass
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    return left


def leftovers(root: str = ROOT) -> dict[str, list[str]]:
    """isobench's sample cgroups still on the host, by name (each name's
    directory under every hierarchy)."""
    kind = layout(root)
    v1 = V1_CONTROLLERS + TRACK_V1
    parents = [f"{root}/{c}/{PARENT}" for c in v1]
    if kind == "v2":  # and under systemd, each isobench process's delegated scope
        parents = [f"{root}/{PARENT}", *sorted(glob.glob(f"{root}/*.slice/isobench-*.scope"))]
    found: dict[str, list[str]] = {}
    for parent in parents:
        with contextlib.suppress(OSError):
            for entry in sorted(os.listdir(parent)):
                if entry != "harness" and os.path.isdir(f"{parent}/{entry}"):
                    found.setdefault(entry, []).append(f"{parent}/{entry}")
    return found


def own_cgroup(proc_self_cgroup: str) -> str | None:
    """This process's cgroup in the unified hierarchy ("/system.slice/x.service"),
    from /proc/self/cgroup's "0::" line; None without one. Pure."""
    for line in proc_self_cgroup.splitlines():
        if line.startswith("0::"):
            return line[3:].strip() or "/"
    return None


def cpus_limited_by(root: str = ROOT, proc_self_cgroup: str | None = None) -> str:
    """What confines this process's CPUs on a unified host (systemd's
    AllowedCPUs= of its unit or a slice above it: the nearest cgroup with a
    cpuset.cpus of its own), said as "AllowedCPUs=0 of system.slice/x.service";
    "" when none does, or not on cgroup v2."""
    if proc_self_cgroup is None:
        try:
            proc_self_cgroup = _read("/proc/self/cgroup")
        except OSError:
            return ""
    path = own_cgroup(proc_self_cgroup)
    if path is None or layout(root) != "v2":
        return ""
    parts = [p for p in path.split("/") if p]
    while parts:
        with contextlib.suppress(OSError):
            cpus = _read(f"{root}/{'/'.join(parts)}/cpuset.cpus")
            if cpus:
                return f"AllowedCPUs={cpus} of {'/'.join(parts)}"
        parts.pop()
    return ""


def duet_cpus_remedy(limit: str) -> str:
    """The remedy a one-CPU refusal names when systemd confines isobench."""
    if not limit:
        return ""
    unit = limit.rsplit("/", 1)[-1]
    return (
        f"; systemd's {limit} leaves it that few: `systemctl set-property {unit} AllowedCPUs=` (every CPU) "
        "or run isobench outside that unit"
    )
