"""What the runner does when an environment dies under it: ask it (bounded)
whether it still answers after a failed sample, say so once in one line,
stop scheduling its cells, and judge the run complete only when every cell
has an ok sample. Also remembers runs whose teardown could not finish (an
engine that was down), so the next run's start removes those leftovers.

Why stop rather than wait for a reconnect: an engine or guest that went away
took the environment's state with it (the container is stopped, servers and
prepared inputs are gone, a restarted guest is a new boot), so a measurement
taken after a reconnect would not be comparable with the ones before it.
Skipping is bounded by construction; `isobench run --resume RUN` measures
the skipped and failed cells later in freshly started environments."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable

from isobench.core.workspace import STATE_ROOT
from isobench.envs.base import Environment

HEALTH_TIMEOUT_S = 10  # what an environment gets to answer after a failed sample
PENDING_FILE = os.path.join(STATE_ROOT, "pending-leftovers.json")


def ask_health(env: Environment, timeout: float = HEALTH_TIMEOUT_S) -> str | None:
    """env.health(), but bounded even when the kind's own call hangs (a
    socket nobody answers): no answer in time counts as not answering."""
    answer: list = []

    def ask() -> None:
        try:
            answer.append(env.health(timeout))
        except Exception as exc:  # noqa: BLE001 - a health check that breaks is an unhealthy environment
            answer.append(f"{env.name}: its health check failed ({type(exc).__name__}: {exc})"[:300])

    t = threading.Thread(target=ask, daemon=True, name=f"health-{env.name}")
    t.start()
    t.join(timeout + 5)
    if not answer:
        return f"{env.name}: stopped answering (no reply within {timeout + 5:.0f} s)"
    return answer[0]


class Watch:
    """The run's view of its environments' health and its failed cells."""

    def __init__(self, run_id: str, note: Callable[[str], None]):
        self.run_id = run_id
        self.note = note
        self.lost: dict[str, str] = {}  # env name -> why
        self._told: set[tuple[str, str]] = set()

    def skips(self, env: Environment) -> bool:
        return env.name in self.lost

    def failed(self, env: Environment, what: str, error: str) -> None:
        """A sample of `what` (workload/case) failed in env: is the
        environment itself gone? Says so once per environment (or once per
        workload and environment when the environment is fine)."""
        problem = ask_health(env)
        resume = f"`isobench run --resume {self.run_id}` measures them"
        if problem is not None:
            self.lost[env.name] = problem
            self.note(
                f"{problem}: its remaining cells are skipped and the run will end incomplete; "
                f"once it answers again, {resume}"
            )
            return
        key = (env.name, what.split("/")[0])
        if key not in self._told:
            self._told.add(key)
            self.note(
                f"{what} in {env.name} failed: {one_line(error)[:200]}; the run goes on and will end "
                f"incomplete; {resume} again"
            )


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def final_status(planned: set[tuple], measured: set[tuple]) -> str:
    """complete: every planned (env, workload, case, round) has an ok
    sample; incomplete otherwise (failed, timed out or skipped cells)."""
    return "complete" if planned <= measured else "incomplete"


# --- teardown that could not finish -------------------------------------------------


def remember_leftovers(run_id: str, problems: list[str]) -> None:
    pending = _read_pending()
    pending[run_id] = {"problems": problems, "tries": 0}
    _write_pending(pending)


MAX_TRIES = 5  # a cleaner that finds nothing this often: the leftovers went another way


def clean_pending(cleaner: Callable[[str], list[str]]) -> list[str]:
    """Remove what earlier runs could not tear down (cleaner(run_id) per
    run). A cleaner that cannot reach an engine removes nothing, so a run
    stays pending until something was removed (or MAX_TRIES passed)."""
    pending = _read_pending()
    if not pending:
        return []
    removed: list[str] = []
    for run_id in list(pending):
        try:
            got = cleaner(run_id)
        except Exception:  # noqa: BLE001 - still unreachable: try again next time
            got = []
        removed += got
        entry = pending[run_id] if isinstance(pending[run_id], dict) else {}
        entry["tries"] = int(entry.get("tries", 0)) + 1
        if got or entry["tries"] >= MAX_TRIES:
            del pending[run_id]
        else:
            pending[run_id] = entry
    _write_pending(pending)
    return removed


def pending_runs() -> dict:
    return _read_pending()


def forget_pending() -> None:
    """After `isobench clean` (everything of isobench's removed)."""
    _write_pending({})


def _read_pending() -> dict:
    try:
        with open(PENDING_FILE, encoding="utf-8") as fh:
            data = json.load(fh)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_pending(pending: dict) -> None:
    try:
        if not pending:
            if os.path.exists(PENDING_FILE):
                os.unlink(PENDING_FILE)
            return
        os.makedirs(os.path.dirname(PENDING_FILE), exist_ok=True)
        with open(PENDING_FILE, "w", encoding="utf-8") as fh:
            json.dump(pending, fh, indent=1)
    except OSError:
        pass  # best effort: `isobench clean` removes everything anyway
