"""The webstore driver's open loop counts queueing delay: against a server
that answers one request at a time in 50 ms, Poisson arrivals at twice its
capacity must show latencies far above the service time (each request's
clock starts at its intended arrival, not when a connection frees up),
while the closed loop against the same server sees about the service time.
Light (a local thread, no lock needed)."""

import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from isobench.drivers import loghist

SERVICE_S = 0.05


class Slow(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802 - http.server's name
        time.sleep(SERVICE_S)
        body = b'{"n":1}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def slow_server():
    srv = HTTPServer(("127.0.0.1", 0), Slow)  # one request at a time
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv.server_address
    srv.shutdown()
    srv.server_close()


def drive(addr, mode: str) -> dict:
    cfg = {
        "endpoints": [list(addr)],
        "mode": mode,
        "users": 1,
        "think_s": 0,
        "rate": 2 / SERVICE_S,
        "connections": 1,
        "duration_s": 3,
        "warmup_s": 0,
        "mix": {"browse": 1},
        "customers": 100,
        "products": 100,
        "seed": 1,
        "lines": [1, 2],
        "timeout_s": 60,
    }
    out = subprocess.run(
        [sys.executable, "-m", "isobench.drivers.webstore_load", json.dumps(cfg)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(out.stdout)


def p50(doc: dict) -> float:
    return loghist.quantile(loghist.from_json(doc["instances"][0]["ops"]["browse"]["hist"]), 0.5)


def test_open_loop_counts_queueing_delay(slow_server):
    open_doc = drive(slow_server, "open")
    closed_doc = drive(slow_server, "closed")
    # open: arrival k waits for the k-1 before it; the median is many service times
    assert p50(open_doc) > 5 * SERVICE_S
    # closed: one user never queues behind itself, so it only sees the service time
    assert p50(closed_doc) < p50(open_doc) / 2
    assert open_doc["instances"][0]["ops"]["browse"]["errors"] == 0
