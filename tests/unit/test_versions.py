"""The tools' libraries recorded per environment, and Table I's note where
an environment runs other package versions than the baseline."""

from isobench.host.packages import library_names
from isobench.results.model import RunData
from isobench.results.versions import differences, footnotes

# dpkg-query -W -f '${Depends}, ${Pre-Depends}\n' pixz sysbench fio (Debian 12, this host)
DEPENDS = (
    "libaio1 (>= 0.3.93), libc6 (>= 2.34), libgfapi0 (>= 10.3), libnuma1 (>= 2.0.11), zlib1g (>= 1:1.2.0), "
    "init-system-helpers (>= 1.51), python3, \n"
    "libarchive13 (>= 3.0.4), libc6 (>= 2.33), liblzma5 (>= 5.1.1alpha+20120614), \n"
    "libaio1 (>= 0.3.93), libc6 (>= 2.33), libluajit2-5.1-2 (>= 2.0.4) | libluajit-5.1-2 (>= 2.1.0~beta3), "
    "libmariadb3 (>= 3.0.0), libpq5, \n"
)


def test_library_names_from_dpkg_depends():
    names = library_names(DEPENDS)
    assert names == sorted(set(names))
    assert {"libc6", "liblzma5", "libarchive13", "zlib1g", "libluajit2-5.1-2", "libluajit-5.1-2", "libpq5"} <= set(
        names
    )
    assert not {"python3", "init-system-helpers", ""} & set(names)
    assert library_names("libc6:any (>= 2.34)") == ["libc6"]


def _run(native: dict, docker: dict) -> RunData:
    facts = {"native": native, "docker-nat": docker, "docker-host": native}
    return RunData(
        "r", "s", "", None, "complete", {}, "", "", "native", ["native", "docker-nat", "docker-host"], facts, []
    )


def test_a_library_at_another_version_is_noted_against_the_baseline():
    native = {
        "tool_versions": {"pixz": "1.0.7-2"},
        "library_versions": {"libc6": "2.36-9+deb12u7", "liblzma5": "5.4.1-0.2"},
    }
    docker = {
        "tool_versions": {"pixz": "1.0.7-2"},
        "library_versions": {"libc6": "2.36-9+deb12u9", "liblzma5": "5.4.1-0.2"},
    }
    run = _run(native, docker)
    assert differences(run) == {"docker-nat": [("libc6", "2.36-9+deb12u7", "2.36-9+deb12u9")]}
    (note,) = footnotes(run)
    assert note.startswith(
        "docker-nat: other package versions than native: libc6 2.36-9+deb12u9 (native 2.36-9+deb12u7)"
    )


def test_same_versions_and_runs_stored_before_library_versions_say_nothing():
    same = {"tool_versions": {"pixz": "1.0.7-2"}, "library_versions": {"libc6": "2.36-9+deb12u7"}}
    assert footnotes(_run(same, dict(same))) == []
    assert footnotes(_run({"tool_versions": {"pixz": "1"}}, {"tool_versions": {"pixz": "1"}})) == []
