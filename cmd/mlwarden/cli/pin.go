//go:build !mlwarden_sbatch

package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/mlwarden/mlwarden/scanners/pins"
)

// maxPinFile is the largest file mlwarden pin reads.
const maxPinFile = 16 << 20

func newPinCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pin FILE...",
		Short: "Pin image references and GitHub Actions in files to digests and commits",
		Long: `Rewrite the container image references in Dockerfiles, Kubernetes and Compose
YAML, sbatch and shell scripts (#SBATCH and srun --container-image, variables
and their defaults, enroot, apptainer, docker pull/run), GitHub Actions and
GitLab CI workflows (strategy.matrix values too) and Apptainer definitions to
name:tag@sha256:<digest>, asking each image's registry for the digest its tag
points at now. Only the references change: comments and formatting stay as
they are. Enroot/Pyxis and Apptainer accept no tag beside a digest, so there
the reference becomes name@sha256:<digest>.

GitHub Actions uses: (actions and reusable workflows) become
owner/repo@<40-hex commit> # <tag>, asking GitHub's API (--github-api; a token
from GITHUB_TOKEN or GH_TOKEN raises its rate limit). With --offline nothing is
asked and each reference is reported as not resolvable offline.

Credentials come from the Docker config, as docker and crane use them. Plain
HTTP is used only for loopback registries and the hosts named with
--insecure-registry.

Exit status: 0 done (or nothing to pin), 2 a file could not be read or written,
or a reference could not be resolved (the others are still pinned).`,
		Example: `  mlwarden pin Dockerfile k8s/train-job.yaml train.sbatch
  mlwarden pin --dry-run .github/workflows/*.yml
  mlwarden pin --offline --dry-run train.sbatch
  mlwarden pin --insecure-registry registry.lab:5000 Dockerfile`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("pin needs at least one FILE (see '%s --help')", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPin(cmd, a, args)
		},
	}
	bindSettings(cmd, "pin")
	return cmd
}

func runPin(cmd *cobra.Command, a *app, files []string) error {
	v, err := a.resolve(cmd)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	dryRun := v.Bool("dry-run")
	var resolve pins.Resolver
	var opts []pins.RewriteOption
	if !v.Bool("offline") {
		resolve = pins.RegistryResolver(pins.WithInsecureRegistries(v.List("insecure-registry")...))
		gh := []pins.GitHubOption{pins.WithGitHubAPI(v.String("github-api"))}
		if tok := cmp.Or(os.Getenv("GITHUB_TOKEN"), os.Getenv("GH_TOKEN")); tok != "" {
			gh = append(gh, pins.WithGitHubToken(tok))
		}
		opts = append(opts, pins.WithActions(pins.GitHubResolver(gh...)))
	}
	failed := 0
	for _, file := range files {
		data, err := readPinFile(file)
		if err != nil {
			fmt.Fprintf(a.stderr, "mlwarden: %s: %v\n", file, err)
			failed++
			continue
		}
		res, err := pins.Rewrite(ctx, file, data, resolve, opts...)
		if errors.Is(err, pins.ErrNotRewritable) {
			fmt.Fprintf(a.stderr, "mlwarden: %s: %v\n", file, err)
			failed++
			continue
		}
		if err != nil {
			fmt.Fprintf(a.stderr, "mlwarden: %s: %v\n", file, err)
			failed++
			if res == nil {
				continue
			}
		}
		for _, s := range res.Skipped {
			fmt.Fprintf(a.stderr, "%s:%d: left %s as it is: %s\n", file, s.Line, s.Ref, s.Reason)
		}
		if len(res.Edits) == 0 {
			continue
		}
		if dryRun {
			fmt.Fprint(a.stdout, pins.UnifiedDiff(filepath.ToSlash(file), data, res.Data))
			continue
		}
		if err := writeFileAtomic(file, res.Data); err != nil {
			fmt.Fprintf(a.stderr, "mlwarden: %s: %v\n", file, err)
			failed++
			continue
		}
		for _, e := range res.Edits {
			fmt.Fprintf(a.stdout, "%s:%d: %s -> %s\n", file, e.Line, e.Old, e.New)
		}
	}
	if failed > 0 {
		return &exitError{code: ExitError, err: fmt.Errorf("pin: %d of %d files had errors", failed, len(files))}
	}
	return nil
}

func readPinFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxPinFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxPinFile {
		return nil, fmt.Errorf("larger than %d bytes", maxPinFile)
	}
	return data, nil
}

// writeFileAtomic replaces name with data through a temporary file in the
// same directory, keeping the file's mode.
func writeFileAtomic(name string, data []byte) error {
	fi, err := os.Stat(name)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".mlwarden-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(fi.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}
