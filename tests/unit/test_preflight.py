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
