"""The noise pilot's two kernels (fixed CPU and I/O work, the same bytes
and offsets on every host) and the loop that times them as A/A pairs.
isobench.checks.noisepilot runs this loop in a thread, summarises and
caches what it timed (bump its PILOT_VERSION when a kernel or the schedule
here changes)."""

from __future__ import annotations

import array
import hashlib
import mmap
import os
import sys
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

from isobench.core.workspace import DATA_ROOT
from isobench.envs.pinning import duet_sides, usable_cpus
from isobench.workloads.compress import corpus_bytes

SCRATCH_DIR = os.path.join(DATA_ROOT, "noise-pilot")  # `isobench clean` removes it after a SIGKILL

PAIRS = 20  # pairs per kernel: 19 df, the SD known to within about -25%/+45% (95%)
BUDGET_S = 40.0  # no round of pairs starts that would end past this

# The kernels: fixed work, sized to ~0.35 s each on the 2-core development
# VM, so that timer and scheduler granularity are far below the noise.
CPU_BYTES = 6_000_000
# The duet kernel: the CPU kernel twice at once, ~0.7 s, the sides swapped
# every DUET_ROTATE_S (a study's duet swaps every 0.025 s, run/duet.py's
# ROTATE_S, over samples of seconds: the pilot swaps fewer times a sample
# than a study, so its duet noise likely errs high; not measured)
DUET_BYTES = 12_000_000
DUET_ROTATE_S = 0.05
FILL_BYTES = 1_000_000  # what the side done first keeps compressing, uncounted, until the other ends
ZLIB_LEVEL = 6
IO_FILE_MIB = 16
IO_SYNCS = 128  # 4 KiB writes each made durable, as a database commits
IO_READS = 4096  # 4 KiB reads at seeded offsets, past the page cache
PAGE = 4096
MIB = 2**20


# -- the kernels ---------------------------------------------------------------------


class CpuKernel:
    name = "cpu"

    def __init__(self) -> None:
        self.data = corpus_bytes(CPU_BYTES)  # the compress workload's seeded text: same bytes everywhere
        self.what = (
            f"zlib level {ZLIB_LEVEL} over {CPU_BYTES / 1e6:g} MB of seeded text (zlib {zlib.ZLIB_RUNTIME_VERSION})"
        )

    def run(self) -> None:
        zlib.compress(self.data, ZLIB_LEVEL)

    def close(self) -> None:
        pass


class DuetCpuKernel:
    """The CPU kernel twice at the same time, one thread on each duet
    side's CPUs, the sides swapped while both run and the first done kept
    busy until the other ends: the paired noise a study's duets see
    (run/duet.py), as CpuKernel's A/A pairs are a sequential run's."""

    name = "cpu-duet"

    def __init__(self, sides: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
        self.sides = sides
        self.data = corpus_bytes(DUET_BYTES)
        self.pairs = 0
        self.what = (
            f"zlib level {ZLIB_LEVEL} over {DUET_BYTES / 1e6:g} MB twice at once on CPUs "
            + " | ".join(",".join(map(str, s)) for s in sides)
            + f", swapped every {DUET_ROTATE_S:g} s"
        )

    def run(self) -> None:  # the warm-up
        zlib.compress(self.data[:FILL_BYTES], ZLIB_LEVEL)

    def pair(self, clock: Callable[[], float], t0: float) -> tuple[tuple[float, float], tuple[float, float]]:
        """Both timed at once: (start, seconds) of each side."""
        first = self.pairs % 2  # who starts on which side alternates
        self.pairs += 1
        tids, out = [0, 0], [(0.0, 0.0), (0.0, 0.0)]
        done = [threading.Event(), threading.Event()]
        both, barrier = threading.Event(), threading.Barrier(3)

        def side(i: int) -> None:
            tids[i] = threading.get_native_id()
            os.sched_setaffinity(0, self.sides[(i + first) % 2])
            barrier.wait(30)
            start = clock()
            try:
                zlib.compress(self.data, ZLIB_LEVEL)  # releases the GIL: the two run in parallel
                out[i] = (start - t0, clock() - start)
            finally:
                done[i].set()
                if done[1 - i].is_set():  # each sets, then looks: at least one sees both
                    both.set()
            while not done[1 - i].is_set():
                zlib.compress(self.data[:FILL_BYTES], ZLIB_LEVEL)

        threads = [threading.Thread(target=side, args=(i,), daemon=True) for i in (0, 1)]
        for t in threads:
            t.start()
        barrier.wait(30)
        k = 0
        while not both.wait(DUET_ROTATE_S):
            k += 1
            for i in (0, 1):
                try:
                    os.sched_setaffinity(tids[i], self.sides[(i + first + k) % 2])
                except OSError:  # its thread just ended
                    pass
        for t in threads:
            t.join()
        return out[0], out[1]

    def close(self) -> None:
        pass


def _offsets(label: bytes, count: int, pages: int) -> list[int]:
    """Seeded page offsets, the same on every host (SHAKE-256, no platform RNG)."""
    draws = array.array("I")
    draws.frombytes(hashlib.shake_256(b"isobench-noise-pilot:" + label).digest(4 * count))
    if sys.byteorder == "big":
        draws.byteswap()
    return [(d % pages) * PAGE for d in draws]


class IoKernel:
    """Write a 16 MiB file over itself and fsync it, make 128 page writes
    durable one by one, then read 4096 seeded pages back past the page cache: O_DIRECT
    where the filesystem allows it, else after dropping this file's pages
    (POSIX_FADV_DONTNEED on clean pages; never the whole host's cache,
    which other work on a shared host relies on)."""

    name = "io"

    def __init__(self, directory: str = SCRATCH_DIR) -> None:
        os.makedirs(directory, exist_ok=True)
        self.directory = directory
        self.path = os.path.join(directory, "pilot.dat")
        self.chunk = hashlib.shake_256(b"isobench-noise-pilot:data").digest(MIB)  # incompressible
        pages = IO_FILE_MIB * MIB // PAGE
        self.syncs = _offsets(b"syncs", IO_SYNCS, pages)
        self.reads = _offsets(b"reads", IO_READS, pages)
        self.buf = mmap.mmap(-1, PAGE)  # page-aligned, as O_DIRECT needs
        self.direct = hasattr(os, "O_DIRECT")
        self.what = (
            f"{IO_FILE_MIB} MiB written and fsynced, {IO_SYNCS} page writes each fdatasynced, "
            f"{IO_READS} seeded page reads"
        )

    def run(self) -> None:
        # Overwritten in place, never truncated: the first run (the warm-up)
        # allocates the blocks and every timed run rewrites the same ones, so
        # no run pays for allocation or for discarding the last run's blocks.
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            for _ in range(IO_FILE_MIB):
                _write_all(fd, self.chunk)
            os.fsync(fd)
            page = self.chunk[:PAGE]
            for offset in self.syncs:
                os.pwrite(fd, page, offset)
                os.fdatasync(fd)
        finally:
            os.close(fd)
        fd = self._open_uncached()
        try:
            for offset in self.reads:
                os.preadv(fd, [self.buf], offset)
        finally:
            os.close(fd)

    def _open_uncached(self) -> int:
        if self.direct:
            try:
                return os.open(self.path, os.O_RDONLY | os.O_DIRECT)
            except OSError:  # tmpfs and some overlays refuse O_DIRECT: drop the file's pages instead
                self.direct = False
        fd = os.open(self.path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return fd

    @property
    def read_how(self) -> str:
        return "O_DIRECT" if self.direct else "page cache dropped for the file"

    def close(self) -> None:
        self.buf.close()
        for remove in (lambda: os.remove(self.path), lambda: os.rmdir(self.directory)):
            try:
                remove()
            except OSError:
                pass


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


# -- timing ----------------------------------------------------------------------------


@dataclass
class Timings:
    """What the timing loop has so far: per kernel, (start, seconds) of each
    sample, whole pairs only; why a kernel stopped or never ran."""

    samples: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    what: dict[str, str] = field(default_factory=dict)


def time_kernels(
    kernels: list,
    timings: Timings,
    stop: threading.Event,
    pairs: int = PAIRS,
    budget_s: float = BUDGET_S,
    clock: Callable[[], float] = time.perf_counter,
) -> None:
    """Round after round, each kernel twice in a row (A B), until ``pairs``
    rounds, the budget, or ``stop``. Each kernel's first run is a warm-up
    (allocation, caches) and is not kept. A kernel that fails (a full disk)
    is dropped with its reason; the others go on."""
    t0 = clock()
    live = list(kernels)

    def once(k) -> tuple[float, float]:
        start = clock()
        k.run()
        return start - t0, clock() - start

    def drop(k, exc: OSError) -> None:
        timings.notes[k.name] = f"stopped: {exc.strerror or exc}"
        live.remove(k)

    for k in list(live):
        timings.samples.setdefault(k.name, [])
        try:
            once(k)
        except OSError as exc:
            drop(k, exc)
    last = 0.0
    for _ in range(pairs):
        if stop.is_set() or not live or clock() - t0 + last > budget_s:
            break
        began = clock()
        for k in list(live):
            try:
                a, b = k.pair(clock, t0) if isinstance(k, DuetCpuKernel) else (once(k), once(k))
            except OSError as exc:
                drop(k, exc)
                continue
            timings.samples[k.name] += [a, b]  # one extend: a reader never sees half a pair
        last = clock() - began


def default_kernels(timings: Timings) -> list:
    """The CPU kernel, the duet one where there are two CPUs for it, and
    the I/O one where the scratch directory is writable."""
    kernels: list = [CpuKernel()]
    sides = duet_sides(usable_cpus())
    if sides[0] and sides[1]:
        kernels.append(DuetCpuKernel(sides))
    else:
        timings.notes["cpu-duet"] = "not measured: fewer than two usable CPUs"
    try:
        kernels.append(IoKernel())
    except OSError as exc:
        timings.notes["io"] = f"not measured: cannot write under {SCRATCH_DIR}: {exc.strerror or exc}"
    return kernels
