//go:build !mlwarden_sbatch

package image

import (
	"context"
	"crypto/rand"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/compression"

	"github.com/mlwarden/mlwarden/internal/faultproxy"
	"github.com/mlwarden/mlwarden/internal/registrytest"
	"github.com/mlwarden/mlwarden/scanners"
)

// TestImageRegistryFaults puts a fault proxy in front of the loopback
// registry and checks that no registry behaviour keeps a scan waiting:
// a blob that stalls, drips or is never answered is an error for that
// layer, within the network bound, and the other layers' findings are
// kept (those fetched before it: the first timeout spends the target's
// network budget, and the layers not yet asked for are errors too); a
// transient 500 is retried, a timeout never; a token endpoint, a manifest
// or a registry that never answers is the target's error within twice the
// bound (issue 37, item 12); the run's context bounds it all.
func TestImageRegistryFaults(t *testing.T) {
	host := registrytest.Any(t)
	noise := make([]byte, 96<<10) // incompressible: the blob is larger than a stall's first bytes
	rand.Read(noise)
	secrets := []string{imgTestSecret("hf_", 51), imgTestSecret("hf_", 52), imgTestSecret("hf_", 53)}
	l1 := imgTestLayer(t, compression.GZip, imgTestEntry{name: "a/.env", body: "HF_TOKEN=" + secrets[0] + "\n"})
	l2 := imgTestLayer(t, compression.GZip, imgTestEntry{name: "b/.env", body: "HF_TOKEN=" + secrets[1] + "\n"},
		imgTestEntry{name: "b/noise.bin", body: string(noise)})
	l3 := imgTestLayer(t, compression.GZip, imgTestEntry{name: "c/.env", body: "HF_TOKEN=" + secrets[2] + "\n"})
	img, err := imgAppend(l1, l2, l3)
	if err != nil {
		t.Fatal(err)
	}
	repo := registrytest.Repo(t, host)
	registrytest.PushImage(t, img, repo+":1")
	d2, _ := l2.Digest()
	blob2 := regexp.MustCompile(regexp.QuoteMeta(d2.String()) + "$")
	d1, _ := l1.Digest()
	d3, _ := l3.Digest()
	layers := regexp.MustCompile("(" + regexp.QuoteMeta(d1.String()) + "|" + regexp.QuoteMeta(d2.String()) + "|" + regexp.QuoteMeta(d3.String()) + ")$")
	path := strings.TrimPrefix(repo, host)

	const bound = 300 * time.Millisecond
	cases := []struct {
		name    string
		faults  []faultproxy.Fault
		token   bool
		timeout time.Duration // the run's context; 0: none
		netTime time.Duration // NetworkTimeout; 0: bound
		want    []string      // paths with findings
		either  []string      // paths with findings, or their layer's error
		errs    string        // an error must say this ("" : no error)
		silent  bool          // the registry accepts and never answers
		most    time.Duration // the most the scan may take (default 20 s)
		conc    int           // Options.Concurrency (default 2)
	}{
		{name: "blob stalls mid-body", faults: []faultproxy.Fault{{Kind: faultproxy.Stall, Path: blob2, After: 1000}},
			want: []string{"/a/.env"}, either: []string{"/c/.env"}, errs: "layer 2/3"},
		{name: "blob drips a byte at a time", faults: []faultproxy.Fault{{Kind: faultproxy.Drip, Path: blob2, Interval: 20 * time.Millisecond}},
			want: []string{"/a/.env"}, either: []string{"/c/.env"}, errs: "layer 2/3"},
		{name: "blob request never answered", faults: []faultproxy.Fault{{Kind: faultproxy.Hang, Path: blob2}},
			want: []string{"/a/.env"}, either: []string{"/c/.env"}, errs: "layer 2/3"},
		{name: "no layer's blob answered: one budget, not one per layer", faults: []faultproxy.Fault{{Kind: faultproxy.Hang, Path: layers}},
			conc: 1, errs: "not asked again", most: 2 * bound},
		{name: "a registry that accepts and never answers", silent: true, errs: "did not answer within 300ms", most: 3 * bound},
		{name: "transient 500s are retried", faults: []faultproxy.Fault{{Kind: faultproxy.Status, Code: 500, Path: blob2, Times: 2}},
			want: []string{"/a/.env", "/b/.env", "/c/.env"}},
		{name: "token endpoint hangs", token: true, faults: []faultproxy.Fault{{Kind: faultproxy.Hang, Path: regexp.MustCompile(`^/token$`)}},
			errs: "token"},
		{name: "manifest never answered", faults: []faultproxy.Fault{{Kind: faultproxy.Hang, Path: regexp.MustCompile(regexp.QuoteMeta(path) + `/manifests/`)}},
			errs: "manifest"},
		{name: "the run's deadline cuts a slow drip", netTime: time.Hour, timeout: 2 * time.Second,
			faults: []faultproxy.Fault{{Kind: faultproxy.Drip, Path: blob2, Interval: time.Millisecond}},
			want:   []string{"/c/.env"}, errs: "deadline"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := faultproxy.New(host)
			defer p.Close()
			p.RequireToken(c.token)
			p.Set(c.faults...)
			ctx := context.Background()
			if c.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, c.timeout)
				defer cancel()
			}
			nt := c.netTime
			if nt == 0 {
				nt = bound
			}
			reg := p.Host
			if c.silent {
				l, err := faultproxy.Listener()
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				reg = l.Addr().String()
			}
			conc := c.conc
			if conc == 0 {
				conc = 2
			}
			src, err := Open(ctx, SchemeRegistry, reg+path+":1", Options{NetworkTimeout: nt, Concurrency: conc})
			if err != nil {
				t.Fatal(err)
			}
			rec := newImgRecorder()
			start := time.Now()
			res := scanners.NewDispatcher([]scanners.Scanner{rec}).Run(ctx, src)
			took := time.Since(start)
			lim := 20 * time.Second
			if c.most > 0 {
				lim = c.most
			}
			if took > lim {
				t.Errorf("the scan took %s, more than %s", took, lim)
			}
			t.Logf("%s in %s: %s", c.name, took.Round(time.Millisecond), strings.TrimSpace(imgDump(res)))
			for _, w := range c.want {
				if len(imgFindingsAt(res, w)) == 0 {
					t.Errorf("no finding in %s (other layers' findings must be kept)", w)
				}
			}
			for _, w := range c.either {
				layer := "layer 3/3" // the only one c.either names
				if len(imgFindingsAt(res, w)) == 0 && !strings.Contains(fmt.Sprint(res.Errors), layer) {
					t.Errorf("no finding in %s, and no error for its %s", w, layer)
				}
			}
			if c.errs == "" && len(res.Errors) > 0 {
				t.Errorf("errors: %v", res.Errors)
			}
			if c.errs != "" {
				found := false
				for _, e := range res.Errors {
					found = found || strings.Contains(e.Error(), c.errs)
				}
				if !found {
					t.Errorf("no error saying %q: %v", c.errs, res.Errors)
				}
			}
		})
	}
}
