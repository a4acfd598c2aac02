#!/bin/sh
# .ci/slurm.sh — a real single-node Slurm on loopback for mlwarden's sbatch
# hook end-to-end test (deploy/slurm/e2e_test.go).
#
# Source it (it exports what the test needs), as root, as CI runs:
#
#     . .ci/slurm.sh            # install, build mlwarden, start munged/slurmctld/slurmd
#     go test ./deploy/slurm/   # the E2E test
#     slurm_stop                # stop the daemons by PID
#
# Idempotent: packages already installed are not reinstalled, a running
# cluster started by an earlier call is stopped first. Exports:
#   MLWARDEN_TEST_SLURM=1          the E2E test runs (it fails when CI=true and this is unset)
#   MLWARDEN_TEST_SLURM_DIR        the cluster's directory (slurm.conf, job_submit.lua, logs)
#   MLWARDEN_TEST_SLURM_BIN        the mlwarden binary (the checker on a socket; job_submit.lua's MLWARDEN)
#   MLWARDEN_TEST_SLURM_SBATCH_BIN mlwarden-sbatch (-tags mlwarden_sbatch), which job_submit.lua runs per job
#   SLURM_CONF                     for sbatch, squeue, scontrol
# The E2E test also runs `mlwarden sbatch --serve` itself and points
# job_submit.lua at it, to test the socket mode.
# Variables read: MLWARDEN_TEST_SLURM_DIR (default /tmp/mlwarden-slurm),
# SLURMCTLD_PORT (6817), SLURMD_PORT (6818), MLWARDEN_TEST_SLURM_PLUGIN (1;
# 0 starts the controller without the job_submit plugin, for the latency
# baseline), MLWARDEN_TEST_SLURM_BUILD (1; 0 reuses the binary built before).

slurm_stop() {
	_d=${MLWARDEN_TEST_SLURM_DIR:-/tmp/mlwarden-slurm}
	for _p in slurmd slurmctld munged; do
		if [ -f "$_d/$_p.pid" ]; then
			_pid=$(cat "$_d/$_p.pid")
			if [ -n "$_pid" ] && kill "$_pid" 2>/dev/null; then
				# Wait up to 10 s for it to go.
				_i=0
				while kill -0 "$_pid" 2>/dev/null && [ $_i -lt 100 ]; do sleep 0.1; _i=$((_i + 1)); done
				kill -9 "$_pid" 2>/dev/null || true
			fi
			rm -f "$_d/$_p.pid"
		fi
	done
}

slurm_start() {
	set -e
	_repo=$(cd "$(dirname "${MLWARDEN_SLURM_SH:-.ci/slurm.sh}")/.." && pwd)
	# job_submit_lua.so is in slurm-wlm-basic-plugins (linked to liblua5.1-0);
	# lua-socket lets job_submit.lua talk to `mlwarden sbatch --serve`.
	_pkgs="munge slurmctld slurmd slurm-client slurm-wlm-basic-plugins lua-socket"
	# shellcheck disable=SC2086
	if ! dpkg-query -W -f='${Status}\n' $_pkgs 2>/dev/null | grep -qv 'install ok installed' &&
		[ "$(dpkg-query -W -f='${Status}\n' $_pkgs 2>/dev/null | wc -l)" -eq 6 ]; then
		: # all installed
	else
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $_pkgs >/dev/null
	fi

	MLWARDEN_TEST_SLURM_DIR=${MLWARDEN_TEST_SLURM_DIR:-/tmp/mlwarden-slurm}
	_d=$MLWARDEN_TEST_SLURM_DIR
	slurm_stop
	rm -rf "$_d/state" "$_d/spool"
	mkdir -p "$_d/state" "$_d/spool" "$_d/bin" "$_d/munge" "$_d/jobs"
	chmod 755 "$_d" "$_d/jobs"

	# mlwarden, as job_submit.lua runs it.
	MLWARDEN_TEST_SLURM_BIN=$_d/bin/mlwarden
	if [ "${MLWARDEN_TEST_SLURM_BUILD:-1}" = 1 ] || [ ! -x "$MLWARDEN_TEST_SLURM_BIN" ]; then
		(cd "$_repo" && go build -o "$MLWARDEN_TEST_SLURM_BIN" ./cmd/mlwarden)
	fi
	MLWARDEN_TEST_SLURM_SBATCH_BIN=$_d/bin/mlwarden-sbatch
	if [ "${MLWARDEN_TEST_SLURM_BUILD:-1}" = 1 ] || [ ! -x "$MLWARDEN_TEST_SLURM_SBATCH_BIN" ]; then
		(cd "$_repo" && go build -tags mlwarden_sbatch -o "$MLWARDEN_TEST_SLURM_SBATCH_BIN" ./cmd/mlwarden)
	fi

	# munge: the packaged key, its own socket so that a system munged is not disturbed.
	if [ ! -s /etc/munge/munge.key ]; then
		mungekey --create --keyfile=/etc/munge/munge.key
		chown munge:munge /etc/munge/munge.key
		chmod 600 /etc/munge/munge.key
	fi
	chown munge:munge "$_d/munge"
	runuser -u munge -- /usr/sbin/munged --socket="$_d/munge/munge.socket" \
		--pid-file="$_d/munge/munged.pid" --log-file="$_d/munge/munged.log" --seed-file="$_d/munge/seed"
	cp "$_d/munge/munged.pid" "$_d/munged.pid"

	_host=$(hostname -s)
	_cpus=$(nproc)
	cat >"$_d/slurm.conf" <<EOF
# Written by .ci/slurm.sh: one node on loopback.
ClusterName=mlwarden
SlurmctldHost=$_host(127.0.0.1)
SlurmctldPort=${SLURMCTLD_PORT:-6817}
SlurmdPort=${SLURMD_PORT:-6818}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$_d/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$_d/state
SlurmdSpoolDir=$_d/spool
SlurmctldPidFile=$_d/slurmctld.pid
SlurmdPidFile=$_d/slurmd.pid
SlurmctldLogFile=$_d/slurmctld.log
SlurmdLogFile=$_d/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MessageTimeout=10
EOF
	if [ "${MLWARDEN_TEST_SLURM_PLUGIN:-1}" = 1 ]; then
		echo "JobSubmitPlugins=lua" >>"$_d/slurm.conf"
	fi
	cat >>"$_d/slurm.conf" <<EOF
NodeName=$_host NodeAddr=127.0.0.1 CPUs=$_cpus State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
	# job_submit.lua beside slurm.conf, pointed at the binaries built above.
	sed -e "s|^local MLWARDEN = \"mlwarden\"|local MLWARDEN = \"$MLWARDEN_TEST_SLURM_BIN\"|" \
		-e "s|^local MLWARDEN_SBATCH = \"/usr/local/bin/mlwarden-sbatch\"|local MLWARDEN_SBATCH = \"$MLWARDEN_TEST_SLURM_SBATCH_BIN\"|" \
		"$_repo/deploy/slurm/job_submit.lua" >"$_d/job_submit.lua"
	grep -q "^local MLWARDEN = \"$MLWARDEN_TEST_SLURM_BIN\"" "$_d/job_submit.lua"
	grep -q "^local MLWARDEN_SBATCH = \"$MLWARDEN_TEST_SLURM_SBATCH_BIN\"" "$_d/job_submit.lua"

	SLURM_CONF=$_d/slurm.conf
	export SLURM_CONF MLWARDEN_TEST_SLURM_DIR MLWARDEN_TEST_SLURM_BIN MLWARDEN_TEST_SLURM_SBATCH_BIN
	/usr/sbin/slurmctld -i -f "$SLURM_CONF"
	/usr/sbin/slurmd -f "$SLURM_CONF"

	# Wait (at most 60 s) for the node to be idle.
	_i=0
	until sinfo -h -N -o '%T' 2>/dev/null | grep -q '^idle'; do
		_i=$((_i + 1))
		if [ $_i -gt 120 ]; then
			echo ".ci/slurm.sh: the node did not become idle; logs in $_d" >&2
			tail -20 "$_d/slurmctld.log" "$_d/slurmd.log" >&2 || true
			set +e
			return 1
		fi
		sleep 0.5
	done
	MLWARDEN_TEST_SLURM=1
	export MLWARDEN_TEST_SLURM
	set +e
	echo ".ci/slurm.sh: Slurm is up ($(sinfo -h -N -o '%N %T')), SLURM_CONF=$SLURM_CONF"
}

case "${1:-start}" in
stop) slurm_stop ;;
*) slurm_start ;;
esac
