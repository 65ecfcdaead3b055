"""One start for both sides of a duet.

Each side's timed process is started first and held at a gate inside its
environment: a small Python program (every environment has
/usr/bin/python3) that joins the cgroups it is given, says it is ready on
stderr, and reads one byte from its stdin, a pipe the harness holds (a
native pipe, or Docker's exec stdin). When both sides are ready, one release
writes that byte to both back to back, so the harness's start-up work
(`docker exec`, Python's own start) happens before the gate, outside any
timed window. The gate then starts the work with an environment that is the
same on both sides (the PATH every environment resolves with, HOME, a pad
to the same number of bytes of argv and environment: Mytkowicz et al.,
ASPLOS 2009, saw the environment's size move a result), and prints the
instants the work started and ended on the kernel's clock, which native and
containers share: the duet's skew and overlap are the work's, not the
harness's threads'.

Once the work has ended, the gate says so (its instants and exit code on
stderr, a mark on stdout after the work's last byte) and, as a duet's
filler, runs the same work again, uncounted and silent, until the harness
writes a stop byte (the other side is done): each side's fillers start
within a millisecond of its work's end, in its own environment, with no
`docker exec` beside the other side's sample. Each filler runs in a fresh
directory of its own, removed once it has ended: the work's directory as
it stood before the work ran (its directories made anew, its files linked),
so what a filler cut short leaves (a lock directory, an output it appends
to) never reaches the sample's directory or a later sample (issue 55, 4);
the first filler that fails (or cannot start) is the last."""

from __future__ import annotations

import posixpath
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass

PYTHON = "/usr/bin/python3"
READY = b"isobench-gate ready\n"
OUT_MARK = "isobench-gate-out\n"  # on stdout after the work's last byte
PAD_TO = 8192  # bytes of argv and environment the work starts with, both sides
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
GATE_TIMEOUT_S = 60.0  # both sides ready within this, or the gate opens for whoever is
FILLER_GRACE_S = 5.0  # a filler's time to end after its SIGTERM: mpirun's is about 1 s
_END_RE = re.compile(r"isobench-gate (\d+) (\d+) (\d+) (-?\d+)\n")
_FILLED_RE = re.compile(r"isobench-gate-filled (\d+) (\d+)\n")

FILLER_PREFIX = "isobench-filler-"  # a filler's fresh directory, beside the work's

# argv: once|fill, PAD_TO, FILLER_GRACE_S, where fillers' directories are made,
# the work's directory to mirror in them ("": none), cgroup.procs files..., --, the work's argv
PROGRAM = r"""
import os, select, signal, sys, time
mode, pad, grace, parent, mirror, *rest = sys.argv[1:]
cut = rest.index("--")
procs, argv = rest[:cut], rest[cut + 1:]
for path in procs:
    with open(path, "w") as fh:
        fh.write(str(os.getpid()))
env = {"PATH": "@PATH@", "HOME": os.environ.get("HOME") or "/root"}
def size():
    return sum(len(a.encode()) + 1 for a in argv) + sum(len(k) + len(v.encode()) + 2 for k, v in env.items())
gap = int(pad) - size() - len("ISOBENCH_PAD=") - 1
if gap > 0:
    env["ISOBENCH_PAD"] = "x" * gap
stdin = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0)]
def spawn(actions, **kw):
    try:
        return os.posix_spawnp(argv[0], argv, env, file_actions=actions, **kw)
    except OSError as exc:
        os.write(2, ("isobench-gate: cannot run %s: %s\n" % (argv[0], exc.strerror)).encode())
def code_of(status):
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code
def snapshot(top):
    # the work's directory before it runs: (path, is a directory), parents first
    found = []
    for root, dirs, files in os.walk(top):
        for name in list(dirs):
            if os.path.islink(os.path.join(root, name)):
                dirs.remove(name)
                files.append(name)
        rel = os.path.relpath(root, top)
        found += [(os.path.normpath(os.path.join(rel, n)), n in dirs) for n in dirs + files]
    return found
if mode == "fill":
    import shutil, tempfile
    entries = snapshot(mirror) if mirror else []
def fresh():
    try:
        d = tempfile.mkdtemp(prefix="@PREFIX@", dir=parent or None)
    except OSError:
        return None
    try:
        for rel, is_dir in entries:
            if is_dir:
                os.mkdir(os.path.join(d, rel))
            else:
                os.symlink(os.path.join(mirror, rel), os.path.join(d, rel))
        os.chdir(d)
    except OSError:
        shutil.rmtree(d, ignore_errors=True)
        return None
    return d
def scrap(d):
    os.chdir("/")
    shutil.rmtree(d, ignore_errors=True)
def pidfd(pid):
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # gVisor (ENOSYS), kernels before 5.3: watched by polling
        return None
def watch(pid, fd, stop, timeout=None):
    # True: the stop byte came (with stop); False: pid ended, left to be reaped; None: timeout
    ins = [0] if stop else []
    if fd is not None:
        ready = select.select(ins + [fd], [], [], timeout)[0]
        return True if 0 in ready else (False if ready else None)
    end = None if timeout is None else time.monotonic() + timeout
    while True:
        if select.select(ins, [], [], 0)[0]:
            return True
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return False
        left = 0.02 if end is None else min(0.02, end - time.monotonic())
        if left <= 0:
            return None
        select.select(ins, [], [], left)
os.write(2, b"isobench-gate ready\n")
if os.read(0, 1) != b"g":
    os._exit(125)
t0 = time.time_ns()
pid = spawn(stdin)
code = 127 if pid is None else code_of(os.waitpid(pid, 0)[1])
t1 = time.time_ns()
os.write(1, b"isobench-gate-out\n")
os.write(2, b"isobench-gate %d %d %d %d\n" % (t0, t1, size(), code))
if mode == "once":
    os._exit(code)
quiet = stdin + [(os.POSIX_SPAWN_OPEN, fd, "/dev/null", os.O_WRONLY, 0) for fd in (1, 2)]
filled, failing, until = 0, code != 0, t1  # until: when the last filler ended
while not failing:
    home = fresh()
    pid = spawn(quiet, setpgroup=0) if home else None
    if pid is None:
        failing = True
        if home:
            scrap(home)
        break
    filled += 1
    fd = pidfd(pid)
    if watch(pid, fd, True):
        for sig, wait in ((signal.SIGTERM, float(grace)), (signal.SIGKILL, None)):
            try:
                os.killpg(pid, sig)
            except ProcessLookupError:
                pass
            if watch(pid, fd, False, wait) is not None:
                break
        os.waitpid(pid, 0)
        until = time.time_ns()
        scrap(home)
        break
    failing = os.waitpid(pid, 0)[1] != 0
    until = time.time_ns()
    if fd is not None:
        os.close(fd)
    scrap(home)
if failing:
    select.select([0], [], [])
os.write(2, b"isobench-gate-filled %d %d\n" % (filled, until))
os._exit(code)
""".replace("@PATH@", SYSTEM_PATH).replace("@PREFIX@", FILLER_PREFIX)


def filler_home(cwd: str | None, scratch: str) -> tuple[str, str]:
    """Where a filler's fresh directory is made, and the directory it
    mirrors (""; none): beside the work's own directory (the same disk) and
    a copy of it, or, for a work that names none, in the environment's
    scratch, empty. Pure."""
    top = posixpath.normpath(cwd) if cwd else ""
    if top in ("", "/", "."):
        return scratch, ""
    return posixpath.dirname(top), top


# a kind without a gate: each filler chunk in a fresh directory of its own, the
# work's directory linked in it (cp -s), removed once it ends; 125 when none can be made
_FRESH_SH = (
    'd=$(mktemp -d "${1:-/tmp}/@PREFIX@XXXXXX") || exit 125; src=$2; shift 2; '
    'if [ -n "$src" ]; then cp -Rs "$src/." "$d/" || { rm -rf "$d"; exit 125; }; fi; '
    'cd "$d" || exit 125; "$@"; rc=$?; cd /; rm -rf "$d"; exit $rc'
).replace("@PREFIX@", FILLER_PREFIX)


def fresh_argv(argv: list[str], cwd: str | None, scratch: str) -> list[str]:
    """argv run in a fresh directory of its own (filler_home), removed after
    it: a filler of a kind without a gate, exec'd chunk by chunk. Pure."""
    parent, mirror = filler_home(cwd, scratch)
    return ["sh", "-c", _FRESH_SH, "sh", parent, mirror, *argv]


def gate_argv(
    argv: list[str],
    fill: bool,
    procs: list[str] | tuple[str, ...] = (),
    cwd: str | None = None,
    scratch: str = "",
) -> list[str]:
    """argv held at the gate until released, in `cwd`; with `fill`, copies
    of it run after it until the stop byte, each in a fresh directory
    (filler_home: beside `cwd`, or in `scratch`); in the cgroups whose
    cgroup.procs files are `procs`."""
    mode = "fill" if fill else "once"
    parent, mirror = filler_home(cwd, scratch)
    head = [PYTHON, "-I", "-S", "-c", PROGRAM, mode, str(PAD_TO), f"{FILLER_GRACE_S:g}", parent, mirror]
    return [*head, *procs, "--", *argv]


@dataclass(frozen=True)
class Inside:
    """The work's own instants (epoch seconds, the kernel's clock) and the
    bytes of argv and environment it started with."""

    start: float
    end: float
    stack_bytes: int


@dataclass(frozen=True)
class Ended:
    """What the gate said when the work ended: its instants, exit code, and
    its own stdout and stderr without the gate's lines."""

    inside: Inside
    code: int
    stdout: str
    stderr: str


def ended(stdout: str, stderr: str) -> Ended | None:
    """The work's end, once both streams carry the gate's marks (its stdout
    is then whole: the mark came after its last byte); None before. Pure."""
    text = stderr.replace(READY.decode(), "", 1)
    found = _END_RE.search(text)
    if found is None or not stdout.endswith(OUT_MARK):
        return None
    t0, t1, size, code = (int(x) for x in found.groups())
    return Ended(Inside(t0 / 1e9, t1 / 1e9, size), code, stdout[: -len(OUT_MARK)], text[: found.start()])


def filled(stderr: str) -> tuple[int, float] | None:
    """How many fillers the gate ran and when it stopped (epoch seconds). Pure."""
    found = _FILLED_RE.search(stderr)
    return (int(found.group(1)), int(found.group(2)) / 1e9) if found else None


@dataclass
class SideGate:
    """One side's part of a gate: which of its commands is the timed one,
    whether its environment held it (or fell back, and why), the work's own
    instants, and how to stop its fillers."""

    timed_argv: list[str]
    shared: Gate
    index: int
    fill: bool = True  # copies of the work run after it until stop_filling()
    scratch: str = ""  # where a filler of a work without a directory of its own gets a fresh one
    held: bool = False  # the timed command stood at the gate
    fallback: str = ""  # why this side could not be held ("" when it was)
    standing: str = ""  # where its commands stood when not in cgroups of their own ("": they were)
    inside: Inside | None = None
    fillers: int = 0
    filled_until: float = 0.0  # epoch seconds its fillers stopped
    _stop: Callable[[], str] | None = None
    _claimed: bool = False

    def claim(self, argv: list[str]) -> bool:
        """Is this the timed command, to be held at the gate? Once: anything
        else the workload runs (and a repeat of it) runs plain."""
        if not self._claimed and list(argv) == list(self.timed_argv):
            self._claimed = True
            return True
        return False

    def arrive(self, release: Callable[[], None] | None) -> bool:
        """This side is ready (release opens it), or will never be (None: its
        sample ended or fell back before the gate); blocks until the other
        side is too, and both are released at once. False: the other never
        came within GATE_TIMEOUT_S (this side is released alone)."""
        self.held = release is not None
        return self.shared.arrive(self.index, release)

    def abandon(self) -> None:
        """The sample ended without reaching the gate: the other side must not wait for it."""
        if not self.shared.arrived(self.index):
            self._claimed = True
            self.shared.arrive(self.index, None)

    def work_ended(self, inside: Inside, stop: Callable[[], str] | None) -> None:
        """The gate's instants of the work; `stop` ends its fillers and
        returns the rest of its stderr (None: it does not fill)."""
        self.inside, self._stop = inside, stop

    @property
    def filling(self) -> bool:
        return self._stop is not None

    def stop_filling(self) -> None:
        """Stop the fillers (the other side is done); how many ran, and until
        when the last ended (a filler that failed was the last: the gate
        then only waits). A gate that said nothing (its container killed)
        leaves filled_until 0: no filling is claimed."""
        stop, self._stop = self._stop, None
        if stop is None:
            return
        said = filled(stop())
        if said is not None:
            self.fillers, self.filled_until = said


class Gate:
    """Two sides, one release: the last side to arrive opens both, back to back."""

    def __init__(self, parties: int = 2, timeout: float = GATE_TIMEOUT_S) -> None:
        self._releases: list[Callable[[], None] | None] = [None] * parties
        self._arrived = [False] * parties
        self._lock = threading.Lock()
        self._opened = threading.Event()
        self.timeout = timeout

    def side(self, index: int, timed_argv: list[str]) -> SideGate:
        return SideGate(list(timed_argv), self, index)

    def arrived(self, index: int) -> bool:
        return self._arrived[index]

    def arrive(self, index: int, release: Callable[[], None] | None) -> bool:
        release = _once(release) if release is not None else None
        with self._lock:
            if self._arrived[index]:
                return True
            self._arrived[index], self._releases[index] = True, release
            last = all(self._arrived)
        if last:
            self._open()
            return True
        if self._opened.wait(self.timeout):
            return True
        if release is not None:  # the other side never came: this one goes alone
            release()
        return False

    def _open(self) -> None:
        for release in self._releases:
            if release is not None:
                try:
                    release()
                except OSError:  # that side's process is gone: its own exec says how
                    pass
        self._opened.set()


def _once(release: Callable[[], None]) -> Callable[[], None]:
    """A release that writes its byte once, whoever calls it (the opener, or
    a side whose wait timed out at the same moment): a second byte would
    read as the stop of its fillers."""
    lock, done = threading.Lock(), [False]

    def go() -> None:
        with lock:
            if not done[0]:
                done[0] = True
                release()

    return go
