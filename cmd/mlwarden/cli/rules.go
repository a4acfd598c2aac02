package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/catalog"
)

func newRulesCmd(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "rules",
		Short: "List every rule with its check, severity, title and why it matters",
		Example: `  mlwarden rules
  mlwarden rules --check secrets
  mlwarden rules --format json | jq -r '.[] | select(.severity=="critical") | .id'`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			v, err := a.resolve(c)
			if err != nil {
				return err
			}
			format, check := v.String("format"), v.String("check")
			all, err := catalog.Rules()
			if err != nil {
				return err
			}
			rules := []scanners.Rule{}
			for _, r := range all {
				if check == "" || r.Check == check {
					rules = append(rules, r)
				}
			}
			if format == "json" {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				enc.SetEscapeHTML(false)
				return enc.Encode(rules)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RULE\tCHECK\tSEVERITY\tTITLE")
			for _, r := range rules {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.ID, r.Check, r.Severity, r.Title)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(a.stdout)
			for _, r := range rules {
				fmt.Fprintf(a.stdout, "%s\n  why: %s\n", r.ID, r.Why)
				if r.Fix != "" {
					fmt.Fprintf(a.stdout, "  fix: %s\n", r.Fix)
				}
			}
			return nil
		},
	}
	bindSettings(c, "rules")
	return c
}
