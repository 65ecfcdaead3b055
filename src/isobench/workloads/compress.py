"""Parallel xz compression (PXZ): the CPU test of the IBM and INSA studies.

pixz compresses a text corpus held in the environment's tmpfs to /dev/null,
so the run is CPU-bound: no disk, no output I/O. GNU time reports real, user
and sys seconds; throughput is input megabytes (10^6 bytes, as enwik8/enwik9
are counted) per second of real time.

The corpus is not enwik9 (a 1 GB download to fetch and pin) but a stand-in
generated from a fixed seed: words drawn from a fixed vocabulary with Zipf
frequencies, and some punctuation. It compresses about as natural text does
(xz -2 to ~36 %, -9 to ~29 %) and is byte-identical wherever it is
generated, since this module builds it (SHAKE-256, no platform RNG) and
copies it into the environment.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import sys
from array import array
from collections.abc import Iterator
from functools import lru_cache
from typing import Any, ClassVar

from pydantic import Field, model_validator

from isobench.core.metric import DURATION, THROUGHPUT, Metric
from isobench.core.plants import planted_amount, slowdown_of
from isobench.core.proc import ExecResult
from isobench.envs.base import Environment, Paths
from isobench.workloads.base import (
    Footprint,
    Measurement,
    ParseError,
    Workload,
    WorkloadError,
    WorkloadParams,
    check,
)

MB = 1_000_000
# GNU time prints seconds with two decimals: a run shorter than
# TIMER_RESOLUTION_S / TIMER_SHARE cannot be timed to better than TIMER_SHARE.
TIMER_RESOLUTION_S = 0.01
TIMER_SHARE_PCT = 2.0
TIMER_SHARE = TIMER_SHARE_PCT / 100
# Bump when the generator changes: the digest of every corpus changes with it.
CORPUS_VERSION = 1
# Pieces copied into the environment at a time: bounds the runner's memory
# and the tmpfs overshoot (corpus + one piece) whatever the corpus size.
PIECE_BYTES = 32 * 1024 * 1024
TIME_FORMAT = "isobench-time real=%e user=%U sys=%S"
_TIME_RE = re.compile(r"^isobench-time real=(\S+) user=(\S+) sys=(\S+)\s*$", re.M)

# Most frequent English words first, so the Zipf head looks like text.
_COMMON = (
    "the of and to in a is that for it as was with be by on not he i this are or his "
    "from at which but have an they you were her she there one all we their can has "
    "been if more when will would who so no what up out about into than them only "
    "other its time new some could these two may first then do any like my now over "
    "such our man me even most made after also did many before must through back "
    "years where much your way well down should because each just those people how"
).split()
_SYLLABLES = (
    "ka lo ri ne ta mu si de po an er in on es th ch st or al ve qu ly ge ment tion "
    "ing ed re co ma ba il ur ow pe ha ex nd ti ro la"
).split()


class CompressionParams(WorkloadParams):
    size_mb: int = Field(256, ge=1, le=1_000_000, description="corpus size, 10^6 bytes")
    threads: int = Field(0, ge=0, le=4096, description="pixz -p; 0 = all host cores")
    level: int = Field(2, ge=0, le=9)
    extreme: bool = False  # INSA used -e

    @model_validator(mode="before")
    @classmethod
    def _default_timeout(cls, data: Any) -> Any:
        # Allow 0.5 MB/s (one slow core at -9e) plus the start-up.
        if isinstance(data, dict) and "timeout_s" not in data:
            size = data.get("size_mb", 256)
            if isinstance(size, int) and size > 0:
                data = {**data, "timeout_s": 120 + 2 * size}
        return data


class Compression(Workload):
    name: ClassVar[str] = "compression"
    Params: ClassVar[type[WorkloadParams]] = CompressionParams
    packages: ClassVar[tuple[str, ...]] = ("pixz", "xz-utils", "time")
    duet: ClassVar[bool] = True  # CPU-bound, input in tmpfs: one side's CPUs hold it all
    params: CompressionParams

    def __init__(self, params: WorkloadParams, host) -> None:
        super().__init__(params, host)
        self.corpus_bytes = self.params.size_mb * MB  # more in a planted copy; the figures count size_mb

    def planted(self, pct: float) -> Compression:
        copy = type(self)(self.params, self.host)
        copy.corpus_bytes = planted_amount(self.params.size_mb * MB, pct)
        copy.plant_pct = slowdown_of(self.params.size_mb * MB, copy.corpus_bytes)
        return copy

    def cpus_needed(self) -> int:
        return self.threads()

    def expected_s(self, case: str) -> float:
        # pixz -2 compressed 3.0 MB/s on one thread here (quick runs of
        # 2026-11-28 as duets: 5.6 s for 16 MB in two, 6.0 s in a third; 6.2 s
        # on 2026-11-27); the higher presets at xz's own relative speeds
        # (-4 to -6 about 3x slower, -7 to -9 3.5x, -e 2x)
        level = self.params.level
        slower = (1.0 if level <= 3 else 3.0 if level <= 6 else 3.5) * (2.0 if self.params.extreme else 1.0)
        return 0.5 + self.corpus_bytes / MB / 3.0 * slower / self.threads()

    def threads(self) -> int:
        return self.params.threads or self.host.cores

    def metrics(self, case: str) -> list[Metric]:
        return [
            Metric(
                "throughput_mbs",
                "MB/s",
                True,
                "input megabytes (10^6 B) per real second",
                role=THROUGHPUT,
                primary=True,
            ),
            Metric("real_s", "s", False, "wall-clock time of pixz", role=DURATION),
            Metric("user_s", "s", False, "CPU time in user mode, all threads", role=DURATION),
            Metric("sys_s", "s", False, "CPU time in the kernel, all threads", role=DURATION),
        ]

    def argv(self, case: str, paths: Paths) -> list[str]:
        p = self.params
        return build_argv(corpus_path(paths, self.corpus_bytes), p.level, p.extreme, self.threads())

    def footprint(self) -> list[Footprint]:
        return [Footprint("size_mb", "memory", self.corpus_bytes)]  # the corpus lives in tmpfs

    def prepare(self, env: Environment) -> None:
        path = corpus_path(env.paths, self.corpus_bytes)
        part = staging_path(env.paths, self.corpus_bytes)
        check(env.exec(["mkdir", "-p", posixpath.dirname(path), posixpath.dirname(part)], timeout=60))
        check(env.exec(["rm", "-f", path], timeout=60))
        digest = hashlib.sha256()
        # write_file writes whole files, so the corpus goes in as pieces
        # appended in place. Pieces are staged on the data disk: Docker's
        # archive API (behind write_file) cannot see a container's tmpfs.
        for piece in corpus_pieces(self.corpus_bytes):
            env.write_file(part, piece)
            check(env.exec(["sh", "-c", 'cat -- "$1" >> "$2" && rm -f -- "$1"', "sh", part, path], timeout=300))
            digest.update(piece)
        got = check(env.exec(["sha256sum", path], timeout=600)).stdout.split()[:1]
        if got != [digest.hexdigest()]:
            raise WorkloadError(f"corpus in {env.name} differs from the generated one: {got} != {digest.hexdigest()}")

    def units(self, case: str, m: Measurement) -> list:
        return ["MB", float(self.params.size_mb)]  # input megabytes compressed

    def parse(self, case: str, result: ExecResult) -> Measurement:
        times = parse_time(result.stderr)
        if times["real_s"] <= 0:
            raise ParseError(f"real time {times['real_s']} s is too short to give a rate; use a larger size_mb")
        # a planted copy compresses more than size_mb and counts size_mb: its rate falls by the plant
        values = {"throughput_mbs": self.params.size_mb / times["real_s"], **times}
        return Measurement(values=values, extra={"input_bytes": self.corpus_bytes}, raw=result.stderr)

    def reparse(self, case: str, raw: str, extra: dict) -> Measurement:
        # the raw output kept is GNU time's stderr, where parse() looks
        return self.parse(case, ExecResult([], 0, "", raw, 0.0))

    def validity(self, case: str, m: Measurement) -> dict[str, str]:
        real = m.values.get("real_s", 0.0)
        if real * TIMER_SHARE >= TIMER_RESOLUTION_S:
            return {}
        note = (
            f"a {real:.2f} s run is within {TIMER_SHARE_PCT:g}% of GNU time's "
            f"{TIMER_RESOLUTION_S * 1000:.0f} ms resolution: use a larger size_mb"
        )
        return dict.fromkeys(("throughput_mbs", "real_s"), note)

    def cleanup(self, env: Environment) -> None:
        path = corpus_path(env.paths, self.corpus_bytes)
        part = staging_path(env.paths, self.corpus_bytes)
        env.exec(["rm", "-f", path, part], timeout=60)
        env.exec(["rmdir", "--ignore-fail-on-non-empty", posixpath.dirname(path), posixpath.dirname(part)], timeout=60)


# Named by size, the only parameter the bytes depend on: a study may list
# the workload twice (level 2 and 9e, say) and both share one corpus.
def corpus_name(size: int) -> str:
    """corpus-8MB for whole megabytes, corpus-8421053B for a planted copy's."""
    return f"corpus-{size // MB}MB" if size % MB == 0 else f"corpus-{size}B"


def corpus_path(paths: Paths, size: int) -> str:
    return posixpath.join(paths.tmp, "compression", f"{corpus_name(size)}.txt")


def staging_path(paths: Paths, size: int) -> str:
    return posixpath.join(paths.data, "compression", f"{corpus_name(size)}.part")


def build_argv(corpus: str, level: int, extreme: bool, threads: int) -> list[str]:
    # -t: the corpus is not a tarball; without it pixz first probes for tar
    # and would write a tar index. Output to /dev/null keeps it CPU-bound.
    flag = f"-{level}{'e' if extreme else ''}"
    return ["/usr/bin/time", "-f", TIME_FORMAT, "pixz", flag, "-t", "-p", str(threads), corpus, "/dev/null"]


def parse_time(stderr: str) -> dict[str, float]:
    """The GNU time line this workload asks for; the last one wins."""
    found = _TIME_RE.findall(stderr)
    if not found:
        raise ParseError("no 'isobench-time' line from /usr/bin/time in stderr")
    try:
        real, user, sys_ = (float(x) for x in found[-1])
    except ValueError as exc:
        raise ParseError(f"bad number in time line: {found[-1]}") from exc
    return {"real_s": real, "user_s": user, "sys_s": sys_}


# --- the corpus -------------------------------------------------------------

_SLOTS = 1 << 16  # one 16-bit random draw picks one token
_WORDS_PER_CHUNK = 1 << 20


@lru_cache(maxsize=1)
def token_table() -> tuple[bytes, ...]:
    """65536 slots, each token repeated in proportion to its Zipf weight."""
    words: list[str] = list(_COMMON)
    seen = set(words)
    i = 0
    while len(words) < 8192:
        h = hashlib.sha256(b"isobench-vocab:%d" % i).digest()
        i += 1
        word = "".join(_SYLLABLES[b % len(_SYLLABLES)] for b in h[1 : 2 + h[0] % 4])
        if word not in seen:
            seen.add(word)
            words.append(word)
    tokens = [(" " + w).encode() for w in words]
    weights = [1.0 / (rank + 1) for rank in range(len(tokens))]
    # punctuation as frequent as the 2nd, 4th and 8th words
    tokens += [b",", b".", b".\n"]
    weights += [weights[1], weights[3], weights[7]]
    spare = _SLOTS - len(tokens)
    total = sum(weights)
    counts = [1 + int(w / total * spare) for w in weights]
    counts[0] += _SLOTS - sum(counts)  # rounding remainder to the head
    table: list[bytes] = []
    for token, count in zip(tokens, counts):
        table.extend([token] * count)
    return tuple(table)


@lru_cache(maxsize=4)
def _chunk(index: int) -> bytes:
    """The stream's chunk `index`, ~5.5 MB. The first few are kept: every
    environment of a run writes the same corpus (0.3 s a chunk here)."""
    draws = array("H")
    seed = b"isobench-corpus-v%d:%d" % (CORPUS_VERSION, index)
    draws.frombytes(hashlib.shake_256(seed).digest(2 * _WORDS_PER_CHUNK))
    if sys.byteorder == "big":  # the same draws on every host
        draws.byteswap()
    return b"".join(map(token_table().__getitem__, draws))


def _chunks() -> Iterator[bytes]:
    """The endless deterministic text stream, ~5.5 MB at a time."""
    index = 0
    while True:
        yield _chunk(index)
        index += 1


def corpus_pieces(size: int, piece: int = PIECE_BYTES) -> Iterator[bytes]:
    """The first `size` bytes of the stream, cut into pieces of `piece` bytes.

    The bytes do not depend on `piece`: only on `size` and CORPUS_VERSION.
    """
    buf = bytearray()
    left = size
    chunks = _chunks()
    while left > 0:
        while len(buf) < min(piece, left):
            buf += next(chunks)
        n = min(piece, left)
        yield bytes(buf[:n])
        del buf[:n]
        left -= n


def corpus_bytes(size: int) -> bytes:
    """The whole corpus in memory: for tests and small sizes."""
    return b"".join(corpus_pieces(size))
