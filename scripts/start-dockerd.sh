#!/usr/bin/env bash
# Configure Docker Engine for isobench and make sure it is up.
#
# - /etc/docker/daemon.json gets isobench's keys merged in (other keys kept):
#   docker0 at 198.18.0.1/24 and user networks from 198.18.64.0/18, inside the
#   RFC 2544 benchmarking range 198.18.0.0/15, never a LAN range; overlay2;
#   the installed OCI runtimes crun and runsc (gVisor) under "runtimes"
#   (src/isobench/host/daemonconf.py, docs/environments/runtimes.md).
# - If dockerd answers with that bridge and the file did not change: nothing.
# - If only "runtimes" changed: SIGHUP (dockerd reloads them, containers keep running).
# - Else (re)start it: `systemctl restart docker` when systemd is PID 1,
#   otherwise a detached dockerd (pidfile /var/run/docker.pid, log
#   /var/log/isobench-dockerd.log), then wait up to 60 s for `docker info`.
#
# Idempotent; run as root. Used by install-host.sh and by test setups.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
BIP_GATEWAY=198.18.0.1
CONF=/etc/docker/daemon.json
LOG=/var/log/isobench-dockerd.log
PIDFILE=/var/run/docker.pid
DOCKER=/usr/bin/docker
[ -x "$DOCKER" ] || DOCKER=$(command -v docker || true)

say() { echo "start-dockerd: $*"; }
die() { echo "start-dockerd: error: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root"
command -v dockerd >/dev/null || die "dockerd not installed (run scripts/install-host.sh)"
[ -n "$DOCKER" ] || die "docker client not installed"
command -v python3 >/dev/null || die "python3 is needed to edit $CONF"

answering() { timeout 10 "$DOCKER" info >/dev/null 2>&1; }
bridge_gateway() {
    timeout 10 "$DOCKER" network inspect bridge \
        -f '{{range .IPAM.Config}}{{.Gateway}}{{end}}' 2>/dev/null || true
}

# 1. daemon.json
mkdir -p /etc/docker
# base keys plus the installed OCI runtimes (crun, runsc), merged by
# isobench.host.daemonconf (Debian's python3, stdlib only)
conf_state=$(PYTHONPATH="${ISOBENCH_PYTHONPATH:-$ROOT/src}" python3 -S -m isobench.host.daemonconf "$CONF") || die "cannot update $CONF"
say "$CONF $conf_state (bip $BIP_GATEWAY/24, pools 198.18.64.0/18, overlay2, runtimes: $(command -v crun runsc | xargs -r -n1 basename | xargs))"

# crun refuses a "hybrid" cgroup host whose cgroup2 still holds controllers
# (here: hugetlb, which no v1 hierarchy claims). Mounting each such
# controller as its own v1 hierarchy, as systemd's hybrid layout does, moves
# it off cgroup2; runc uses it as v1 like the others. Only when the cgroup2
# root has not enabled it for children (else the kernel refuses: left as is).
unified=/sys/fs/cgroup/unified
# (cgroupfs files report size 0: read them, never test -s)
if mountpoint -q "$unified" && [ -n "$(cat "$unified/cgroup.controllers" 2>/dev/null)" ]; then
    for ctl in $(cat "$unified/cgroup.controllers"); do
        grep -qw "$ctl" "$unified/cgroup.subtree_control" && continue
        mkdir -p "/sys/fs/cgroup/$ctl"
        if mount -t cgroup -o "$ctl" cgroup "/sys/fs/cgroup/$ctl" 2>/dev/null; then
            say "cgroup controller $ctl moved from cgroup2 to its own v1 hierarchy (crun needs an empty cgroup2)"
        else
            say "warning: cannot mount cgroup controller $ctl as v1: crun will not run here"
        fi
    done
fi

# 2. already up with this configuration?
if answering; then
    gw=$(bridge_gateway)
    if [ "$conf_state" = unchanged ] && [ "$gw" = "$BIP_GATEWAY" ]; then
        say "dockerd already running, docker0 gateway $gw"
        exit 0
    fi
    # dockerd reloads "runtimes" on SIGHUP (Docker 20.10: reloadable), running containers untouched
    if [ "$conf_state" = runtimes ] && [ "$gw" = "$BIP_GATEWAY" ]; then
        pid=$(cat "$PIDFILE" 2>/dev/null || pgrep -xo dockerd || true)
        [ -n "$pid" ] || die "dockerd answers but its pid is unknown; reload it by hand (kill -HUP)"
        kill -HUP "$pid"
        for _ in $(seq 1 20); do
            missing=$(python3 -S -c 'import json,sys; c=json.load(open(sys.argv[1])); print(" ".join(sorted(c.get("runtimes", {}))))' "$CONF")
            have=$(timeout 10 "$DOCKER" info -f '{{range $k, $v := .Runtimes}}{{$k}} {{end}}' 2>/dev/null || true)
            ok=1; for r in $missing; do case " $have " in *" $r "*) ;; *) ok=0;; esac; done
            [ "$ok" = 1 ] && { say "dockerd (pid $pid) reloaded its runtimes: $have"; exit 0; }
            sleep 0.5
        done
        die "dockerd (pid $pid) did not pick up the runtimes of $CONF after SIGHUP (see $LOG)"
    fi
    say "dockerd running with docker0 gateway '${gw:-?}' or an older config: restarting"
    action=restart
else
    action=start
fi

# 3. (re)start
if [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ]; then
    say "systemctl $action docker"
    systemctl enable docker.service >/dev/null 2>&1 || true
    systemctl restart docker.service
else
    if [ -s "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
        pid=$(cat "$PIDFILE")
        say "stopping dockerd (pid $pid)"
        kill -TERM "$pid"
        for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        kill -0 "$pid" 2>/dev/null && die "dockerd (pid $pid) did not stop within 30 s"
    elif answering; then
        die "a dockerd without $PIDFILE is answering; stop it by hand"
    fi
    # Without systemd nobody mounts the cgroup hierarchy for us.
    if ! mountpoint -q /sys/fs/cgroup; then
        say "mounting cgroup2 on /sys/fs/cgroup"
        mount -t cgroup2 cgroup2 /sys/fs/cgroup
    fi
    say "starting dockerd detached (log $LOG)"
    setsid nohup dockerd --pidfile "$PIDFILE" >>"$LOG" 2>&1 </dev/null &
fi

for _ in $(seq 1 60); do
    if answering; then
        gw=$(bridge_gateway)
        [ "$gw" = "$BIP_GATEWAY" ] || die "dockerd is up but docker0 gateway is '$gw', not $BIP_GATEWAY"
        say "dockerd up: $("$DOCKER" version -f 'server {{.Server.Version}}'), docker0 gateway $gw"
        exit 0
    fi
    sleep 1
done
tail -n 20 "$LOG" >&2 2>/dev/null || true
die "dockerd did not answer within 60 s (see $LOG)"
