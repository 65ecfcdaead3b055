"""isobench's API server (the Korea University study's task server).

Runs inside the environment under test with the image's python3, standard
library only. GET /task does a fixed write task, WRITES write() calls of
CHUNK bytes each to a file in WORKDIR (then removed), and answers with the
task's own time in JSON; every other path is 404. One request at a time, as
a single-threaded node.js server would.

usage: python3 api_server.py BIND PORT WORKDIR WRITES CHUNK
"""

import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer


def task(workdir, writes, chunk):
    path = os.path.join(workdir, f"task-{os.getpid()}.out")
    buf = b"x" * chunk
    t0 = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        write = os.write
        for _ in range(writes):
            write(fd, buf)
    finally:
        os.close(fd)
        os.unlink(path)
    return time.perf_counter() - t0


class TaskServer(HTTPServer):
    cfg: dict = {}  # workdir, writes, chunk: set by main()


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path != "/task":
            self.send_error(404)
            return
        assert isinstance(self.server, TaskServer)
        cfg = self.server.cfg
        elapsed = task(cfg["workdir"], cfg["writes"], cfg["chunk"])
        body = json.dumps({"task_s": elapsed, "writes": cfg["writes"], "bytes": cfg["writes"] * cfg["chunk"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main(argv):
    bind, port, workdir, writes, chunk = argv[1], int(argv[2]), argv[3], int(argv[4]), int(argv[5])
    os.makedirs(workdir, exist_ok=True)
    server = TaskServer((bind, port), Handler)
    server.cfg = {"workdir": workdir, "writes": writes, "chunk": chunk}
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv)
