package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mlwarden/mlwarden/reports"
	"github.com/mlwarden/mlwarden/scanners/config"
	"github.com/mlwarden/mlwarden/scanners/scan"
)

// configure resolves the settings of c for targets, reading the config
// file with every section its owners decode (the admission server's serve
// section too, so that one file serves every command).
func (a *app) configure(c *cobra.Command, targets []string) (*config.Values, error) {
	v, err := scan.Configure(commandName(c), setFlags(c), a.lookupEnv, targets, serveOwner())
	if err != nil {
		return nil, usageError("%v", err)
	}
	return v, nil
}

// pipeline builds the scan pipeline from resolved settings.
func (a *app) pipeline(v *config.Values, adjust func(*scan.Options)) (*scan.Scanner, error) {
	setMemoryLimit(v)
	o, err := scan.OptionsFrom(v)
	if err != nil {
		return nil, usageError("%v", err)
	}
	o.Stdin, o.Version = a.stdin, a.build.Version+"\x00"+a.build.Commit
	if o.VerifySecrets {
		o.VerifyEndpoints, _ = a.lookupEnv(scan.EnvVerifyEndpoints) // loopback fakes, for tests
	}
	o.Warn = func(w string) { fmt.Fprintf(a.stderr, "mlwarden: warning: %s\n", reports.Escape(w)) }
	if adjust != nil {
		adjust(&o)
	}
	s, err := scan.New(o)
	if err != nil {
		return nil, &exitError{code: ExitError, err: err}
	}
	return s, nil
}
