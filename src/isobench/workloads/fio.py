"""Block I/O with fio, as in the IBM study: libaio, O_DIRECT, one file on the
environment's own storage (host disk, container overlay or volume, VM disk).

Cases: sequential 1 MiB reads and writes (bandwidth), random 4 KiB reads,
writes and a 70/30 read/write mix (IOPS). Read cases also give completion
latency percentiles and the full json+ latency histogram, for CDFs. IBM ran
the random cases at queue depth 128 and drew the read-latency CDF at depth
16: a study reproduces that with two parameter sets.
"""

from __future__ import annotations

import json
import posixpath
from typing import Any, ClassVar

from pydantic import Field, field_validator, model_validator

from isobench.core.metric import THROUGHPUT, Metric
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

MiB = 1024 * 1024
RANDSEED = 20140721  # fixed so every environment replays the same offsets
PERCENTILES = (("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p99_9", 99.9))

# case -> (fio rw, block size, sequential?)
CASES: dict[str, tuple[str, str, bool]] = {
    "seqread": ("read", "1M", True),
    "seqwrite": ("write", "1M", True),
    "randread": ("randread", "4k", False),
    "randwrite": ("randwrite", "4k", False),
    "randrw70": ("randrw", "4k", False),
}
READ_CASES = frozenset({"seqread", "randread", "randrw70"})


class FioParams(WorkloadParams):
    size_mb: int = Field(1024, ge=1, le=16 * 1024 * 1024, description="file size, MiB")
    runtime_s: int = Field(10, ge=1, le=86_400)
    ramp_s: int = Field(2, ge=0, le=3600, description="warm-up excluded from the figures")
    iodepth: int = Field(32, ge=1, le=65_536, description="queue depth, random cases")
    seq_iodepth: int = Field(16, ge=1, le=65_536, description="queue depth, sequential cases")
    numjobs: int = Field(1, ge=1, le=1024)
    cases: tuple[str, ...] = tuple(CASES)
    # Two sides of a duet share the disk: off until a study asks for it (duet =
    # true), since contention may change what is measured (docs/statistics.md#duet)
    duet: bool | None = False

    @field_validator("cases")
    @classmethod
    def _known_cases(cls, cases: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [c for c in cases if c not in CASES]
        if unknown:
            raise ValueError(f"unknown fio case(s) {unknown}; known: {list(CASES)}")
        if not cases:
            raise ValueError("cases must not be empty")
        if len(set(cases)) != len(cases):
            raise ValueError(f"duplicate fio cases in {list(cases)}")
        return cases

    @model_validator(mode="before")
    @classmethod
    def _default_timeout(cls, data: Any) -> Any:
        # The measured time plus fio's start-up and file open, with margin.
        if isinstance(data, dict) and "timeout_s" not in data:
            runtime, ramp = data.get("runtime_s", 10), data.get("ramp_s", 2)
            if isinstance(runtime, int) and isinstance(ramp, int):
                data = {**data, "timeout_s": 2 * (runtime + ramp) + 120}
        return data


class Fio(Workload):
    name: ClassVar[str] = "fio"
    Params: ClassVar[type[WorkloadParams]] = FioParams
    packages: ClassVar[tuple[str, ...]] = ("fio",)
    io_bound: ClassVar[bool] = True  # O_DIRECT on the environment's storage
    duet: ClassVar[bool] = True  # each side has its own file; see FioParams.duet
    params: FioParams

    def expected_s(self, case: str) -> float:
        # fio's start and stop add about 0.4 s here (2.4 s samples at 1 + 1 s, 2026-11-27)
        return self.params.runtime_s + self.params.ramp_s + 0.5

    def cpus_needed(self) -> int:
        return self.params.numjobs

    def cases(self) -> list[str]:
        return list(self.params.cases)

    def metrics(self, case: str) -> list[Metric]:
        return case_metrics(case)

    def argv(self, case: str, paths: Paths) -> list[str]:
        p = self.params
        rw, bs, sequential = CASES[case]
        argv = [
            "fio",
            f"--name={case}",
            f"--filename={data_file(paths, p.size_mb)}",
            f"--size={p.size_mb * MiB}",
            f"--rw={rw}",
            f"--bs={bs}",
            "--ioengine=libaio",
            "--direct=1",
            f"--iodepth={p.seq_iodepth if sequential else p.iodepth}",
            f"--numjobs={p.numjobs}",
            "--group_reporting",
            "--time_based",
            f"--runtime={p.runtime_s}",
            f"--ramp_time={p.ramp_s}",
            f"--randseed={RANDSEED}",
            "--percentile_list=" + ":".join(f"{q:g}" for _, q in PERCENTILES),
            "--output-format=json+",
            "--eta=never",
        ]
        if rw == "randrw":
            argv.append("--rwmixread=70")
        return argv

    def footprint(self) -> list[Footprint]:
        return [Footprint("size_mb", "disk", self.params.size_mb * 2**20)]

    def prepare(self, env: Environment) -> None:
        size = self.params.size_mb * MiB
        free = self.host.disk_free_bytes  # 0 = unknown
        if free and size > 0.9 * free:
            raise WorkloadError(f"fio file of {size >> 20} MiB does not fit: {free >> 20} MiB free on the host's disk")
        path = data_file(env.paths, self.params.size_mb)
        check(env.exec(["mkdir", "-p", posixpath.dirname(path)], timeout=60))
        # Write every block once so reads hit real, allocated data: a fresh
        # file is sparse or fallocated (unwritten extents read as zeros
        # without touching the device).
        timeout = 300 + self.params.size_mb / 10  # down to ~10 MB/s storage
        check(env.exec(layout_argv(path, size), timeout=timeout))

    def units(self, case: str, m: Measurement) -> list:
        """Completed I/Os over the measured runtime (ramp excluded), or MB
        when the case reports bandwidth only."""
        if "iops" in m.values:
            return ["I/O", m.values["iops"] * self.params.runtime_s]
        return ["MB", m.values.get("bandwidth_mbs", 0.0) * self.params.runtime_s]

    def parse(self, case: str, result: ExecResult) -> Measurement:
        job = parse_job(result.stdout)
        values, extra = job_values(case, job)
        return Measurement(values=values, extra=extra, raw=result.stdout)

    def cleanup(self, env: Environment) -> None:
        path = data_file(env.paths, self.params.size_mb)
        env.exec(["rm", "-f", path], timeout=60)
        env.exec(["rmdir", "--ignore-fail-on-non-empty", posixpath.dirname(path)], timeout=60)


# Named by size: fio entries that differ only in depth or cases (IBM's
# depth-128 IOPS and depth-16 latency runs) share one laid-out file.
def data_file(paths: Paths, size_mb: int) -> str:
    return posixpath.join(paths.data, "fio", f"testfile-{size_mb}MiB")


def layout_argv(path: str, size: int) -> list[str]:
    return [
        "fio",
        "--name=layout",
        f"--filename={path}",
        f"--size={size}",
        "--rw=write",
        "--bs=1M",
        "--ioengine=libaio",
        "--direct=1",
        "--iodepth=16",
        "--end_fsync=1",
        "--output-format=json",
        "--eta=never",
    ]


def case_metrics(case: str) -> list[Metric]:
    if case not in CASES:
        raise KeyError(f"unknown fio case {case!r}; known: {list(CASES)}")
    _, _, sequential = CASES[case]
    metrics: list[Metric] = []
    if sequential:
        metrics.append(Metric("bandwidth_mbs", "MB/s", True, "10^6 bytes per second", role=THROUGHPUT, primary=True))
    else:
        metrics.append(Metric("iops", "IO/s", True, "completed I/Os per second", role=THROUGHPUT, primary=True))
        if case == "randrw70":
            metrics += [
                Metric("read_iops", "IO/s", True, "reads of the 70/30 mix", role=THROUGHPUT),
                Metric("write_iops", "IO/s", True, "writes of the 70/30 mix", role=THROUGHPUT),
            ]
    if case in READ_CASES:
        # no role: a storage latency stays out of the NAT vs host comparison (LATENCY's meaning)
        metrics += [
            Metric(f"read_clat_{name}_us", "µs", False, f"read completion latency, {q:g}th percentile")
            for name, q in PERCENTILES
        ]
    return metrics


def parse_job(stdout: str) -> dict:
    """The one (group-reported) job of fio's JSON output.

    fio can print notes and warnings before the JSON document, and
    occasionally text after it; the document starts at the first line that
    is a lone '{'.
    """
    start = stdout.find("{\n")
    while start > 0 and stdout[start - 1] != "\n":
        start = stdout.find("{\n", start + 1)
    if start < 0:
        raise ParseError("no JSON document in fio's output")
    try:
        doc, _ = json.JSONDecoder().raw_decode(stdout, start)
    except json.JSONDecodeError as exc:
        raise ParseError(f"fio's JSON does not parse: {exc}") from exc
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    if not jobs:
        raise ParseError("fio's JSON has no jobs")
    if len(jobs) != 1:
        raise ParseError(f"expected one group-reported job, got {len(jobs)}")
    job = jobs[0]
    if job.get("error"):
        raise ParseError(f"fio job {job.get('jobname')!r} reports error {job['error']}")
    return job


def job_values(case: str, job: dict) -> tuple[dict[str, float], dict]:
    rw, _, sequential = CASES[case]
    options = job.get("job options", {})
    if options.get("rw") not in (None, rw):
        raise ParseError(f"output is for rw={options.get('rw')}, case {case} runs rw={rw}")
    try:
        read, write = job["read"], job["write"]
        reads = case in READ_CASES
        writes = case not in ("seqread", "randread")
        for side, name, wanted in ((read, "read", reads), (write, "write", writes)):
            if wanted and side["total_ios"] <= 0:
                raise ParseError(f"fio completed no {name}s")
        values: dict[str, float] = {}
        extra: dict = {}
        if sequential:
            values["bandwidth_mbs"] = (read if reads else write)["bw_bytes"] / 1e6
        else:
            values["iops"] = float(read["iops"] + write["iops"])
            if case == "randrw70":
                values["read_iops"] = float(read["iops"])
                values["write_iops"] = float(write["iops"])
        if reads:
            values.update(clat_percentiles_us(read["clat_ns"]))
            extra["read_clat_hist"] = clat_histogram_us(read["clat_ns"])
    except (KeyError, TypeError) as exc:
        raise ParseError(f"fio's JSON lacks {exc} for case {case}") from exc
    return values, extra


def clat_percentiles_us(clat_ns: dict) -> dict[str, float]:
    got = {float(k): v for k, v in clat_ns.get("percentile", {}).items()}
    out = {}
    for name, q in PERCENTILES:
        if q not in got:
            raise ParseError(f"no {q:g}th percentile in clat_ns (run without --percentile_list?)")
        out[f"read_clat_{name}_us"] = got[q] / 1000
    return out


def clat_histogram_us(clat_ns: dict) -> list[list[float]]:
    """json+ bins {ns: count} as sorted [[latency_us, count], ...]."""
    bins = clat_ns.get("bins")
    if not bins:
        raise ParseError("no clat_ns bins: fio must run with --output-format=json+")
    return [[int(ns) / 1000, int(count)] for ns, count in sorted(bins.items(), key=lambda kv: int(kv[0])) if count]
