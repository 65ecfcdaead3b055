#!/bin/bash
# The host lane's steps inside the guest (tests/hosts/lane.py runs each as
# `guest.sh STEP` through the guest agent, as root). A line "NOTE ..." is
# carried to the lane's one line for the step; the rest goes to its log.
set -euo pipefail
export HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
SEED=/run/hostlane/seed
FIX=/run/hostlane/fixtures
STORE=/var/lib/isobench/results.sqlite
note() { echo "NOTE $*"; }
mark() { echo "[$SECONDS s] $*"; }
die() { echo "$*" >&2; exit 1; }

# the newest run's id in the store (try and run both keep theirs there)
last_run() {
    python3 - "$STORE" <<'EOF'
import sqlite3, sys
row = sqlite3.connect(sys.argv[1]).execute("SELECT run_id FROM runs ORDER BY rowid DESC LIMIT 1").fetchone()
print(row[0] if row else "")
EOF
}

# the mount points naming isobench in a mountinfo file, sorted
isobench_mounts() {
    { grep isobench "$1" || true; } | awk '{print $5}' | sort
}

# those not mounted at boot (the list isobench_mounts wrote then)
left_mounts() {
    isobench_mounts "$1" | comm -23 - "$2"
}

step_prepare() {
    [ "$(cat /proc/1/comm)" = systemd ] || die "PID 1 is $(cat /proc/1/comm), not systemd"
    [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] || die "/sys/fs/cgroup is $(stat -fc %T /sys/fs/cgroup), not cgroup2"
    ! grep -q ' - cgroup ' /proc/self/mountinfo || die "a cgroup v1 hierarchy is mounted"
    mark "checked PID 1 and cgroup2"
    # the image's own fstab mounts /isobench/tmp and /isobench/data (it is
    # isobench's VM disk): boot state, which `clean` must not count as left
    isobench_mounts /proc/self/mountinfo >/run/hostlane/mounts-at-boot
    resize2fs "$(findmnt -no SOURCE /)" >/dev/null 2>&1 || die "cannot grow the root file system"
    # QEMU's user network: the guest's one NIC, static (lane.py's USER_NET, in 198.18.0.0/15)
    nic=$(ls /sys/class/net | grep -v '^lo$' | head -1)
    ip link set "$nic" up
    ip addr replace 198.18.250.15/24 dev "$nic"
    ip route replace default via 198.18.250.2
    echo "nameserver 198.18.250.3" >/etc/resolv.conf
    mark "root grown, network up"
    state=$(timeout 120 systemctl is-system-running --wait 2>/dev/null || true)
    mark "systemd: $state"
    # the image's rootfs.tar and its record, so setup imports it rather than build it
    if [ -d "$SEED/images" ]; then
        mkdir -p /var/lib/isobench/images
        cp -a "$SEED/images/." /var/lib/isobench/images/
        note "image files seeded from the host ($(ls "$SEED/images")): setup imports them, no debootstrap"
    fi
    if [ -d "$SEED/apt-lists" ] && [ -z "$(ls /var/lib/apt/lists | grep deb.debian.org_ || true)" ]; then
        cp "$SEED"/apt-lists/* /var/lib/apt/lists/
        note "the host's apt lists of deb.debian.org seeded (setup's apt-get update then only checks them)"
    fi
    # python3 as Debian's standard system utilities bring it (apt under TCG: minutes)
    if ! dpkg -s python3 >/dev/null 2>&1; then
        timeout 600 apt-get update -q >/dev/null
        timeout 600 apt-get install -y -q --no-install-recommends python3 >/dev/null
        note "installed python3 (apt)"
    fi
    # the host's certificate bundle (its network's TLS proxy among them): uv
    # reaches PyPI through it, as a server on that network would
    if [ -f "$SEED/ca-certificates.crt" ]; then
        install -m 644 "$SEED/ca-certificates.crt" /usr/local/share/hostlane-ca.crt
        note "the host's certificate bundle for uv"
    fi
    capture layout
    note "systemd $(systemctl --version | awk 'NR==1{print $2}') ($state), cgroup2 only, docker.service $(systemctl is-enabled docker.service 2>/dev/null || true)"
}

# the guest's real file layout, kept for the unit tests' fixtures
capture() {
    local d="$FIX/$1"
    mkdir -p "$d"
    cat /proc/self/cgroup >"$d/proc-self-cgroup"
    cat /proc/1/cgroup >"$d/proc-1-cgroup"
    grep -E ' - cgroup2? ' /proc/self/mountinfo >"$d/mountinfo-cgroup" || true
    for f in cgroup.controllers cgroup.subtree_control; do cat "/sys/fs/cgroup/$f" >"$d/root-$f"; done
    ls /sys/fs/cgroup >"$d/root-listing"
    ls /sys/fs/cgroup/system.slice >"$d/system.slice-listing"
    cat /sys/fs/cgroup/system.slice/cgroup.subtree_control >"$d/system.slice-cgroup.subtree_control"
    cat /sys/fs/cgroup/system.slice/cpuset.cpus.effective >"$d/system.slice-cpuset.cpus.effective" 2>/dev/null || true
}

step_install() {
    install -m 755 "$SEED/uv" /usr/local/bin/uv
    [ ! -f /usr/local/share/hostlane-ca.crt ] || export SSL_CERT_FILE=/usr/local/share/hostlane-ca.crt UV_NATIVE_TLS=1
    UV_TOOL_BIN_DIR=/usr/local/bin timeout 540 uv tool install --python /usr/bin/python3 "$SEED"/isobench-*.whl
    isobench --version
    note "uv tool install of $(basename "$SEED"/isobench-*.whl) (uv $(uv --version | awk '{print $2}'), the host's binary)"
}

step_setup() {
    isobench setup --yes
    systemctl is-active docker.service >/dev/null || die "docker.service is not active after setup"
    note "docker.service $(systemctl is-enabled docker.service), $(docker info -f 'cgroup v{{.CgroupVersion}} driver {{.CgroupDriver}}')"
}

step_check() {
    out=$(isobench setup --check 2>&1) || { echo "$out"; die "setup --check: $(echo "$out" | tail -1)"; }
    echo "$out"
    grep -q "host ready" <<<"$out" || die "setup --check did not say host ready"
}

step_doctor() {
    rc=0
    isobench doctor || rc=$?
    [ "$rc" -le 1 ] || die "isobench doctor exited $rc"
}

# the duet's record of each sample: which mechanism moved each side
duet_moves() {
    python3 - "$STORE" "$1" <<'EOF'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
seen = {}
for env, extra in db.execute("SELECT env, extra FROM samples WHERE run_id = ? AND warmup = 0", (sys.argv[2],)):
    duet = json.loads(extra).get("duet") or {}
    seen.setdefault(env, set()).add(duet.get("moved_by", "not recorded"))
for env, how in sorted(seen.items()):
    print(f"{env}: {'; '.join(sorted(how))}")
EOF
}

step_try() {
    isobench try --rounds 3 --schedule duet --env native --env docker-host -- \
        python3 -c 'sum(i * i for i in range(1_500_000))'
    run=$(last_run)
    moves=$(duet_moves "$run")
    echo "$moves"
    grep -q "^docker-host: cgroup v2 cpuset.cpus write (system.slice/docker-" <<<"$moves" || die "docker-host was not moved by its cgroup file: $moves"
    grep -q "^native: cgroup v2 cpuset.cpus write (system.slice/isobench-[0-9]*.scope/" <<<"$moves" || die "native was not moved by its own cgroup: $moves"
    ! grep -Eq "docker update|sched_setaffinity|not recorded" <<<"$moves" || die "a move by another mechanism: $moves"
    note "run $run: moves by cgroup v2 cpuset.cpus writes on both sides"
}

step_study() {
    # the container's cgroup while it runs, for the fixtures
    (for _ in $(seq 600); do
        id=$(docker ps -q --no-trunc --filter label=isobench | head -1)
        if [ -n "$id" ] && [ -d "/sys/fs/cgroup/system.slice/docker-$id.scope" ]; then
            mkdir -p "$FIX/container"
            ls "/sys/fs/cgroup/system.slice/docker-$id.scope" >"$FIX/container/scope-listing"
            echo "$id" >"$FIX/container/id"
            docker exec "$id" cat /proc/self/cgroup >"$FIX/container/proc-self-cgroup" 2>/dev/null || true
            break
        fi
        sleep 1
    done) &
    rc=0
    out=$(isobench run "$SEED/study.toml" 2>&1) || rc=$?
    echo "$out"
    run=$(last_run)
    python3 - "$STORE" "$run" <<'EOF'
import sqlite3, sys
for row in sqlite3.connect(sys.argv[1]).execute(
    "SELECT env, workload, status, COALESCE(error, '') FROM samples WHERE run_id = ? ORDER BY id", (sys.argv[2],)
):
    print(" | ".join(map(str, row)))
EOF
    errs=$(python3 -c 'import sqlite3,sys; print("\n".join(r[0] for r in sqlite3.connect(sys.argv[1]).execute("SELECT env||\": \"||COALESCE(error,\"\") FROM samples WHERE run_id=? AND status<>\"ok\"", (sys.argv[2],))))' "$STORE" "$run")
    grep -q "^docker-oom: .*out of memory (limit 64 MB)" <<<"$errs" || die "docker-oom's sample was not said killed out of memory: $errs"
    ! grep -v "^docker-oom: " <<<"$errs" | grep -q . || die "failed samples besides the OOM's: $errs"
    note "run $run (exit $rc): docker-oom killed out of memory (memory.events), crun and gVisor samples ok"
}

step_resume() {
    # the run this step starts, not the store's newest before it is stored
    # (2026-11-29: the try run's 6 samples were counted, and the SIGINT came
    # before the new run had one)
    before=$(last_run)
    # (trap - INT): a background job starts with SIGINT ignored, and the
    # run went on to complete after it (2026-11-29)
    (trap - INT; exec isobench run "$SEED/resume.toml") >/run/hostlane/interrupted.log 2>&1 &
    pid=$!
    n=0 run=""
    for _ in $(seq 600); do
        sleep 1
        run=$(last_run)
        if [ "$run" != "$before" ]; then
            n=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT COUNT(*) FROM samples WHERE run_id=? AND warmup=0", (sys.argv[2],)).fetchone()[0])' "$STORE" "$run" 2>/dev/null || echo 0)
            [ "$n" -ge 1 ] && break
        fi
        kill -0 "$pid" 2>/dev/null || break
    done
    [ "$run" != "$before" ] || die "the resume study stored no run"
    kill -INT "$pid" 2>/dev/null || die "the run ended before it could be interrupted"
    rc=0; wait "$pid" || rc=$?
    cat /run/hostlane/interrupted.log
    echo "interrupted after $n samples: exit $rc"
    status=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT status FROM runs WHERE run_id=?", (sys.argv[2],)).fetchone()[0])' "$STORE" "$run")
    [ "$status" != complete ] || die "run $run was complete before --resume: the interrupt came too late to test it"
    isobench run --resume "$run"
    status=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT status FROM runs WHERE run_id=?", (sys.argv[2],)).fetchone()[0])' "$STORE" "$run")
    [ "$status" = complete ] || die "run $run is $status after --resume"
    note "run $run: interrupted (exit $rc) after $n samples, resumed to complete"
}

step_clean() {
    isobench clean
    left=()
    [ -z "$(docker ps -aq --filter label=isobench)" ] || left+=("containers: $(docker ps -a --filter label=isobench --format '{{.Names}}' | xargs)")
    [ -z "$(docker volume ls -q --filter label=isobench)" ] || left+=("volumes")
    [ -z "$(docker network ls -q --filter label=isobench)" ] || left+=("networks")
    kids=$( (find /sys/fs/cgroup/isobench -mindepth 1 -type d; ls -d /sys/fs/cgroup/*.slice/isobench-*.scope) 2>/dev/null | head -3 || true)
    [ -z "$kids" ] || left+=("cgroups: $kids")
    scopes=$(ls -d /sys/fs/cgroup/system.slice/docker-*.scope 2>/dev/null | head -3 || true)
    [ -z "$scopes" ] || left+=("container cgroups: $scopes")
    mounts=$(left_mounts /proc/self/mountinfo /run/hostlane/mounts-at-boot | head -3)
    [ -z "$mounts" ] || left+=("mounts: $mounts")
    files=$(find /var/lib/isobench/scratch /dev/shm/isobench -mindepth 1 2>/dev/null | head -3 || true)
    [ -z "$files" ] || left+=("files: $files")
    [ "${#left[@]}" = 0 ] || die "left behind: ${left[*]}"
    note "nothing left: containers, volumes, networks, cgroups, mounts, scratch files"
}

step_fixtures() {
    tar -C "$FIX" -c . | base64 -w0
}

[ "${BASH_SOURCE[0]}" = "$0" ] || return 0  # sourced (tests/unit/test_hostlane_steps.py): functions only

# each step's output also kept in the guest, so a step the lane kills at
# its deadline still says where it was (lane.py reads the tails)
mkdir -p /run/hostlane/steps
"step_$1" > >(tee "/run/hostlane/steps/$1.out") 2> >(tee "/run/hostlane/steps/$1.err" >&2)
