package unpack

import "errors"

// ErrNotInBuild is the error of every function of this package in the
// sbatch hook's build (decoders_sbatch.go); the default build never
// returns it.
var ErrNotInBuild = errors.New("not in this build (mlwarden-sbatch checks batch scripts; use mlwarden)")
