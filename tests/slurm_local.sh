#!/usr/bin/env bash
# A one-node SLURM controller on this machine (Debian, as root), for the tests that need a
# real one (tests/test_run_slurm_controller.py and the controller tests of
# test_run_slurm.py and test_run_slurm_submit.py skip without it). CI does not start it.
# The node claims 8 cards backed by stand-in device files, 16 CPUs and 64000 MB, and
# KillWait is 5 s, so the stop tests take seconds. A slurm.conf this script did not write
# is never touched. Stop it with: kill $(cat /run/slurmd.pid /run/slurmctld.pid)
set -euo pipefail
[[ "$(id -u)" == 0 ]] || { echo "slurm_local.sh: run as root" >&2; exit 2; }
marker="# written by campaign-planner tests/slurm_local.sh"
conf=/etc/slurm/slurm.conf
if [[ -e "$conf" ]] && ! grep -qxF "$marker" "$conf"; then
  echo "slurm_local.sh: $conf exists and is not this script's: left alone" >&2; exit 2
fi
if ! command -v slurmctld >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm >/dev/null
fi
host=$(hostname -s)
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
for i in 0 1 2 3 4 5 6 7; do [[ -e /dev/fakegpu$i ]] || mknod /dev/fakegpu$i c 1 3; done
cat >"$conf" <<EOF
$marker
ClusterName=local
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SlurmdParameters=config_overrides
ReturnToService=2
GresTypes=gpu
KillWait=5
MaxArraySize=1001
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=$host CPUs=16 RealMemory=64000 Gres=gpu:8 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
printf 'AutoDetect=off\nNodeName=%s Name=gpu File=/dev/fakegpu[0-7]\n' "$host" \
  >/etc/slurm/gres.conf
chown munge:munge /run/munge
[[ -f /etc/munge/munge.key ]] || mungekey --create
pgrep -x munged >/dev/null || su -s /bin/sh munge -c /usr/sbin/munged
pgrep -x slurmctld >/dev/null || /usr/sbin/slurmctld
pgrep -x slurmd >/dev/null || /usr/sbin/slurmd
for _ in $(seq 60); do
  if sinfo -h -o %t 2>/dev/null | grep -qx idle; then scontrol ping; exit 0; fi
  sleep 1
done
echo "slurm_local.sh: the node did not come up; see /var/log/slurm/" >&2
exit 1
