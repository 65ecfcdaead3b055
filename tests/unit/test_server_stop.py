"""A server's stop reads its pidfile and the process state through the
environment's exec, whose output a container can lose (moby #27289): an
empty answer must be asked again, not taken for "no server"."""

import pytest

from isobench.core.proc import ExecResult
from isobench.envs.base import Paths
from isobench.host.hostinfo import HostInfo
from isobench.workloads import get
from isobench.workloads.base import WorkloadError
from isobench.workloads.procstat import proc_gone

HOST = HostInfo(cores=2, mem_bytes=24 << 30, disk_free_bytes=50 << 30)


def ok(out: str = "") -> ExecResult:
    return ExecResult([], 0, out, "", 0.01)


def missing() -> ExecResult:
    return ExecResult([], 1, "", "cat: No such file or directory", 0.01)


class ScriptedEnv:
    """Answers `cat` of the pidfile and of /proc/PID/stat from scripts (the
    last answer repeats); records every command."""

    name = "scripted"
    paths = Paths(data="/d", tmp="/t")

    def __init__(self, pidfile: list[ExecResult], stat: list[ExecResult]):
        self.answers = {"pidfile": pidfile, "stat": stat}
        self.calls: list[list[str]] = []

    def _next(self, key: str) -> ExecResult:
        script = self.answers[key]
        return script.pop(0) if len(script) > 1 else script[0]

    def exec(self, argv, timeout, cwd=None):
        self.calls.append(argv)
        if argv[0] == "cat" and argv[1].endswith(".pid"):
            return self._next("pidfile")
        if argv[0] == "cat" and argv[1].startswith("/proc/"):
            return self._next("stat")
        return ok()

    def signals(self) -> list[str]:
        return [a[-1] for a in self.calls if a[:2] == ["start-stop-daemon", "--stop"]]


def redis():
    cls = get("redis")
    return cls(cls.Params(), HOST)


def test_a_lost_pidfile_read_is_asked_again_and_the_server_stopped():
    env = ScriptedEnv(pidfile=[ok(""), ok("4242\n")], stat=[ok("4242 (redis-server) S 1"), missing()])
    redis().stop_server(env)
    assert env.signals() == ["TERM"]
    assert ["rm", "-f", "/t/servers/redis.pid"] in env.calls


def test_no_pidfile_is_no_server():
    env = ScriptedEnv(pidfile=[missing()], stat=[missing()])
    redis().stop_server(env)
    assert env.signals() == []


def test_a_lost_state_read_is_not_taken_for_a_gone_server():
    running = ok("4242 (redis-server) S 1")
    env = ScriptedEnv(pidfile=[ok("4242")], stat=[running, ok(""), running, ok("4242 (redis-server) Z 1")])
    redis().stop_server(env)
    assert sum(1 for a in env.calls if a == ["cat", "/proc/4242/stat"]) == 4


def test_a_pidfile_never_read_is_one_line_naming_it():
    env = ScriptedEnv(pidfile=[ok("")], stat=[missing()])
    with pytest.raises(WorkloadError, match="cannot read its pidfile /t/servers/redis.pid"):
        redis()._read_pid(env, patience_s=0.3)


@pytest.mark.parametrize(
    ("answer", "gone"),
    [
        (missing(), True),
        (ok("1 (x) Z 0"), True),
        (ok("1 (x) R 0"), False),
        (ok(""), False),
        (ExecResult([], -1, "", "engine error: 500", 0.01), False),
        (ExecResult([], 1, "", "", 10.0, timed_out=True), False),
    ],
)
def test_proc_gone_only_on_a_clear_answer(answer, gone):
    assert proc_gone(answer) is gone


class StatusEnv(ScriptedEnv):
    def __init__(self, code: int):
        super().__init__(pidfile=[missing()], stat=[missing()])
        self.code = code

    def exec(self, argv, timeout, cwd=None):
        if argv[:2] == ["start-stop-daemon", "--status"]:
            self.calls.append(argv)
            return ExecResult(argv, self.code, "", "", 0.01)
        return super().exec(argv, timeout, cwd)


@pytest.mark.parametrize(("code", "left"), [(0, True), (1, False), (3, False), (4, False)])
def test_a_server_left_running_is_its_own_executable_by_its_pidfile(code, left):
    """A start stops an earlier sample's server only where the pidfile's pid
    runs this server's executable (never a stranger whose pid was reused)."""
    env = StatusEnv(code)
    assert redis()._server_alive(env) is left
    assert env.calls[-1][-2:] == ["--exec", "/usr/bin/redis-server"]
