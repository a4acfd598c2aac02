package pins

import (
	"fmt"
	"strings"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
)

// PowerShell scripts (.ps1 files, and GitHub Actions steps run by pwsh or
// powershell) are read line by line: there is no maintained PowerShell
// parser in Go. A download piped into or passed to Invoke-Expression is
// found by pattern; every other line that reads as a plain command
// (choco install git, nuget install x, pip install y) is checked as shell.

var (
	// psPipe: iwr URL | iex, Invoke-RestMethod URL | Invoke-Expression,
	// (New-Object Net.WebClient).DownloadString(URL) | iex.
	psPipe = lazyregexp.New(`(?i)(\b(?:iwr|irm|invoke-webrequest|invoke-restmethod|curl|wget)\b|\.downloadstring\s*\()[^|\n]*\|\s*(?:&\s*)?\b(iex|invoke-expression)\b`)
	// psCall: iex (iwr URL), iex ((New-Object Net.WebClient).DownloadString(URL)),
	// Invoke-Expression (irm URL).
	psCall = lazyregexp.New(`(?i)\b(?:iex|invoke-expression)\b\s*(?:-command\s*)?[(&\s]*(?:\b(?:iwr|irm|invoke-webrequest|invoke-restmethod)\b|\(?\s*new-object\s+(?:system\.)?net\.webclient\s*\)?\s*\.downloadstring)`)
	psURL  = lazyregexp.New(`(?i)https?://[^\s'")]+`)
)

// scanPowerShell checks a PowerShell script whose line 1 is r's line 1.
func scanPowerShell(text string, r *rep, st *shellState) {
	if st == nil {
		st = newShellState()
	}
	for i, l := range strings.Split(text, "\n") {
		l = strings.TrimRight(l, "\r")
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if psPipe.MatchString(l) || psCall.MatchString(l) {
			u := psURL.FindString(l)
			if u == "" {
				u = "(a URL)"
			}
			r.add(ruleCurlPipeShell, i+1, u, fmt.Sprintf("PowerShell downloads %s and runs it with Invoke-Expression at once, unreviewed and unverified; save it with Invoke-WebRequest -OutFile, check it (if ((Get-FileHash f).Hash -ne '<sha256>') { throw }), then run it", u))
			continue
		}
		sc := &shellScan{st: st, r: r.sub(i+1, ""), src: []byte(l), quiet: true}
		sc.run()
	}
}
