// Package instr rebuilds a Dockerfile instruction's shell text from its
// source lines, keeping the line each part is written on: BuildKit's
// parser joins a continued instruction into one line (and drops the
// comment and blank lines inside continuations), which would put every
// finding on the instruction's first line. The pins and misconfig checks
// both read RUN, CMD and ENTRYPOINT this way. It imports no parser, so the
// sbatch hook's build can link its users.
package instr

import "strings"

// Shell returns the shell text of the instruction on lines start to end
// (1-based, inclusive) of lines: the instruction word and its --flags
// dropped from the first line, and, unless keepBlank is set (an
// instruction with heredocs, whose bodies keep every line), the blank and
// comment lines after it. lineOf[i] is the source line of the text's line
// i+1. ok is false when the range is not inside lines.
func Shell(lines []string, start, end int, keepBlank bool) (text string, lineOf []int, ok bool) {
	if start < 1 || end > len(lines) || start > end {
		return "", nil, false
	}
	body := strings.TrimLeft(lines[start-1], " \t")
	if i := strings.IndexAny(body, " \t"); i >= 0 {
		body = strings.TrimLeft(body[i:], " \t") // the instruction word
	} else {
		body = ""
	}
	for strings.HasPrefix(body, "--") {
		_, rest, found := strings.Cut(body, " ")
		if !found {
			body = ""
			break
		}
		body = strings.TrimLeft(rest, " \t")
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(body, "\r"))
	lineOf = []int{start}
	for l := start + 1; l <= end; l++ {
		s := lines[l-1]
		if t := strings.TrimSpace(s); !keepBlank && (t == "" || strings.HasPrefix(t, "#")) {
			continue
		}
		b.WriteByte('\n')
		b.WriteString(strings.TrimRight(s, "\r"))
		lineOf = append(lineOf, l)
	}
	return b.String(), lineOf, true
}

// Line maps a 1-based line of Shell's text back to its source line
// (start for a line outside it).
func Line(lineOf []int, l int) int {
	if l >= 1 && l <= len(lineOf) {
		return lineOf[l-1]
	}
	if len(lineOf) > 0 {
		return lineOf[0]
	}
	return 0
}
