"""The VMware scale-out client: twemproxy (nutcracker) in front of N Redis
servers, consistent hashing (ketama), and two redis-benchmark processes
at once through it, GET with ``get_ratio`` of the connections and requests,
SET with the rest (redis-benchmark runs one command per test, so the mix
is two concurrent streams).

Runs in the client host's namespace; the proxy listens on its loopback.
Before and after, each server's INFO stats is read (a tiny RESP client)
so the commands each instance served are known (fairness).

usage: python -m isobench.drivers.redis_mix CONFIG_JSON
prints {"get": CSV, "set": CSV, "wall_s": .., "served": [..per server..]}
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

PROXY_ADDR = "127.0.0.1"


def nutcracker_yaml(servers: list[tuple[str, int]], password: str, port: int) -> str:
    lines = [
        "isobench:",
        f"  listen: {PROXY_ADDR}:{port}",
        "  hash: fnv1a_64",
        "  distribution: ketama",
        "  redis: true",
        f"  redis_auth: {password}",
        "  auto_eject_hosts: false",
        "  server_connections: 1",
        "  timeout: 30000",
        "  servers:",
    ]
    lines += [f"    - {addr}:{p}:1 server{i}" for i, (addr, p) in enumerate(servers)]
    return "\n".join(lines) + "\n"


def resp_command(sock: socket.socket, *args: str) -> bytes:
    payload = f"*{len(args)}\r\n" + "".join(f"${len(a.encode())}\r\n{a}\r\n" for a in args)
    sock.sendall(payload.encode())
    head = b""
    while not head.endswith(b"\r\n"):
        chunk = sock.recv(1)
        if not chunk:
            raise ConnectionError("server closed the connection")
        head += chunk
    if head[:1] == b"$":
        n = int(head[1:-2])
        body = b""
        while len(body) < n + 2:
            body += sock.recv(n + 2 - len(body))
        return body[:-2]
    if head[:1] == b"-":
        raise RuntimeError(head.decode().strip())
    return head[:-2]


def commands_processed(addr: str, port: int, password: str) -> int:
    with socket.create_connection((addr, port), timeout=10) as s:
        resp_command(s, "AUTH", password)
        info = resp_command(s, "INFO", "stats").decode()
    for line in info.splitlines():
        if line.startswith("total_commands_processed:"):
            return int(line.split(":")[1])
    raise RuntimeError(f"{addr}:{port}: no total_commands_processed in INFO stats")


def wait_port(addr: str, port: int, deadline: float) -> None:
    while True:
        try:
            socket.create_connection((addr, port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nutcracker did not listen on {addr}:{port}") from None
            time.sleep(0.05)


def bench_argv(cfg: dict, command: str, clients: int, requests: int) -> list[str]:
    return [
        "redis-benchmark",
        "-h",
        PROXY_ADDR,
        "-p",
        str(cfg["proxy_port"]),
        "-a",
        cfg["password"],
        "-t",
        command,
        "-c",
        str(clients),
        "-n",
        str(requests),
        "-P",
        str(cfg["pipeline"]),
        "-d",
        str(cfg["value_bytes"]),
        "-r",
        str(cfg["keyspace"]),
        "--csv",
    ]


def split(total: int, ratio: float) -> tuple[int, int]:
    """(GET, SET) shares of total, each at least 1."""
    get = min(max(1, round(total * ratio)), total - 1)
    return get, total - get


def main(argv: list[str]) -> int:
    cfg = json.loads(argv[1])
    servers = [(a, int(p)) for a, p in cfg["servers"]]
    workdir = cfg["workdir"]
    os.makedirs(workdir, exist_ok=True)
    conf = os.path.join(workdir, "nutcracker.yml")
    with open(conf, "w") as fh:
        fh.write(nutcracker_yaml(servers, cfg["password"], cfg["proxy_port"]))
    deadline = time.monotonic() + cfg["timeout_s"]
    proxy = subprocess.Popen(
        [
            "nutcracker",
            "-c",
            conf,
            "-s",
            str(cfg["proxy_port"] + 1),
            "-a",
            PROXY_ADDR,
            "-p",
            os.path.join(workdir, "nutcracker.pid"),
            "-o",
            os.path.join(workdir, "nutcracker.log"),
            "-v",
            "4",
        ],
        stdin=subprocess.DEVNULL,
    )
    procs: list[subprocess.Popen] = []
    try:
        wait_port(PROXY_ADDR, cfg["proxy_port"], time.monotonic() + 15)
        before = [commands_processed(a, p, cfg["password"]) for a, p in servers]
        get_c, set_c = split(cfg["clients"], cfg["get_ratio"])
        get_n, set_n = split(cfg["requests"], cfg["get_ratio"])
        t0 = time.perf_counter()
        for command, c, n in (("get", get_c, get_n), ("set", set_c, set_n)):
            procs.append(
                subprocess.Popen(
                    bench_argv(cfg, command, c, n),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    stdin=subprocess.DEVNULL,
                    text=True,
                )
            )
        outs = []
        for p in procs:
            out, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            if p.returncode != 0:
                print(f"redis-benchmark exit {p.returncode}: {err.strip()[-300:]}", file=sys.stderr)
                return 1
            outs.append(out)
        wall = time.perf_counter() - t0
        after = [commands_processed(a, p, cfg["password"]) for a, p in servers]
    finally:
        for p in [*procs, proxy]:
            if p.poll() is None:
                p.kill()
                p.wait(10)
    json.dump(
        {
            "get": outs[0],
            "set": outs[1],
            "wall_s": wall,
            "get_requests": get_n,
            "set_requests": set_n,
            "served": [b - a for a, b in zip(before, after)],
        },
        sys.stdout,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
