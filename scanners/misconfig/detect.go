package misconfig

import (
	"bytes"
	"encoding/json"
	"net"
	"path"
	"strings"
	"sync"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
	"github.com/mlwarden/mlwarden/internal/literal"
	"github.com/mlwarden/mlwarden/scanners"
)

func (r *run) commands(cls []cmdLine) {
	for _, cl := range cls {
		r.command(cl)
	}
}

func (r *run) command(cl cmdLine) {
	if !interesting(cl.words) {
		return // nearly every line: nothing any detector looks for
	}
	r.jupyter(cl)
	r.container(cl)
	r.services(cl)
	r.chmodDevices(cl)
	r.miner(cl)
}

// addWord adds a finding about word i of a command (-1: the command as a
// whole). It is reported at the line that word is written on (the seventh
// line of a continued srun), and the message names the line the command
// starts on; commands from an image config carry their origin in the
// message instead of a line. Evidence names only what matched, never the
// whole command line: other words of it (an environment value, a flag) may
// hold a secret.
func (r *run) addWord(cl cmdLine, i int, rule scanners.Rule, sev scanners.Severity, evidence, msg string) {
	ln := cl.wordLine(i)
	if ln != cl.line && cl.line > 0 {
		msg += " (in the command that starts at line " + itoa(cl.line) + ")"
	}
	if cl.note != "" {
		msg += " [" + cl.note + "]"
	}
	r.add(rule, sev, ln, evidence, msg)
}

// isFlag matches a word that sets flag name: "--host" or "--host=…".
func isFlag(name string) func(string) bool {
	return func(w string) bool {
		return w == name || strings.HasPrefix(w, name) && strings.HasPrefix(w[len(name):], "=")
	}
}

// flags reads --name=value and --name value pairs (and bare --name as
// "true") from args. Later values win, as in the programs themselves.
func flags(args []string) map[string]string {
	m := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		if k, v, ok := strings.Cut(a, "="); ok {
			m[k] = unquote(v)
			continue
		}
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			m[a] = unquote(args[i+1])
			// Do not skip: a bare boolean flag followed by a positional
			// argument is also read as a value, harmlessly.
			continue
		}
		m[a] = "true"
	}
	return m
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

// env reads NAME=VALUE words at the front of a command line.
func env(words []string) map[string]string {
	m := map[string]string{}
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" || strings.HasPrefix(k, "-") || strings.ContainsAny(k, " /.") {
			continue
		}
		m[k] = unquote(v)
	}
	return m
}

func allInterfaces(v string) bool {
	switch strings.Trim(v, "[]") {
	case "0.0.0.0", "*", "::", "0", "::0":
		return true
	}
	return false
}

// nodeVars are variables that hold the node's own name or address.
var nodeVars = []string{"${HOSTNAME}", "${SLURMD_NODENAME}", "${SLURM_LAUNCH_NODE_IPADDR}", "${SLURM_TOPOLOGY_ADDR}"}

// nodeAddress reports a bind address that is the node's own, reachable
// from the whole cluster network: $(hostname -i), $(hostname), $HOSTNAME,
// $SLURMD_NODENAME, $(ip …), or a literal address that is not loopback.
func nodeAddress(v string) bool {
	v = strings.TrimSpace(v)
	if v == "" {
		return false
	}
	for _, s := range []string{"$(hostname", "`hostname", "$(ip ", "$(ifconfig", "$(getent hosts"} {
		if strings.Contains(v, s) {
			return true
		}
	}
	for _, n := range nodeVars {
		if v == n {
			return true
		}
	}
	ip := net.ParseIP(strings.Trim(v, "[]"))
	return ip != nil && !ip.IsLoopback() && !ip.IsUnspecified()
}

// bindDesc says how an address exposes a server; shown is how the
// setting is written (--bind_all, GRADIO_SERVER_NAME=0.0.0.0).
// prep is "on" or "to".
func bindDesc(prep, v string) string { return bindDescAs(prep, v, v) }

func bindDescAs(prep, addr, shown string) string {
	if nodeAddress(addr) {
		return prep + " the node's address (" + shown + "), which everyone on the cluster network reaches"
	}
	return prep + " all interfaces (" + shown + ")"
}

func prog(w string) string { return strings.ToLower(path.Base(w)) }

// programs are the program names some detector looks for.
var programs = func() map[string]bool {
	m := map[string]bool{
		"jupyter": true, "jupyter-lab": true, "jupyter-notebook": true, "jupyter-server": true, "jupyter-nbclassic": true,
		"docker": true, "podman": true, "nerdctl": true, "chmod": true,
		"ray": true, "vllm": true, "text-generation-launcher": true, "tensorboard": true, "mlflow": true,
		"streamlit": true, "gradio": true, "ollama": true,
	}
	for n, ok := range minerNames {
		if ok {
			m[n] = true
		}
	}
	return m
}()

// mayHaveCommands reports whether lower-cased text holds anything the
// command detectors look for; when it does not, its lines are not split
// into words at all.
func mayHaveCommands(lower []byte) bool {
	return commandWords().NextBytes(lower, 0) >= 0
}

// textWords is mayHaveCommands of b and whether b holds a miner trace
// (minerTraceWords), in one pass over text that holds neither (most text):
// the first place either set's words start is found with both sets at
// once, and each set is searched alone only from there.
func textWords(b []byte) (cmds, traces bool) {
	p := textWordsBoth().NextBytes(b, 0)
	if p < 0 {
		return false, false
	}
	return commandWords().NextBytes(b, p) >= 0, minerTraceWords().NextBytes(b, p) >= 0
}

var textWordsBoth = sync.OnceValue(func() *literal.Finder {
	return literal.New(append(commandWordList(), minerTraceWordList()...))
})

func minerTraceWordList() []string {
	return append(append([]string{"stratum"}, poolHosts...), minerBinaries...)
}

// commandWords finds what mayHaveCommands looks for, in one pass: a
// search per program name and variable was a tenth of a full scan's CPU
// on an ML tree (issue 21).
var commandWords = sync.OnceValue(func() *literal.Finder { return literal.New(commandWordList()) })

func commandWordList() []string {
	words := []string{"-m ", "--donate-level", "jupyter_token"}
	for p := range programs {
		words = append(words, p)
	}
	for k := range serviceEnv {
		words = append(words, strings.ToLower(k))
	}
	return words
}

// interesting reports cheaply whether any detector could match words: a
// known program, a python -m module, an environment variable that binds a
// service, or a miner flag.
func interesting(words []string) bool {
	for _, w := range words {
		if w == "-m" || strings.HasPrefix(w, "--donate-level") {
			return true
		}
		base := w[strings.LastIndexByte(w, '/')+1:]
		if programs[base] || programs[strings.ToLower(base)] {
			return true
		}
		if k, _, ok := strings.Cut(w, "="); ok && (serviceEnv[k] != "" || k == "JUPYTER_TOKEN") {
			return true
		}
	}
	return false
}

// find returns the index of the first word whose program name is one of names.
func find(words []string, names ...string) int {
	for i, w := range words {
		p := prog(w)
		for _, n := range names {
			if p == n {
				return i
			}
		}
	}
	return -1
}

// jupyterArgs returns the arguments of a Jupyter server command in words, or
// false when there is none.
func jupyterArgs(words []string) ([]string, bool) {
	for i, w := range words {
		p := prog(w)
		switch p {
		case "jupyter-lab", "jupyter-notebook", "jupyter-server", "jupyter-nbclassic":
			return words[i+1:], true
		case "jupyter":
			if i+1 < len(words) {
				switch words[i+1] {
				case "lab", "notebook", "server", "nbclassic":
					return words[i+2:], true
				}
			}
		case "-m":
			if i+1 < len(words) {
				switch words[i+1] {
				case "notebook", "jupyterlab", "jupyter_server", "nbclassic":
					return words[i+2:], true
				case "jupyter":
					if i+2 < len(words) {
						switch words[i+2] {
						case "lab", "notebook", "server", "nbclassic":
							return words[i+3:], true
						}
					}
				}
			}
		}
	}
	return nil, false
}

var jupyterApps = []string{"ServerApp", "NotebookApp", "LabApp", "IdentityProvider", "PasswordIdentityProvider"}

// jupyterAuth is what a Jupyter command line or config says about how it
// listens and authenticates.
type jupyterAuth struct {
	ip            string
	ipSet         bool
	tokenSet      bool
	tokenEmpty    bool
	passwordSet   bool
	passwordEmpty bool
}

func (j *jupyterAuth) set(key, v string) {
	switch key {
	case "ip":
		j.ip, j.ipSet = v, true
	case "token":
		j.tokenSet, j.tokenEmpty = true, v == ""
	case "password", "hashed_password":
		j.passwordSet, j.passwordEmpty = true, v == ""
	}
}

// evidence shows the listen address and whether a token is set, never the
// token itself.
func (j jupyterAuth) evidence() string {
	ev := "jupyter"
	if j.ipSet {
		ev += " --ip=" + j.ip
	}
	switch {
	case j.tokenSet && j.tokenEmpty:
		ev += " token=''"
	case j.tokenSet:
		ev += " token=(set)"
	}
	switch {
	case j.passwordSet && j.passwordEmpty:
		ev += " password=''"
	case j.passwordSet:
		ev += " password=(set)"
	}
	return ev
}

// authOff: Jupyter serves without authentication when the token is empty
// and no password is set.
func (j jupyterAuth) authOff() bool {
	return j.tokenSet && j.tokenEmpty && (!j.passwordSet || j.passwordEmpty)
}

func (r *run) judgeJupyter(j jupyterAuth, report func(sev scanners.Severity, msg string)) {
	open := j.ipSet && (allInterfaces(j.ip) || nodeAddress(j.ip))
	switch {
	case open && j.authOff():
		report(scanners.SeverityCritical, "Jupyter listens "+bindDesc("on", j.ip)+" with token and password authentication disabled: anyone who reaches the port gets a shell on the node. Bind to 127.0.0.1, keep the token on, and use an SSH tunnel")
	case open:
		report(scanners.SeverityLow, "Jupyter listens "+bindDesc("on", j.ip)+"; authentication is on, but the server is reachable from the whole network. Bind to 127.0.0.1 and use an SSH tunnel")
	case j.authOff():
		report(scanners.SeverityMedium, "Jupyter runs with token and password authentication disabled: every user who can reach the port on this node — on a shared GPU node, every other user — gets a shell as you. Keep the token on")
	}
}

func (r *run) jupyter(cl cmdLine) {
	args, ok := jupyterArgs(cl.words)
	if !ok {
		return
	}
	j := jupyterAuthOf(cl.words, args)
	from := len(cl.words) - len(args)
	at := -1
	if j.ipSet && (allInterfaces(j.ip) || nodeAddress(j.ip)) {
		at = cl.lastWord(from, func(w string) bool {
			k, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
			return jupyterKey(k) == "ip"
		})
	} else if j.authOff() {
		at = cl.lastWord(from, func(w string) bool {
			k, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
			return jupyterKey(k) == "token"
		})
	}
	r.judgeJupyter(j, func(sev scanners.Severity, msg string) {
		r.addWord(cl, at, RuleNotebookExposed, sev, j.evidence(), msg)
	})
}

// jupyterAuthOf reads how a Jupyter command line (words, args its
// arguments after the program) listens and authenticates.
func jupyterAuthOf(words, args []string) jupyterAuth {
	var j jupyterAuth
	if v, ok := env(words)["JUPYTER_TOKEN"]; ok {
		j.set("token", v)
	}
	for k, v := range flags(args) {
		name := strings.TrimLeft(k, "-")
		if name == "ip" || name == "token" || name == "password" {
			j.set(name, v)
			continue
		}
		for _, app := range jupyterApps {
			if key, ok := strings.CutPrefix(name, app+"."); ok {
				j.set(key, v)
			}
		}
	}
	return j
}

// jupyterKey is the setting a command-line flag name sets (ip, token,
// password), with or without an application's prefix.
func jupyterKey(name string) string {
	for _, app := range jupyterApps {
		if key, ok := strings.CutPrefix(name, app+"."); ok {
			return key
		}
	}
	return name
}

// container: docker/podman/nerdctl run with privileges.
func (r *run) container(cl cmdLine) {
	i := find(cl.words, "docker", "podman", "nerdctl")
	if i < 0 || i+1 >= len(cl.words) {
		return
	}
	rest := cl.words[i+1:]
	if rest[0] == "container" && len(rest) > 1 {
		rest = rest[1:]
	}
	if rest[0] != "run" && rest[0] != "create" {
		return
	}
	args := rest[1:]
	from := len(cl.words) - len(args)
	for j := 0; j < len(args); j++ {
		a := args[j]
		next := ""
		if j+1 < len(args) {
			next = args[j+1]
		}
		switch {
		case a == "--privileged" || a == "--privileged=true":
			r.addWord(cl, from+j, RulePrivileged, scanners.SeverityHigh, prog(cl.words[i])+" run --privileged", prog(cl.words[i])+" run --privileged gives the container every device and capability of the host: it can take over the node and the GPU jobs on it. Drop --privileged and add only the capabilities and devices the job needs (--gpus for GPUs)")
		case strings.EqualFold(a, "--cap-add=ALL") || a == "--cap-add" && strings.EqualFold(next, "ALL"):
			r.addWord(cl, from+j, RulePrivileged, scanners.SeverityHigh, "--cap-add ALL", "--cap-add ALL gives the container every Linux capability, which is as good as --privileged. Add only the capabilities the job needs")
		case strings.HasPrefix(a, "--security-opt") && seccompOff(a, next):
			r.addWord(cl, from+j, RulePrivileged, scanners.SeverityHigh, "--security-opt seccomp=unconfined", "--security-opt seccomp=unconfined turns off the system-call filter that stops container escapes. Keep the default seccomp profile")
		}
	}
}

func seccompOff(a, next string) bool {
	v := next
	if _, val, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "--security-opt=") {
		v = val
	}
	v = strings.ReplaceAll(v, ":", "=")
	return v == "seccomp=unconfined"
}

// service describes an ML server and the flags that bind it.
type service struct {
	name  string
	match func(words []string) (args []string, ok bool)
	hosts []string // flags whose value is the bind address
	all   []string // boolean flags that bind all interfaces
}

func afterProg(names ...string) func([]string) ([]string, bool) {
	return func(w []string) ([]string, bool) {
		if i := find(w, names...); i >= 0 {
			return w[i+1:], true
		}
		return nil, false
	}
}

func afterSub(prog string, subs ...string) func([]string) ([]string, bool) {
	return func(w []string) ([]string, bool) {
		i := find(w, prog)
		if i < 0 || i+1 >= len(w) {
			return nil, false
		}
		for _, s := range subs {
			if w[i+1] == s {
				return w[i+2:], true
			}
		}
		return nil, false
	}
}

func afterModule(mods ...string) func([]string) ([]string, bool) {
	return func(w []string) ([]string, bool) {
		for i := 0; i+1 < len(w); i++ {
			if w[i] != "-m" {
				continue
			}
			for _, m := range mods {
				if w[i+1] == m {
					return w[i+2:], true
				}
			}
		}
		return nil, false
	}
}

var services = []service{
	{name: "Ray dashboard", match: afterSub("ray", "start"), hosts: []string{"--dashboard-host"}},
	{name: "vLLM API server", match: afterSub("vllm", "serve"), hosts: []string{"--host"}},
	{name: "vLLM API server", match: afterModule("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server"), hosts: []string{"--host"}},
	{name: "SGLang server", match: afterModule("sglang.launch_server"), hosts: []string{"--host"}},
	{name: "Text Generation Inference", match: afterProg("text-generation-launcher"), hosts: []string{"--hostname"}},
	{name: "TensorBoard", match: afterProg("tensorboard"), hosts: []string{"--host"}, all: []string{"--bind_all"}},
	{name: "TensorBoard", match: afterModule("tensorboard.main", "tensorboard"), hosts: []string{"--host"}, all: []string{"--bind_all"}},
	{name: "MLflow server", match: afterSub("mlflow", "server", "ui"), hosts: []string{"--host", "-h"}},
	{name: "Streamlit app", match: afterSub("streamlit", "run"), hosts: []string{"--server.address"}},
	{name: "Gradio app", match: afterProg("gradio"), hosts: []string{"--host"}},
	{name: "Ollama server", match: afterSub("ollama", "serve")},
}

// serviceEnv are environment variables that bind a service.
var serviceEnv = map[string]string{
	"GRADIO_SERVER_NAME":       "Gradio app",
	"STREAMLIT_SERVER_ADDRESS": "Streamlit app",
	"OLLAMA_HOST":              "Ollama server",
	"RAY_DASHBOARD_HOST":       "Ray dashboard",
	"MLFLOW_HOST":              "MLflow server",
	"TENSORBOARD_BIND_ALL":     "TensorBoard",
}

func exposedMsg(name, addr string) string { return exposedMsgAs(name, addr, addr) }

func exposedMsgAs(name, addr, shown string) string {
	return name + " is bound " + bindDescAs("to", addr, shown) + "; it has weak or no authentication, so anyone on the network can use it. Bind to 127.0.0.1 and reach it through an SSH tunnel or an authenticating proxy"
}

func (r *run) services(cl cmdLine) {
	for _, s := range services {
		args, ok := s.match(cl.words)
		if !ok {
			continue
		}
		f := flags(args)
		from := len(cl.words) - len(args)
		for _, h := range s.hosts {
			if v, ok := f[h]; ok && (allInterfaces(v) || nodeAddress(v)) {
				r.addWord(cl, cl.lastWord(from, isFlag(h)), RuleServiceExposed, scanners.SeverityMedium, h+" "+v, exposedMsg(s.name, v))
			}
		}
		for _, b := range s.all {
			if _, ok := f[b]; ok {
				r.addWord(cl, cl.lastWord(from, isFlag(b)), RuleServiceExposed, scanners.SeverityMedium, b, exposedMsg(s.name, b))
			}
		}
	}
	for k, v := range env(cl.words) {
		name := serviceEnv[k]
		if name == "" {
			continue
		}
		host := v
		if h, _, ok := strings.Cut(v, ":"); ok && k == "OLLAMA_HOST" {
			host = h
		}
		if allInterfaces(host) || nodeAddress(host) || k == "TENSORBOARD_BIND_ALL" && v != "" && v != "0" && v != "false" {
			r.addWord(cl, cl.lastWord(0, func(w string) bool { return strings.HasPrefix(w, k+"=") }), RuleServiceExposed, scanners.SeverityMedium, k+"="+v, exposedMsgAs(name, host, k+"="+v))
		}
	}
}

// chmodDevices: chmod of /dev/nvidia* to world-accessible.
func (r *run) chmodDevices(cl cmdLine) {
	i := find(cl.words, "chmod")
	if i < 0 {
		return
	}
	var mode string
	dev, at := false, -1
	for k, a := range cl.words[i+1:] {
		switch {
		case strings.HasPrefix(a, "/dev/nvidia"):
			dev = true
		case strings.HasPrefix(a, "-") && !strings.ContainsAny(a, "rwx"):
		case mode == "":
			mode, at = a, i+1+k
		}
	}
	if dev && worldAccessible(mode) {
		r.addWord(cl, at, RuleGPUIsolation, scanners.SeverityHigh, "chmod "+mode+" /dev/nvidia*", "chmod "+mode+" on /dev/nvidia* makes the GPU device nodes usable by every user of the node, whatever the scheduler allocated. Leave device permissions to the driver and the device plugin")
	}
}

func worldAccessible(mode string) bool {
	if mode == "" {
		return false
	}
	if mode[0] >= '0' && mode[0] <= '7' {
		last := mode[len(mode)-1]
		return last >= '0' && last <= '7' && (last-'0')&6 != 0
	}
	for _, clause := range strings.Split(mode, ",") {
		who, perm, ok := strings.Cut(clause, "+")
		if !ok {
			who, perm, ok = strings.Cut(clause, "=")
		}
		if ok && (who == "" || strings.ContainsAny(who, "ao")) && strings.ContainsAny(perm, "rw") {
			return true
		}
	}
	return false
}

// Miners: well-known binaries, their flags, pool URLs and pool hosts.
var (
	minerNames = map[string]bool{
		"xmrig": true, "xmrig-cuda": true, "xmrig-nvidia": true, "t-rex": true, "lolminer": true, "nbminer": true,
		"gminer": true, "miner": false, "teamredminer": true, "ethminer": true, "phoenixminer": true,
		"nanominer": true, "srbminer-multi": true, "bzminer": true, "cpuminer": true, "ccminer": true, "rigel": false,
	}
	minerFlags = []string{"--donate-level", "--donate-level=", "--coin", "--cuda-devices", "--nicehash", "--rig-id"}
	poolURL    = lazyregexp.New(`(?i)\bstratum[0-9]?\+(?:tcp|ssl|tls)://[^\s"'<>]+`)
	// Public mining pools seen in cluster compromise reports.
	poolHosts = []string{"minexmr.com", "supportxmr.com", "xmrpool.eu", "nanopool.org", "2miners.com", "ethermine.org",
		"f2pool.com", "nicehash.com", "hashvault.pro", "moneroocean.stream", "herominers.com", "unmineable.com",
		"flypool.org", "c3pool.com", "monerohash.com", "zergpool.com", "woolypooly.com", "kryptex.network",
		"viabtc.com", "antpool.com", "mining-dutch.nl"}
	poolHost      = lazyregexp.New(`(?i)\b(?:[a-z0-9-]+\.)*(?:` + strings.ReplaceAll(strings.Join(poolHosts, "|"), ".", `\.`) + `)\b`)
	minerBinaries = []string{"xmrig", "t-rex", "lolminer", "nbminer", "teamredminer", "ethminer", "phoenixminer", "nanominer", "srbminer-multi", "bzminer"}
	minerWord     = lazyregexp.New(`(?i)(?:^|[/\s"'=])(` + strings.Join(minerBinaries, "|") + `)(?:[-._/\s"']|$)`)

	poolHostWords    = sync.OnceValue(func() *literal.Finder { return literal.New(poolHosts) })
	minerBinaryWords = sync.OnceValue(func() *literal.Finder { return literal.New(minerBinaries) })
	// minerTraceWords is every word minerText looks for, in one pass.
	minerTraceWords = sync.OnceValue(func() *literal.Finder { return literal.New(minerTraceWordList()) })
)

// minerFile is what follows a miner's name when it is a file: a version
// (t-rex-0.26.8, xmrig-6.21) or an archive, script or config suffix.
var minerFile = lazyregexp.New(`^(?:[-_]v?[0-9]|\.(?:tar|tgz|zip|gz|xz|bz2|7z|deb|rpm|exe|sh|json|conf|service)\b)`)

// minerMention finds a miner's name used as a file: in a path (./xmrig,
// /opt/t-rex/), a download (t-rex-0.26.8-linux.tar.gz) or a setting
// (MINER=xmrig). A bare quoted word — "t-rex" is also an emoji's name —
// is not enough.
func minerMention(l []byte) (string, bool) {
	for _, m := range minerWord.FindAllSubmatchIndex(l, -1) {
		start, end := m[2], m[3]
		before, after := byte(0), l[end:]
		if start > 0 {
			before = l[start-1]
		}
		if before == '/' || before == '=' || bytes.HasPrefix(after, []byte("/")) || minerFile.Match(after) {
			return strings.ToLower(string(l[start:end])), true
		}
	}
	return "", false
}

func (r *run) miner(cl cmdLine) {
	for i, w := range cl.words {
		p := prog(w)
		if minerNames[p] && (i == 0 || cl.words[i-1] != "-m") {
			r.addWord(cl, i, RuleCryptoMiner, scanners.SeverityCritical, p, "runs the crypto-miner "+p+": GPU mining is the usual payload of a stolen cluster account. Remove it and find out who added it")
			return
		}
		for _, f := range minerFlags {
			if w == strings.TrimSuffix(f, "=") || strings.HasPrefix(w, f) && strings.HasSuffix(f, "=") {
				if f == "--coin" || f == "--nicehash" || f == "--rig-id" || f == "--cuda-devices" {
					// Common enough elsewhere; count them only beside a pool URL.
					if !poolURL.MatchString(strings.Join(cl.words, " ")) {
						continue
					}
				}
				r.addWord(cl, i, RuleCryptoMiner, scanners.SeverityCritical, strings.TrimSuffix(f, "="), "uses the miner flag "+strings.TrimSuffix(f, "=")+": this command runs a crypto-miner. Remove it and find out who added it")
				return
			}
		}
	}
}

// foldsToASCII reports whether data holds a character that bytes.ToLower
// turns into an ASCII letter (the Kelvin sign into k, İ into i and a
// combining dot): there the literal finders, which fold only ASCII, would
// miss what a search in the lower-cased text finds.
func foldsToASCII(data []byte) bool {
	return bytes.Contains(data, []byte("\u212a")) || bytes.Contains(data, []byte("\u0130"))
}

// containsAny reports whether lower (lower-cased text) holds any of words.
func containsAny(lower []byte, words *literal.Finder) bool {
	return words.NextBytes(lower, 0) >= 0
}

// minerText looks for pool URLs and pool hosts on every line, and for miner
// names in downloads and paths (outside prose). Plain substring searches
// over the whole text decide first which expressions can match at all, so
// that text without any miner trace (nearly all of it) costs no regexp.
//
// lower is data lower-cased, or nil: the literal passes fold ASCII case
// themselves, so data is lower-cased only when it holds a trace (or a
// character that lower-cases to ASCII, when the caller lower-cased it).
//
// traces is whether data holds a miner trace word, when the caller has
// searched (lower nil); minerText searches itself when it is nil.
func (r *run) minerText(data, lower []byte, doc bool, traces *bool) {
	if lower == nil {
		if traces != nil && !*traces || traces == nil && minerTraceWords().NextBytes(data, 0) < 0 {
			return
		}
		lower = bytes.ToLower(data)
	}
	data = lower
	url := bytes.Contains(lower, []byte("stratum"))
	host := containsAny(lower, poolHostWords())
	word := !doc && containsAny(lower, minerBinaryWords())
	if !url && !host && !word {
		return
	}
	line := 1
	start := 0
	for i := 0; i <= len(data); i++ {
		if i < len(data) && data[i] != '\n' {
			continue
		}
		l := data[start:i]
		if len(l) > 64<<10 {
			l = l[:64<<10]
		}
		switch {
		case url && poolURL.Match(l):
			m := poolURL.Find(l)
			r.add(RuleCryptoMiner, scanners.SeverityCritical, line, string(m), "mining-pool URL "+clip(string(m), 60)+": something here connects a crypto-miner to a pool. Remove it and find out who added it")
		case host && poolHost.Match(l):
			m := poolHost.Find(l)
			r.add(RuleCryptoMiner, scanners.SeverityCritical, line, string(m), "mining-pool host "+string(m)+": something here connects a crypto-miner to a pool. Remove it and find out who added it")
		case word:
			if name, ok := minerMention(l); ok {
				r.add(RuleCryptoMiner, scanners.SeverityCritical, line, name, "names the crypto-miner "+name+": GPU mining is the usual payload of a stolen cluster account. Remove it and find out who added it")
			}
		}
		line++
		start = i + 1
	}
}

// python reads the Python forms: Jupyter config files (c.ServerApp.ip = …)
// and library calls that bind services (launch(server_name=…),
// ray.init(dashboard_host=…)).
var (
	pyJupyterSet = lazyregexp.New(`^\s*c\.(ServerApp|NotebookApp|LabApp|IdentityProvider|PasswordIdentityProvider)\.(ip|token|password|hashed_password)\s*=\s*(?:u|r)?(?:'([^']*)'|"([^"]*)"|(\S+))`)
	pyKwarg      = lazyregexp.New(`\b(server_name|dashboard_host|host)\s*=\s*["'](0\.0\.0\.0|::|\*)["']`)
)

func (r *run) python(data []byte) {
	var j jupyterAuth
	jline := 0
	// Line by line over the bytes: a line becomes a string only when it
	// may hold what the patterns look for (the file as a string, split into
	// lines, was most of this check's allocation on Python trees).
	for n, lb := range scanners.Lines(data) {
		i := n - 1
		if !bytes.HasPrefix(bytes.TrimSpace(lb), []byte("c.")) && !bytes.Contains(lb, []byte("0.0.0.0")) && !bytes.Contains(lb, []byte("::")) && !bytes.Contains(lb, []byte(`"*"`)) && !bytes.Contains(lb, []byte("'*'")) {
			continue // neither a config assignment nor an all-interfaces address
		}
		l := string(lb)
		if m := pyJupyterSet.FindStringSubmatch(l); m != nil {
			v := m[3] + m[4]
			if m[5] != "" {
				v = m[5]
				if v == "None" {
					v = ""
				}
			}
			j.set(m[2], v)
			if jline == 0 || m[2] == "ip" || m[2] == "token" {
				jline = i + 1
			}
			continue
		}
		if m := pyKwarg.FindStringSubmatch(l); m != nil {
			name := ""
			switch {
			case m[1] == "server_name" && strings.Contains(l, "launch"):
				name = "Gradio app"
			case m[1] == "dashboard_host":
				name = "Ray dashboard"
			case m[1] == "host" && (strings.Contains(l, "uvicorn.run") || strings.Contains(l, ".run(")):
				name = "Python web server (" + strings.TrimSpace(strings.SplitN(l, "(", 2)[0]) + ")"
			}
			if name != "" {
				r.add(RuleServiceExposed, scanners.SeverityMedium, i+1, m[0], exposedMsg(name, m[2]))
			}
		}
	}
	r.judgeJupyter(j, func(sev scanners.Severity, msg string) {
		r.add(RuleNotebookExposed, sev, jline, "", msg+" (Jupyter config file)")
	})
}

// jupyterJSON reads jupyter_*_config.json.
func (r *run) jupyterJSON(data []byte) {
	var cfg map[string]map[string]any
	if json.Unmarshal(data, &cfg) != nil {
		return
	}
	var j jupyterAuth
	for _, app := range jupyterApps {
		for k, v := range cfg[app] {
			s, ok := v.(string)
			if !ok {
				continue
			}
			j.set(k, s)
		}
	}
	r.judgeJupyter(j, func(sev scanners.Severity, msg string) {
		r.add(RuleNotebookExposed, sev, 0, "", msg+" (Jupyter config file)")
	})
}

func (r *run) imageConfig(data []byte) {
	r.commands(imageCommands(data))
}
