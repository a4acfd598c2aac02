// Package misconfig is the misconfig check: risky runtime settings in the
// scripts, Dockerfiles, Kubernetes manifests, Python sources and Jupyter
// configs that start ML workloads — notebooks and model servers open to the
// network, privileged containers, GPU isolation bypasses and crypto-miners.
package misconfig

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
)

// Rules of the misconfig check.
var (
	RuleNotebookExposed = scanners.Rule{
		ID: "misconfig/notebook-exposed", Check: scanners.CheckMisconfig, Severity: scanners.SeverityCritical,
		Title: "Jupyter server open to the network",
		Why:   "A Jupyter server on all interfaces or on the node's address ($(hostname -i), $HOSTNAME) without a token or password gives anyone who can reach the port a shell on the GPU node.",
		Fix:   "Bind to 127.0.0.1 and reach it through an SSH tunnel; keep token authentication on.",
	}
	RulePrivileged = scanners.Rule{
		ID: "misconfig/privileged-container", Check: scanners.CheckMisconfig, Severity: scanners.SeverityHigh,
		Title: "Privileged container",
		Why:   "A privileged container (or one with all capabilities, no seccomp, or CAP_SYS_ADMIN with privilege escalation) can take over the node and every GPU job on it.",
		Fix:   "Drop --privileged; add only the capabilities the job needs; keep the default seccomp profile; set allowPrivilegeEscalation: false.",
	}
	RuleGPUIsolation = scanners.Rule{
		ID: "misconfig/gpu-isolation-bypass", Check: scanners.CheckMisconfig, Severity: scanners.SeverityHigh,
		Title: "GPU isolation bypass",
		Why:   "NVIDIA_VISIBLE_DEVICES without a GPU request, /dev/nvidia* host mounts or world-writable device nodes let a workload use GPUs the scheduler gave to someone else.",
		Fix:   "Request GPUs through the device plugin (resources.limits nvidia.com/gpu) and let it set the visible devices; never mount or chmod /dev/nvidia*.",
	}
	RuleServiceExposed = scanners.Rule{
		ID: "misconfig/service-exposed", Check: scanners.CheckMisconfig, Severity: scanners.SeverityMedium,
		Title: "ML service bound to all interfaces or the node's address",
		Why:   "Ray dashboards, inference servers, TensorBoard, MLflow, Gradio and Streamlit have weak or no authentication; on 0.0.0.0 or the node's own address ($(hostname -i), $HOSTNAME) anyone on the cluster network can use them, and Ray's job API runs arbitrary code.",
		Fix:   "Bind to 127.0.0.1 and reach it through an SSH tunnel or an authenticating proxy.",
	}
	RuleCryptoMiner = scanners.Rule{
		ID: "misconfig/crypto-miner", Check: scanners.CheckMisconfig, Severity: scanners.SeverityCritical,
		Title: "Crypto-miner trace",
		Why:   "Mining-pool URLs, miner binaries and their flags in a job or image are the usual payload of a compromised GPU account.",
		Fix:   "Remove it, rotate the credentials of whoever could change this file, and check the cluster's accounting for the job's owner.",
	}
	RuleNotScanned = scanners.Rule{
		ID: "misconfig/not-scanned", Check: scanners.CheckMisconfig, Severity: scanners.SeverityInfo,
		Title: "Text file only partly checked",
		Why:   "Only the first part of a very large text file was checked for misconfigurations.",
		Fix:   "Split the file, or raise the limit if it is expected.",
	}
)

// Scanner is the misconfig check.
type Scanner struct {
	maxBytes int64
}

// Option configures the scanner.
type Option func(*Scanner)

// WithMaxBytes bounds how much of one text file is read (default 16 MiB);
// the rest of a longer file is reported as not scanned.
func WithMaxBytes(n int64) Option { return func(s *Scanner) { s.maxBytes = n } }

// New returns the misconfig check.
func New(opts ...Option) *Scanner {
	s := &Scanner{maxBytes: 16 << 20}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Check implements scanners.Scanner.
func (s *Scanner) Check() string { return scanners.CheckMisconfig }

// Rules implements scanners.Scanner.
func (s *Scanner) Rules() []scanners.Rule {
	return []scanners.Rule{RuleNotebookExposed, RulePrivileged, RuleGPUIsolation, RuleServiceExposed, RuleCryptoMiner, RuleNotScanned}
}

// fileKind is how the scanner reads a text file.
type fileKind int

const (
	kindText fileKind = iota
	kindShell
	kindDockerfile
	kindYAML
	kindPython
	kindJupyterJSON
	kindDoc
)

func classify(p string, head []byte) fileKind {
	base := scanners.Base(p)
	ext := path.Ext(base)
	switch {
	case base == "dockerfile" || base == "containerfile" || strings.HasPrefix(base, "dockerfile.") ||
		strings.HasSuffix(base, ".dockerfile") || strings.HasPrefix(base, "containerfile."):
		return kindDockerfile
	case ext == ".sh" || ext == ".bash" || ext == ".zsh" || ext == ".sbatch" || ext == ".slurm" || ext == ".job" ||
		ext == ".pbs" || base == ".bashrc" || base == ".profile" || base == "entrypoint" ||
		strings.HasPrefix(string(head), "#!") && !strings.Contains(firstLine(head), "python"):
		return kindShell
	case ext == ".yaml" || ext == ".yml":
		return kindYAML
	case ext == ".py":
		return kindPython
	case ext == ".json" && strings.HasPrefix(base, "jupyter"):
		return kindJupyterJSON
	case ext == ".md" || ext == ".rst" || ext == ".txt" || ext == ".html" || ext == ".ipynb":
		return kindDoc
	}
	return kindText
}

func firstLine(b []byte) string {
	s := string(b)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Wants implements scanners.Scanner: every text file, and image configs.
func (s *Scanner) Wants(a *scanners.Artifact, head []byte) bool {
	if a.Kind == scanners.ArtifactImageConfig {
		return true
	}
	return !scanners.IsBinary(head)
}

// Scan implements scanners.Scanner.
func (s *Scanner) Scan(ctx context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	data, truncated, err := scanners.ReadAll(c, s.maxBytes)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	r := &run{a: a, seen: map[string]bool{}}
	if a.Kind == scanners.ArtifactImageConfig {
		r.imageConfig(data)
		return r.out, nil
	}
	var head []byte
	if len(data) > scanners.HeadSize {
		head = data[:scanners.HeadSize]
	} else {
		head = data
	}
	kind := classify(a.Path, head)
	// The literal passes fold ASCII case: the text is lower-cased first
	// only where that would find more (foldsToASCII).
	var lower []byte
	words := data
	if foldsToASCII(data) {
		lower = bytes.ToLower(data)
		words = lower
	}
	var cmds bool
	var traces *bool
	if lower == nil {
		// data is searched for command and miner words in one pass.
		c, t := textWords(data)
		cmds, traces = c, &t
	} else {
		cmds = mayHaveCommands(words)
	}
	switch kind {
	case kindShell:
		if cmds {
			r.commands(shellCommands(data, 0))
		}
	case kindDockerfile:
		if cmds {
			r.commands(dockerfileCommands(data))
		}
	case kindYAML:
		r.yaml(data)
		if cmds {
			r.commands(textCommands(data))
		}
	case kindPython:
		r.python(data)
		if cmds {
			r.commands(textCommands(data))
		}
	case kindJupyterJSON:
		r.jupyterJSON(data)
	case kindDoc:
		// Prose mentions tools by name; only pool URLs count there.
	default:
		if cmds {
			r.commands(textCommands(data))
		}
	}
	// Miner traces are searched in the lower-cased copy: it has the same
	// lines, and evidence from it is a pool URL or a binary name.
	r.minerText(data, lower, kind == kindDoc, traces)
	if truncated {
		r.out = append(r.out, scanners.At(a, RuleNotScanned, 0,
			fmt.Sprintf("only the first %d bytes of this %d-byte text file were checked for misconfigurations", s.maxBytes, c.Size())))
	}
	return r.out, nil
}

// run collects the findings of one artifact, one per rule and line.
type run struct {
	a    *scanners.Artifact
	out  []scanners.Finding
	seen map[string]bool
}

func (r *run) add(rule scanners.Rule, sev scanners.Severity, line int, evidence, msg string) {
	key := fmt.Sprintf("%s:%d", rule.ID, line)
	if r.seen[key] {
		return
	}
	r.seen[key] = true
	f := scanners.At(r.a, rule, line, msg)
	f.Severity = sev
	f.Evidence = clip(evidence, 120)
	r.out = append(r.out, f)
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
