#!/usr/bin/env bash
# A single-node SLURM on this machine, to try `snakemake --profile profiles/slurm` on one box and
# to run the test suite's SLURM tests (pytest -m slurm). Debian/Ubuntu: slurm-wlm 22.05 + munge.
#
# Usage (root, or a user with sudo):
#   scripts/local-slurm.sh start    install slurm-wlm + munge if missing, configure, start, wait
#                                   until the node is idle (a fresh cluster: old jobs are dropped)
#   scripts/local-slurm.sh stop     stop slurmd, slurmctld and munged (queued jobs are lost)
#   scripts/local-slurm.sh status   controller, node and queue; exit 1 when the controller is down
#
# What it sets up:
#   config /etc/slurm/slurm.conf, state /var/spool/slurm-local, logs /var/log/slurm-local
#   one node (this host) and one partition `debug`, cores and memory consumable, so a job's --mem
#   is a hard request; a job whose processes go over their --mem is killed about 1 s later
#   (jobacct_gather polling + OverMemoryKill: works without writable cgroups, e.g. in containers);
#   no accounting database, so `sacct` does not answer: finished jobs stay visible to `squeue`
#   and `scontrol show job` for MinJobAge seconds (>= 120, what the snakemake slurm plugin's
#   `slurm-status-command: squeue` needs). Finished jobs are also appended to
#   /var/log/slurm-local/jobcomp.log (JobId, JobName, JobState, the requested TRES incl. mem).
#
# Settings (environment):
#   LOCAL_SLURM_MEM_MB=N       memory the node offers (default: 90% of this machine's)
#   LOCAL_SLURM_CPUS=N         cores the node offers (default: nproc)
#   LOCAL_SLURM_MINJOBAGE=S    seconds finished jobs stay queryable (default 600, at least 120)
#   LOCAL_SLURM_NO_INSTALL=1   never run apt-get
set -euo pipefail

ACTION="${1:-}"
CONF_DIR=/etc/slurm
STATE_DIR=/var/spool/slurm-local
LOG_DIR=/var/log/slurm-local
RUN_DIR=/run/slurm-local
MUNGE_RUN=/run/munge
MUNGE_KEY=/etc/munge/munge.key
MUNGE_SOCKET="$MUNGE_RUN/munge.socket.2"
export SLURM_CONF="$CONF_DIR/slurm.conf"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

log() { echo "[local-slurm] $*" >&2; }
die() { echo "error: $1" >&2; echo "fix: $2" >&2; exit 1; }

install_packages() {
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null \
        && command -v sbatch >/dev/null && command -v munged >/dev/null; then
        return
    fi
    [ "${LOCAL_SLURM_NO_INSTALL:-0}" = 1 ] \
        && die "slurmctld, slurmd, sbatch or munged is missing and LOCAL_SLURM_NO_INSTALL=1" \
               "apt-get install slurmctld slurmd slurm-client munge (Debian's slurm-wlm)"
    command -v apt-get >/dev/null \
        || die "no apt-get: this script installs Debian/Ubuntu's slurm-wlm" \
               "install slurmctld, slurmd, the SLURM client tools and munge yourself"
    log "installing slurmctld slurmd slurm-client munge (Debian's slurm-wlm, ~40 s)"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    # The packages' postinst scripts try to start services; harmless without systemd, and the
    # daemons are started below with this script's configuration anyway.
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        slurmctld slurmd slurm-client munge >/dev/null
}

host_short() { hostname -s 2>/dev/null || hostname; }

write_config() {
    local host cpus mem minjobage
    host="$(host_short)"
    cpus="${LOCAL_SLURM_CPUS:-$(nproc)}"
    mem="${LOCAL_SLURM_MEM_MB:-$(( $(free -m | awk '/^Mem:/{print $2}') * 90 / 100 ))}"
    minjobage="${LOCAL_SLURM_MINJOBAGE:-600}"
    if [ "$minjobage" -lt 120 ]; then
        log "LOCAL_SLURM_MINJOBAGE=$minjobage is below 120 s, the least the slurm plugin's" \
            "squeue status checks need; using 120"
        minjobage=120
    fi
    $SUDO mkdir -p "$CONF_DIR" "$LOG_DIR" "$STATE_DIR/ctld" "$STATE_DIR/d" "$RUN_DIR"
    # slurmd finds its node entry by this host's name: make sure the name resolves.
    getent hosts "$host" >/dev/null || echo "127.0.1.1 $host" | $SUDO tee -a /etc/hosts >/dev/null
    $SUDO tee "$SLURM_CONF" >/dev/null <<EOF
# written by embedprobe's scripts/local-slurm.sh: a single-node test cluster
ClusterName=localslurm
SlurmctldHost=${host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=${MUNGE_SOCKET}
CryptoType=crypto/munge
MpiDefault=none
StateSaveLocation=${STATE_DIR}/ctld
SlurmdSpoolDir=${STATE_DIR}/d
SlurmctldPidFile=${RUN_DIR}/slurmctld.pid
SlurmdPidFile=${RUN_DIR}/slurmd.pid
SlurmctldLogFile=${LOG_DIR}/slurmctld.log
SlurmdLogFile=${LOG_DIR}/slurmd.log
ReturnToService=2
# cores and memory are consumable: --mem is a hard request, jobs share the node by it
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# a job without --mem would otherwise hold the whole node's memory
DefMemPerCPU=256
# memory enforcement by polling every second: a job step over its --mem gets SIGKILL
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
JobAcctGatherParams=OverMemoryKill
# no accounting database: finished jobs stay in squeue/scontrol for MinJobAge seconds
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=${LOG_DIR}/jobcomp.log
MinJobAge=${minjobage}
KillWait=5
InactiveLimit=0
MailProg=/bin/true
NodeName=${host} NodeAddr=127.0.0.1 CPUs=${cpus} RealMemory=${mem} State=UNKNOWN
PartitionName=debug Nodes=${host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
    # cgroup.conf from an earlier cgroup setup would switch enforcement behind our back
    $SUDO rm -f "$CONF_DIR/cgroup.conf"
    log "wrote $SLURM_CONF (node ${host}: CPUs=${cpus} RealMemory=${mem} MB," \
        "MinJobAge=${minjobage} s)"
}

pid_alive() { [ -f "$1" ] && $SUDO kill -0 "$(cat "$1")" 2>/dev/null; }

start_munge() {
    pid_alive "$MUNGE_RUN/munged.pid" && return
    $SUDO mkdir -p "$MUNGE_RUN" "$(dirname "$MUNGE_KEY")"
    if [ ! -s "$MUNGE_KEY" ]; then
        if command -v mungekey >/dev/null; then
            $SUDO mungekey --create --force --keyfile="$MUNGE_KEY"
        else
            $SUDO dd if=/dev/urandom of="$MUNGE_KEY" bs=1 count=1024 status=none
        fi
    fi
    $SUDO chown munge:munge "$MUNGE_RUN" "$MUNGE_KEY"
    $SUDO chmod 0400 "$MUNGE_KEY"
    $SUDO chmod 0755 "$MUNGE_RUN"
    # munged refuses to run as root: run it as its own user
    $SUDO runuser -u munge -- /usr/sbin/munged --socket="$MUNGE_SOCKET" --key-file="$MUNGE_KEY" \
        --pid-file="$MUNGE_RUN/munged.pid" --log-file="$MUNGE_RUN/munged.log" \
        --seed-file="$MUNGE_RUN/munged.seed"
    for _ in $(seq 50); do
        munge -S "$MUNGE_SOCKET" -n 2>/dev/null | unmunge -S "$MUNGE_SOCKET" >/dev/null 2>&1 \
            && return
        sleep 0.2
    done
    die "munged does not answer on $MUNGE_SOCKET" "read $MUNGE_RUN/munged.log"
}

start_slurm() {
    local host state=""
    host="$(host_short)"
    # -c: a fresh cluster, jobs of an earlier session are dropped
    pid_alive "$RUN_DIR/slurmctld.pid" || $SUDO slurmctld -c -f "$SLURM_CONF"
    for _ in $(seq 60); do scontrol ping 2>/dev/null | grep -q UP && break; sleep 0.5; done
    scontrol ping 2>/dev/null | grep -q UP \
        || { $SUDO tail -20 "$LOG_DIR/slurmctld.log" >&2 || true
             die "slurmctld does not answer" "read $LOG_DIR/slurmctld.log"; }
    pid_alive "$RUN_DIR/slurmd.pid" || $SUDO slurmd -N "$host" -f "$SLURM_CONF"
    for i in $(seq 120); do
        state="$(sinfo -h -N -n "$host" -o %T 2>/dev/null | head -1)"
        case "$state" in
            idle|mixed|allocated) break ;;
            *) if [ $((i % 10)) = 0 ]; then
                   $SUDO scontrol update NodeName="$host" State=RESUME 2>/dev/null || true
               fi ;;
        esac
        sleep 0.5
    done
    case "$state" in
        idle|mixed|allocated) ;;
        *) $SUDO tail -20 "$LOG_DIR/slurmd.log" >&2 || true
           die "node $host is '$state', not idle" "read $LOG_DIR/slurmd.log" ;;
    esac
    log "node $host is $state; try: snakemake --profile profiles/slurm demo"
}

stop_daemon() {
    local pidfile="$1" pid
    pid_alive "$pidfile" || return 0
    pid="$(cat "$pidfile")"
    log "stopping $(basename "$pidfile" .pid) (pid $pid)"
    $SUDO kill -TERM "$pid"
    for _ in $(seq 50); do $SUDO kill -0 "$pid" 2>/dev/null || return 0; sleep 0.2; done
    $SUDO kill -KILL "$pid" 2>/dev/null || true
}

case "$ACTION" in
    start)
        install_packages
        if pid_alive "$RUN_DIR/slurmctld.pid"; then
            log "already running"
        else
            write_config
        fi
        start_munge
        start_slurm ;;
    stop)
        stop_daemon "$RUN_DIR/slurmd.pid"
        stop_daemon "$RUN_DIR/slurmctld.pid"
        stop_daemon "$MUNGE_RUN/munged.pid" ;;
    status)
        command -v scontrol >/dev/null || die "SLURM is not installed" "scripts/local-slurm.sh start"
        scontrol ping 2>/dev/null | grep -q UP \
            || die "slurmctld does not answer" "scripts/local-slurm.sh start"
        sinfo
        squeue ;;
    *)
        echo "usage: $0 start|stop|status" >&2
        exit 2 ;;
esac
