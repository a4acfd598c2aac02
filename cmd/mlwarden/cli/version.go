package cli

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

func newVersionCmd(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:     "version",
		Short:   "Print the version, commit and build date",
		Example: "  mlwarden version\n  mlwarden version --format json",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			v, err := a.resolve(c)
			if err != nil {
				return err
			}
			switch v.String("format") {
			case "json":
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]string{
					"version": a.build.Version, "commit": a.build.Commit, "date": a.build.Date,
					"go": runtime.Version(), "platform": runtime.GOOS + "/" + runtime.GOARCH,
				})
			case "text":
				fmt.Fprintf(a.stdout, "mlwarden %s (commit %s, built %s, %s %s/%s)\n", a.build.Version, a.build.Commit, a.build.Date, runtime.Version(), runtime.GOOS, runtime.GOARCH)
				return nil
			}
			return nil
		},
	}
	bindSettings(c, "version")
	return c
}
