//go:build !mlwarden_sbatch

package misconfig

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
)

// A PAM service file (pam.conf(5) without the service column): lines of
// "type control module-path args…", '#' comments, a trailing backslash
// joining lines, control either a keyword or a [value=action …] list, a
// type prefixed with '-' for a module that may be missing, and includes:
// "@include FILE" (every type, Debian) and "type include|substack FILE"
// (that type). Included files are in the same pam.d directory. No Go
// library reads it, hence this one.

// pamEntry is one module line of a stack.
type pamEntry struct {
	typ, control, module string // module: the base name, pam_x.so
	args                 []string
	path                 string
	line                 int
}

// pamInclude is an include line: of one type, or every type ("").
type pamInclude struct {
	typ, file string
	line      int
}

// parsePAM reads one PAM file's module lines and includes.
func parsePAM(data []byte, file string, entry func(pamEntry), include func(pamInclude)) {
	joinedLines(data, func(start int, text string) {
		pamLine(text, file, start, entry, include)
	})
}

func pamLine(s, file string, line int, entry func(pamEntry), include func(pamInclude)) {
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	f := pamFields(s)
	if len(f) == 0 {
		return
	}
	if f[0] == "@include" {
		if len(f) > 1 {
			include(pamInclude{file: f[1], line: line})
		}
		return
	}
	if len(f) < 3 {
		return
	}
	typ := strings.ToLower(strings.TrimPrefix(f[0], "-"))
	control := strings.ToLower(f[1])
	if control == "include" || control == "substack" {
		include(pamInclude{typ: typ, file: f[2], line: line})
		return
	}
	entry(pamEntry{typ: typ, control: f[1], module: path.Base(f[2]), args: f[3:], path: file, line: line})
}

// pamFields splits a PAM line into words, a [ … ] control and a
// [ … ] argument as one word each.
func pamFields(s string) []string {
	var out []string
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return out
		}
		if s[0] == '[' {
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return append(out, s)
			}
			out = append(out, s[:end+1])
			s = s[end+1:]
			continue
		}
		end := strings.IndexAny(s, " \t")
		if end < 0 {
			return append(out, s)
		}
		out = append(out, s[:end])
		s = s[end:]
	}
}

// Bounds of one PAM stack and its includes.
const (
	maxPAMDepth = 8
	maxPAMFiles = 32
	maxPAMFile  = 1 << 20
)

// pamStack is a service's stack of one type, includes followed.
type pamStack struct {
	entries []pamEntry
	notes   []slurmNote
	files   int
}

// readPAMStack reads the typ stack of file (data) and the files it
// includes, beside it in fsys (nil: includes are noted, not followed).
func readPAMStack(fsys fs.FS, file string, data []byte, typ string) *pamStack {
	s := &pamStack{}
	s.read(fsys, file, data, typ, 0)
	return s
}

func (s *pamStack) read(fsys fs.FS, file string, data []byte, typ string, depth int) {
	s.files++
	parsePAM(data, file, func(e pamEntry) {
		if e.typ == typ {
			s.entries = append(s.entries, e)
		}
	}, func(inc pamInclude) {
		if inc.typ != "" && inc.typ != typ {
			return
		}
		note := func(format string, args ...any) {
			if len(s.notes) >= maxNotes {
				return
			}
			s.notes = append(s.notes, slurmNote{path: file, line: inc.line, msg: fmt.Sprintf("include of %s: ", inc.file) + fmt.Sprintf(format, args...)})
		}
		switch {
		case fsys == nil:
			note("not followed (the target is not on local disk); its %s lines were not judged", typ)
			return
		case depth+1 > maxPAMDepth || s.files >= maxPAMFiles:
			note("not followed: more than %d nested includes or %d files", maxPAMDepth, maxPAMFiles)
			return
		}
		p := path.Clean(path.Join(path.Dir(file), inc.file))
		if path.IsAbs(inc.file) {
			p = strings.TrimLeft(path.Clean(inc.file), "/")
		}
		info, err := fs.Stat(fsys, p)
		if !fs.ValidPath(p) || err != nil {
			note("not found in the target; its %s lines were not judged", typ)
			return
		}
		if !info.Mode().IsRegular() {
			note("%s is not a regular file; not read", p)
			return
		}
		b, err := readLimited(fsys, p, maxPAMFile)
		if err != nil {
			note("%v", err)
			return
		}
		s.read(fsys, p, b, typ, depth+1)
	})
}

// pamArg returns the value of key=value among args.
func pamArg(args []string, key string) (string, bool) {
	v, ok := "", false
	for _, a := range args {
		if k, val, found := strings.Cut(a, "="); found && k == key {
			v, ok = val, true // the last one wins, as pam_slurm_adopt reads them
		}
	}
	return v, ok
}

// pam judges sshd's stack: pam_slurm_adopt in the account stack with
// action_adopt_failure=deny, and no pam_systemd in the session stack. A
// stack without pam_slurm_adopt is judged at the end of the target, when
// the target says the node runs Slurm.
func (r *nodeRun) pam(data []byte) {
	account := readPAMStack(r.a.FS, r.a.Path, data, "account")
	var adopt *pamEntry
	for i, e := range account.entries {
		if e.module == "pam_slurm_adopt.so" {
			adopt = &account.entries[i]
		}
	}
	if adopt == nil {
		for _, n := range account.notes {
			r.note(n.path, n.line, n.msg)
		}
		if len(account.notes) == 0 {
			r.facts.PAM = append(r.facts.PAM, pamFact{site: r.site()})
		}
		return
	}
	med := scanners.SeverityMedium
	if v, ok := pamArg(adopt.args, "action_adopt_failure"); !ok || v == "allow" {
		ev := "action_adopt_failure unset (default allow)"
		if ok {
			ev = "action_adopt_failure=allow"
		}
		r.add(RuleSlurmSSHOutsideAllocation, med, adopt.path, adopt.line, ev,
			"pam_slurm_adopt's "+ev+": a login it cannot adopt into a job (a job without an extern step, a failed lookup) is let in outside every job")
	}
	session := readPAMStack(r.a.FS, r.a.Path, data, "session")
	for _, n := range session.notes {
		r.note(n.path, n.line, n.msg)
	}
	for _, e := range session.entries {
		if e.module == "pam_systemd.so" {
			r.add(RuleSlurmSSHOutsideAllocation, med, e.path, e.line, "session "+e.control+" pam_systemd.so",
				"pam_systemd is in sshd's session stack with pam_slurm_adopt: it moves the adopted login into a systemd user slice, out of the job's cgroup")
		}
	}
}
