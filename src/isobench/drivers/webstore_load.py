"""The webstore's load generator, run in the client namespace: one asyncio
loop drives every instance's nginx over keep-alive HTTP/1.1.

* closed loop (DS2's driver): ``users`` per instance, each on its own
  connection, issuing an operation drawn from the mix, then thinking an
  exponential time of mean ``think_s``;
* open loop: Poisson arrivals at ``rate`` per second per instance, each
  timed from its *intended* start, so time spent waiting for a free
  connection (queueing) is in its latency: no coordinated omission.

Only operations that start after ``warmup_s`` count. Latencies go to
log-bucket histograms per instance and operation (loghist). The driver's
own CPU time is reported; a driver that used most of its one core is
flagged ``saturated`` (the workload refuses such a sample).

usage: python -m isobench.drivers.webstore_load CONFIG_JSON  -> JSON on stdout
"""

from __future__ import annotations

import asyncio
import json
import random
import resource
import sys
import time

from isobench.drivers import loghist

OPS = ("login", "newcust", "browse", "product", "purchase", "history")
SATURATED_CPU = 0.9  # of one core, over the measured window
_BROWSE_PREFIX = ("A", "B", "C")


class Http:
    """One keep-alive HTTP/1.1 connection (Content-Length or chunked bodies)."""

    def __init__(self, addr: str, port: int):
        self.addr, self.port = addr, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def get(self, path: str) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.addr, self.port)
        reader, writer = self.reader, self.writer
        assert reader is not None  # opened with the writer
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {self.addr}\r\n\r\n".encode())
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        hdr = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
        if "content-length" in hdr:
            body = await reader.readexactly(int(hdr["content-length"]))
        elif hdr.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                chunk = await reader.readexactly(size + 2)
                if size == 0:
                    break
                parts.append(chunk[:-2])
            body = b"".join(parts)
        else:
            body = await reader.read()
            self.close()
        if hdr.get("connection", "").lower() == "close":
            self.close()
        return status, body

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def pick_path(rng: random.Random, op: str, cfg: dict) -> str:
    """The request of one operation (pure given the rng)."""
    cust = rng.randint(1, cfg["customers"])
    if op == "login":
        return f"/ds.php?op=login&user=user{cust}"
    if op == "newcust":
        return "/ds.php?op=newcust"
    if op == "browse":
        by = rng.choice(("category", "title", "actor"))
        q = str(rng.randint(1, 16)) if by == "category" else rng.choice(_BROWSE_PREFIX) + chr(65 + rng.randrange(26))
        return f"/ds.php?op=browse&by={by}&q={q}"
    if op == "product":
        return f"/ds.php?op=product&id={rng.randint(1, cfg['products'])}"
    if op == "purchase":
        lo, hi = cfg.get("lines", (1, 9))
        items = ",".join(f"{rng.randint(1, cfg['products'])}:{rng.randint(1, 3)}" for _ in range(rng.randint(lo, hi)))
        return f"/ds.php?op=purchase&cust={cust}&items={items}"
    if op == "history":
        return f"/ds.php?op=history&cust={cust}"
    raise ValueError(f"unknown operation {op!r}")


class Stats:
    def __init__(self) -> None:
        self.hist: dict[str, dict[int, int]] = {op: {} for op in OPS}
        self.sum_s = dict.fromkeys(OPS, 0.0)
        self.errors = dict.fromkeys(OPS, 0)
        self.orders = self.rollbacks = 0
        self.first_error = ""

    def record(self, op: str, latency: float, status: int, body: bytes) -> None:
        if status != 200:
            self.errors[op] += 1
            self.first_error = self.first_error or f"{op}: HTTP {status} {body[:200]!r}"
            return
        loghist.add(self.hist[op], latency)
        self.sum_s[op] += latency
        if op == "purchase":
            if b'"rollback"' in body:
                self.rollbacks += 1
            else:
                self.orders += 1

    def fail(self, op: str, exc: BaseException) -> None:
        self.errors[op] += 1
        self.first_error = self.first_error or f"{op}: {type(exc).__name__}: {exc}"

    def to_json(self) -> dict:
        return {
            "orders": self.orders,
            "rollbacks": self.rollbacks,
            "first_error": self.first_error,
            "ops": {
                op: {"hist": loghist.to_json(self.hist[op]), "sum_s": self.sum_s[op], "errors": self.errors[op]}
                for op in OPS
            },
        }


async def _one(
    conn: Http, op: str, path: str, started: float, t_measure: float, t_end: float, stats: Stats, timeout: float
) -> None:
    try:
        status, body = await asyncio.wait_for(conn.get(path), timeout)
    except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError, IndexError) as exc:
        conn.close()
        if t_measure <= started < t_end:
            stats.fail(op, exc)
        return
    if t_measure <= started < t_end:
        stats.record(op, time.monotonic() - started, status, body)


async def closed_user(ep, cfg, rng, stats, t_measure, t_end):
    conn, ops, weights = Http(*ep), list(cfg["mix"]), list(cfg["mix"].values())
    while time.monotonic() < t_end:
        op = rng.choices(ops, weights)[0]
        await _one(conn, op, pick_path(rng, op, cfg), time.monotonic(), t_measure, t_end, stats, cfg["timeout_s"])
        if cfg["think_s"] > 0:
            await asyncio.sleep(rng.expovariate(1.0 / cfg["think_s"]))
    conn.close()


async def open_instance(ep, cfg, rng, stats, t0, t_measure, t_end) -> float:
    """Poisson arrivals from t0; returns the scheduler's worst lag (s)."""
    pool: asyncio.Queue = asyncio.Queue()
    for _ in range(cfg["connections"]):
        pool.put_nowait(Http(*ep))
    ops, weights = list(cfg["mix"]), list(cfg["mix"].values())
    tasks, lag, t = set(), 0.0, t0

    async def arrival(intended: float, op: str, path: str) -> None:
        conn = await pool.get()  # waiting here is queueing: it counts from `intended`
        try:
            await _one(conn, op, path, intended, t_measure, t_end, stats, cfg["timeout_s"])
        finally:
            pool.put_nowait(conn)

    while True:
        t += rng.expovariate(cfg["rate"])
        if t >= t_end:
            break
        delay = t - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        else:
            lag = max(lag, -delay)
        op = rng.choices(ops, weights)[0]
        task = asyncio.ensure_future(arrival(t, op, pick_path(rng, op, cfg)))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.wait(tasks, timeout=cfg["timeout_s"])
    while not pool.empty():
        pool.get_nowait().close()
    return lag


async def drive(cfg: dict) -> dict:
    t0 = time.monotonic()
    t_measure, t_end = t0 + cfg["warmup_s"], t0 + cfg["warmup_s"] + cfg["duration_s"]
    stats = [Stats() for _ in cfg["endpoints"]]
    coros = []
    for i, ep in enumerate(cfg["endpoints"]):
        if cfg["mode"] == "closed":
            coros += [
                closed_user(ep, cfg, random.Random(f"{cfg['seed']}-{i}-{u}"), stats[i], t_measure, t_end)
                for u in range(cfg["users"])
            ]
        else:
            coros.append(open_instance(ep, cfg, random.Random(f"{cfg['seed']}-{i}"), stats[i], t0, t_measure, t_end))
    lags = await asyncio.gather(*coros)
    return {"stats": stats, "lag_s": max([x for x in lags if x is not None] or [0.0])}


def cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def main(argv: list[str]) -> int:
    cfg = json.loads(argv[1])
    c0, w0 = cpu_s(), time.monotonic()
    out = asyncio.run(drive(cfg))
    wall, used = time.monotonic() - w0, cpu_s() - c0
    doc = {
        "mode": cfg["mode"],
        "duration_s": cfg["duration_s"],
        "wall_s": wall,
        "driver_cpu_s": used,
        "driver_cpu_frac": used / wall if wall > 0 else 0.0,
        "lag_s": out["lag_s"],
        "saturated": used / wall > SATURATED_CPU if wall > 0 else False,
        "instances": [s.to_json() for s in out["stats"]],
    }
    json.dump(doc, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
