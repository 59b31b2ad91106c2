#!/usr/bin/env bash
# voxtral_runner under a real scheduler: a one-node Slurm (slurmctld, slurmd and munged from
# Debian's slurm-wlm and munge, configured here on localhost in a temporary directory, run as
# root) runs a 3-task job array over the tiny model, each task taking its shard with
# --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT and --skip-existing, as the README shows.
# The shards' outputs together must be the inputs, each exactly once, every task must have run
# its own shard, and a second submission of the same array must find everything done.
# Skips (77) with the reason when Slurm is not installed or cannot run here.
# Usage: test_runner_slurm.sh BUILD_DIR FIXTURES_DIR
set -u
build=$1
fixtures=$2
audio=$fixtures/tiny/audio
source "$(dirname "$0")/runner_common.sh"
for tool in slurmctld slurmd munged sbatch sinfo; do
    command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || {
        echo "SKIPPED: $tool is not installed (Debian: apt-get install slurm-wlm munge)"
        exit 77
    }
done
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIPPED: a test cluster's slurmd runs jobs as root here; run as root"
    exit 77
fi
PATH=$PATH:/usr/sbin
tmp=$(mktemp -d /tmp/vox_slurm_XXXXXX)
chmod 755 "$tmp"
stop_daemons() {
    for f in "$tmp/slurmd.pid" "$tmp/slurmctld.pid" "$tmp/munge/munged.pid"; do
        [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null
    done
    sleep 0.5
}
trap 'stop_daemons; rm -rf "$tmp"' EXIT
export_tiny_model "$tmp/model"

# munge, with a key of its own and its socket in the directory
mkdir -p "$tmp/munge" "$tmp/state" "$tmp/spool" "$tmp/log"
chmod 700 "$tmp/munge"
head -c 1024 /dev/urandom >"$tmp/munge/munge.key"
chmod 400 "$tmp/munge/munge.key"
munged --key-file="$tmp/munge/munge.key" --socket="$tmp/munge/munge.socket" \
    --pid-file="$tmp/munge/munged.pid" --log-file="$tmp/munge/munged.log" \
    --seed-file="$tmp/munge/seed" --force >"$tmp/log/munged.out" 2>&1 || {
    echo "SKIPPED: munged does not start here: $(cat "$tmp/log/munged.out" "$tmp/munge/munged.log" 2>/dev/null | tail -3)"
    exit 77
}
node=$(hostname -s)
port=$((20000 + $$ % 20000))
cat >"$tmp/slurm.conf" <<CONF
ClusterName=voxtest
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$tmp/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$tmp/slurm.conf
if ! slurmctld >"$tmp/log/ctld.out" 2>&1 || ! slurmd -N "$node" >"$tmp/log/slurmd.out" 2>&1; then
    echo "SKIPPED: the Slurm daemons do not start here: $(tail -3 "$tmp"/log/*.out "$tmp"/log/*.log 2>/dev/null)"
    exit 77
fi
for ((i = 0; i < 100; i++)); do
    sinfo -h -o %t 2>/dev/null | grep -q idle && break
    sleep 0.2
done
sinfo -h -o %t 2>/dev/null | grep -q idle || {
    echo "SKIPPED: the test node never became idle: $(sinfo 2>&1 | tail -2) $(tail -3 "$tmp/log/slurmd.log")"
    exit 77
}

# 8 inputs in a list; a 3-task array, each task its shard
mkdir "$tmp/in"
for i in 0 1 2 3 4 5 6 7; do
    ln -s "$(realpath "$audio/short.wav")" "$tmp/in/f$i.wav"
    echo "$tmp/in/f$i.wav"
done >"$tmp/list.txt"
cat >"$tmp/job.sh" <<JOB
#!/usr/bin/env bash
exec "$exe" -m "$tmp/model" -d cpu -n 2 --shard \$SLURM_ARRAY_TASK_ID/\$SLURM_ARRAY_TASK_COUNT \\
    --skip-existing --files-from "$tmp/list.txt" -O "$tmp/out"
JOB
chmod +x "$tmp/job.sh"
submit() { # submit NAME: the array, waiting for it to end
    checks=$((checks + 1))
    timeout 600 sbatch --wait --array=0-2 -o "$tmp/log/$1_%a.out" -e "$tmp/log/$1_%a.err" \
        "$tmp/job.sh" >"$tmp/log/$1.sbatch" 2>&1 ||
        fail "$1: sbatch: $(cat "$tmp/log/$1.sbatch") $(cat "$tmp"/log/$1_*.err 2>/dev/null | tail -5)"
}
submit first
check "the array's outputs: every input once" [ "$(ls "$tmp/out" | grep -c '^f[0-7]\.txt$')" -eq 8 ]
check "nothing else in the output directory" [ "$(ls -A "$tmp/out" | wc -l)" -eq 8 ]
for k in 0 1 2; do
    n=$(((8 - k + 2) / 3)) # inputs at positions k mod 3
    checks=$((checks + 1))
    grep -qF "$n of $n files transcribed, 0 failed" "$tmp/log/first_$k.err" ||
        fail "task $k did not transcribe its $n inputs: $(cat "$tmp/log/first_$k.err")"
done
submit again
for k in 0 1 2; do
    checks=$((checks + 1))
    grep -qF "skipped (output exists): nothing to do" "$tmp/log/again_$k.err" ||
        fail "task $k of the second array: $(cat "$tmp/log/again_$k.err")"
done

echo "test_runner_slurm: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
