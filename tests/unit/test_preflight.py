from isobench.checks.preflight import preflight
from isobench.host.hostinfo import HostInfo
from isobench.study import parse_study

HOST = HostInfo(cores=2, mem_bytes=24 * 2**30, disk_free_bytes=80 * 2**30)

HEAD = """
[study]
name = "p"
[environments.native]
[environments.docker-nat]
[environments.docker-host]
"""


def check(body: str) -> list[str]:
    return preflight(parse_study(HEAD + body, "p.toml"), HOST)


def test_sizes_that_fit_pass():
    assert check("[workloads.compression]\nsize_mb = 1024\n[workloads.fio]\nsize_mb = 4096\n") == []


def test_corpus_times_environments_beyond_memory_names_the_field():
    (msg,) = check("[workloads.compression]\nsize_mb = 8000\n")  # 3 × 8 GB > 80% of 24 GiB
    assert msg.startswith("p.toml: workloads.compression.size_mb: 3 environments need 22.4 GiB of memory")


def test_fio_files_beyond_free_disk():
    (msg,) = check("[workloads.fio]\nsize_mb = 30000\n")  # 3 × 29.3 GiB > 90% of 80 GiB
    assert "workloads.fio.size_mb" in msg and "disk" in msg


def test_hpcc_matrix_too_small_or_too_large():
    (small,) = check("[workloads.hpcc]\nmem_fraction = 0.0000001\n")
    assert "workloads.hpcc" in small and "nb" in small
    (large,) = check("[workloads.hpcc]\nn = 40000\n")  # 12.8 GB per environment
    assert "workloads.hpcc.n" in large


def test_a_budget_is_refused_on_known_sample_times_not_on_a_guessed_command_time():
    from isobench.checks.preflight import budget_problem, study_size

    def budget_check(body: str) -> str | None:
        study = parse_study(HEAD.replace('name = "p"', 'name = "p"\nbudget = "1m"') + body, "p.toml")
        return budget_problem(study, study_size(study, HOST))

    # a built-in workload's samples have a known length: a minute holds no first block of them
    short = budget_check("[workloads.compression]\nsize_mb = 64\n")
    assert short and "study.budget: 1m is shorter than the first block" in short
    # a command's time is unknown before it runs: the run's own pace decides
    # (try's advice of "--budget 1m" came from that pace, and was refused on the guess)
    assert budget_check('[workloads.mine]\ncommand = ["true"]\n') is None
    # beside a built-in workload, only the known part counts: still refused
    mixed = budget_check('[workloads.compression]\nsize_mb = 64\n[workloads.mine]\ncommand = ["true"]\n')
    assert mixed and "shorter than the first block" in mixed
