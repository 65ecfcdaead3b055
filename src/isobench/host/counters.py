"""Host counters read around every measured sample: where the time went.

Pure parsers for /proc/stat, /proc/softirqs, /proc/vmstat, /proc/diskstats
and /proc/net/stat/nf_conntrack, each returning flat ``{name: number}``
dicts of cumulative values; ``snapshot()`` reads them all (a handful of
small files, well under a millisecond) and ``delta()`` subtracts two
snapshots. ``around(extra, env_counters)`` wraps one measured run and puts
the deltas in the sample's ``extra["counters"]``. Ground floor: imports
nothing from isobench. Meanings and limits: docs/attribution.md.

Set ISOBENCH_COUNTERS=0 to turn them off (to measure their own overhead).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

ENV_VAR = "ISOBENCH_COUNTERS"
EXTRA_KEY = "counters"

# /proc/stat "cpu" line fields, in kernel order (man 5 proc). Note the kernel
# counts guest time inside user (and guest_nice inside nice) as well.
STAT_CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")
SOFTIRQ_TYPES = ("NET_RX", "NET_TX", "BLOCK", "TIMER", "SCHED", "RCU", "HRTIMER", "TASKLET")
VMSTAT_FIELDS = ("pgfault", "pgmajfault")
SECTOR = 512
# Whole-disk names whose numbers are other devices' I/O again or not I/O at all.
_VIRTUAL_DISK = re.compile(r"^(loop|ram|zram|sr|fd|nbd)\d*")


def enabled(environ=None) -> bool:
    value = (environ if environ is not None else os.environ).get(ENV_VAR, "1").strip().lower()
    return value not in ("0", "off", "no", "false")


def clk_tck() -> int:
    try:
        return int(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError, AttributeError):
        return 100


# -- pure parsers --------------------------------------------------------------------


def parse_stat(text: str, hz: int = 100) -> dict[str, float]:
    """Host-wide CPU seconds by category (``cpu.user_s`` ...), context
    switches and interrupts (``ctxt``, ``intr``) from /proc/stat."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "cpu":
            for name, value in zip(STAT_CPU_FIELDS, parts[1:]):
                out[f"cpu.{name}_s"] = int(value) / hz
        elif parts[0] == "ctxt" and len(parts) > 1:
            out["ctxt"] = float(parts[1])
        elif parts[0] == "intr" and len(parts) > 1:
            out["intr"] = float(parts[1])  # the first number is the total
    if "cpu.user_s" not in out:
        raise ValueError("/proc/stat: no aggregate 'cpu' line")
    return out


def parse_softirqs(text: str) -> dict[str, float]:
    """Softirqs raised per type, summed over CPUs (``softirq.NET_RX`` ...)."""
    out: dict[str, float] = {}
    for line in text.splitlines()[1:]:  # the first line names the CPUs
        name, sep, counts = line.partition(":")
        if not sep:
            continue
        name = name.strip()
        if name in SOFTIRQ_TYPES:
            out[f"softirq.{name}"] = float(sum(int(x) for x in counts.split()))
    return out


def parse_vmstat(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in VMSTAT_FIELDS:
            out[parts[0]] = float(parts[1])
    return out


def parse_diskstats(text: str, disks: set[str] | None = None) -> dict[str, float]:
    """Block I/O summed over whole disks: ``disk.reads``, ``disk.writes``
    (completed I/Os), ``disk.read_bytes``, ``disk.write_bytes``,
    ``disk.busy_ms`` (time with I/O in flight). ``disks``: the whole-disk
    names to count (from /sys/block); None counts every non-virtual device
    that is not a partition of another listed one."""
    rows = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 14:
            continue
        rows.append((parts[2], [int(x) for x in parts[3:14]]))
    names = {n for n, _ in rows}
    if disks is None:
        disks = {n for n in names if not _VIRTUAL_DISK.match(n) and not _is_partition(n, names)}
    out = dict.fromkeys(("disk.reads", "disk.writes", "disk.read_bytes", "disk.write_bytes", "disk.busy_ms"), 0.0)
    for name, f in rows:
        if name not in disks:
            continue
        out["disk.reads"] += f[0]
        out["disk.read_bytes"] += f[2] * SECTOR
        out["disk.writes"] += f[4]
        out["disk.write_bytes"] += f[6] * SECTOR
        out["disk.busy_ms"] += f[9]
    return out


def _is_partition(name: str, names: set[str]) -> bool:
    """sda1 of sda, nvme0n1p1 of nvme0n1, vda2 of vda, mmcblk0p1 of mmcblk0."""
    for base in names:
        if base != name and name.startswith(base):
            rest = name[len(base) :]
            if rest.isdigit() or (rest[:1] == "p" and rest[1:].isdigit()):
                return True
    return False


def parse_conntrack(text: str) -> dict[str, float]:
    """/proc/net/stat/nf_conntrack: per-CPU hex columns, summed (``conntrack.new``,
    ``conntrack.found`` ...); ``entries`` is a global gauge, taken once."""
    lines = [ln.split() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return {}
    header = lines[0]
    out: dict[str, float] = {}
    for row in lines[1:]:
        for name, value in zip(header, row):
            key = f"conntrack.{name}"
            v = float(int(value, 16))
            out[key] = v if name == "entries" else out.get(key, 0.0) + v
    return out


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """after - before for every counter present in both."""
    return {k: after[k] - before[k] for k in after if k in before}


# -- reading the host ----------------------------------------------------------------


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def _whole_disks() -> set[str] | None:
    try:
        return {n for n in os.listdir("/sys/block") if not _VIRTUAL_DISK.match(n)}
    except OSError:
        return None


def snapshot(hz: int | None = None) -> dict[str, float]:
    """Every host counter this host exposes, cumulative; files it lacks are
    left out (no conntrack module: no conntrack.* keys)."""
    out: dict[str, float] = {"wall_s": time.monotonic()}
    readers: list[tuple[str, Callable[[str], dict]]] = [
        ("/proc/stat", lambda t: parse_stat(t, hz or clk_tck())),
        ("/proc/softirqs", parse_softirqs),
        ("/proc/vmstat", parse_vmstat),
        ("/proc/diskstats", lambda t: parse_diskstats(t, _whole_disks())),
        ("/proc/net/stat/nf_conntrack", parse_conntrack),
    ]
    for path, parse in readers:
        text = _read(path)
        if text is not None:
            try:
                out.update(parse(text))
            except ValueError:
                pass  # a file of an unexpected shape is left out, not fatal
    return out


def client_share(extra: dict) -> float | None:
    """CPU-seconds of the load generator (client host) in this sample, as
    server workloads record it (extra["cpu_window"]["client_cpu_s"])."""
    window = extra.get("cpu_window") if isinstance(extra, dict) else None
    value = window.get("client_cpu_s") if isinstance(window, dict) else None
    return float(value) if isinstance(value, (int, float)) else None


@contextmanager
def around(env_counters: Callable[[], dict[str, float]] | None = None, environ=None) -> Iterator[dict]:
    """Wrap one measured run::

        with counters.around(env.counters) as box:
            m = workload.run(...)
            box["extra"] = m.extra   # deltas land in m.extra["counters"]

    On the way out (only when the body succeeded and set box["extra"]),
    host and environment deltas are stored in ``extra["counters"]``, the
    client host's share as ``cpu.client_s`` when the workload recorded it.
    Disabled by ISOBENCH_COUNTERS=0: nothing is read."""
    box: dict = {}
    if not enabled(environ):
        yield box
        return
    read_env = env_counters or (lambda: {})
    before = {**snapshot(), **_safe(read_env)}
    yield box
    after = {**snapshot(), **_safe(read_env)}
    extra = box.get("extra")
    if isinstance(extra, dict) and EXTRA_KEY not in extra:  # a workload's narrower window wins
        d = delta(before, after)
        client = client_share(extra)
        if client is not None:
            d["cpu.client_s"] = client
        extra[EXTRA_KEY] = d


def units_of(declare: Callable[[], list]) -> list:
    """A workload's [unit name, count], checked: a declaration that fails or
    is malformed must not fail the sample; it becomes [name, 0] (no per-unit
    cost) with the reason kept."""
    try:
        name, count = declare()
        return [str(name), float(count)]
    except Exception as exc:  # noqa: BLE001 - units are detail; the sample's values stand
        return ["run", 0.0, f"units not declared: {type(exc).__name__}: {exc}"[:200]]


def _safe(read: Callable[[], dict[str, float]]) -> dict[str, float]:
    try:
        return {k: float(v) for k, v in (read() or {}).items()}
    except Exception:  # noqa: BLE001 - an environment that cannot answer gives nothing, not a failed sample
        return {}


# -- QEMU threads by role (debug-threads=on names) -----------------------------------

VCPU_THREAD = re.compile(r"^CPU \d+/(TCG|KVM|HVF|WHPX)")


def parse_task_stat(text: str) -> tuple[int, int]:
    """utime, stime (clock ticks) of one /proc/PID[/task/TID]/stat line; the
    command name in parentheses may itself hold spaces and parentheses."""
    rest = text[text.rindex(")") + 2 :].split()
    return int(rest[11]), int(rest[12])  # fields 14 and 15 of man 5 proc


DAEMONS = frozenset({"dockerd", "containerd", "containerd-shim", "containerd-shim-runc-v2", "runc"})


def daemons_cpu(names: frozenset[str] = DAEMONS, proc: str = "/proc") -> float:
    """CPU-seconds the container engine's daemons have used so far (a
    duet's harness work that no side is charged for)."""
    ticks = 0
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        text = _read(f"{proc}/{entry}/stat")
        if text is not None and text[text.index("(") + 1 : text.rindex(")")] in names:
            ticks += sum(parse_task_stat(text))
    return ticks / clk_tck()


def thread_role(comm: str, tid: int, pid: int) -> str:
    if VCPU_THREAD.match(comm.strip()):
        return "vcpu"
    return "main" if tid == pid else "io"


def vmm_threads(pid: int, hz: int | None = None, proc: str = "/proc") -> dict[str, float]:
    """A QEMU process's CPU-seconds by thread role: ``vmm.vcpu_{user,sys}_s``
    (vCPU threads), ``vmm.main_*`` (main loop), ``vmm.io_*`` (I/O, RCU and
    worker threads, including those that already exited: the process total
    minus the live vCPU and main threads)."""
    hz = hz or clk_tck()
    total = _read(f"{proc}/{pid}/stat")
    if total is None:
        return {}
    out = dict.fromkeys(("vmm.vcpu_user_s", "vmm.vcpu_sys_s", "vmm.main_user_s", "vmm.main_sys_s"), 0.0)
    try:
        tids = os.listdir(f"{proc}/{pid}/task")
    except OSError:
        tids = []
    for tid in tids:
        stat, comm = _read(f"{proc}/{pid}/task/{tid}/stat"), _read(f"{proc}/{pid}/task/{tid}/comm")
        if stat is None or comm is None or not tid.isdigit():
            continue
        role = thread_role(comm, int(tid), pid)
        if role == "io":
            continue
        u, s = parse_task_stat(stat)
        out[f"vmm.{role}_user_s"] += u / hz
        out[f"vmm.{role}_sys_s"] += s / hz
    u, s = parse_task_stat(total)
    out["vmm.io_user_s"] = max(0.0, u / hz - out["vmm.vcpu_user_s"] - out["vmm.main_user_s"])
    out["vmm.io_sys_s"] = max(0.0, s / hz - out["vmm.vcpu_sys_s"] - out["vmm.main_sys_s"])
    return out


def parse_cpuacct_stat(text: str, hz: int = 100) -> dict[str, float]:
    """cgroup v1 cpuacct.stat ("user N", "system N" in clock ticks)."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("user", "system"):
            out[f"cgroup.{parts[0]}_s"] = int(parts[1]) / hz
    return out


def cgroup_cpu(container_id: str, hz: int | None = None, root: str = "/sys/fs/cgroup") -> dict[str, float]:
    """A container's own CPU-seconds (user, system, total usage) from cgroup
    v1 cpuacct, or cgroup v2 cpu.stat; {} when neither is readable."""
    for base in (
        f"{root}/cpuacct/docker/{container_id}",
        f"{root}/cpu,cpuacct/docker/{container_id}",
        f"{root}/cpuacct/system.slice/docker-{container_id}.scope",
    ):
        text = _read(f"{base}/cpuacct.stat")
        if text is not None:
            out = parse_cpuacct_stat(text, hz or clk_tck())
            usage = _read(f"{base}/cpuacct.usage")
            if usage is not None and usage.strip().isdigit():
                out["cgroup.usage_s"] = int(usage) / 1e9
            return out
    for base in (f"{root}/system.slice/docker-{container_id}.scope", f"{root}/docker/{container_id}"):
        text = _read(f"{base}/cpu.stat")
        if text is not None:
            return parse_cpu_stat_v2(text)
    return {}


def cgroup_cpuset_file(container_id: str, root: str = "/sys/fs/cgroup") -> str | None:
    """A container's cgroup cpuset.cpus (v1 or v2, cgroupfs or systemd
    driver); None when none is there (another runtime's layout)."""
    for base in (
        f"{root}/cpuset/docker/{container_id}",
        f"{root}/cpuset/system.slice/docker-{container_id}.scope",
        f"{root}/system.slice/docker-{container_id}.scope",
        f"{root}/docker/{container_id}",
    ):
        if os.path.exists(f"{base}/cpuset.cpus"):
            return f"{base}/cpuset.cpus"
    return None


def set_cgroup_cpuset(container_id: str, cpulist: str, root: str = "/sys/fs/cgroup") -> str:
    """Write a container's cgroup cpuset.cpus: every task in it moves (a
    runtime without `update`, such as gVisor's runsc, too). Returns how, as
    a duet's record says it ("" where there is no such file); OSError where
    it cannot be written."""
    path = cgroup_cpuset_file(container_id, root)
    if path is None:
        return ""
    with open(path, "w") as fh:
        fh.write(cpulist)
    return cpuset_write_how(path, root, container_id)


def cpuset_write_how(path: str, root: str = "/sys/fs/cgroup", container_id: str = "") -> str:
    """ "cgroup v2 cpuset.cpus write (system.slice/docker-0123456789ab.scope)":
    the version (a v1 path has its controller's own mount), the cgroup. Pure."""
    rel = os.path.relpath(os.path.dirname(path), root)
    version = 1 if rel.split("/")[0] == "cpuset" else 2
    if container_id:
        rel = rel.replace(container_id, container_id[:12])
    return f"cgroup v{version} cpuset.cpus write ({rel})"


def parse_cpu_stat_v2(text: str) -> dict[str, float]:
    names = {"usage_usec": "cgroup.usage_s", "user_usec": "cgroup.user_s", "system_usec": "cgroup.system_s"}
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in names:
            out[names[parts[0]]] = int(parts[1]) / 1e6
    return out


# -- hardware events: only where the host exposes a PMU ---------------------------------


def parse_perf_probe(stderr: str) -> str:
    """The verdict of ``perf stat -e instructions true`` from its output:
    "available", or why not (virtual machines without a virtual PMU print
    "<not supported>")."""
    for line in stderr.splitlines():
        if "instructions" in line:
            if "<not supported>" in line or "<not counted>" in line:
                return "no PMU: perf stat reports instructions <not supported>"
            if re.match(r"^\s*[\d,.]+\s+instructions", line):
                return "available"
    return "no PMU: perf stat gave no instructions count"


def probe_pmu(timeout: float = 10.0) -> str:
    """Once per run: can ``perf stat`` count hardware events on this host?"""
    perf = shutil.which("perf")
    if perf is None:
        return "no PMU probe: perf not installed (Debian package linux-perf)"
    try:
        r = subprocess.run(
            [perf, "stat", "-e", "instructions", "true"], capture_output=True, text=True, timeout=timeout
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"no PMU probe: perf failed ({type(exc).__name__})"
    return parse_perf_probe(r.stderr + r.stdout)
