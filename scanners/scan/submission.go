package scan

import (
	"bytes"
	"slices"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/slurm"
	"github.com/mlwarden/mlwarden/scanners/source/script"
)

// Script is a batch script held in memory, with how it was submitted: the
// options given to sbatch on its command line and in its environment
// override the script's #SBATCH directives, as they do for sbatch.
type Script struct {
	// Name names the script in messages and the report.
	Name string
	Data []byte
	// Env is the submission's environment (NAME=VALUE: SBATCH_* variables,
	// _SLURM_SPANK_OPTION_* SPANK options).
	Env []string
	// Args are the options given to sbatch on its command line, one word
	// each.
	Args []string
}

// OptionsSuffix is appended to a script's name to name the target that
// holds the options it was submitted with.
const OptionsSuffix = " (sbatch options)"

// submission is one script being checked.
type submission struct {
	sc       *Script
	script   *slurm.Script
	eff      map[string]slurm.Setting
	problems []slurm.Problem
	optsName string
	lines    map[int]string
	opts     []byte
}

func (s *Scanner) parseOptions() []slurm.ParseOption {
	if len(s.o.Spank) == 0 {
		return nil
	}
	return []slurm.ParseOption{slurm.WithSpankOptions(s.o.Spank...)}
}

// submission reads the script as sbatch does and writes the options that
// come from outside it as a second script of directives, so that the checks
// (pins, say) judge the image the job really gets.
func (s *Scanner) submission(sc *Script) *submission {
	popts := s.parseOptions()
	sub := &submission{sc: sc, script: slurm.Parse(sc.Data, popts...), optsName: sc.Name + OptionsSuffix}
	sub.eff, sub.problems = sub.script.Effective(sc.Env, sc.Args, popts...)
	sub.opts, sub.lines = optionsScript(sub.eff)
	return sub
}

func (sub *submission) sources() []scanners.Source {
	srcs := []scanners.Source{script.Open(sub.sc.Name, bytes.NewReader(sub.sc.Data))}
	if sub.opts != nil {
		srcs = append(srcs, script.Open(sub.optsName, bytes.NewReader(sub.opts)))
	}
	return srcs
}

// finish marks what the command line overrides and adds the findings about
// the submission's own options.
func (sub *submission) finish(res *scanners.Result, s *Scanner) {
	suppressOverridden(res, sub.script, sub.eff, sub.sc.Name)
	if !slices.Contains(s.o.Checks, scanners.CheckMisconfig) {
		return
	}
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: sub.sc.Name, TargetKind: scanners.KindScript, Path: sub.sc.Name}
	for _, p := range sub.problems {
		f := slurm.ProblemFinding(a, p, nil)
		f.Fingerprint = scanners.ComputeFingerprint(&f)
		res.Findings = append(res.Findings, f)
	}
	res.Summary = scanners.Summarize(res.Findings)
}

// optionsScript writes the settings that come from outside the script as a
// batch script of directives, one per line; lines maps each line to the
// option as the user gave it.
func optionsScript(eff map[string]slurm.Setting) ([]byte, map[int]string) {
	var names []string
	for n, st := range eff {
		if st.Source != slurm.FromScript {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	lines := map[int]string{}
	for i, n := range names {
		st := eff[n]
		opt := "--" + n
		if st.HasValue {
			// One directive per line: a value cannot carry a line break.
			opt += "=" + strings.NewReplacer("\n", " ", "\r", " ").Replace(st.Value)
		}
		label := opt
		if st.Source == slurm.FromEnv {
			label = opt + " (from " + st.Origin + ")"
		}
		lines[i+2] = slurm.Evidence(label)
		b.WriteString("#SBATCH ")
		b.WriteString(quoteDirective(opt))
		b.WriteByte('\n')
	}
	return []byte(b.String()), lines
}

// quoteDirective quotes a word for an #SBATCH line when sbatch would
// otherwise split or cut it.
func quoteDirective(w string) string {
	if !strings.ContainsAny(w, " \t#'\"\\") {
		return w
	}
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	name, val, ok := strings.Cut(w, "=")
	if !ok {
		return `"` + esc.Replace(w) + `"`
	}
	return name + `="` + esc.Replace(val) + `"`
}

// suppressOverridden marks the pins and misconfig findings on #SBATCH lines
// whose every option the command line or environment overrides: the job does
// not get what those lines say. Secrets stay: a leaked token is leaked
// whether or not the option applies.
func suppressOverridden(res *scanners.Result, script *slurm.Script, eff map[string]slurm.Setting, name string) {
	overridden := map[int]string{}
	byLine := map[int][]slurm.Setting{} // one pass, not one per directive: a script may hold 100,000 lines
	for _, st := range script.Settings {
		if st.Component == 0 {
			byLine[st.Line] = append(byLine[st.Line], st)
		}
	}
	for _, d := range script.Directives {
		var names []string
		all := true
		for _, st := range byLine[d.Line] {
			e, ok := eff[st.Name]
			if !ok || e.Source == slurm.FromScript {
				all = false
				break
			}
			names = append(names, "--"+st.Name)
		}
		if all && len(names) > 0 {
			overridden[d.Line] = strings.Join(names, ", ")
		}
	}
	for i := range res.Findings {
		f := &res.Findings[i]
		if f.Target != name || f.Suppressed != "" || f.Check == scanners.CheckSecrets || f.RuleID == slurm.RuleValueTruncated.ID {
			continue
		}
		if opts, ok := overridden[f.Line]; ok {
			f.Suppressed = "overridden: " + opts + " given on the sbatch command line or in the environment"
		}
	}
}
