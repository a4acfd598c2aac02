package node

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mlwarden/mlwarden/node/procfs"
	"github.com/mlwarden/mlwarden/scanners"
)

// Capture is an evidence bundle being written (--capture FILE.tar.gz):
// first what the flagged processes and files are now, read again at once,
// then the report. It only reads the node; it never kills or changes
// anything.
type Capture struct {
	f  *os.File
	gz *gzip.Writer
	tw *tar.Writer
	at time.Time
}

// StartCapture creates the bundle at name and writes the evidence of the
// findings into it: for each flagged process its cmdline, status, stat,
// cgroup, exe link target, sockets and environment variable names (never
// their values), and each cron table or unit file a finding is about.
func StartCapture(name string, a *Audit, findings []scanners.Finding) (*Capture, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	c := &Capture{f: f, gz: gzip.NewWriter(f), at: time.Now()}
	c.tw = tar.NewWriter(c.gz)
	if err := c.evidence(a, findings); err != nil {
		c.abort()
		return nil, fmt.Errorf("capture: %w", err)
	}
	return c, nil
}

func (c *Capture) abort() {
	c.tw.Close()
	c.gz.Close()
	c.f.Close()
	os.Remove(c.f.Name())
}

func (c *Capture) add(name string, b []byte) error {
	h := &tar.Header{Name: name, Mode: 0o600, Size: int64(len(b)), ModTime: c.at, Typeflag: tar.TypeReg}
	if err := c.tw.WriteHeader(h); err != nil {
		return err
	}
	_, err := c.tw.Write(b)
	return err
}

func (c *Capture) evidence(a *Audit, findings []scanners.Finding) error {
	rt, err := openRoot(a.Root)
	if err != nil {
		return err
	}
	defer rt.Close()
	r := reader{root: rt}
	lim := DefaultLimits()
	var pids []int
	var files []string
	for _, f := range findings {
		if pid, ok := strings.CutPrefix(f.Path, "proc/"); ok {
			if n, err := strconv.Atoi(pid); err == nil && !slices.Contains(pids, n) {
				pids = append(pids, n)
			}
			continue
		}
		if f.Check == scanners.CheckNode && (f.RuleID == RulePersistenceCron.ID || f.RuleID == RulePersistenceUserService.ID) && !slices.Contains(files, f.Path) {
			files = append(files, f.Path)
		}
	}
	slices.Sort(pids)
	owners := a.owners()
	for _, pid := range pids {
		dir := "proc/" + strconv.Itoa(pid)
		for _, name := range []string{"cmdline", "status", "stat", "cgroup"} {
			b, err := r.readFile(dir+"/"+name, lim.MaxFileBytes)
			if err != nil && !errors.Is(err, errTooLarge) {
				b = []byte("not read: " + err.Error() + "\n")
			}
			if err := c.add(dir+"/"+name, b); err != nil {
				return err
			}
		}
		exe, err := r.readlink(dir + "/exe")
		if err != nil {
			exe = "not read: " + err.Error()
		}
		if err := c.add(dir+"/exe.link", []byte(exe+"\n")); err != nil {
			return err
		}
		var sb strings.Builder
		if p := a.Process(pid); p != nil {
			for _, s := range a.Sockets {
				if slices.ContainsFunc(owners[s.Inode], func(i int) bool { return a.Processes[i].PID == pid }) {
					fmt.Fprintf(&sb, "%s %s state=%02X inode=%d netns=%s\n", s.Local, s.Remote, s.State, s.Inode, s.NetNS)
				}
			}
		}
		if err := c.add(dir+"/sockets.txt", []byte(sb.String())); err != nil {
			return err
		}
		env, err := r.readFile(dir+"/environ", lim.MaxFileBytes)
		names := "not read: "
		if err != nil && !errors.Is(err, errTooLarge) {
			names += err.Error() + "\n"
		} else {
			list, _ := procfs.ParseNulList(env, 100000)
			names = strings.Join(procfs.EnvNames(list), "\n") + "\n"
		}
		if err := c.add(dir+"/environ.names", []byte(names)); err != nil {
			return err
		}
	}
	for _, name := range files {
		b, err := r.readFile(name, lim.MaxFileBytes)
		if err != nil && !errors.Is(err, errTooLarge) {
			b = []byte("not read: " + err.Error() + "\n")
		}
		if err := c.add(name, b); err != nil {
			return err
		}
	}
	return nil
}

// Finish writes the report (report.json) and closes the bundle.
func (c *Capture) Finish(report func(io.Writer) error) error {
	var sb strings.Builder
	if err := report(&sb); err != nil {
		c.abort()
		return fmt.Errorf("capture: report: %w", err)
	}
	if err := c.add("report.json", []byte(sb.String())); err != nil {
		c.abort()
		return fmt.Errorf("capture: %w", err)
	}
	err := errors.Join(c.tw.Close(), c.gz.Close(), c.f.Sync(), c.f.Close())
	if err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	return nil
}
