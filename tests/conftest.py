import os
import signal

import pytest

# A shell starts background jobs with SIGINT ignored, an ignored signal stays
# ignored across exec, and Python then installs no KeyboardInterrupt handler:
# every `isobench run` the tests interrupt would never see its Ctrl-C when the
# suite itself was started in the background. A handled signal is reset to
# the default on exec, so the runs the tests start hear SIGINT again.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config, items):
    # Integration tests need root and the real engine; say why they are skipped
    # instead of failing obscurely when someone runs the suite as a user.
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="integration tests need root (Docker Engine, tmpfs, O_DIRECT)")
    for item in items:
        if "integration" in item.keywords:
            item.add_marker(skip)


# -- a quiet host, measured ------------------------------------------------------------
# A test that truly needs a quiet host (an effect of a few µs, close to the
# noise) asks for the `quiet_host` fixture: it measures what share of the
# host's CPU time other work took over a short window and skips, saying the
# figure, when that is above QUIET_BUSY. Tests that measure something compare
# it with a control measured in the same test instead, and need no fixture.
QUIET_BUSY = 0.25  # of all CPUs' time: one busy core of two reads 0.5
QUIET_WINDOW_S = 2.0


def busy_share(before: dict[str, float], after: dict[str, float]) -> float:
    """The share of all CPUs' time that was busy or stolen between two
    /proc/stat snapshots (isobench.host.counters.parse_stat); guest time
    is inside user and nice already, so it is not added again."""
    fields = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
    d = {f: after.get(f"cpu.{f}_s", 0.0) - before.get(f"cpu.{f}_s", 0.0) for f in fields}
    total = sum(d.values())
    return (total - d["idle"] - d["iowait"]) / total if total > 0 else 0.0


def measured_busy(window_s: float = QUIET_WINDOW_S) -> float:
    import time

    from isobench.host.counters import clk_tck, parse_stat

    def snap() -> dict[str, float]:
        with open("/proc/stat", encoding="ascii") as fh:
            return parse_stat(fh.read(), clk_tck())

    before = snap()
    time.sleep(window_s)  # this process sleeps: what is busy meanwhile is other work
    return busy_share(before, snap())


@pytest.fixture
def quiet_host() -> None:
    share = measured_busy()
    if share > QUIET_BUSY:
        pytest.skip(
            f"needs a quiet host: other work kept {share:.0%} of the CPUs busy over "
            f"{QUIET_WINDOW_S:g} s (/proc/stat; the limit is {QUIET_BUSY:.0%})"
        )
