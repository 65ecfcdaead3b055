"""The API study's client: every round, one GET /task to each server at
once (a barrier releases them together); waits for all before the next.

usage: python -m isobench.drivers.api_client ROUNDS TIMEOUT_S URL [URL ...]
prints {"rounds": [[{"task_s": .., "latency_s": ..}, ...per URL], ...]}
"""

from __future__ import annotations

import json
import sys
import threading
import time
import urllib.request


def hit(url: str, timeout: float, barrier: threading.Barrier, out: list, i: int) -> None:
    barrier.wait()
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            body = json.loads(resp.read())
        out[i] = {"task_s": float(body["task_s"]), "latency_s": time.perf_counter() - t0}
    except Exception as exc:  # noqa: BLE001 - reported per request, the round goes on
        out[i] = {"error": f"{type(exc).__name__}: {exc}"[:300]}


def main(argv: list[str]) -> int:
    rounds, timeout, urls = int(argv[1]), float(argv[2]), argv[3:]
    result = []
    for _ in range(rounds):
        out: list = [None] * len(urls)
        barrier = threading.Barrier(len(urls))
        threads = [
            threading.Thread(target=hit, args=(u, timeout, barrier, out, i), daemon=True) for i, u in enumerate(urls)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout + 5)
        result.append([o or {"error": "no answer"} for o in out])
    json.dump({"rounds": result}, sys.stdout)
    return 1 if any("error" in r for rnd in result for r in rnd) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
