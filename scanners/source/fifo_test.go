package source

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/scanners"
)

type nullSink struct{ n int }

func (s *nullSink) Artifact(a *scanners.Artifact, r io.Reader) error {
	s.n++
	_, err := io.Copy(io.Discard, r)
	return err
}
func (s *nullSink) Error(scanners.Error) {}

// TestFIFOSwappedIn: a regular file listed by the walk and swapped for a
// FIFO before it is opened is skipped at once. A blocking open would wait
// for a writer forever, and the scan would then ignore SIGTERM (the walk
// never ends).
func TestFIFOSwappedIn(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "job.sh")
	if err := os.WriteFile(p, []byte("echo hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(p)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := OpenFS(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := src.(io.Closer); ok {
		defer c.Close()
	}
	sink := &nullSink{}
	done := make(chan struct{})
	go func() {
		src.(*fsSource).scanFile(context.Background(), sink, fsJob{abs: p, rel: "job.sh", info: fi})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		// Release the open so the goroutine ends.
		if w, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatal("opening a file swapped for a FIFO blocked")
	}
	if sink.n != 0 {
		t.Errorf("a FIFO was handed over as a file")
	}
}
