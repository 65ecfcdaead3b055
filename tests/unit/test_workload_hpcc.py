from pathlib import Path

import pytest
from pydantic import ValidationError

from isobench.core.proc import ExecResult
from isobench.envs.base import Paths
from isobench.host.hostinfo import HostInfo, host_info
from isobench.study import load_study
from isobench.workloads.base import Measurement, ParseError, WorkloadError
from isobench.workloads.hpcc import (
    STREAM_CACHE_FACTOR,
    STREAM_METRICS,
    Hpcc,
    HpccParams,
    build_argv,
    derive_n,
    grid,
    parse_summary,
    render_input,
    stream_vector_size,
    summary_metrics,
)
from isobench.workloads.hpcc_solves import combined_gflops, parse_hpl_results

DATA = Path(__file__).parent.parent / "data"
STUDIES = Path(__file__).parents[2] / "studies"
HOST = HostInfo(cores=2, mem_bytes=16 * 10**9, disk_free_bytes=100 << 30)
PATHS = Paths(data="/data/r-env", tmp="/dev/shm/isobench/r-env")


def output(text: str) -> ExecResult:
    return ExecResult(["mpirun"], 0, text, "", 3.0)


@pytest.fixture(scope="module")
def real_output() -> str:
    # captured: hpcc 1.5.0 (Debian 12), 2 processes, N=2000, NB=192, P=1, Q=2
    return (DATA / "hpccoutf.txt").read_text()


def test_parse_real_output(real_output):
    w = Hpcc(HpccParams(n=2000), HOST)
    m = w.parse("default", output(real_output))
    s = m.extra["summary"]
    assert s["HPL_N"] == 2000 and s["CommWorldProcs"] == 2
    assert m.values["hpl_gflops"] == pytest.approx(s["HPL_Tflops"] * 1000)
    # Star figures are per-process means: the metrics are machine totals
    assert m.values["stream_triad_gbs"] == pytest.approx(s["StarSTREAM_Triad"] * 2)
    assert m.values["random_access_gups"] == pytest.approx(s["StarRandomAccess_GUPs"] * 2)
    assert m.values["mpi_random_access_gups"] == pytest.approx(s["MPIRandomAccess_GUPs"])
    assert set(m.values) == {x.name for x in w.metrics("default")}
    assert all(v > 0 for v in m.values.values())
    assert m.raw == real_output


def test_several_solves_report_their_combined_rate_not_hpccs_best():
    # captured: hpcc 1.5.0 (Debian 12), 1 process, three solves at N=768, NB=192
    text = (DATA / "hpccoutf-3solves.txt").read_text()
    w = Hpcc(HpccParams(n=768, hpl_runs=3), HOST)
    m = w.parse("default", output(text))
    assert m.extra["hpl_solves_gflops"] == [2.083, 2.031, 1.862]
    assert m.extra["summary"]["HPL_Tflops"] * 1000 == pytest.approx(2.08302)  # hpcc keeps the best
    # three equal solves: their flops over their time is the harmonic mean
    assert m.values["hpl_gflops"] == pytest.approx(3 / (1 / 2.083 + 1 / 2.031 + 1 / 1.862))
    assert parse_hpl_results(text + text) == parse_hpl_results(text)  # hpcc appends: the last run only


def test_solves_of_unequal_size_weigh_by_their_flops():
    # one long solve at 2 GFLOPS and one far shorter at 4: about the long one's rate
    assert combined_gflops([(4000, 2.0), (400, 4.0)]) == pytest.approx(2.0, rel=0.002)
    assert combined_gflops([(1000, 3.0)]) == pytest.approx(3.0)


def test_one_solve_keeps_the_summarys_figure(real_output):
    m = Hpcc(HpccParams(n=2000), HOST).parse("default", output(real_output))
    assert "hpl_solves_gflops" not in m.extra
    assert len(parse_hpl_results(real_output)) == 1


def test_summary_skips_non_numbers(real_output):
    s = parse_summary(real_output)
    assert "VersionRelease" not in s and "HPL_cpfact" not in s
    assert s["VersionMajor"] == 1 and s["Success"] == 1


def test_appended_runs_use_the_last_summary(real_output):
    older = real_output.replace("HPL_Tflops=", "HPL_Tflops=9")
    assert parse_summary(older + real_output)["HPL_Tflops"] == parse_summary(real_output)["HPL_Tflops"]


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: "",
        lambda t: t.split("Begin of Summary section.")[0],  # killed before the summary
        lambda t: t.replace("End of Summary section.", ""),  # truncated summary
        lambda t: t.replace("Success=1", "Success=0"),
        lambda t: t.replace("HPL_Tflops=", "HPL_Tflop="),
        lambda t: t.replace("StarSTREAM_Triad=", "StarSTREAM_Triad=-1\nX="),  # test not run
        lambda t: t.replace("CommWorldProcs=2", ""),
    ],
)
def test_malformed_output_raises_parse_error(real_output, mangle):
    with pytest.raises(ParseError):
        summary_metrics(parse_summary(mangle(real_output)))


def test_derive_n_rounds_down_to_block_multiple():
    # 0.05 * 16e9 / 8 = 1e8 doubles -> sqrt = 10000 -> 52 * 192 = 9984
    assert derive_n(16 * 10**9, 0.05, 192) == 9984
    assert derive_n(16 * 10**9, 0.05, 100) == 10000
    with pytest.raises(ValueError):
        derive_n(10**6, 0.01, 192)


def test_problem_size_explicit_n_wins():
    assert Hpcc(HpccParams(), HOST).problem_size() == 9984
    assert Hpcc(HpccParams(n=2000, mem_fraction=0.5), HOST).problem_size() == 2000
    with pytest.raises(WorkloadError):
        Hpcc(HpccParams(mem_fraction=1e-9), HOST).problem_size()


@pytest.mark.parametrize(
    "procs,expected",
    [
        (1, (1, 1)),
        (2, (1, 2)),
        (4, (2, 2)),
        (6, (2, 3)),
        (7, (1, 7)),
        (8, (2, 4)),
        (12, (3, 4)),
        (16, (4, 4)),
        (32, (4, 8)),
    ],
)
def test_grid_is_as_square_as_possible_with_p_le_q(procs, expected):
    assert grid(procs) == expected


def test_input_file_carries_n_nb_and_grid():
    w = Hpcc(HpccParams(procs=6, n=3000, nb=128), HOST)
    lines = w.input_text().splitlines()
    assert lines[5].split()[:2] == ["3000", "Ns"]
    assert lines[7].split()[:2] == ["128", "NBs"]
    assert lines[10].split()[:2] == ["2", "Ps"]
    assert lines[11].split()[:2] == ["3", "Qs"]
    assert lines[31].startswith("#####")  # HPL ignores line 32; hpcc reads PTRANS after it
    assert len(lines) == 36
    assert render_input(1, 2, 3, 4).count("\n") == 36


def test_hpl_runs_repeat_n_and_get_their_own_dirs():
    w = Hpcc(HpccParams(procs=1, n=2000, nb=80, hpl_runs=3), HOST)
    lines = w.input_text().splitlines()
    assert lines[4].split()[0] == "3" and lines[5].split()[:4] == ["2000", "2000", "2000", "Ns"]
    assert len(lines) == 36
    once = Hpcc(HpccParams(procs=1, n=2000, nb=80), HOST)
    assert w.work_dir(PATHS) != once.work_dir(PATHS)
    assert w.expected_s("default") > once.expected_s("default")


def test_argv_runs_as_root_with_shared_memory_on_tmpfs():
    w = Hpcc(HpccParams(), HOST)
    argv = w.argv("default", PATHS)
    assert argv[0] == "mpirun" and argv[-3:] == ["-np", "2", "hpcc"]
    for flag in ("--allow-run-as-root", "--oversubscribe"):
        assert flag in argv
    assert argv[argv.index("--bind-to") + 1] == "none"
    mca = dict(zip(argv[argv.index("--mca") + 1 :: 3], argv[argv.index("--mca") + 2 :: 3]))
    assert mca["btl"] == "self,vader"
    assert mca["btl_vader_single_copy_mechanism"] == "none"
    assert mca["btl_vader_backing_directory"] == "/dev/shm/isobench/r-env/hpcc/n9984-nb192-1x2"
    # the session directory too: the workload's cleanup removes it, where a killed mpirun left it in /tmp
    assert mca["orte_tmpdir_base"] == mca["btl_vader_backing_directory"]
    assert w.cwd("default", PATHS) == "/data/r-env/hpcc/n9984-nb192-1x2"
    assert build_argv(5, "/w")[-3:] == ["-np", "5", "hpcc"]


def test_each_input_gets_its_own_dirs():
    a, b = Hpcc(HpccParams(n=2000), HOST), Hpcc(HpccParams(n=4000), HOST)
    assert a.work_dir(PATHS) != b.work_dir(PATHS)
    assert a.shm_dir(PATHS) != b.shm_dir(PATHS)
    assert a.work_dir(PATHS).startswith(PATHS.data) and a.shm_dir(PATHS).startswith(PATHS.tmp)


@pytest.mark.parametrize(
    "bad",
    [
        {"procs": -1},
        {"mem_fraction": 0},
        {"mem_fraction": 0.95},
        {"n": 10},
        {"nb": 0},
        {"n": 300, "nb": 512},
        {"Ns": 1000},
    ],
)
def test_bad_params_are_rejected(bad):
    with pytest.raises(ValidationError):
        HpccParams(**bad)


def test_failed_shared_memory_copies_invalidate_the_run(real_output):
    # captured: plain `mpirun --allow-run-as-root -np 2 hpcc` in a Docker
    # container: vader's CMA copies fail, yet hpcc exits 0 with Success=1
    stderr = (DATA / "mpirun-cma-stderr.txt").read_text()
    with pytest.raises(ParseError, match="shared-memory"):
        Hpcc(HpccParams(n=2000), HOST).parse("default", ExecResult(["mpirun"], 0, real_output, stderr, 3.0))


# -- STREAM's arrays: sized by N alone, so a small study leaves STREAM out ----------------


def test_stream_arrays_are_predicted_from_n_and_the_process_count(real_output):
    s = parse_summary(real_output)  # N = 2000 on a 1 x 2 grid: 8 N^2 / 2 bytes a process, 3 arrays
    assert stream_vector_size(int(s["HPL_N"]), int(s["CommWorldProcs"])) == s["STREAM_VectorSize"] == 666666
    assert Hpcc(HpccParams(n=2000), HOST).stream_array_bytes() == 666666 * 8
    assert stream_vector_size(1_000_000, 1) == 2**30  # hpcc's cap (its vector sizes are ints)


def test_stream_metrics_false_leaves_streams_figures_in_the_summary_only(real_output):
    host = HostInfo(cores=2, mem_bytes=16 * 10**9, disk_free_bytes=100 << 30, llc_bytes=32 * 2**20)
    w = Hpcc(HpccParams(n=2000, stream_metrics=False), host)
    names = [x.name for x in w.metrics("default")]
    assert len(names) == 6 and not STREAM_METRICS & set(names) and names[0] == "hpl_gflops"
    assert Hpcc.metric_names(w.params) == names and w.primaries("default") == ("hpl_gflops",)
    m = w.parse("default", output(real_output))
    assert set(m.values) == set(names) and m.extra["summary"]["StarSTREAM_Triad"] > 0
    assert w.validity("default", m) == {}  # 5.1 MiB arrays under a 32 MiB cache: nothing reported, nothing said
    assert set(Hpcc(HpccParams(n=2000), host).validity("default", m)) == STREAM_METRICS
    assert w.input_text() == Hpcc(HpccParams(n=2000), host).input_text()  # the same hpcc run


@pytest.mark.parametrize(
    "host",
    [
        host_info(),  # this host (its LLC may be unknown: 0)
        HostInfo(cores=2, mem_bytes=24 * 2**30, disk_free_bytes=100 << 30, llc_bytes=32 * 2**20),
    ],
    ids=["this-host", "2-cores-24GiB-32MiB-llc"],
)
def test_the_quick_study_trips_none_of_its_own_stream_cache_warnings(host):
    """Every hpcc table of studies/quick.toml, as sized on this host: the
    workload's own validity check, fed the STREAM_VectorSize hpcc will run,
    flags none of the metrics the table reports."""
    study = load_study(STUDIES / "quick.toml")
    entries = [e for e in study.workloads if e.workload == "hpcc"]
    assert entries
    for entry in entries:
        w = Hpcc(entry.params, host)
        run = Measurement({}, extra={"summary": {"STREAM_VectorSize": stream_vector_size(w.problem_size(), w.procs())}})
        for case in w.cases():
            reported = {x.name for x in w.metrics(case)}
            assert not set(w.validity(case, run)) & reported, entry.key
        if w.stream_array_bytes() < STREAM_CACHE_FACTOR * host.llc_bytes:  # the check has teeth:
            # reported, these STREAM figures would be flagged
            loud = Hpcc(entry.params.model_copy(update={"stream_metrics": True}), host)
            assert set(loud.validity("default", run)) == STREAM_METRICS
