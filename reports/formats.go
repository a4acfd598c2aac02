//go:build !mlwarden_sbatch

package reports

// otherWriter returns the writer of a format the sbatch hook does not
// offer (its build, mlwarden-sbatch, leaves them out: formats_sbatch.go),
// or nil.
func otherWriter(format string, o Options) Writer {
	switch format {
	case "cyclonedx":
		return &cyclonedxWriter{o: o}
	case "junit":
		return &junitWriter{o: o}
	case "gitlab":
		return &gitlabWriter{o: o, kind: gitlabSAST}
	case "gitlab-secrets":
		return &gitlabWriter{o: o, kind: gitlabSecrets}
	case "html":
		return &htmlWriter{o: o}
	}
	return nil
}
