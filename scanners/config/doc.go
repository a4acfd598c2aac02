package config

import (
	"fmt"
	"strings"
)

// Markdown writes the settings of command cmd as a Markdown table: flag,
// config key, environment variable, default and help (sweep's own only:
// it takes scan's too). The README's flag tables are this output
// (TestREADMEFlagTable keeps them equal).
func Markdown(cmd string) string {
	var b strings.Builder
	b.WriteString("| flag | config key | environment | default | meaning |\n|---|---|---|---|---|\n")
	for _, s := range Own(cmd) {
		flag := "`--" + s.Name + "`"
		if s.Short != "" {
			flag += ", `-" + s.Short + "`"
		}
		cell := func(v string) string {
			if v == "" {
				return ""
			}
			return "`" + v + "`"
		}
		def := s.Default
		if def == "false" || (def == "0" && s.Type != Duration) {
			def = ""
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", flag, cell(s.Key), cell(s.Env()), cell(def), strings.ReplaceAll(s.Help, "|", "\\|"))
	}
	return b.String()
}
