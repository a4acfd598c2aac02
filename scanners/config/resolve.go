package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mlwarden/mlwarden/scanners"
)

// Source says where a setting's value came from.
type Source int

// Sources, lowest precedence first.
const (
	FromDefault Source = iota
	FromConfig
	FromEnv
	FromFlag
)

func (s Source) String() string {
	return [...]string{"default", "config file", "environment", "command line"}[s]
}

// Value is one resolved setting.
type Value struct {
	Setting Setting
	// Raw is the value as written: one element, or several for List and
	// Strings. A relative Path from the config file is already made
	// relative to the config file's directory.
	Raw    []string
	Source Source
	// Where names the place for messages: "--fail-on", "MLWARDEN_FAIL_ON",
	// "config .mlwarden.yaml: line 3: fail-on".
	Where string

	parsed any
}

// Values are the resolved settings of one command.
type Values struct {
	cmd  string
	vals map[string]*Value
	file *File
}

// Command is the command the values are for.
func (v *Values) Command() string { return v.cmd }

// File is the config file the values were resolved with (nil for none).
func (v *Values) File() *File { return v.file }

// Resolve resolves every setting of command cmd. flags holds the flags the
// user set (by name; several values for a repeated flag); env looks up an
// environment variable (os.LookupEnv); file is the config file (nil for
// none). Precedence: flag, environment, config file, default. Every value is
// parsed and checked here, so that a bad one is an error before anything
// runs, naming where it was written.
func Resolve(cmd string, flags map[string][]string, env func(string) (string, bool), file *File) (*Values, error) {
	v := &Values{cmd: cmd, vals: map[string]*Value{}, file: file}
	for name := range flags {
		if _, ok := Lookup(cmd, name); !ok {
			return nil, fmt.Errorf("--%s: not a setting of %s", name, cmd)
		}
	}
	for _, s := range For(cmd) {
		val := &Value{Setting: s, Source: FromDefault, Where: "default of --" + s.Name}
		if s.Default != "" {
			val.Raw = []string{s.Default}
			if s.Type == List {
				val.Raw = splitList(s.Default)
			}
		}
		if file != nil && s.Key != "" {
			if raw, line, ok := file.lookup(s.Key); ok {
				val.Raw, val.Source = raw, FromConfig
				val.Where = fmt.Sprintf("config %s: line %d: %s", file.Path, line, s.Key)
				if s.Type == Path {
					for i, p := range val.Raw {
						if p != "" && !filepath.IsAbs(p) {
							val.Raw[i] = filepath.Join(file.Dir(), p)
						}
					}
				}
			}
		}
		if e := s.Env(); e != "" && env != nil {
			if raw, ok := env(e); ok && raw != "" {
				val.Raw, val.Source, val.Where = []string{raw}, FromEnv, e
				if s.Type == List || s.Type == Strings {
					val.Raw = splitList(raw)
				}
			}
		}
		if raw, ok := flags[s.Name]; ok {
			val.Raw, val.Source, val.Where = raw, FromFlag, "--"+s.Name
			if s.Type == List {
				var all []string
				for _, r := range raw {
					all = append(all, splitList(r)...)
				}
				val.Raw = all
			}
		}
		if s.Type == List && val.Source != FromDefault && len(val.Raw) == 0 {
			return nil, fmt.Errorf("%s: empty list (valid: %s)", val.Where, choiceList(s.Choices))
		}
		if err := val.parse(); err != nil {
			return nil, fmt.Errorf("%s: %w", val.Where, err)
		}
		v.vals[s.Name] = val
	}
	return v, nil
}

// choiceList writes choices for a message, "all" last: "a, b, or all".
func choiceList(choices []string) string {
	var names []string
	all := false
	for _, c := range choices {
		if c == "all" {
			all = true
			continue
		}
		names = append(names, c)
	}
	if all {
		return strings.Join(names, ", ") + ", or all"
	}
	return strings.Join(names, ", ")
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func (v *Value) one() string {
	if len(v.Raw) == 0 {
		return ""
	}
	return v.Raw[len(v.Raw)-1] // a flag given twice: the last one counts
}

func (v *Value) parse() error {
	s := v.Setting
	check := func(x string) error {
		if len(s.Choices) > 0 && !slices.Contains(s.Choices, x) {
			return fmt.Errorf("unknown value %q (valid: %s)", x, choiceList(s.Choices))
		}
		return nil
	}
	switch s.Type {
	case String:
		x := v.one()
		if x != "" {
			if err := check(x); err != nil {
				return err
			}
		}
		v.parsed = x
	case Bool:
		x := v.one()
		if x == "" {
			v.parsed = false
			return nil
		}
		b, err := strconv.ParseBool(x)
		if err != nil {
			return fmt.Errorf("%q is not true or false", x)
		}
		v.parsed = b
	case Int:
		x := v.one()
		if x == "" {
			v.parsed = 0
			return nil
		}
		n, err := strconv.Atoi(x)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a whole number of 0 or more", x)
		}
		v.parsed = n
	case Duration:
		x := v.one()
		if x == "" || x == "0" {
			v.parsed = time.Duration(0)
			return nil
		}
		d, err := time.ParseDuration(x)
		if err != nil || d < 0 {
			return fmt.Errorf("%q is not a duration (e.g. 90s, 10m)", x)
		}
		v.parsed = d
	case Size:
		n, err := ParseSize(v.one())
		if err != nil {
			return err
		}
		v.parsed = n
	case Severity:
		x := strings.ToLower(v.one())
		if x == "" {
			v.parsed = (*scanners.Severity)(nil)
			return nil
		}
		if x == "none" {
			if !s.AllowsNone() {
				return fmt.Errorf("none is not allowed here (valid: %s)", strings.Join(s.Choices, ", "))
			}
			v.parsed = (*scanners.Severity)(nil)
			return nil
		}
		sev, err := scanners.ParseSeverity(x)
		if err != nil {
			return err
		}
		v.parsed = &sev
	case List, Strings:
		var out []string
		for _, x := range v.Raw {
			if s.Type == List {
				if x == "all" && slices.Contains(s.Choices, "all") {
					out = slices.DeleteFunc(slices.Clone(s.Choices), func(c string) bool { return c == "all" })
					if s.AllOf != nil {
						out = slices.Clone(s.AllOf)
					}
					break
				}
				if err := check(x); err != nil {
					return err
				}
				if slices.Contains(out, x) {
					continue
				}
			}
			out = append(out, x)
		}
		if s.Type == List && len(v.Raw) > 0 && len(out) == 0 {
			return fmt.Errorf("empty list")
		}
		v.parsed = out
	case Path:
		x := v.one()
		if x != "" {
			fi, err := os.Stat(x)
			switch {
			case err != nil:
				return fmt.Errorf("%s: %w", x, errNoPath(err))
			case fi.IsDir():
				return fmt.Errorf("%s is a directory, not a file", x)
			}
		}
		v.parsed = x
	}
	return nil
}

// errNoPath drops the path that *fs.PathError repeats.
func errNoPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

func (v *Values) get(name string, want Type) *Value {
	val, ok := v.vals[name]
	if !ok {
		panic(fmt.Sprintf("config: %s has no setting %q", v.cmd, name))
	}
	if val.Setting.Type != want && !(want == String && val.Setting.Type == Path) {
		panic(fmt.Sprintf("config: setting %q is a %s, not a %s", name, val.Setting.Type, want))
	}
	return val
}

// Has reports whether command cmd has the setting.
func (v *Values) Has(name string) bool { _, ok := v.vals[name]; return ok }

// Value returns the resolved setting, for messages (where it was set).
func (v *Values) Value(name string) Value { return *v.vals[name] }

// Set reports whether anything but the default set the setting.
func (v *Values) Set(name string) bool {
	return v.vals[name] != nil && v.vals[name].Source != FromDefault
}

// String returns a String or Path setting ("" when unset).
func (v *Values) String(name string) string { return v.get(name, String).parsed.(string) }

// Bool returns a Bool setting.
func (v *Values) Bool(name string) bool { return v.get(name, Bool).parsed.(bool) }

// Int returns an Int setting.
func (v *Values) Int(name string) int { return v.get(name, Int).parsed.(int) }

// Duration returns a Duration setting (0: no limit).
func (v *Values) Duration(name string) time.Duration {
	return v.get(name, Duration).parsed.(time.Duration)
}

// Size returns a Size setting in bytes.
func (v *Values) Size(name string) int64 { return v.get(name, Size).parsed.(int64) }

// Severity returns a Severity setting; nil means none (or unset).
func (v *Values) Severity(name string) *scanners.Severity {
	return v.get(name, Severity).parsed.(*scanners.Severity)
}

// List returns a List or Strings setting.
func (v *Values) List(name string) []string {
	val, ok := v.vals[name]
	if !ok || (val.Setting.Type != List && val.Setting.Type != Strings) {
		panic(fmt.Sprintf("config: %s has no list setting %q", v.cmd, name))
	}
	return val.parsed.([]string)
}

// ParseSize reads a byte size: a number with an optional unit (KB, MB, GB,
// TB in powers of 1000; K, M, G, T, KiB, MiB, GiB, TiB in powers of 1024).
func ParseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   float64
	}{
		{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
		{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
		{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40}, {"b", 1},
	}
	num, mult := strings.ToLower(strings.TrimSpace(s)), 1.0
	if num == "" {
		return 0, nil
	}
	for _, u := range units {
		if rest, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid size %q (use e.g. 500MB or 2GiB)", s)
	}
	return int64(n * mult), nil
}
