package cli

import (
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mlwarden/mlwarden/scanners/config"
)

// bindSettings declares on c the flags of every setting that command name
// takes, from the one settings table (scanners/config): the same name,
// shorthand, default and help everywhere. --help shows where each is also
// read from.
func bindSettings(c *cobra.Command, name string) {
	f := c.Flags()
	for _, s := range config.For(name) {
		help := s.Help
		var also []string
		if e := s.Env(); e != "" {
			also = append(also, "$"+e)
		}
		if s.Key != "" {
			also = append(also, "config: "+s.Key)
		}
		if len(also) > 0 {
			help += " [" + strings.Join(also, ", ") + "]"
		}
		switch s.Type {
		case config.Bool:
			def, _ := strconv.ParseBool(s.Default)
			f.BoolP(s.Name, s.Short, def, help)
		case config.Strings:
			f.StringArrayP(s.Name, s.Short, nil, help)
		case config.List:
			f.StringSliceP(s.Name, s.Short, nil, help)
			if s.Default != "" {
				f.Lookup(s.Name).DefValue = s.Default
			}
		default:
			f.StringP(s.Name, s.Short, s.Default, help)
		}
	}
}

// setFlags returns the flags the user set on c, by name, as the settings
// table reads them.
func setFlags(c *cobra.Command) map[string][]string {
	out := map[string][]string{}
	name := commandName(c)
	c.Flags().Visit(func(fl *pflag.Flag) {
		if _, ok := config.Lookup(name, fl.Name); !ok {
			return // a flag of the command's own, not a setting
		}
		switch v := fl.Value.(type) {
		case pflag.SliceValue:
			out[fl.Name] = v.GetSlice()
		default:
			out[fl.Name] = []string{fl.Value.String()}
		}
	})
	return out
}

// commandName is the settings table's name of c: "scan", "cuda check".
func commandName(c *cobra.Command) string {
	if p := c.Parent(); p != nil && p.Parent() != nil {
		return p.Name() + " " + c.Name()
	}
	return c.Name()
}

// resolve reads the settings of c from its flags, the environment and the
// config file a (or nothing) names, for a command that reads no target
// config.
func (a *app) resolve(c *cobra.Command) (*config.Values, error) {
	v, err := config.Resolve(commandName(c), setFlags(c), a.lookupEnv, nil)
	if err != nil {
		return nil, usageError("%v", err)
	}
	return v, nil
}

// lookupEnv reads the environment (a test's stand-in when set).
func (a *app) lookupEnv(k string) (string, bool) {
	if a.env != nil {
		return a.env(k)
	}
	return os.LookupEnv(k)
}
