//go:build !mlwarden_sbatch

package hf_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/internal/faultproxy"
	"github.com/mlwarden/mlwarden/internal/hubtest"
	"github.com/mlwarden/mlwarden/scanners/scan"
	"github.com/mlwarden/mlwarden/scanners/source/image"
)

// TestHubFaults: a Hub that drips a body (headers, then a byte at a time),
// stalls it, never answers, or accepts connections and never answers, is
// an error of the file or the target within the network bound — the
// registry client's idle and low-speed floor (scanners/source/netbound) —
// never a hang, even with no --timeout (issue 37, items 12 and 26).
func TestHubFaults(t *testing.T) {
	srv := hubtest.New(t)
	readme := "---\nlicense: mit\n---\n# m\n\n" + strings.Repeat("A model card line.\n", 200)
	commit := srv.AddFiles("org/m", []hubtest.File{
		hubtest.Bytes("README.md", []byte(readme), false),
		hubtest.Bytes("config.json", []byte(`{"model_type": "bert"}`), false),
	})
	const bound = 300 * time.Millisecond
	resolve := regexp.MustCompile(`/resolve/[0-9a-f]+/README\.md$`)
	for _, tc := range []struct {
		name   string
		faults []faultproxy.Fault
		silent bool   // the endpoint accepts connections and never answers
		want   string // an error says this
		most   time.Duration
	}{
		{"a file drips", []faultproxy.Fault{{Kind: faultproxy.Drip, Path: resolve, Interval: 50 * time.Millisecond}}, false, "less than 1024", 3 * bound},
		{"a file stalls", []faultproxy.Fault{{Kind: faultproxy.Stall, Path: resolve, After: 10}}, false, "sent nothing for 300ms", 3 * bound},
		{"the tree listing drips", []faultproxy.Fault{{Kind: faultproxy.Drip, Path: regexp.MustCompile(`/tree/`), Interval: 50 * time.Millisecond}}, false, "less than 1024", 3 * bound},
		{"the Hub never answers", []faultproxy.Fault{{Kind: faultproxy.Hang}}, false, "did not answer within 300ms", 3 * bound},
		{"the Hub accepts and never answers", nil, true, "did not answer within 300ms", 3 * bound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := faultproxy.New(strings.TrimPrefix(srv.Endpoint(), "http://"))
			defer p.Close()
			p.Set(tc.faults...)
			endpoint := "http://" + p.Host
			if tc.silent {
				l, err := faultproxy.Listener()
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				endpoint = "http://" + l.Addr().String()
			}
			o := hubOptions(srv)
			o.Endpoint, o.NetworkTimeout = endpoint, bound
			sc, err := scan.New(scan.Options{HF: o, Image: image.Options{NoCache: true}})
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			// A deadline only so that a hang fails the test instead of
			// stopping it: the bound must end it long before.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			res, err := sc.Run(ctx, scan.Target{Ref: "hf:org/m@" + commit})
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			errs := fmt.Sprint(res.Errors)
			t.Logf("%s: %s: %.300s", tc.name, took.Round(time.Millisecond), errs)
			if !strings.Contains(errs, tc.want) {
				t.Errorf("no error saying %q: %s", tc.want, errs)
			}
			if took > tc.most {
				t.Errorf("took %s, more than %s", took, tc.most)
			}
		})
	}
}
