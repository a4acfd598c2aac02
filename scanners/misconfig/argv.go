package misconfig

import (
	"path"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
)

// What the misconfig check's reading of command lines says about one
// process's argv, for `mlwarden node` (node/), which sees the process
// running: the same judgement of a server's authentication and of miners,
// not a second copy of it.

// Listener is a server a command line starts, as the command-line rules
// judge it when it listens on all interfaces.
type Listener struct {
	// Name is the server ("Jupyter", "Ray dashboard", "vLLM API server").
	Name string
	// Notebook is a Jupyter server (misconfig/notebook-exposed); the others
	// are misconfig/service-exposed's.
	Notebook bool
	// Severity and Message are the command-line rule's judgement of the
	// server reachable from the whole network: critical for a notebook
	// with authentication off, low for one with it on, medium for the
	// services, which have weak or no authentication.
	Severity scanners.Severity
	Message  string
	// Evidence shows how it authenticates, never a token.
	Evidence string
}

// JudgeListener reads argv as the misconfig check reads a command line and
// judges the server it starts as listening on all interfaces (the caller
// saw the socket). It returns false when argv starts no server the rules
// know.
func JudgeListener(argv []string) (Listener, bool) {
	if len(argv) == 0 {
		return Listener{}, false
	}
	if args, ok := jupyterArgs(argv); ok {
		j := jupyterAuthOf(argv, args)
		j.ip, j.ipSet = "0.0.0.0", true
		var l Listener
		(&run{}).judgeJupyter(j, func(sev scanners.Severity, msg string) {
			l = Listener{Name: "Jupyter", Notebook: true, Severity: sev, Message: msg, Evidence: j.evidence()}
		})
		return l, l.Name != ""
	}
	for _, s := range services {
		if _, ok := s.match(argv); ok {
			return Listener{Name: s.name, Severity: scanners.SeverityMedium, Message: exposedMsg(s.name, "0.0.0.0"), Evidence: s.name}, true
		}
	}
	return Listener{}, false
}

// IsMinerName reports a program name (a base name, any case) that the
// command-line rules know as a crypto-miner.
func IsMinerName(name string) bool {
	return minerNames[strings.ToLower(path.Base(name))]
}

// HasPoolURL reports a stratum pool URL (stratum+tcp://, stratum2+ssl://…)
// in s.
func HasPoolURL(s string) bool { return poolURL.MatchString(s) }
