package node

import (
	"errors"
	"path"
	"regexp"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/misconfig"
)

// CronEntry is one command of a cron table.
type CronEntry struct {
	Path    string `json:"path"`
	Line    int    `json:"line"`
	User    string `json:"user,omitempty"`
	Command string `json:"command"`
	// UserTable is a user's own crontab (/var/spool/cron…), not /etc/cron.d.
	UserTable bool `json:"user_table"`
}

// Unit is one Exec line of a lingering user's systemd unit.
type Unit struct {
	Path    string `json:"path"`
	Line    int    `json:"line"`
	User    string `json:"user"`
	Command string `json:"command"`
}

// persistence reads cron tables, lingering users and their user units.
func (a *Audit) persistence(r reader, lim Limits) {
	for _, dir := range []string{"var/spool/cron/crontabs", "var/spool/cron"} {
		a.cronDir(r, lim, dir, true)
	}
	a.cronDir(r, lim, "etc/cron.d", false)
	homes := passwdHomes(r, lim)
	ents, err := r.readDir("var/lib/systemd/linger", lim.MaxEntries)
	if errors.Is(err, errTooLarge) {
		a.incomplete("%v", err)
	}
	for _, e := range ents {
		user := e.Name()
		a.Lingering = append(a.Lingering, user)
		home := homes[user]
		if home == "" {
			home = "home/" + user
			if user == "root" {
				home = "root"
			}
		}
		for _, d := range []string{".config/systemd/user", ".local/share/systemd/user"} {
			a.unitDir(r, lim, home+"/"+d, user, 0)
		}
	}
}

func (a *Audit) cronDir(r reader, lim Limits, dir string, user bool) {
	ents, err := r.readDir(dir, lim.MaxEntries)
	if errors.Is(err, errTooLarge) {
		a.incomplete("%v", err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		name := dir + "/" + e.Name()
		b, err := r.readFile(name, lim.MaxFileBytes)
		if errors.Is(err, errTooLarge) {
			a.incomplete("%v: the rest of the table was not read", err)
		} else if err != nil {
			a.incomplete("%s: %v", name, err)
			continue
		}
		owner := ""
		if user {
			owner = e.Name()
		}
		a.Cron = append(a.Cron, parseCron(name, string(b), owner, user)...)
	}
}

// parseCron reads the commands of a cron table: five time fields (or an
// @keyword) then, in /etc/cron.d, a user, then the command. Variable
// assignments and comments are skipped.
func parseCron(name, text, owner string, user bool) []CronEntry {
	var out []CronEntry
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		if k, _, ok := strings.Cut(f[0], "="); ok && !strings.ContainsAny(k, "*/@") {
			continue
		}
		n := 5
		if strings.HasPrefix(f[0], "@") {
			n = 1
		}
		u := owner
		if !user {
			if len(f) <= n {
				continue
			}
			u = f[n]
			n++
		}
		if len(f) <= n {
			continue
		}
		out = append(out, CronEntry{Path: name, Line: i + 1, User: u, Command: strings.Join(f[n:], " "), UserTable: user})
	}
	return out
}

func (a *Audit) unitDir(r reader, lim Limits, dir, user string, depth int) {
	ents, err := r.readDir(dir, lim.MaxEntries)
	if errors.Is(err, errTooLarge) {
		a.incomplete("%v", err)
	}
	for _, e := range ents {
		name := dir + "/" + e.Name()
		if e.IsDir() && depth < 2 && strings.HasSuffix(e.Name(), ".wants") {
			continue // links into this directory: the units themselves are read here
		}
		if !e.Type().IsRegular() || !(strings.HasSuffix(e.Name(), ".service") || strings.HasSuffix(e.Name(), ".timer")) {
			continue
		}
		b, err := r.readFile(name, lim.MaxFileBytes)
		if err != nil {
			a.incomplete("%s: %v", name, err)
			continue
		}
		found := false
		for i, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
			if !ok || !strings.HasPrefix(k, "Exec") {
				continue
			}
			found = true
			a.Units = append(a.Units, Unit{Path: name, Line: i + 1, User: user, Command: strings.TrimLeft(strings.TrimSpace(v), "-@:+!")})
		}
		if !found {
			a.Units = append(a.Units, Unit{Path: name, User: user})
		}
	}
}

// passwdHomes maps user names to home directories (relative to the root)
// from etc/passwd.
func passwdHomes(r reader, lim Limits) map[string]string {
	m := map[string]string{}
	b, err := r.readFile("etc/passwd", lim.MaxFileBytes)
	if err != nil {
		return m
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 6 && f[0] != "" && strings.HasPrefix(f[5], "/") {
			m[f[0]] = strings.TrimPrefix(path.Clean(f[5]), "/")
		}
	}
	return m
}

var (
	downloadToShell = regexp.MustCompile(`(?i)\b(?:curl|wget|fetch)\b[^|;&]*\|\s*(?:sudo\s+)?(?:/usr)?(?:/bin/)?(?:ba|z|da|k)?sh\b|base64\s+(?:-d|--decode)[^|]*\|\s*(?:ba)?sh\b`)
	tmpBinary       = regexp.MustCompile(`(?:^|[\s;&|'"=(])(/dev/shm/|/tmp/|/var/tmp/)\S*`)
)

// judgeCommand says how suspicious a persisted command is: high for a
// download piped to a shell or a program run from /dev/shm, /tmp or
// /var/tmp, or a miner; noSeverity otherwise.
func judgeCommand(cmd string) (scanners.Severity, string) {
	switch {
	case downloadToShell.MatchString(cmd):
		return scanners.SeverityHigh, "pipes a download into a shell"
	case tmpBinary.MatchString(cmd):
		m := tmpBinary.FindStringSubmatch(cmd)
		return scanners.SeverityHigh, "runs a program from " + strings.TrimSuffix(m[1], "/") + ", where anyone can write"
	}
	if name, ok := minerInCommand(cmd); ok {
		return scanners.SeverityHigh, "runs the miner " + name
	}
	return noSeverity, ""
}

func minerInCommand(cmd string) (string, bool) {
	if misconfig.HasPoolURL(cmd) {
		return "with a stratum pool URL", true
	}
	for _, w := range strings.Fields(cmd) {
		if b := strings.ToLower(path.Base(strings.Trim(w, `"'`))); isMinerName(b) {
			return b, true
		}
	}
	return "", false
}
