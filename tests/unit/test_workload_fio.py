import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from isobench.core.proc import ExecResult
from isobench.envs.base import Paths
from isobench.host.hostinfo import HostInfo
from isobench.workloads.base import ParseError, WorkloadError
from isobench.workloads.fio import (
    CASES,
    Fio,
    FioParams,
    clat_histogram_us,
    layout_argv,
    parse_job,
)

# captured: fio 3.33 on ext4 with the argv Fio.argv() builds (64 MiB file,
# runtime 2 s); fio-randread-note.txt is a psync run that prints a note first
DATA = Path(__file__).parent.parent / "data"
HOST = HostInfo(cores=2, mem_bytes=8 << 30, disk_free_bytes=100 << 30)
PATHS = Paths(data="/var/lib/isobench/scratch/r-env", tmp="/dev/shm/isobench/r-env")


def captured(case: str) -> ExecResult:
    return ExecResult(["fio"], 0, (DATA / f"fio-{case}.json").read_text(), "", 2.5)


@pytest.mark.parametrize("case", list(CASES))
def test_parse_real_outputs_yield_exactly_the_declared_metrics(case):
    w = Fio(FioParams(), HOST)
    m = w.parse(case, captured(case))
    assert set(m.values) == {x.name for x in w.metrics(case)}
    assert all(v > 0 for v in m.values.values())


def test_seqread_bandwidth_and_latency():
    m = Fio(FioParams(), HOST).parse("seqread", captured("seqread"))
    read = json.loads(captured("seqread").stdout)["jobs"][0]["read"]
    assert m.values["bandwidth_mbs"] == pytest.approx(read["bw_bytes"] / 1e6)
    assert m.values["read_clat_p50_us"] == pytest.approx(read["clat_ns"]["percentile"]["50.000000"] / 1000)
    v = m.values
    assert v["read_clat_p50_us"] <= v["read_clat_p90_us"] <= v["read_clat_p99_us"] <= v["read_clat_p99_9_us"]


def test_seqwrite_has_bandwidth_only():
    m = Fio(FioParams(), HOST).parse("seqwrite", captured("seqwrite"))
    assert list(m.values) == ["bandwidth_mbs"]
    assert m.extra == {}


def test_randrw70_total_is_reads_plus_writes_about_70_30():
    v = Fio(FioParams(), HOST).parse("randrw70", captured("randrw70")).values
    assert v["iops"] == pytest.approx(v["read_iops"] + v["write_iops"])
    assert 0.6 < v["read_iops"] / v["iops"] < 0.8


def test_read_histogram_is_sorted_compact_and_complete():
    m = Fio(FioParams(), HOST).parse("randread", captured("randread"))
    hist = m.extra["read_clat_hist"]
    lat = [b[0] for b in hist]
    assert lat == sorted(lat) and all(c > 0 for _, c in hist)
    read = json.loads(captured("randread").stdout)["jobs"][0]["read"]
    assert sum(c for _, c in hist) == read["clat_ns"]["N"]
    assert hist[0][0] == pytest.approx(read["clat_ns"]["min"] / 1000, rel=0.05)
    json.dumps(m.extra)  # stored as JSON
    assert clat_histogram_us({"bins": {"2000": 3, "1000": 1, "1500": 0}}) == [[1.0, 1], [2.0, 3]]


def test_notes_before_the_json_are_skipped():
    # real fio output: "note: both iodepth >= 1 and synchronous I/O engine ..."
    text = (DATA / "fio-randread-note.txt").read_text()
    assert not text.startswith("{")
    m = Fio(FioParams(), HOST).parse("randread", ExecResult(["fio"], 0, text, "", 1.0))
    assert m.values["iops"] > 0


def test_text_after_the_json_is_ignored():
    text = captured("randread").stdout + "\nfio: some trailing complaint {\n"
    assert parse_job(text)["jobname"] == "randread"


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: "",
        lambda t: "fio: failed to open file\n",
        lambda t: t[: len(t) // 2],  # killed mid-output
        lambda t: t.replace('"error" : 0', '"error" : 5', 1),
        lambda t: t.replace('"jobs" : [', '"jobz" : [', 1),
        lambda t: t.replace('"bins" :', '"binz" :'),
        lambda t: t.replace('"99.900000"', '"99.950000"'),
    ],
)
def test_malformed_output_raises_parse_error(mangle):
    text = mangle(captured("randread").stdout)
    with pytest.raises(ParseError):
        Fio(FioParams(), HOST).parse("randread", ExecResult(["fio"], 0, text, "", 1.0))


def test_output_of_another_case_is_rejected():
    with pytest.raises(ParseError):
        Fio(FioParams(), HOST).parse("randwrite", captured("randread"))


def test_zero_ios_is_a_parse_error():
    doc = json.loads(captured("randread").stdout)
    doc["jobs"][0]["read"]["total_ios"] = 0
    with pytest.raises(ParseError):
        Fio(FioParams(), HOST).parse("randread", ExecResult(["fio"], 0, json.dumps(doc), "", 1.0))


def test_argv_random_case():
    w = Fio(FioParams(size_mb=64, runtime_s=5, ramp_s=1, iodepth=128, numjobs=2), HOST)
    argv = w.argv("randrw70", PATHS)
    assert argv[0] == "fio"
    for opt in (
        "--filename=/var/lib/isobench/scratch/r-env/fio/testfile-64MiB",
        f"--size={64 << 20}",
        "--rw=randrw",
        "--rwmixread=70",
        "--bs=4k",
        "--ioengine=libaio",
        "--direct=1",
        "--iodepth=128",
        "--numjobs=2",
        "--group_reporting",
        "--time_based",
        "--runtime=5",
        "--ramp_time=1",
        "--percentile_list=50:90:99:99.9",
        "--output-format=json+",
    ):
        assert opt in argv
    assert any(a.startswith("--randseed=") for a in argv)


def test_argv_sequential_case_uses_seq_depth_and_1m_blocks():
    argv = Fio(FioParams(seq_iodepth=4, iodepth=99), HOST).argv("seqwrite", PATHS)
    assert "--rw=write" in argv and "--bs=1M" in argv and "--iodepth=4" in argv
    assert not any(a.startswith("--rwmixread") for a in argv)


def test_layout_writes_the_whole_file_with_direct_io():
    argv = layout_argv("/d/f", 1 << 20)
    assert "--rw=write" in argv and f"--size={1 << 20}" in argv and "--direct=1" in argv
    assert "--time_based" not in argv


def test_cases_default_all_in_order_and_can_be_chosen():
    assert Fio(FioParams(), HOST).cases() == ["seqread", "seqwrite", "randread", "randwrite", "randrw70"]
    assert Fio(FioParams(cases=["randread", "seqread"]), HOST).cases() == ["randread", "seqread"]


@pytest.mark.parametrize(
    "bad",
    [
        {"cases": ["randread", "bogus"]},
        {"cases": []},
        {"cases": ["seqread", "seqread"]},
        {"size_mb": 0},
        {"runtime_s": 0},
        {"iodepth": 0},
        {"numjobs": 0},
        {"ramp_s": -1},
        {"bs": "8k"},
    ],
)
def test_bad_params_are_rejected(bad):
    with pytest.raises(ValidationError):
        FioParams(**bad)


def test_timeout_is_derived_from_runtime_unless_set():
    assert FioParams(runtime_s=60, ramp_s=5).timeout_s == 250
    assert FioParams(runtime_s=60, timeout_s=61).timeout_s == 61


def test_unknown_case_metrics():
    with pytest.raises(KeyError):
        Fio(FioParams(), HOST).metrics("nope")


def test_prepare_refuses_a_file_larger_than_the_free_disk():
    class NoEnv:  # prepare must fail before touching the environment
        paths = PATHS

        def exec(self, *a, **k):
            raise AssertionError("ran a command")

    small = HostInfo(cores=2, mem_bytes=8 << 30, disk_free_bytes=1 << 30)
    with pytest.raises(WorkloadError, match="does not fit"):
        Fio(FioParams(size_mb=1024), small).prepare(NoEnv())
