package slurm

import (
	"strings"
	"sync"
)

// argKind is getopt's has_arg.
type argKind uint8

const (
	noArg argKind = iota
	requiredArg
	optionalArg
)

// OptionSpec describes one sbatch option as getopt_long sees it.
type OptionSpec struct {
	Name  string // long name without the dashes
	Short byte   // short letter, 0 when none
	arg   argKind
}

// sbatchOptions is the option table of sbatch 22.05 (Debian 12's Slurm): the
// long names, their short letters and whether each takes an argument. Slurm
// builds it at run time from src/common/slurm_opt.c (every slurm_cli_opt_t
// with a set_func or set_func_sbatch; has_arg is no_argument,
// required_argument or optional_argument there). The table below was read
// from that file and checked against the real sbatch by probing each name
// ("--NAME=x" says whether an argument is allowed; "--NAME" followed by a
// stray word says whether it is consumed); TestOptionTableAgainstSbatch
// repeats that probe where sbatch is installed.
var sbatchOptions = []OptionSpec{
	{"account", 'A', requiredArg},
	{"acctg-freq", 0, requiredArg},
	{"array", 'a', requiredArg},
	{"batch", 0, requiredArg},
	{"bb", 0, requiredArg},
	{"bbf", 0, requiredArg},
	{"begin", 'b', requiredArg},
	{"chdir", 'D', requiredArg},
	{"cluster", 0, requiredArg},
	{"cluster-constraint", 0, requiredArg},
	{"clusters", 'M', requiredArg},
	{"comment", 0, requiredArg},
	{"constraint", 'C', requiredArg},
	{"container", 0, requiredArg},
	{"context", 0, requiredArg},
	{"contiguous", 0, noArg},
	{"core-spec", 'S', requiredArg},
	{"cores-per-socket", 0, requiredArg},
	{"cpu-freq", 0, requiredArg},
	{"cpus-per-gpu", 0, requiredArg},
	{"cpus-per-task", 'c', requiredArg},
	{"deadline", 0, requiredArg},
	{"delay-boot", 0, requiredArg},
	{"dependency", 'd', requiredArg},
	{"distribution", 'm', requiredArg},
	{"error", 'e', requiredArg},
	{"exclude", 'x', requiredArg},
	{"exclusive", 0, optionalArg},
	{"export", 0, requiredArg},
	{"export-file", 0, requiredArg},
	{"extra-node-info", 'B', requiredArg},
	{"get-user-env", 0, optionalArg},
	{"gid", 0, requiredArg},
	{"gpu-bind", 0, requiredArg},
	{"gpu-freq", 0, requiredArg},
	{"gpus", 'G', requiredArg},
	{"gpus-per-node", 0, requiredArg},
	{"gpus-per-socket", 0, requiredArg},
	{"gpus-per-task", 0, requiredArg},
	{"gres", 0, requiredArg},
	{"gres-flags", 0, requiredArg},
	{"help", 'h', noArg},
	{"hint", 0, requiredArg},
	{"hold", 'H', noArg},
	{"ignore-pbs", 0, noArg},
	{"input", 'i', requiredArg},
	{"job-name", 'J', requiredArg},
	{"kill-on-invalid-dep", 0, requiredArg},
	{"licenses", 'L', requiredArg},
	{"mail-type", 0, requiredArg},
	{"mail-user", 0, requiredArg},
	{"mcs-label", 0, requiredArg},
	{"mem", 0, requiredArg},
	{"mem-bind", 0, requiredArg},
	{"mem-per-cpu", 0, requiredArg},
	{"mem-per-gpu", 0, requiredArg},
	{"mincpus", 0, requiredArg},
	{"network", 0, requiredArg},
	{"nice", 0, optionalArg},
	{"no-kill", 'k', optionalArg},
	{"no-requeue", 0, noArg},
	{"nodefile", 'F', requiredArg},
	{"nodelist", 'w', requiredArg},
	{"nodes", 'N', requiredArg},
	{"ntasks", 'n', requiredArg},
	{"ntasks-per-core", 0, requiredArg},
	{"ntasks-per-gpu", 0, requiredArg},
	{"ntasks-per-node", 0, requiredArg},
	{"ntasks-per-socket", 0, requiredArg},
	{"ntasks-per-tres", 0, requiredArg},
	{"open-mode", 0, requiredArg},
	{"output", 'o', requiredArg},
	{"overcommit", 'O', noArg},
	{"oversubscribe", 's', noArg},
	{"parsable", 0, noArg},
	{"partition", 'p', requiredArg},
	{"power", 0, requiredArg},
	{"prefer", 0, requiredArg},
	{"priority", 0, requiredArg},
	{"profile", 0, requiredArg},
	{"propagate", 0, optionalArg},
	{"qos", 'q', requiredArg},
	{"quiet", 'Q', noArg},
	{"reboot", 0, noArg},
	{"requeue", 0, noArg},
	{"reservation", 0, requiredArg},
	{"signal", 0, requiredArg},
	{"sockets-per-node", 0, requiredArg},
	{"spread-job", 0, noArg},
	{"switches", 0, requiredArg},
	{"tasks-per-node", 0, requiredArg},
	{"test-only", 0, noArg},
	{"thread-spec", 0, requiredArg},
	{"threads-per-core", 0, requiredArg},
	{"time", 't', requiredArg},
	{"time-min", 0, requiredArg},
	{"tmp", 0, requiredArg},
	{"uid", 0, requiredArg},
	{"usage", 0, noArg},
	{"use-min-nodes", 0, noArg},
	{"verbose", 'v', noArg},
	{"version", 'V', noArg},
	{"wait", 'W', noArg},
	{"wait-all-nodes", 0, requiredArg},
	{"wckey", 0, requiredArg},
	{"wrap", 0, requiredArg},
}

// PyxisOptions are the options NVIDIA's pyxis SPANK plugin adds to sbatch
// (pyxis' args.c). sbatch stores each in the job's environment as
// _SLURM_SPANK_OPTION_pyxis_<name with '_' for '-'>.
var pyxisOptions = []OptionSpec{
	{"container-image", 0, requiredArg},
	{"container-mounts", 0, requiredArg},
	{"container-workdir", 0, requiredArg},
	{"container-name", 0, requiredArg},
	{"container-save", 0, requiredArg},
	{"container-env", 0, requiredArg},
	{"container-mount-home", 0, noArg},
	{"no-container-mount-home", 0, noArg},
	{"container-remap-root", 0, noArg},
	{"no-container-remap-root", 0, noArg},
	{"container-entrypoint", 0, noArg},
	{"no-container-entrypoint", 0, noArg},
	{"container-entrypoint-log", 0, noArg},
	{"container-writable", 0, noArg},
	{"container-readonly", 0, noArg},
}

// SpankEnvPrefix is how sbatch passes a SPANK plugin's option to the
// controller, in the job's environment: _SLURM_SPANK_OPTION_<plugin>_<option>
// (src/common/plugstack.c, _opt_env_name / spank_set_remote_options_env).
const SpankEnvPrefix = "_SLURM_SPANK_OPTION_"

// sbatchEnv maps sbatch's input environment variables to the option each one
// sets (slurm_opt.c's .sbatch_env fields, Slurm 22.05). They override the
// script's directives and are overridden by the command line.
var sbatchEnv = map[string]string{
	"SBATCH_ACCOUNT":        "account",
	"SBATCH_ACCTG_FREQ":     "acctg-freq",
	"SBATCH_ARRAY_INX":      "array",
	"SBATCH_BATCH":          "batch",
	"SBATCH_CLUSTERS":       "clusters",
	"SLURM_CLUSTERS":        "clusters",
	"SBATCH_CONSTRAINT":     "constraint",
	"SBATCH_CONTAINER":      "container",
	"SBATCH_CORE_SPEC":      "core-spec",
	"SBATCH_CPUS_PER_GPU":   "cpus-per-gpu",
	"SBATCH_DELAY_BOOT":     "delay-boot",
	"SBATCH_DISTRIBUTION":   "distribution",
	"SBATCH_ERROR":          "error",
	"SBATCH_EXCLUSIVE":      "exclusive",
	"SBATCH_EXPORT":         "export",
	"SBATCH_GET_USER_ENV":   "get-user-env",
	"SBATCH_GPU_BIND":       "gpu-bind",
	"SBATCH_GPU_FREQ":       "gpu-freq",
	"SBATCH_GPUS":           "gpus",
	"SBATCH_GPUS_PER_NODE":  "gpus-per-node",
	"SBATCH_GPUS_PER_TASK":  "gpus-per-task",
	"SBATCH_GRES":           "gres",
	"SBATCH_GRES_FLAGS":     "gres-flags",
	"SBATCH_HINT":           "hint",
	"SLURM_HINT":            "hint",
	"SBATCH_INPUT":          "input",
	"SBATCH_JOB_NAME":       "job-name",
	"SBATCH_MEM_BIND":       "mem-bind",
	"SBATCH_MEM_PER_CPU":    "mem-per-cpu",
	"SBATCH_MEM_PER_GPU":    "mem-per-gpu",
	"SBATCH_MEM_PER_NODE":   "mem",
	"SBATCH_NETWORK":        "network",
	"SBATCH_NO_KILL":        "no-kill",
	"SBATCH_NO_REQUEUE":     "no-requeue",
	"SBATCH_OPEN_MODE":      "open-mode",
	"SBATCH_OUTPUT":         "output",
	"SBATCH_OVERCOMMIT":     "overcommit",
	"SBATCH_PARTITION":      "partition",
	"SBATCH_POWER":          "power",
	"SBATCH_PROFILE":        "profile",
	"SBATCH_QOS":            "qos",
	"SBATCH_REQ_SWITCH":     "switches",
	"SBATCH_REQUEUE":        "requeue",
	"SBATCH_RESERVATION":    "reservation",
	"SBATCH_SIGNAL":         "signal",
	"SBATCH_SPREAD_JOB":     "spread-job",
	"SBATCH_THREAD_SPEC":    "thread-spec",
	"SBATCH_TIMELIMIT":      "time",
	"SBATCH_USE_MIN_NODES":  "use-min-nodes",
	"SBATCH_WAIT":           "wait",
	"SBATCH_WAIT_ALL_NODES": "wait-all-nodes",
	"SBATCH_WCKEY":          "wckey",
}

// optionTable is the set of options one parse knows.
type optionTable struct {
	specs []OptionSpec
}

func newOptionTable(extra []OptionSpec) *optionTable {
	t := &optionTable{specs: make([]OptionSpec, 0, len(sbatchOptions)+len(extra))}
	t.specs = append(t.specs, sbatchOptions...)
	t.specs = append(t.specs, extra...)
	return t
}

// long finds a long option as getopt_long does: an exact name, or else a
// unique prefix. ambiguous lists the candidates when a prefix matches several
// options that differ.
func (t *optionTable) long(name string) (spec *OptionSpec, ambiguous []string) {
	var found *OptionSpec
	for i := range t.specs {
		s := &t.specs[i]
		if s.Name == name {
			return s, nil
		}
		if !strings.HasPrefix(s.Name, name) {
			continue
		}
		if found == nil {
			found = s
			continue
		}
		// glibc only calls a prefix ambiguous when the candidates differ
		// in has_arg, flag or val.
		if found.arg != s.arg || found.Short != s.Short || found.Short == 0 {
			if len(ambiguous) == 0 {
				ambiguous = append(ambiguous, found.Name)
			}
			ambiguous = append(ambiguous, s.Name)
		}
	}
	if len(ambiguous) > 0 {
		return nil, ambiguous
	}
	return found, nil
}

func (t *optionTable) short(c byte) *OptionSpec {
	if c == 0 {
		return nil
	}
	for i := range t.specs {
		if t.specs[i].Short == c {
			return &t.specs[i]
		}
	}
	return nil
}

// SpankOption describes an option a site's SPANK plugin adds to sbatch:
// name without dashes, and whether it takes a value (--name=VALUE).
func SpankOption(name string, takesValue bool) OptionSpec {
	s := OptionSpec{Name: strings.TrimLeft(name, "-")}
	if takesValue {
		s.arg = requiredArg
	}
	return s
}

// takesSeparateValue reports whether command-line word w is an option
// whose value is the next word: a long option with a required argument
// and no "=", or a cluster of short options whose last letter takes a
// value and has none joined to it.
func (t *optionTable) takesSeparateValue(w string) bool {
	if name, ok := strings.CutPrefix(w, "--"); ok {
		if strings.Contains(name, "=") {
			return false
		}
		s, _ := t.long(name)
		return s != nil && s.arg == requiredArg
	}
	for i := 1; i < len(w); i++ {
		s := t.short(w[i])
		if s == nil {
			return false
		}
		if s.arg != noArg {
			return i == len(w)-1 && s.arg == requiredArg
		}
	}
	return false
}

// defaultTable is sbatch's option table with pyxis' options, for reading
// command lines.
var defaultTable = sync.OnceValue(func() *optionTable { return newOptionTable(pyxisOptions) })
