"""HPC Challenge (Debian's hpcc, Open MPI, the system BLAS): Linpack, STREAM
and RandomAccess as in the IBM study, from one MPI run.

hpcc always runs its whole suite, in this order, whatever we read from it:
MPIRandomAccess, StarRandomAccess, SingleRandomAccess (each also in an LCG
variant), PTRANS (parallel matrix transpose), StarDGEMM, SingleDGEMM,
StarSTREAM, SingleSTREAM, MPIFFT, StarFFT, SingleFFT, LatencyBandwidth
(MPI ping-pong and rings), then HPL. Every test is sized from the memory the
HPL matrix takes (8 N^2 bytes), so N sets the run time of all of them; at
small N the STREAM arrays fit in cache and report cache bandwidth. hpcc
offers no way to size STREAM on its own (``stream_vector_size``), so a
study too short for a memory-sized N leaves the STREAM metrics out
(``stream_metrics = false``) rather than report cache figures as memory ones.

Which figures become metrics:
- hpl_gflops: HPL_Tflops x 1000, the whole MPI job solving one system.
- stream_*_gbs: StarSTREAM x processes. In StarSTREAM every process runs
  STREAM at the same time and hpcc reports the per-process mean; times the
  process count that is the machine's bandwidth with all cores loaded,
  which is what IBM measured. SingleSTREAM (one process, the rest idle)
  measures one core's reach and is left in `extra`.
- random_access_gups: StarRandomAccess x processes, every process updating
  its own table at once: the memory system's random-update rate, IBM's
  question. MPIRandomAccess (one table spread over all processes) mostly
  measures MPI message rates on one host; it is kept as
  mpi_random_access_gups.
- dgemm_gflops (StarDGEMM x processes), fft_gflops (MPIFFT), ptrans_gbs:
  free by-products.

Every value of the summary section is kept in Measurement.extra["summary"].
"""

from __future__ import annotations

import math
import posixpath
import re
from typing import ClassVar

from pydantic import Field, model_validator

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
from isobench.workloads.hpcc_solves import combined_gflops, parse_hpl_results

INPUT_NAME = "hpccinf.txt"
OUTPUT_NAME = "hpccoutf.txt"

# The Debian example input (/usr/share/doc/hpcc/examples/_hpccinf.txt) with
# N, NB, P and Q filled in: HPL's usual tuning, one problem, one grid.
_INPUT_TEMPLATE = """\
HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
{runs:<12d} # of problems sizes (N)
{ns} Ns
1            # of NBs
{nb:<12d} NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
{p:<12d} Ps
{q:<12d} Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                      		Number of additional problem sizes for PTRANS
1200 10000 30000        	values of N
0                       	number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64       	values of NB
"""

# An HPL solve's seconds per N^3 on one core here (2.5 s at N = 2112, about
# 2.5 GFLOPS for its 2/3 N^3 flops), and the seconds of hpcc's other
# kernels per RandomAccess table word (8 s at 2^22): the quick study's
# samples of 2026-11-27 and a lone run of 2026-11-28.
HPL_SOLVE_S_PER_N3 = 0.26e-9
TABLE_S_PER_WORD = 1.9e-6

# (metric name, summary key, multiply by the process count?)
_METRIC_KEYS: tuple[tuple[str, str, bool], ...] = (
    ("stream_copy_gbs", "StarSTREAM_Copy", True),
    ("stream_scale_gbs", "StarSTREAM_Scale", True),
    ("stream_add_gbs", "StarSTREAM_Add", True),
    ("stream_triad_gbs", "StarSTREAM_Triad", True),
    ("random_access_gups", "StarRandomAccess_GUPs", True),
    ("mpi_random_access_gups", "MPIRandomAccess_GUPs", False),
    ("dgemm_gflops", "StarDGEMM_Gflops", True),
    ("fft_gflops", "MPIFFT_Gflops", False),
    ("ptrans_gbs", "PTRANS_GBs", False),
)


class HpccParams(WorkloadParams):
    procs: int = Field(0, ge=0, le=4096, description="MPI processes; 0 = all host cores")
    mem_fraction: float = Field(0.05, gt=0, le=0.8, description="share of host memory for the HPL matrix")
    n: int | None = Field(None, ge=256, le=1_000_000, description="explicit HPL N; overrides mem_fraction")
    nb: int = Field(192, ge=16, le=1024, description="HPL block size")
    hpl_runs: int = Field(
        1,
        ge=1,
        le=16,
        description="HPL solves per hpcc run, all at N; hpl_gflops is their combined rate (their flops "
        "over their time). hpcc's other kernels run once either way, so a second solve averages "
        "HPL's own noise at the cost of HPL alone",
    )
    stream_metrics: bool = Field(
        True,
        description="report StarSTREAM's four figures as metrics; hpcc runs "
        "STREAM either way (sized from N), false leaves them in extra.summary only",
    )
    timeout_s: float = Field(3600, gt=0, le=86_400)

    @model_validator(mode="after")
    def _n_fits_nb(self) -> HpccParams:
        if self.n is not None and self.n < self.nb:
            raise ValueError(f"n={self.n} is smaller than the block size nb={self.nb}")
        return self


class Hpcc(Workload):
    name: ClassVar[str] = "hpcc"
    Params: ClassVar[type[WorkloadParams]] = HpccParams
    packages: ClassVar[tuple[str, ...]] = ("hpcc", "openmpi-bin")
    duet: ClassVar[bool] = True  # HPL is CPU-bound; both sides share the memory bus (docs/statistics.md#duet)
    # The BLAS decides HPL and DGEMM figures: Debian links hpcc against the
    # libblas.so.3 alternative (reference BLAS unless OpenBLAS/BLIS is installed).
    libraries: ClassVar[tuple[str, ...]] = ("libopenmpi3", "libblas3")
    params: HpccParams

    def cpus_needed(self) -> int:
        return self.procs()

    def procs(self) -> int:
        return self.params.procs or self.host.cores

    def expected_s(self, case: str) -> float:
        # hpcc's whole run on this host, one process (runs of 2026-11-27/28):
        # about 3.3 s of start-up, RandomAccess and the kernels sized with it
        # in proportion to its table (a power of two: 8.1 to 8.4 s a run at
        # N ~ 1920, 14 s at N ~ 2112, one table size up), and each HPL solve
        try:
            n = self.problem_size()
        except WorkloadError:
            return 5.0  # refused before it runs; the estimate does not matter
        table_words = 2 ** max(0, math.floor(math.log2(n * n / self.procs())))
        hpl_s = HPL_SOLVE_S_PER_N3 * self.params.hpl_runs * n**3 / self.procs()
        return 3.3 + TABLE_S_PER_WORD * table_words + hpl_s

    def problem_size(self) -> int:
        if self.params.n is not None:
            return self.params.n
        try:
            return derive_n(self.host.mem_bytes, self.params.mem_fraction, self.params.nb)
        except ValueError as exc:  # the runner fails this workload's cells, not the study
            raise WorkloadError(str(exc)) from None

    def metrics(self, case: str) -> list[Metric]:
        every = [
            # the suite's headline figure; a study may add others: primary = [...]
            Metric("hpl_gflops", "GFLOPS", True, "HPL (Linpack), all processes", role=THROUGHPUT, primary=True),
            Metric("stream_copy_gbs", "GB/s", True, "StarSTREAM copy x processes", role=THROUGHPUT),
            Metric("stream_scale_gbs", "GB/s", True, "StarSTREAM scale x processes", role=THROUGHPUT),
            Metric("stream_add_gbs", "GB/s", True, "StarSTREAM add x processes", role=THROUGHPUT),
            Metric("stream_triad_gbs", "GB/s", True, "StarSTREAM triad x processes", role=THROUGHPUT),
            Metric("random_access_gups", "GUP/s", True, "StarRandomAccess x processes", role=THROUGHPUT),
            Metric("mpi_random_access_gups", "GUP/s", True, "MPIRandomAccess, one global table", role=THROUGHPUT),
            Metric("dgemm_gflops", "GFLOPS", True, "StarDGEMM x processes", role=THROUGHPUT),
            Metric("fft_gflops", "GFLOPS", True, "MPIFFT, all processes", role=THROUGHPUT),
            Metric("ptrans_gbs", "GB/s", True, "PTRANS matrix transpose", role=THROUGHPUT),
        ]
        return every if self.params.stream_metrics else [m for m in every if m.name not in STREAM_METRICS]

    def stream_array_bytes(self) -> int:
        """Each STREAM array of each process, as hpcc will size it for this N
        and process count (what the run's STREAM_VectorSize will say)."""
        return stream_vector_size(self.problem_size(), self.procs()) * 8

    def input_text(self) -> str:
        p, q = grid(self.procs())
        return render_input(self.problem_size(), self.params.nb, p, q, self.params.hpl_runs)

    def _tag(self) -> str:
        # One set of dirs per input: a study may list hpcc twice, sized apart.
        p, q = grid(self.procs())
        runs = f"-x{self.params.hpl_runs}" if self.params.hpl_runs > 1 else ""
        return f"n{self.problem_size()}-nb{self.params.nb}-{p}x{q}{runs}"

    def work_dir(self, paths: Paths) -> str:
        # hpccinf.txt and hpccoutf.txt, a few KB: on the data disk because
        # write_file cannot reach a Docker container's tmpfs (archive API).
        return posixpath.join(paths.data, "hpcc", self._tag())

    def shm_dir(self, paths: Paths) -> str:
        # Open MPI's shared-memory segments (see build_argv): RAM-backed.
        return posixpath.join(paths.tmp, "hpcc", self._tag())

    def argv(self, case: str, paths: Paths) -> list[str]:
        return build_argv(self.procs(), self.shm_dir(paths))

    def cwd(self, case: str, paths: Paths) -> str | None:
        return self.work_dir(paths)

    def footprint(self) -> list[Footprint]:
        n = self.problem_size()
        return [Footprint("n" if self.params.n else "mem_fraction", "memory", n * n * 8)]  # the HPL matrix

    def prepare(self, env: Environment) -> None:
        wd = self.work_dir(env.paths)
        check(env.exec(["mkdir", "-p", wd, self.shm_dir(env.paths)], timeout=60))
        env.write_file(posixpath.join(wd, INPUT_NAME), self.input_text().encode())

    def run(self, case: str, env: Environment) -> Measurement:
        wd = self.work_dir(env.paths)
        out = posixpath.join(wd, OUTPUT_NAME)
        # hpcc appends to its output file: start each run from nothing.
        check(env.exec(["rm", "-f", out], timeout=60))
        result = env.exec(self.argv(case, env.paths), timeout=self.params.timeout_s, cwd=wd)
        if not result.ok:
            raise WorkloadError(result.describe(), result)
        text = check(env.exec(["cat", out], timeout=60)).stdout
        return self.parse(case, ExecResult(result.argv, result.returncode, text, result.stderr, result.wall_s))

    def units(self, case: str, m: Measurement) -> list:
        return ["run", 1.0]  # one HPCC pass; its kernels share the run

    def parse(self, case: str, result: ExecResult) -> Measurement:
        """result.stdout is the content of hpccoutf.txt, result.stderr mpirun's (see run())."""
        check_mpi_stderr(result.stderr)
        summary = parse_summary(result.stdout)
        emitted = {m.name for m in self.metrics(case)}
        values = {name: v for name, v in summary_metrics(summary).items() if name in emitted}
        extra: dict = {"summary": summary}
        solves = parse_hpl_results(result.stdout)
        if len(solves) > 1:  # hpcc's summary keeps the best solve; the cell wants them all
            values["hpl_gflops"] = combined_gflops(solves)
            extra["hpl_solves_gflops"] = [g for _, g in solves]
        return Measurement(values=values, extra=extra, raw=result.stdout)

    def validity(self, case: str, m: Measurement) -> dict[str, str]:
        reported = [x.name for x in self.metrics(case) if x.name in STREAM_METRICS]
        note = stream_validity(m.extra.get("summary", {}), self.host.llc_bytes) if reported else ""
        return dict.fromkeys(reported, note) if note else {}

    def cleanup(self, env: Environment) -> None:
        wd, shm = self.work_dir(env.paths), self.shm_dir(env.paths)
        env.exec(["rm", "-rf", wd, shm], timeout=60)
        env.exec(["rmdir", "--ignore-fail-on-non-empty", posixpath.dirname(wd), posixpath.dirname(shm)], timeout=60)


def derive_n(mem_bytes: int, fraction: float, nb: int) -> int:
    """Largest multiple of nb whose N x N doubles fit in fraction of memory."""
    n = int(math.isqrt(int(fraction * mem_bytes) // 8))
    n -= n % nb
    if n < nb:
        raise ValueError(f"mem_fraction={fraction} of {mem_bytes} bytes gives N < nb={nb}")
    return n


def grid(procs: int) -> tuple[int, int]:
    """P x Q = procs, as square as possible, P <= Q (HPL prefers flat grids)."""
    if procs < 1:
        raise ValueError("procs must be >= 1")
    p = math.isqrt(procs)
    while procs % p:
        p -= 1
    return p, procs // p


def render_input(n: int, nb: int, p: int, q: int, runs: int = 1) -> str:
    ns = " ".join([str(n)] * runs)
    return _INPUT_TEMPLATE.format(runs=runs, ns=f"{ns:<12s}", nb=nb, p=p, q=q)


def build_argv(procs: int, shm: str) -> list[str]:
    """mpirun options that work the same natively, as root, in a container
    and in a VM:

    --allow-run-as-root: environments run as root, and argv cannot carry the
      OMPI_ALLOW_RUN_AS_ROOT* environment variables.
    --oversubscribe: allow procs > the slots hwloc sees (cpuset-limited
      containers, procs set above the core count).
    --bind-to none: the kernel schedules, as for every other workload; Open
      MPI's default core binding fails or misplaces ranks when the visible
      topology differs (containers with a cpuset, VMs without topology).
    plm isolated: one-host launch without looking for ssh/rsh.
    pml ob1 + btl self,vader: one-host shared-memory transport everywhere,
      never UCX/OFI/openib probing whatever the environment exposes.
    single_copy_mechanism none: vader's default CMA (process_vm_readv) needs
      ptrace rights Docker's default profile denies ("Read -1 ... errno = 1").
    backing_directory: the segments go to our own tmpfs dir, not /dev/shm,
      which is 64 MB in a default Docker container.
    orte_tmpdir_base: Open MPI's session directory (about 8 MB a run) goes
      there too, which the workload's cleanup removes: an mpirun killed
      before its own cleanup (a duet's filler cut short) left one in the
      host's /tmp each time, 2.9 GB here by 2026-11-28.
    """
    return [
        "mpirun",
        "--allow-run-as-root",
        "--oversubscribe",
        "--bind-to",
        "none",
        "--mca",
        "plm",
        "isolated",
        "--mca",
        "pml",
        "ob1",
        "--mca",
        "btl",
        "self,vader",
        "--mca",
        "btl_vader_single_copy_mechanism",
        "none",
        "--mca",
        "btl_vader_backing_directory",
        shm,
        "--mca",
        "orte_tmpdir_base",
        shm,
        "-np",
        str(procs),
        "hpcc",
    ]


# vader's CMA single copy failing (no ptrace rights): ranks go on with
# undelivered data and hpcc may still exit 0 with Success=1.
_CMA_FAILURE_RE = re.compile(r"Read -1, expected \d+, errno = \d+")


def check_mpi_stderr(stderr: str) -> None:
    if _CMA_FAILURE_RE.search(stderr):
        raise ParseError(
            "Open MPI shared-memory copies failed ('Read -1, expected ..., errno'): "
            "results are invalid; run with btl_vader_single_copy_mechanism none"
        )


_SUMMARY_RE = re.compile(r"^Begin of Summary section\.\n(.*?)^End of Summary section\.", re.M | re.S)


def parse_summary(text: str) -> dict[str, float]:
    """key=value pairs of the last summary section, numbers only."""
    sections = _SUMMARY_RE.findall(text)
    if not sections:
        raise ParseError("no complete 'Summary section' in hpccoutf.txt")
    summary: dict[str, float] = {}
    for line in sections[-1].splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        try:
            summary[key.strip()] = float(value)
        except ValueError:
            continue  # e.g. VersionRelease=f, HPL_cpfact=R
    return summary


def summary_metrics(summary: dict[str, float]) -> dict[str, float]:
    if summary.get("Success") != 1:
        raise ParseError(
            f"hpcc reports Success={summary.get('Success')} (a residual check failed or a test did not run)"
        )
    procs = summary.get("CommWorldProcs", 0)
    if procs < 1:
        raise ParseError("CommWorldProcs missing from the summary")
    values = {"hpl_gflops": _require(summary, "HPL_Tflops") * 1000}
    for metric, key, per_process in _METRIC_KEYS:
        values[metric] = _require(summary, key) * (procs if per_process else 1)
    return values


def _require(summary: dict[str, float], key: str) -> float:
    # hpcc writes -1 for a test that did not run
    value = summary.get(key)
    if value is None or value < 0 or math.isnan(value):
        raise ParseError(f"{key} missing or negative ({value}) in the hpcc summary")
    return value


# STREAM's rule: each array at least 4x the size of all last-level caches together.
STREAM_CACHE_FACTOR = 4
STREAM_METRICS = frozenset(name for name, key, _ in _METRIC_KEYS if key.startswith("StarSTREAM"))


def stream_vector_size(n: int, procs: int) -> int:
    """STREAM_VectorSize hpcc 1.5.0 uses for HPL size n on one procs-process
    grid (src/io.c): HPLMaxProcMem = 8 n^2 / (the smallest grid's P x Q)
    bytes per process, then HPCC_LocalVectorSize(3 vectors of doubles),
    capped at 2^30 elements. Only N and the grid size it: no input line
    sizes STREAM alone (a second, larger N or a smaller grid would also run
    HPL there, and every other test grows with it)."""
    per_process = n * n * 8 // procs
    elements = per_process // 8 // 3
    return elements if elements < 2**31 else 2**30


def stream_validity(summary: dict, llc_bytes: int) -> str:
    """ "measures cache, not memory" when hpcc's STREAM arrays (8-byte
    elements, STREAM_VectorSize of them per process) break STREAM's rule;
    "" when they do not, or when it cannot tell."""
    try:
        array = float(summary["STREAM_VectorSize"]) * 8
    except (KeyError, TypeError, ValueError):
        return ""
    if llc_bytes <= 0 or array >= STREAM_CACHE_FACTOR * llc_bytes:
        return ""
    return (
        f"STREAM measures cache, not memory: each array is {array / 2**20:.1f} MiB, under "
        f"{STREAM_CACHE_FACTOR}x the {llc_bytes / 2**20:.0f} MiB last-level cache (raise mem_fraction or n, "
        "or leave STREAM out: stream_metrics = false)"
    )
