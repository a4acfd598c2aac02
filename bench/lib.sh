# Helpers shared by the benchmark scripts (source it: . bench/lib.sh).
# RUNS (default 3) is how many times median runs a command.

# median CMD... runs CMD RUNS times and prints the median wall time in
# seconds. A failing CMD is timed too; set STRICT=1 to stop on failure.
median() {
	local times=()
	for _ in $(seq "${RUNS:-3}"); do
		local s e
		s=$(date +%s.%N)
		if ! "$@" >/dev/null 2>&1 && [ "${STRICT:-0}" = 1 ]; then
			echo "failed: $*" >&2
			exit 1
		fi
		e=$(date +%s.%N)
		times+=("$(awk -v s="$s" -v e="$e" 'BEGIN {print e - s}')")
	done
	printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

# procstats CMD... runs CMD once (stdout to /dev/null) and prints the bytes
# it read (/proc/PID/io rchar, taken before the process is reaped) and its
# peak RSS in KiB.
procstats() {
	/usr/bin/python3 - "$@" <<'PY'
import os, resource, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
io = dict(l.split(": ") for l in open("/proc/%d/io" % p.pid).read().splitlines())
p.wait()
print(int(io["rchar"]), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
}
