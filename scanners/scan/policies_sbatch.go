//go:build mlwarden_sbatch

package scan

import (
	"context"
	"errors"

	"go.yaml.in/yaml/v3"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/config"
)

// The sbatch hook's build does not link cel-go (it needs protobuf, which
// the hook leaves out; docs/design/sbatch-hook.md): a config file's
// policies section or a --policy file is an error naming the full
// binary, never policies silently not applied.

// PolicySpec stands for policy.Spec.
type PolicySpec = yaml.Node

type policySet = *struct{}

var errNoPolicies = errors.New("policies are not in the mlwarden-sbatch build: run the sbatch hook with the full mlwarden binary (mlwarden sbatch) to apply them")

func policiesOwner() config.Owner {
	return config.Owner{Key: "policies", Into: &[]yaml.Node{}}
}

func configPolicies(f *config.File) ([]PolicySpec, error) {
	var specs []yaml.Node
	if err := f.DecodeSection("policies", &specs); err != nil {
		return nil, err
	}
	if len(specs) > 0 {
		return nil, errNoPolicies
	}
	return nil, nil
}

func policyFiles(paths []string) ([]PolicySpec, error) {
	if len(paths) > 0 {
		return nil, errNoPolicies
	}
	return nil, nil
}

func compilePolicies([]PolicySpec) (policySet, error) { return nil, nil }

func evaluatePolicies(context.Context, policySet, *scanners.Result) []scanners.Finding { return nil }

func policyRules(policySet) []scanners.Rule { return nil }
