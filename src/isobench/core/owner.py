"""Who owns a leftover, and whether that owner still runs, so `isobench
clean` never removes what a live run holds (issue 47: one home's `clean`
removed another home's live container). An owner is a process: its pid, the
boot it ran in and the pid's start time (a pid is reused, a start time on one
boot is not). Docker objects carry their owner as labels; everything else a
run makes is named by its run id, and the run's owner file says who owns it.

Start times are the host's: a process in a time namespace (`unshare --time
--boottime N`) reads every /proc/PID/stat start time N seconds later than
the host does, so a run started there, read by a `clean` outside it, looked
dead (issue 55, 23). Each reader takes its own namespace's offset away."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from isobench.core.workspace import LABEL

# beside the run lock: the host's, whatever ISOBENCH_HOME says, and empty after a boot
OWNERS_DIR = "/run/isobench/owners"
BOOT_ID = "/proc/sys/kernel/random/boot_id"
TIMENS_OFFSETS = "/proc/self/timens_offsets"  # this process's time namespace: absent before Linux 5.6
MARKS = ("pid", "boot", "start")  # the labels isobench.pid, isobench.boot, isobench.start


@dataclass(frozen=True)
class Owner:
    pid: int
    boot: str
    start: int  # clock ticks after boot when the pid started (/proc/PID/stat field 22)
    run_id: str = ""

    def same_process(self, other: Owner) -> bool:
        return (self.pid, self.boot, self.start) == (other.pid, other.boot, other.start)


def start_ticks(stat: str) -> int | None:
    """Field 22 (starttime) of a /proc/PID/stat text; None if it has none.
    The command (field 2) may hold spaces and parentheses: fields are
    counted after its last ')'. Pure."""
    fields = stat.rpartition(")")[2].split()
    try:
        return int(fields[19])  # fields[0] is field 3
    except (IndexError, ValueError):
        return None


def boottime_offset_ticks(offsets: str, hz: int) -> int:
    """The boottime offset of a /proc/self/timens_offsets text in clock
    ticks of `hz` (0 without one): what the kernel adds to every start time
    this process reads. Pure."""
    for line in offsets.splitlines():
        name, *values = line.split()
        if name in ("boottime", "7") and len(values) == 2:  # 7: CLOCK_BOOTTIME, as older kernels print it
            try:
                seconds, nanos = int(values[0]), int(values[1])
            except ValueError:
                return 0
            return (seconds * 1_000_000_000 + nanos) // (1_000_000_000 // hz)
    return 0


def is_live(owner: Owner, boot: str, start_now: int | None) -> bool:
    """Does the owner still run? Only on the boot it ran in, and only while
    its pid is the same process (`start_now`: that pid's start time now,
    None when no process has it). Pure."""
    return owner.boot == boot and start_now is not None and start_now == owner.start


def keeps(owner: Owner | None, boot: str, start_now: int | None, me: Owner) -> bool:
    """Must clean leave this alone? Yes while its owner lives, unless the
    owner is the cleaning process itself (a run sweeping its own). An
    unmarked leftover has no owner to wait for. Pure."""
    return owner is not None and is_live(owner, boot, start_now) and not owner.same_process(me)


def _read(path: str) -> str:
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return ""


def boot_id() -> str:
    return _read(BOOT_ID).strip()


def started(pid: int) -> int | None:
    """When the process with this pid started (clock ticks after the host's
    boot, whatever time namespace this process reads it from), None if none has it."""
    ticks = start_ticks(_read(f"/proc/{pid}/stat"))
    return None if ticks is None else ticks - boottime_offset_ticks(_read(TIMENS_OFFSETS), os.sysconf("SC_CLK_TCK"))


def me(run_id: str = "") -> Owner:
    pid = os.getpid()
    return Owner(pid, boot_id(), started(pid) or 0, run_id)


def owner_labels(run_id: str = "") -> dict[str, str]:
    """The labels naming this process as the owner of a container or volume."""
    owner = me(run_id)
    return {f"{LABEL}.pid": str(owner.pid), f"{LABEL}.boot": owner.boot, f"{LABEL}.start": str(owner.start)}


def from_labels(labels: dict[str, str] | None) -> Owner | None:
    """The owner a Docker object's labels name; None without a whole mark
    (one made before owners were marked). Pure."""
    labels = labels or {}
    try:
        pid, boot, start = (labels[f"{LABEL}.{mark}"] for mark in MARKS)
        return Owner(int(pid), boot, int(start), labels.get(f"{LABEL}.run", ""))
    except (KeyError, ValueError):
        return None


def owner_file(run_id: str, root: str = OWNERS_DIR) -> str:
    return os.path.join(root, f"{run_id}.json")


@contextlib.contextmanager
def owning(run_id: str, root: str = OWNERS_DIR) -> Iterator[None]:
    """This process owns the run while inside: its owner file is written
    before anything of the run exists and removed when the run has ended
    (a SIGKILL leaves it naming a dead process: clean then removes it all)."""
    path = owner_file(run_id, root)
    try:
        os.makedirs(root, exist_ok=True)
        with open(path, "w") as fh:
            json.dump(dataclasses.asdict(me(run_id)), fh)
    except OSError:  # not root: nothing of the host is made without it either
        path = ""
    try:
        yield
    finally:
        if path:
            with contextlib.suppress(OSError):
                os.remove(path)


def read_owners(root: str = OWNERS_DIR) -> dict[str, Owner]:
    """Every run's owner file: run id -> owner (live or not)."""
    owners = {}
    with contextlib.suppress(OSError):
        for name in os.listdir(root):
            try:
                info = json.loads(_read(os.path.join(root, name)) or "{}")
                owner = Owner(int(info["pid"]), str(info["boot"]), int(info["start"]), str(info["run_id"]))
            except (ValueError, KeyError, TypeError):
                continue
            owners[owner.run_id] = owner
    return owners


def live_run_ids(root: str = OWNERS_DIR) -> set[str]:
    """The runs whose owner file names a process that still runs."""
    boot = boot_id()
    return {run for run, owner in read_owners(root).items() if is_live(owner, boot, started(owner.pid))}


class Keeper:
    """What `clean` leaves alone, asked item by item: a Docker object by its
    labels, anything else by the run it belongs to. The owner files are read
    afresh at each question, so a run that starts while clean works is seen
    (its owner file exists before anything of it). Collects one line per
    item kept."""

    def __init__(self, root: str = OWNERS_DIR):
        self.root = root
        self.kept: list[str] = []
        self._boot = boot_id()
        self._me = me()

    def _keeps(self, owner: Owner | None) -> bool:
        return keeps(owner, self._boot, started(owner.pid) if owner else None, self._me)

    def live_runs(self) -> dict[str, Owner]:
        """The runs whose owner still runs (this process's own left out)."""
        return {run: owner for run, owner in read_owners(self.root).items() if self._keeps(owner)}

    def keeps_marked(self, what: str, labels: dict[str, str] | None) -> bool:
        """Keep `what` (a Docker object) while the owner its labels name runs;
        without a mark, while its run (label isobench.run) does."""
        owner = from_labels(labels)
        if owner is None:
            run = (labels or {}).get(f"{LABEL}.run", "")
            owner = self.live_runs().get(run) if run else None
        return self._keep(what, owner)

    def keeps_run(self, what: str, belongs: Callable[[str], bool]) -> bool:
        """Keep `what` if it belongs to a live run (`belongs(run_id)`)."""
        owner = next((o for run, o in self.live_runs().items() if belongs(run)), None)
        return self._keep(what, owner)

    def _keep(self, what: str, owner: Owner | None) -> bool:
        if owner is None or not self._keeps(owner):
            return False
        whose = f"run {owner.run_id}" if owner.run_id else "its owner"
        self.kept.append(f"{what}: {whose} is live (pid {owner.pid})")
        return True

    def stale_owner_files(self) -> list[str]:
        """Owner files whose process is gone (its run was killed)."""
        return [
            owner_file(run, self.root)
            for run, owner in read_owners(self.root).items()
            if not is_live(owner, self._boot, started(owner.pid))
        ]
