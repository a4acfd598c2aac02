// Package policy runs the user's own rules, written in CEL
// (cel.dev/cel-go, the language of Kubernetes' ValidatingAdmissionPolicy),
// over what the pipeline found in one target: its findings, models, images,
// packages and CUDA declarations, and at admission the workload's
// namespace, labels, user and containers (Input). A policy whose deny or
// warn expression holds is a finding policy/<name>, which goes through
// suppression, reports and exit codes like every other.
//
// Policies are typed and checked when they are loaded: an expression that
// does not parse, names an unknown variable or field, or is not a bool is
// an error naming the file and the line (exit 2). Evaluation is bounded by
// cel-go's cost limit and by a time limit per target; a policy stopped by
// either is an error for its target (exit 2), never a pass.
package policy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"
	"go.yaml.in/yaml/v3"

	"github.com/mlwarden/mlwarden/scanners"
)

// Spec is one policy as written in `policies:` (of .mlwarden.yaml, a
// --policy file, or serve's config).
type Spec struct {
	Name string
	// Match, when set, is a CEL bool over target: the policy applies only
	// to targets it holds for.
	Match string
	// Deny or Warn (exactly one) is the CEL bool that makes a finding.
	Deny, Warn string
	Message    string
	// Severity is the finding's (default high for deny, low for warn).
	Severity string

	// File and Line say where the policy is written; MatchLine and
	// ExprLine where its expressions are.
	File                      string
	Line, MatchLine, ExprLine int
}

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// UnmarshalYAML reads one policy strictly, keeping the lines of its keys.
func (s *Spec) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a policy is a mapping (name, match, deny or warn, message, severity)", n.Line)
	}
	*s = Spec{Line: n.Line}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if seen[k.Value] {
			return fmt.Errorf("line %d: %s given twice", k.Line, k.Value)
		}
		seen[k.Value] = true
		if v.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: %s: want a string", k.Line, k.Value)
		}
		switch k.Value {
		case "name":
			s.Name = v.Value
		case "match":
			s.Match, s.MatchLine = v.Value, v.Line
		case "deny":
			s.Deny, s.ExprLine = v.Value, v.Line
		case "warn":
			s.Warn, s.ExprLine = v.Value, v.Line
		case "message":
			s.Message = v.Value
		case "severity":
			s.Severity = v.Value
		default:
			return fmt.Errorf("line %d: unknown key %q in a policy (valid: name, match, deny, warn, message, severity)", k.Line, k.Value)
		}
	}
	switch {
	case !namePattern.MatchString(s.Name):
		return fmt.Errorf("line %d: policy name %q: want lower-case letters, digits, '.', '_' or '-' (at most 63), the NAME of its rule policy/NAME", n.Line, s.Name)
	case (s.Deny == "") == (s.Warn == ""):
		return fmt.Errorf("line %d: policy %s: want exactly one of deny and warn", n.Line, s.Name)
	case strings.TrimSpace(s.Message) == "":
		return fmt.Errorf("line %d: policy %s: a message is required", n.Line, s.Name)
	}
	if s.Severity != "" {
		if _, err := scanners.ParseSeverity(s.Severity); err != nil {
			return fmt.Errorf("line %d: policy %s: %w", n.Line, s.Name, err)
		}
	}
	return nil
}

// File is a --policy file: a YAML document with one key, policies.
type File struct {
	Policies []Spec `yaml:"policies"`
}

// maxFile bounds a policy file read.
const maxFile = 1 << 20

// LoadFile reads a --policy file strictly.
func LoadFile(path string) ([]Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy file: %w", err)
	}
	if len(data) > maxFile {
		return nil, fmt.Errorf("policy file %s: larger than %d bytes", path, maxFile)
	}
	return ParseFile(path, data)
}

// ParseFile reads a policy file's text; name is used in messages.
func ParseFile(name string, data []byte) ([]Spec, error) {
	var f File
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, errEOF) && err.Error() != "EOF" {
		return nil, fmt.Errorf("policy file %s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	for i := range f.Policies {
		f.Policies[i].File = name
	}
	return f.Policies, nil
}

var errEOF = errors.New("EOF")

// Options bounds evaluation.
type Options struct {
	// CostLimit is cel-go's runtime cost limit for one expression on one
	// target (default DefaultCostLimit).
	CostLimit uint64
	// Timeout bounds all policies on one target together (default
	// DefaultTimeout).
	Timeout time.Duration
}

// Defaults of Options: a cost of 10 million is some hundred thousand list
// elements visited by a comprehension (a 2,000-finding target costs tens
// of thousands per expression: BenchmarkEvaluate), a second far more than
// 50 policies take on one target.
const (
	DefaultCostLimit = 10_000_000
	DefaultTimeout   = time.Second
)

// Set is a list of compiled policies, safe for concurrent use.
type Set struct {
	o        Options
	policies []compiled
}

type compiled struct {
	Spec
	severity   scanners.Severity
	match, exp cel.Program
}

// Len is the number of policies.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.policies)
}

// Names lists the policies' names, in order.
func (s *Set) Names() []string {
	var out []string
	for _, p := range s.policyList() {
		out = append(out, p.Name)
	}
	return out
}

func (s *Set) policyList() []compiled {
	if s == nil {
		return nil
	}
	return s.policies
}

// Compile type-checks and compiles specs. Two policies of one name, an
// expression that does not compile (a syntax error, an unknown variable or
// field, a wrong type) or that is not a bool is an error naming the file
// and line.
func Compile(specs []Spec, o Options) (*Set, error) {
	if o.CostLimit == 0 {
		o.CostLimit = DefaultCostLimit
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	s := &Set{o: o}
	if len(specs) == 0 {
		return s, nil
	}
	full, targetOnly, err := envs()
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	seen := map[string]string{}
	for _, sp := range specs {
		where := fmt.Sprintf("%s:%d", sp.File, sp.Line)
		if prev, ok := seen[sp.Name]; ok {
			return nil, fmt.Errorf("%s: policy %s is also defined at %s", where, sp.Name, prev)
		}
		seen[sp.Name] = where
		c := compiled{Spec: sp, severity: scanners.SeverityHigh}
		if sp.Warn != "" {
			c.severity = scanners.SeverityLow
		}
		if sp.Severity != "" {
			if c.severity, err = scanners.ParseSeverity(sp.Severity); err != nil {
				return nil, fmt.Errorf("%s: policy %s: %w", where, sp.Name, err)
			}
		}
		if sp.Match != "" {
			if c.match, err = program(targetOnly, sp.Match, o); err != nil {
				return nil, fmt.Errorf("%s:%d: policy %s: match: %w", sp.File, sp.MatchLine, sp.Name, err)
			}
		}
		key, text := "deny", sp.Deny
		if sp.Warn != "" {
			key, text = "warn", sp.Warn
		}
		if c.exp, err = program(full, text, o); err != nil {
			return nil, fmt.Errorf("%s:%d: policy %s: %s: %w", sp.File, sp.ExprLine, sp.Name, key, err)
		}
		s.policies = append(s.policies, c)
	}
	return s, nil
}

// envs are the CEL environments: every variable (deny, warn), and target
// alone (match).
func envs() (full, targetOnly *cel.Env, err error) {
	typeName := func(t any) string {
		rt := reflect.TypeOf(t)
		return "policy." + rt.Name()
	}
	base := []cel.EnvOption{
		ext.NativeTypes(types.ParseStructTags(true),
			reflect.TypeFor[Target](), reflect.TypeFor[Finding](), reflect.TypeFor[Model](),
			reflect.TypeFor[Image](), reflect.TypeFor[Package](), reflect.TypeFor[CUDA](), reflect.TypeFor[Container]()),
		ext.Strings(),
		cel.Variable("target", cel.ObjectType(typeName(Target{}))),
	}
	if targetOnly, err = cel.NewEnv(base...); err != nil {
		return nil, nil, err
	}
	list := func(name string, t any) cel.EnvOption {
		return cel.Variable(name, cel.ListType(cel.ObjectType(typeName(t))))
	}
	full, err = targetOnly.Extend(
		list("findings", Finding{}), list("models", Model{}), list("images", Image{}),
		list("packages", Package{}), list("cuda", CUDA{}), list("containers", Container{}),
	)
	return full, targetOnly, err
}

// program compiles one expression, which must be a bool.
func program(env *cel.Env, text string, o Options) (cel.Program, error) {
	ast, iss := env.Compile(text)
	if iss.Err() != nil {
		return nil, errors.New(strings.Join(strings.Fields(iss.Err().Error()), " "))
	}
	if !ast.OutputType().IsExactType(cel.BoolType) {
		return nil, fmt.Errorf("the expression is a %s, not a bool", ast.OutputType())
	}
	return env.Program(ast, cel.CostLimit(o.CostLimit), cel.InterruptCheckFrequency(100))
}

// Evaluate runs every policy on one target's input and returns the
// violations as findings (fingerprinted) and the policies that could not
// be judged as errors for the target.
func (s *Set) Evaluate(ctx context.Context, in *Input) ([]scanners.Finding, []scanners.Error) {
	if s.Len() == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	act, err := cel.NewActivation(map[string]any{
		"target": in.Target, "findings": in.Findings, "models": in.Models, "images": in.Images,
		"packages": in.Packages, "cuda": in.CUDA, "containers": in.Containers,
	})
	if err != nil {
		return nil, []scanners.Error{{Target: in.Target.Name, Message: "policies: " + err.Error()}}
	}
	var out []scanners.Finding
	var errs []scanners.Error
	for _, p := range s.policies {
		if p.match != nil {
			ok, err := eval(ctx, p.match, act)
			if err != nil {
				errs = append(errs, p.failure(in, "match", err, s.o))
				continue
			}
			if !ok {
				continue
			}
		}
		hit, err := eval(ctx, p.exp, act)
		if err != nil {
			errs = append(errs, p.failure(in, p.key(), err, s.o))
			continue
		}
		if hit {
			out = append(out, p.finding(in))
		}
	}
	return out, errs
}

func eval(ctx context.Context, prg cel.Program, act any) (bool, error) {
	v, _, err := prg.ContextEval(ctx, act)
	if err != nil {
		return false, err
	}
	b, ok := v.Value().(bool)
	if !ok {
		return false, fmt.Errorf("the expression gave %v, not a bool", v)
	}
	return b, nil
}

func (p compiled) key() string {
	if p.Warn != "" {
		return "warn"
	}
	return "deny"
}

// Where is the policy's file and line.
func (p compiled) where() string { return fmt.Sprintf("%s:%d", p.File, p.Line) }

// RuleID is the rule of a policy's findings.
func RuleID(name string) string { return scanners.CheckPolicy + "/" + name }

func (p compiled) finding(in *Input) scanners.Finding {
	f := scanners.Finding{
		RuleID:   RuleID(p.Name),
		Check:    scanners.CheckPolicy,
		Severity: p.severity,
		Message:  fmt.Sprintf("%s (policy %s, %s %s)", strings.TrimSpace(p.Message), p.Name, p.key(), p.where()),
		Target:   in.Target.Name,
	}
	f.Fingerprint = scanners.ComputeFingerprint(&f)
	return f
}

// failure is the error of a policy that could not be judged: the cost
// limit, the time bound, or a runtime error (a missing map key).
func (p compiled) failure(in *Input, key string, err error, o Options) scanners.Error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "cost limit exceeded"):
		msg = fmt.Sprintf("stopped at the cost limit (%d): %s", o.CostLimit, msg)
	case strings.Contains(msg, "interrupted") || errors.Is(err, context.DeadlineExceeded):
		msg = fmt.Sprintf("stopped at the time bound (%s for the target's policies): %s", o.Timeout, msg)
	}
	return scanners.Error{Target: in.Target.Name, Message: fmt.Sprintf("policy %s (%s) %s: not judged: %s; %v",
		p.Name, p.where(), key, msg, scanners.ErrIncomplete)}
}

// Rules describes the policies as rules, for SARIF and the text format.
func (s *Set) Rules() []scanners.Rule {
	var out []scanners.Rule
	for _, p := range s.policyList() {
		out = append(out, scanners.Rule{ID: RuleID(p.Name), Check: scanners.CheckPolicy, Severity: p.severity,
			Title: strings.TrimSpace(p.Message), Why: "the user's policy " + p.Name + " (" + p.where() + ") says so"})
	}
	return out
}
