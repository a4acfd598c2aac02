package slurmhook

import (
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// TestLineEscapes: a script's bytes in a message or evidence cannot write
// control sequences to the user's terminal or forge another line.
func TestLineEscapes(t *testing.T) {
	f := scanners.Finding{RuleID: "secrets/x", Message: "token in\x1b]0;pwned\x07 file\nmlwarden: allowed", Evidence: "hf_Ab…xy\x1b[2J"}
	got := Line(f, "line 3", nil, false)
	if strings.ContainsAny(got, "\x1b\x07\n\r") {
		t.Fatalf("line holds control characters: %q", got)
	}
	want := `mlwarden: line 3: token in\x1b]0;pwned\x07 file mlwarden: allowed in 'hf_Ab…xy\x1b[2J' (rule secrets/x)`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	plain := scanners.Finding{RuleID: "secrets/x", Message: "a  plain\tmessage", Evidence: "ev"}
	if got := Line(plain, "script", nil, true); got != "mlwarden: warning: script: a plain message in 'ev' (rule secrets/x)" {
		t.Errorf("plain line changed: %q", got)
	}
}
