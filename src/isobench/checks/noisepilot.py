"""The host's noise, measured: a short pilot of fixed kernels, one CPU and
one I/O, each run as A/A pairs (the same work twice, back to back), and the
CPU one as a duet (both at once, on their own CPUs), so
that `doctor`, `validate` and `run` can say up front what a study's rounds
can resolve here (isobench.checks.resolution; docs/statistics.md#host-noise).

The statistics are pure functions in isobench.analysis.pilotstats, the
kernels and their timing loop are isobench.checks.pilotkernels; this module
runs them in a thread with a deadline, keeps the result and says it. The
result is cached in STATE_ROOT/noise-pilot.json with the host's identity and the time: a pilot
under an hour old from the same host (name, boot, CPU, kernel) is reused,
anything else is measured again (``doctor --fresh`` always measures).
"""

from __future__ import annotations

import json
import math
import os
import platform
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from isobench.analysis.pilotstats import drift, pair_noise
from isobench.checks.pilotkernels import BUDGET_S, PAIRS, SCRATCH_DIR, IoKernel, Timings, default_kernels, time_kernels
from isobench.core.workspace import STATE_ROOT
from isobench.host.hostinfo import Finding, cpu_model, read_text

# Bump when a kernel or the schedule (checks/pilotkernels.py) changes: a
# cached figure of other work is not this pilot's figure.
PILOT_VERSION = 3  # 2: the duet kernel; 3: its rotation no longer spins once one side is done
CACHE_FILE = os.path.join(STATE_ROOT, "noise-pilot.json")
MAX_AGE_S = 3600.0  # a shared host's neighbours come and go: older figures are measured again
TIMEOUT_S = 75.0  # the caller has an answer by then, whatever a kernel does (a hung fsync)
ABOUT_S = 30  # what the user is told to wait: 20 rounds of four samples of ~0.35 s here

KERNEL_LABELS = {"cpu": "CPU", "cpu-duet": "CPU duet", "io": "I/O"}

# Above this paired SD a host is worth a warning: a ~100-cell table then
# needs more than 15 rounds to resolve ±5%, and 5 rounds find only changes
# beyond about 12% (analysis.suggest with the pilot's 19 df, verdicts.detectable_change).
NOISY_PCT = 2.0


# -- running the pilot -----------------------------------------------------------------


def measure(
    identity: dict,
    kernels: Callable[[Timings], list] = default_kernels,
    pairs: int = PAIRS,
    budget_s: float = BUDGET_S,
    timeout_s: float = TIMEOUT_S,
) -> Pilot:
    """Run the pilot in a thread and return by ``timeout_s`` whatever the
    kernels do: the thread is told to stop, and what it measured by then is
    summarised. Ctrl-C stops it the same way (the thread removes its file)."""
    timings, stop = Timings(), threading.Event()
    started, stamp = time.monotonic(), time.time()

    def work() -> None:
        made: list = []
        try:
            made = kernels(timings)
            timings.what.update({k.name: k.what for k in made})
            time_kernels(made, timings, stop, pairs, budget_s)
        except Exception as exc:  # noqa: BLE001 - advice, never a failed command
            timings.notes.setdefault("pilot", f"failed: {exc}")
        finally:
            for k in made:
                if isinstance(k, IoKernel):
                    timings.what[k.name] += f" ({k.read_how})"
                k.close()

    thread = threading.Thread(target=work, name="isobench-noise-pilot", daemon=True)
    thread.start()
    try:
        thread.join(timeout_s)
    except KeyboardInterrupt:
        stop.set()
        thread.join(5)  # the current sample ends and the file goes
        raise
    stop.set()
    if thread.is_alive():
        timings.notes.setdefault("pilot", f"cut short at {timeout_s:g} s: a kernel did not return")
    return summarise(identity, timings, stamp, time.monotonic() - started)


# -- the result ----------------------------------------------------------------------


@dataclass(frozen=True)
class KernelNoise:
    kernel: str  # cpu | io
    what: str
    pairs: int
    sd: float  # per-pair log-ratio SD: the paired noise per sample
    low: float  # its 95% chi-square interval
    high: float
    drift_pct_per_min: float  # slope of log time over the pilot, with its 95% interval; nan where
    drift_low: float  # the percentage is not finite (a stall: drift_log_per_min says it)
    drift_high: float
    median_s: float
    seconds: tuple[float, ...] = ()  # every timed sample in order, A B A B ...: the figures can be recomputed
    drift_log_per_min: float | None = None  # the slope itself, log time per minute; None when undefined

    def drift_text(self) -> str | None:
        """The drift for people: as % per minute where that is finite, else
        the log slope; None when there is none to tell."""
        if not math.isnan(self.drift_pct_per_min):
            return f"{self.drift_pct_per_min:+.2f}%/min on {self.label}"
        if self.drift_log_per_min is not None and math.isfinite(self.drift_log_per_min):
            return f"log time {self.drift_log_per_min:+.3g}/min on {self.label} (a stall: no finite percentage)"
        return None

    @property
    def label(self) -> str:
        return KERNEL_LABELS.get(self.kernel, self.kernel)

    def interval_text(self) -> str:
        return f"[{fmt_noise(self.low)}, {fmt_noise(self.high)}]"


def fmt_noise(sd: float) -> str:
    """A log-scale SD as the percentage it is for small values: 0.041 -> "4.1%"."""
    if math.isnan(sd):
        return "?"
    pct = sd * 100
    return f"{pct:.2f}%" if pct < 1 else f"{pct:.1f}%"


def kernel_noise(kernel: str, what: str, samples: list[tuple[float, float]]) -> KernelNoise | None:
    """A kernel's figures from its samples (consecutive ones are pairs);
    None under 2 pairs, where no SD exists."""
    whole = samples[: len(samples) // 2 * 2]
    if len(whole) < 4:
        return None
    starts = [s for s, _ in whole]
    secs = [d for _, d in whole]
    noise = pair_noise(secs[0::2], secs[1::2])
    slope = drift(starts, secs)
    ordered = sorted(secs)
    return KernelNoise(
        kernel,
        what,
        noise.pairs,
        noise.sd,
        noise.low,
        noise.high,
        slope.pct_per_min,
        slope.low,
        slope.high,
        ordered[len(ordered) // 2],
        tuple(round(x, 6) for x in secs),
        None if math.isnan(slope.slope) else slope.slope,
    )


def summarise(identity: dict, timings: Timings, stamp: float, wall_s: float) -> Pilot:
    kernels, notes = {}, dict(timings.notes)
    for name, samples in timings.samples.items():
        k = kernel_noise(name, timings.what.get(name, name), list(samples))
        if k is not None:
            kernels[name] = k
        else:
            notes.setdefault(name, "not measured: fewer than 2 pairs")
    return Pilot(
        PILOT_VERSION,
        dict(identity),
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp)),
        stamp,
        wall_s,
        kernels,
        notes,
    )


@dataclass(frozen=True)
class Pilot:
    version: int
    host: dict  # host_identity() when measured
    measured_at: str  # local time, for people
    measured_unix: float  # for the age
    wall_s: float
    kernels: dict[str, KernelNoise]  # "cpu", "io"; a kernel that could not run is missing
    notes: dict[str, str]  # kernel (or "pilot") -> why it is missing or was cut short
    cached: bool = False

    def noise(self, kernel: str) -> KernelNoise | None:
        return self.kernels.get(kernel)

    def summary(self) -> str:
        """ "paired SD 4.1% per sample on CPU [3.2%, 5.8%], 9.5% on I/O [7.2%, 14.0%]"."""
        if not self.kernels:
            return "not measured: " + ("; ".join(self.notes.values()) or "no kernel ran")
        first, *rest = self.kernels.values()
        return f"paired SD {fmt_noise(first.sd)} per sample on {first.label} {first.interval_text()}" + "".join(
            f", {fmt_noise(k.sd)} on {k.label} {k.interval_text()}" for k in rest
        )

    def age_s(self, now: float) -> float:
        return max(0.0, now - self.measured_unix)

    def when(self, now: float) -> str:
        age = self.age_s(now)
        ago = "just now" if age < 90 else (f"{age / 60:.0f} min ago" if age < 5400 else f"{age / 3600:.1f} h ago")
        return f"measured {ago}" + (", cached" if self.cached else "")

    def line(self, now: float) -> str:
        """Everything doctor says about it, on one line."""
        text = self.summary()
        drifts = [t for k in self.kernels.values() if (t := k.drift_text()) is not None]
        if drifts:
            text += "; drift " + ", ".join(drifts)
        if not self.kernels:
            return text
        pairs = sorted({k.pairs for k in self.kernels.values()})
        text += f"; {'/'.join(map(str, pairs))} pairs in {self.wall_s:.0f} s, {self.when(now)}"
        return text + "".join(f"; {KERNEL_LABELS.get(k, k)} {v}" for k, v in self.notes.items())

    def as_fact(self, now: float) -> dict:
        """What a run keeps among its host facts (the report prints "line",
        a compare diffs "summary");
        an undefined figure is null, since the run's JSON export allows no NaN."""
        return _no_nan({**self.to_dict(), "cached": self.cached, "line": self.line(now), "summary": self.summary()})

    def to_dict(self) -> dict:
        data = asdict(self)
        data.pop("cached")
        return data

    @classmethod
    def from_dict(cls, data: dict, cached: bool = False) -> Pilot:
        """The inverse of to_dict; KeyError, TypeError or ValueError on anything else."""
        kernels = {
            str(name): KernelNoise(
                **{f: _typed(f, k[f]) for f in KernelNoise.__dataclass_fields__ if f in k or f not in OPTIONAL_FIELDS}
            )
            for name, k in data["kernels"].items()
        }
        notes = {str(k): str(v) for k, v in data["notes"].items()}
        return cls(
            int(data["version"]),
            {str(k): str(v) for k, v in data["host"].items()},
            str(data["measured_at"]),
            float(data["measured_unix"]),
            float(data["wall_s"]),
            kernels,
            notes,
            cached,
        )


# Fields a pilot cached by an earlier isobench may lack: their defaults stand.
OPTIONAL_FIELDS = ("seconds", "drift_log_per_min")


def _no_nan(value):
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    return None if isinstance(value, float) and math.isnan(value) else value


def _typed(name: str, value):
    if name == "seconds":
        return tuple(float(x) for x in value)
    if name == "drift_log_per_min":
        return None if value is None else float(value)
    return str(value) if name in ("kernel", "what") else (int(value) if name == "pairs" else float(value))


# -- the cache -----------------------------------------------------------------------


def host_identity() -> dict:
    """What the noise belongs to: this host since its last boot (a reboot or
    a migrated VM is measured again), its CPU and kernel, the scratch disk."""
    return {
        "hostname": platform.node(),
        "boot_id": read_text("/proc/sys/kernel/random/boot_id") or "",
        "cpu_model": cpu_model(),
        "cores": str(os.cpu_count()),
        "kernel": platform.release(),
        "scratch": SCRATCH_DIR,
    }


def load(path: str = CACHE_FILE) -> Pilot | None:
    """The cached pilot, or None (no file, unreadable, another version)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        pilot = Pilot.from_dict(data, cached=True)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return pilot if pilot.version == PILOT_VERSION else None


def save(pilot: Pilot, path: str = CACHE_FILE) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(pilot.to_dict(), fh, indent=2, sort_keys=True)
    os.replace(tmp, path)


def current(pilot: Pilot | None, identity: dict, now: float, max_age_s: float = MAX_AGE_S) -> bool:
    """Reusable: this host's, and younger than max_age_s (a clock set back counts as stale)."""
    return (
        pilot is not None
        and pilot.host == identity
        and pilot.kernels != {}
        and 0 <= now - pilot.measured_unix < max_age_s
    )


def cached(identity: dict | None = None, path: str = CACHE_FILE) -> Pilot | None:
    """This host's last pilot at any age, for `validate`, which measures nothing."""
    pilot = load(path)
    return pilot if pilot is not None and pilot.host == (identity or host_identity()) else None


def host_noise(
    fresh: bool = False,
    on_measure: Callable[[], None] | None = None,
    path: str = CACHE_FILE,
    identity: dict | None = None,
    now: Callable[[], float] = time.time,
    measure_with: Callable[[dict], Pilot] = measure,
) -> Pilot:
    """The cached pilot when current, else a new one (about ABOUT_S seconds,
    announced through on_measure first), saved for the next hour."""
    identity = identity or host_identity()
    if not fresh:
        cached_pilot = load(path)
        if cached_pilot is not None and current(cached_pilot, identity, now()):
            return cached_pilot
    if on_measure is not None:
        on_measure()
    pilot = measure_with(identity)
    if pilot.kernels:
        try:
            save(pilot, path)
        except OSError:  # not root: measured all the same, only not kept
            pass
    return pilot


def without_a_run(fresh: bool, on_measure: Callable[[], None] | None = None) -> tuple[Pilot | None, str]:
    """For commands outside a run (doctor): measure, or reuse, only while no
    study runs, since the pilot would measure that study's load and disturb
    it; the run lock is held meanwhile so none starts. While one runs, the
    last figures (any age) are all there is, with a note saying so."""
    from isobench.core.lock import AlreadyRunning, RunLock, running_run_id

    busy = "a study is running: not measured now, so as not to disturb it"
    lock = RunLock()
    try:
        lock.acquire("host noise pilot")
    except AlreadyRunning:
        return cached(), busy
    except OSError:  # not root: no lock to take, but a root run can still be seen
        if running_run_id() is not None:
            return cached(), busy
        return host_noise(fresh, on_measure), ""
    with lock:
        return host_noise(fresh, on_measure), ""


def as_finding(pilot: Pilot | None, note: str = "", now: float | None = None) -> Finding:
    """The doctor row: a warning when either kernel's paired SD is above NOISY_PCT."""
    now = time.time() if now is None else now
    if pilot is None or not pilot.kernels:
        why = note or (pilot.summary() if pilot is not None else "not measured")
        return Finding(
            "host noise", "info", why, f"`isobench doctor --fresh` measures it (about {ABOUT_S} s) when no study runs"
        )
    value = pilot.line(now) + (f" ({note})" if note else "")
    noisy = [k for k in pilot.kernels.values() if k.sd * 100 > NOISY_PCT]
    if not noisy:
        return Finding("host noise", "ok", value)
    return Finding(
        "host noise",
        "warn",
        value,
        f"{' and '.join(k.label for k in noisy)} noise above {NOISY_PCT:g}%: stop other work or use a "
        "quieter host, or plan more rounds (`isobench validate STUDY` says how many)",
    )
