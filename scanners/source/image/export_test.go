//go:build !mlwarden_sbatch

package image

import (
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Test helpers for the external test package (image_checks_test.go).
var ImgWriteOCI = imgWriteOCI

// ImgTestImage returns the fixture image, the secret in its deleted file and
// the token in its ENV.
func ImgTestImage(t testing.TB, arch string) (img v1.Image, secret, env string) {
	f := imgTestImage(t, arch)
	return f.img, f.secret, f.env
}
