//go:build !mlwarden_sbatch

package scan

import (
	"context"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/config"
	"github.com/mlwarden/mlwarden/scanners/policy"
)

// PolicySpec is one CEL policy (policy.Spec). The sbatch hook's build
// (tag mlwarden_sbatch) does not link cel-go (it needs protobuf, which the
// hook leaves out): there policies are an error, see policies_sbatch.go.
type PolicySpec = policy.Spec

// policySet is the compiled policies.
type policySet = *policy.Set

func policiesOwner() config.Owner {
	return config.Owner{Key: "policies", Into: &[]policy.Spec{}}
}

// configPolicies reads the config file's policies section, each policy
// naming the file and its line.
func configPolicies(f *config.File) ([]PolicySpec, error) {
	var specs []policy.Spec
	if err := f.DecodeSection("policies", &specs); err != nil {
		return nil, err
	}
	for i := range specs {
		specs[i].File = f.Path
	}
	return specs, nil
}

// policyFiles reads --policy files.
func policyFiles(paths []string) ([]PolicySpec, error) {
	var out []PolicySpec
	for _, p := range paths {
		specs, err := policy.LoadFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, specs...)
	}
	return out, nil
}

func compilePolicies(specs []PolicySpec) (policySet, error) {
	return policy.Compile(specs, policy.Options{})
}

// evaluatePolicies runs the policies on each target of res, its input
// built once per target, and returns the violations (fingerprinted, not
// yet suppressed); a policy that could not be judged is an error of its
// target in res.
func evaluatePolicies(ctx context.Context, set policySet, res *scanners.Result) []scanners.Finding {
	if set.Len() == 0 {
		return nil
	}
	var out []scanners.Finding
	for _, in := range policy.InputsOf(res) {
		fs, errs := set.Evaluate(ctx, in)
		out = append(out, fs...)
		res.Errors = append(res.Errors, errs...)
	}
	return out
}

func policyRules(set policySet) []scanners.Rule { return set.Rules() }
