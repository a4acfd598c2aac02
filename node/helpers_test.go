package node_test

import (
	"os"
	"path/filepath"
)

func symlink(target, name string) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return os.Symlink(target, name)
}
