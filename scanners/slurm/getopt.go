package slurm

import (
	"fmt"
	"strings"
)

// getopt walks words as glibc's getopt_long does with sbatch's option string,
// which starts with '+' (src/common/slurm_opt.c, slurm_option_table_create):
// no permutation, so the first word that is not an option ends the options.
// sbatch then refuses the script: "Invalid directive found in batch script"
// (opt.c, _opt_batch_script, when _set_options returns optind < argc).
func (p *parser) getopt(words []argWord, src Source) ([]Setting, []Problem) {
	var out []Setting
	var probs []Problem
	where := func(argWord) string {
		if src == FromScript {
			return ""
		}
		return "command line: "
	}
	for i := 0; i < len(words); i++ {
		w := words[i]
		a := w.text
		if a == "--" {
			if i+1 < len(words) {
				probs = append(probs, p.stray(words, i+1, src))
			}
			break
		}
		if a == "-" || !strings.HasPrefix(a, "-") {
			probs = append(probs, p.stray(words, i, src))
			break
		}
		if strings.HasPrefix(a, "--") {
			name, val, hasEq := strings.Cut(a[2:], "=")
			spec, amb := p.table.long(name)
			switch {
			case len(amb) > 0:
				probs = append(probs, Problem{Line: w.line, Message: fmt.Sprintf("%soption '%s' is ambiguous; possibilities: '--%s'", where(w), a, strings.Join(amb, "' '--")), Fix: "write the option's full name"})
				continue
			case spec == nil:
				probs = append(probs, Problem{Line: w.line, Message: fmt.Sprintf("%sunrecognized option '%s'", where(w), a), Fix: "check the option's spelling in 'sbatch --help' (or that the SPANK plugin providing it is installed)"})
				continue
			}
			st := Setting{Name: spec.Name, Source: src, Line: w.line}
			switch spec.arg {
			case noArg:
				if hasEq {
					probs = append(probs, Problem{Line: w.line, Message: fmt.Sprintf("%soption '--%s' doesn't allow an argument", where(w), spec.Name), Fix: fmt.Sprintf("write --%s without '=%s'", spec.Name, val)})
					continue
				}
			case requiredArg:
				switch {
				case hasEq:
					st.setValue(w, len(a)-len(val))
				case i+1 < len(words):
					i++
					st.setValue(words[i], 0)
				default:
					probs = append(probs, Problem{Line: w.line, Message: fmt.Sprintf("%soption '--%s' requires an argument", where(w), spec.Name), Fix: fmt.Sprintf("write --%s=VALUE", spec.Name)})
					continue
				}
			case optionalArg:
				if hasEq {
					st.setValue(w, len(a)-len(val))
				}
			}
			out = append(out, st)
			continue
		}
		// A cluster of short options: "-N1", "-vv", "-J name".
		for j := 1; j < len(a); j++ {
			spec := p.table.short(a[j])
			if spec == nil {
				probs = append(probs, Problem{Line: w.line, Message: fmt.Sprintf("%sinvalid option -- '%c'", where(w), a[j]), Fix: "check the option in 'sbatch --help'"})
				continue
			}
			st := Setting{Name: spec.Name, Source: src, Line: w.line}
			if spec.arg == noArg {
				out = append(out, st)
				continue
			}
			switch {
			case j+1 < len(a):
				st.setValue(w, j+1)
			case spec.arg == requiredArg && i+1 < len(words):
				i++
				st.setValue(words[i], 0)
			case spec.arg == requiredArg:
				probs = append(probs, Problem{Line: w.line, Message: fmt.Sprintf("%soption requires an argument -- '%c'", where(w), a[j]), Fix: fmt.Sprintf("give -%c a value", a[j])})
				j = len(a)
				continue
			}
			out = append(out, st)
			break
		}
	}
	return out, probs
}

// setValue sets the option's value to w.text[k:], and where it is written
// when that is in the option's own line.
func (st *Setting) setValue(w argWord, k int) {
	st.Value, st.HasValue = w.text[k:], true
	if w.line == st.Line {
		st.ValueSpan = w.span(k)
	}
	st.Truncated = w.cut
}

// stray is the problem of a word where sbatch expects an option. The usual
// cause is a space after a comma in a list, or a space before the value of an
// option whose argument is optional (--nice 10).
func (p *parser) stray(words []argWord, i int, src Source) Problem {
	w := words[i]
	pr := Problem{Line: w.line}
	if src == FromScript {
		pr.Message = "Invalid directive found in batch script: " + w.text
	} else {
		pr.Message = "script arguments are not options: " + w.text
	}
	if i > 0 && words[i-1].line == w.line {
		prev := words[i-1].text
		switch {
		case strings.HasSuffix(prev, ","):
			pr.Fix = fmt.Sprintf("remove the space after the comma: %s%s", prev, w.text)
			return pr
		case strings.HasPrefix(prev, "--") && !strings.Contains(prev, "="):
			if spec, _ := p.table.long(prev[2:]); spec != nil && spec.arg == optionalArg {
				pr.Fix = fmt.Sprintf("--%s takes its value only after '=': write --%s=%s", spec.Name, spec.Name, w.text)
				return pr
			}
		}
	}
	pr.Fix = "every word of an #SBATCH line must be an option or an option's value; remove it or put it after the first command"
	return pr
}

// SplitArgs splits a command line the way get_argument splits a directive
// (quotes group, a backslash escapes), without treating '#' as a comment.
func SplitArgs(s string) ([]string, error) {
	var out []string
	i := 0
	for {
		for i < len(s) && isspace(s[i]) {
			i++
		}
		if i >= len(s) {
			return out, nil
		}
		var w strings.Builder
		quoted, escape := false, false
		var q byte
		for i < len(s) && (quoted || escape || !isspace(s[i])) {
			c := s[i]
			switch {
			case escape:
				escape = false
			case c == '\\':
				escape = true
				i++
				continue
			case quoted && c == q:
				quoted = false
				i++
				continue
			case !quoted && (c == '"' || c == '\''):
				quoted, q = true, c
				i++
				continue
			}
			w.WriteByte(c)
			i++
		}
		if quoted {
			return out, fmt.Errorf("unmatched %c in %q", q, s)
		}
		out = append(out, w.String())
	}
}

// Effective returns the options the job gets: the script's settings,
// overridden by sbatch's input environment (SBATCH_* variables, and SPANK
// options as _SLURM_SPANK_OPTION_<plugin>_<option>), overridden by the
// command-line options args. env holds "NAME=value" entries. It returns the
// last setting of each option by name, and the problems the command line has.
func (s *Script) Effective(env []string, args []string, opts ...ParseOption) (map[string]Setting, []Problem) {
	p := &parser{extra: append([]OptionSpec(nil), pyxisOptions...)}
	for _, o := range opts {
		o(p)
	}
	p.table = newOptionTable(p.extra)
	eff := map[string]Setting{}
	for _, st := range s.Settings {
		if st.Component == 0 {
			eff[st.Name] = st
		}
	}
	for _, kv := range env {
		name, val, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		opt := sbatchEnv[name]
		if opt == "" && strings.HasPrefix(name, SpankEnvPrefix) {
			// _SLURM_SPANK_OPTION_pyxis_container_image -> container-image
			rest := strings.TrimPrefix(name, SpankEnvPrefix)
			if _, o, ok := strings.Cut(rest, "_"); ok {
				opt = strings.ReplaceAll(o, "_", "-")
			}
		}
		if opt == "" {
			continue
		}
		eff[opt] = Setting{Name: opt, Value: val, HasValue: true, Source: FromEnv, Origin: name}
	}
	var words []argWord
	for _, a := range args {
		words = append(words, argWord{dirWord: dirWord{text: a}})
	}
	settings, probs := p.getopt(words, FromArgs)
	for _, st := range settings {
		eff[st.Name] = st
	}
	return eff, probs
}
