"""The noisy neighbour: stress-ng on the host, stepped up during a study.

A study's ``[noise]`` table names the stressor (``vm``: memory, ``cpu``,
``io``) and the worker count of each step. The runner measures every cell
once per step, the stressor running throughout; each step's cases are the
workload's cases with ``noise=W`` appended (``noise=4``, ``get,noise=4``),
so the report draws every metric against the step.

Memory workers hold ``--vm-bytes`` each and keep writing it (``--vm-keep``),
as the Korea University study's ``stress -m`` did. Unless the study sets
``vm_bytes_mb``, the size is derived from the host when the first loaded
step starts: ``top_fraction`` of MemAvailable (environments already up)
spread over the largest step's workers, so the top step takes that share
of what is left and the steps grow linearly.

stress-ng dies with isobench (PR_SET_PDEATHSIG) and carries its own
``--timeout`` (``max_step_s``); ``isobench clean`` finds leftovers by their
``--temp-path`` under the run's scratch directory.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field

from pydantic import Field, field_validator

from isobench.core.lifetime import die_with_parent
from isobench.core.strictmodel import StrictModel
from isobench.core.workspace import DATA_ROOT

MiB = 1024 * 1024
STEP_PARAM = "noise"


class NoiseSpec(StrictModel):
    stressor: str = Field("vm", pattern=r"^(vm|cpu|io)$", description="vm (memory), cpu or io")
    steps: tuple[int, ...] = Field(description="stress-ng workers per step, ascending, e.g. [0, 1, 2, 4]")
    vm_bytes_mb: int | None = Field(None, ge=1, le=1024 * 1024, description="per memory worker")
    top_fraction: float = Field(0.6, gt=0, le=0.95, description="share of MemAvailable the top step holds")
    settle_s: float = Field(5, ge=0, le=600, description="wait after a step starts, before measuring")
    max_step_s: float = Field(4 * 3600, gt=0, le=7 * 86_400, description="stress-ng's own --timeout")

    def held_memory(self) -> int:
        """Bytes the memory workers hold at the top step when the study sets
        their size (preflight adds it to the environments'); 0 otherwise (a
        derived size is a share of what the host has free)."""
        if self.stressor != "vm" or self.vm_bytes_mb is None:
            return 0
        return self.vm_bytes_mb * MiB * max(self.steps)

    @field_validator("steps")
    @classmethod
    def _ascending(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if not v or any(w < 0 or w > 1024 for w in v):
            raise ValueError("steps must be worker counts between 0 and 1024")
        if list(v) != sorted(set(v)):
            raise ValueError("steps must be distinct and ascending (the load is stepped up)")
        return v


def step_case(case: str, workers: int) -> str:
    """The cell's case at a noise step: ``noise=W`` or ``CASE,noise=W``."""
    return f"{STEP_PARAM}={workers}" if case in ("", "default") else f"{case},{STEP_PARAM}={workers}"


def unstep_case(case: str) -> str:
    """The workload's own case of a stored case (step_case undone):
    ``noise=4`` -> ``default``, ``get,noise=4`` -> ``get``, ``get`` -> ``get``."""
    head, sep, tail = case.rpartition(",")
    if not sep:
        head, tail = "default", case
    name, eq, workers = tail.partition("=")
    if name == STEP_PARAM and eq and workers.isdigit():
        return head
    return case


def derive_vm_bytes(spec: NoiseSpec, mem_available: int) -> int:
    """Bytes per memory worker: the study's, or top_fraction of what is
    available spread over the top step's workers (at least 16 MiB)."""
    if spec.vm_bytes_mb is not None:
        return spec.vm_bytes_mb * MiB
    top = max(spec.steps) or 1
    return max(16 * MiB, int(spec.top_fraction * mem_available / top) // MiB * MiB)


def stress_argv(spec: NoiseSpec, workers: int, vm_bytes: int, temp_path: str) -> list[str]:
    """stress-ng's argv for one step (no workers: none). Pure."""
    if workers <= 0:
        return []
    argv = ["stress-ng", "--temp-path", temp_path, "--timeout", f"{int(spec.max_step_s)}s", "--quiet"]
    if spec.stressor == "vm":
        return argv + ["--vm", str(workers), "--vm-bytes", f"{vm_bytes // MiB}M", "--vm-keep"]
    if spec.stressor == "cpu":
        return argv + ["--cpu", str(workers)]
    return argv + ["--hdd", str(workers), "--hdd-bytes", "256M"]


def temp_path(run_id: str) -> str:
    return os.path.join(DATA_ROOT, f"{run_id}-noise")


def _mem_available() -> int:
    from isobench.host.hostinfo import meminfo

    return meminfo().get("MemAvailable", 0)


@dataclass
class Noise:
    spec: NoiseSpec
    run_id: str
    vm_bytes: int | None = None
    _proc: subprocess.Popen | None = None
    _facts: dict = field(default_factory=dict)

    def start_step(self, workers: int) -> dict:
        """Stop the previous step's stressor, start this one's, wait
        settle_s; returns what the step is (kept with every sample)."""
        self.stop()
        before = _mem_available()
        if workers > 0 and self.spec.stressor == "vm" and self.vm_bytes is None:
            self.vm_bytes = derive_vm_bytes(self.spec, before)
        argv = stress_argv(self.spec, workers, self.vm_bytes or 0, temp_path(self.run_id))
        if argv:
            os.makedirs(temp_path(self.run_id), exist_ok=True)
            try:
                self._proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                    preexec_fn=die_with_parent,
                )
            except FileNotFoundError:
                raise RuntimeError("stress-ng is not installed (scripts/install-host.sh installs it)") from None
            time.sleep(self.spec.settle_s)
            if self._proc.poll() is not None:
                assert self._proc.stderr is not None  # piped above
                err = (self._proc.stderr.read() or b"").decode(errors="replace").strip().splitlines()[-1:]
                raise RuntimeError(f"stress-ng exited at once ({self._proc.returncode}): {' '.join(err)}")
        self._facts = {
            "step_workers": workers,
            "stressor": self.spec.stressor,
            "argv": argv,
            "vm_bytes_per_worker": self.vm_bytes if self.spec.stressor == "vm" else None,
            "mem_available_before": before,
            "mem_available_loaded": _mem_available(),
        }
        return dict(self._facts)

    @property
    def facts(self) -> dict:
        return dict(self._facts)

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(20)
            except (ProcessLookupError, PermissionError):
                pass
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        if proc.stderr is not None:
            proc.stderr.close()
        shutil.rmtree(temp_path(self.run_id), ignore_errors=True)


def leftover_stressors(run_id: str | None = None) -> list[int]:
    """pids of stress-ng processes whose --temp-path is one of ours."""
    prefix = temp_path(run_id) if run_id else os.path.join(DATA_ROOT, "")
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                argv = fh.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if argv and os.path.basename(argv[0]).startswith("stress-ng") and "--temp-path" in argv:
            path = argv[argv.index("--temp-path") + 1] if argv.index("--temp-path") + 1 < len(argv) else ""
            if path.startswith(prefix) and path.endswith("-noise"):
                pids.append(int(entry))
    return pids
