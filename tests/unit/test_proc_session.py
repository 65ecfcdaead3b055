"""A measured sample on the host leads a session of its own (run_argv's
own_session): the kernel's autogroup then schedules it as one group, as a
container's cgroup is, and a timeout ends everything it started."""

import os
import subprocess
import time

from isobench.core.proc import run_argv


def test_a_sample_leads_its_own_session():
    r = run_argv(["sh", "-c", "cat /proc/$$/stat"], timeout=10, own_session=True)
    fields = r.stdout[r.stdout.rindex(")") + 2 :].split()
    pid, sid = int(r.stdout.split()[0]), int(fields[3])
    assert sid == pid and sid != os.getsid(0)


def test_a_timeout_ends_the_whole_group():
    mark = f"{os.getpid() % 1000}.{time.time_ns() % 10**6:06d}"  # a sleep no one else runs
    r = run_argv(["sh", "-c", f"sleep 1{mark} & sleep 2{mark}; echo never"], timeout=1, own_session=True)
    assert r.timed_out
    time.sleep(0.2)
    left = subprocess.run(["pgrep", "-f", f"sleep [12]{mark}"], capture_output=True, text=True).stdout
    assert left == "", left
