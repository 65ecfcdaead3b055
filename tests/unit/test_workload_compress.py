import hashlib
import lzma
from pathlib import Path

import pytest
from pydantic import ValidationError

from isobench.core.proc import ExecResult
from isobench.envs.base import Paths
from isobench.host.hostinfo import HostInfo
from isobench.workloads.base import ParseError
from isobench.workloads.compress import (
    MB,
    Compression,
    CompressionParams,
    build_argv,
    corpus_bytes,
    corpus_pieces,
    parse_time,
)

DATA = Path(__file__).parent.parent / "data"
HOST = HostInfo(cores=2, mem_bytes=8 << 30, disk_free_bytes=100 << 30)
PATHS = Paths(data="/var/lib/isobench/scratch/r-env", tmp="/dev/shm/isobench/r-env")


def result(stderr: str, rc: int = 0) -> ExecResult:
    return ExecResult(["/usr/bin/time"], rc, "", stderr, 1.0)


def test_parse_time_from_real_gnu_time_output():
    # captured: /usr/bin/time -f ... pixz -2 -t -p 2 <16 MB corpus> /dev/null
    text = (DATA / "time-pixz.txt").read_text()
    times = parse_time(text)
    assert set(times) == {"real_s", "user_s", "sys_s"}
    assert times["real_s"] > 0 and times["user_s"] > 0 and times["sys_s"] >= 0


def test_parse_computes_throughput_from_real_time():
    w = Compression(CompressionParams(size_mb=16), HOST)
    m = w.parse("default", result((DATA / "time-pixz.txt").read_text()))
    assert m.values["throughput_mbs"] == pytest.approx(16 / m.values["real_s"])
    assert {x.name for x in w.metrics("default")} == set(m.values)
    assert m.extra == {"input_bytes": 16 * MB}


def test_parse_uses_last_time_line_after_other_stderr():
    text = "pixz: warning\nisobench-time real=9.00 user=1 sys=1\nisobench-time real=2.00 user=3.50 sys=0.10\n"
    assert parse_time(text) == {"real_s": 2.0, "user_s": 3.5, "sys_s": 0.1}


@pytest.mark.parametrize(
    "stderr",
    [
        "",
        "Command terminated by signal 9\n",
        "isobench-time real=?? user=1 sys=0\n",
        "real 1.00\nuser 1.00\nsys 0.00\n",  # default time format, not ours
    ],
)
def test_malformed_time_output_raises_parse_error(stderr):
    with pytest.raises(ParseError):
        parse_time(stderr)


def test_zero_real_time_is_a_parse_error():
    w = Compression(CompressionParams(size_mb=1), HOST)
    with pytest.raises(ParseError):
        w.parse("default", result("isobench-time real=0.00 user=0.00 sys=0.00\n"))


def test_argv_defaults_use_all_host_cores():
    w = Compression(CompressionParams(), HOST)
    assert w.argv("default", PATHS) == [
        "/usr/bin/time",
        "-f",
        "isobench-time real=%e user=%U sys=%S",
        "pixz",
        "-2",
        "-t",
        "-p",
        "2",
        "/dev/shm/isobench/r-env/compression/corpus-256MB.txt",
        "/dev/null",
    ]


def test_argv_extreme_level_and_threads():
    argv = Compression(CompressionParams(level=9, extreme=True, threads=4), HOST).argv("default", PATHS)
    assert argv[4:8] == ["-9e", "-t", "-p", "4"]
    assert build_argv("/c", 0, False, 1)[4:] == ["-0", "-t", "-p", "1", "/c", "/dev/null"]


@pytest.mark.parametrize(
    "bad",
    [
        {"level": 10},
        {"level": -1},
        {"size_mb": 0},
        {"threads": -1},
        {"size_mb": "lots"},
        {"unknown": 1},
        {"extreme": "maybe"},
    ],
)
def test_bad_params_are_rejected(bad):
    with pytest.raises(ValidationError):
        CompressionParams(**bad)


def test_timeout_defaults_from_size_but_can_be_set():
    assert CompressionParams(size_mb=1000).timeout_s == 2120
    assert CompressionParams(size_mb=1000, timeout_s=5).timeout_s == 5


def test_corpus_is_deterministic_and_independent_of_piece_size():
    size = 3 * MB + 12345
    a = corpus_bytes(size)
    assert len(a) == size
    assert a == b"".join(corpus_pieces(size, piece=1 << 16))
    assert a == corpus_bytes(size)
    # a prefix of a longer corpus: sizes differ only in where they stop
    assert corpus_bytes(MB) == a[:MB]


def test_corpus_digest_is_pinned():
    # If this changes, every stored compression result was measured on a
    # different input: bump CORPUS_VERSION and say so in the changelog.
    digest = hashlib.sha256(corpus_bytes(MB)).hexdigest()
    assert digest == "1e9b68f77271c604d95586e398fab1fc88fc3f8ba8c68eada32d990a57516e49"


def test_corpus_looks_like_text_and_compresses_like_it():
    data = corpus_bytes(2 * MB)
    assert data.isascii()
    words = data.split()
    assert b"the" in words[:200]
    assert len(set(words)) > 3000  # a real vocabulary, not a handful of tokens
    ratio = len(lzma.compress(data, preset=2)) / len(data)
    assert 0.25 < ratio < 0.5  # text-like: neither trivial nor incompressible


def test_registry():
    from isobench.workloads import WORKLOADS, get

    assert get("compression") is Compression
    assert set(WORKLOADS) >= {"compression", "hpcc", "fio"}
    assert all(cls.name == name for name, cls in WORKLOADS.items())
    with pytest.raises(KeyError, match="known: .*compression"):
        get("pxz")


@pytest.mark.parametrize("module", ["isobench.workloads.base", "isobench.envs", "isobench.workloads.fio"])
def test_any_import_order_works(module):
    # envs/__init__ and workloads.base import each other's modules
    import subprocess
    import sys

    subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
