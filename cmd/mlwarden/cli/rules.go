package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/catalog"
)

func newRulesCmd(a *app) *cobra.Command {
	var format, check string
	c := &cobra.Command{
		Use:   "rules",
		Short: "List every rule with its check, severity, title and why it matters",
		Example: `  mlwarden rules
  mlwarden rules --check secrets
  mlwarden rules --format json | jq -r '.[] | select(.severity=="critical") | .id'`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if format != "text" && format != "json" {
				return usageError("--format: unknown format %q (valid: text, json)", format)
			}
			if check != "" && !slices.Contains(catalog.Names(), check) {
				return usageError("--check: unknown check %q (valid: %s)", check, strings.Join(catalog.Names(), ", "))
			}
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
	c.Flags().StringVarP(&format, "format", "f", "text", "output format: text, json")
	c.Flags().StringVar(&check, "check", "", "only this check's rules")
	return c
}
