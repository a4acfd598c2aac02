package pins

import "strings"

// expandVars substitutes $NAME, ${NAME}, ${NAME:-word} and ${NAME-word}
// from env, as Dockerfiles, Compose files and CI variables do. dyn says a
// variable was not known; it is left as ${NAME}.
func expandVars(s string, env map[string]string) (out string, dyn bool) {
	if !strings.Contains(s, "$") {
		return s, false
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) && s[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		if c != '$' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		if s[i+1] == '{' {
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String(), true
			}
			expr := s[i+2 : i+end]
			i += end
			name, def, op := expr, "", ""
			if j := strings.IndexAny(expr, ":-+?"); j >= 0 {
				name = expr[:j]
				op = expr[j:]
				switch {
				case strings.HasPrefix(op, ":-"):
					def, op = op[2:], ":-"
				case strings.HasPrefix(op, "-"):
					def, op = op[1:], "-"
				default:
					dyn = true
					b.WriteString("${" + expr + "}")
					continue
				}
			}
			v, ok := env[name]
			switch {
			case ok && (op != ":-" || v != ""):
				b.WriteString(v)
			case op != "":
				d, dd := expandVars(def, env)
				dyn = dyn || dd
				b.WriteString(d)
			default:
				dyn = true
				b.WriteString("${" + name + "}")
			}
			continue
		}
		j := i + 1
		for j < len(s) && (s[j] == '_' || isNameStart(s[j])) {
			j++
		}
		if j == i+1 {
			b.WriteByte(c)
			continue
		}
		name := s[i+1 : j]
		if v, ok := env[name]; ok {
			b.WriteString(v)
		} else {
			dyn = true
			b.WriteString("${" + name + "}")
		}
		i = j - 1
	}
	return b.String(), dyn
}
