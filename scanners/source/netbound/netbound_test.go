package netbound_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/internal/faultproxy"
	"github.com/mlwarden/mlwarden/scanners/source/netbound"
)

// TestTransport: every wait on a server that stalls, drips or never
// answers ends within the bound with a timeout that is not temporary; the
// first spends the budget, so the next request fails at once; a server
// that answers, even slowly but above the floor, is read whole.
func TestTransport(t *testing.T) {
	body := strings.Repeat("x", 4<<10)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/slow" {
			io.WriteString(w, body)
			return
		}
		// Slow but above the floor: 512 bytes every 100 ms.
		for i := 0; i < len(body); i += 512 {
			io.WriteString(w, body[i:i+512])
			w.(http.Flusher).Flush()
			time.Sleep(100 * time.Millisecond)
		}
	}))
	defer up.Close()
	const bound = 300 * time.Millisecond
	for _, tc := range []struct {
		name  string
		path  string
		fault *faultproxy.Fault
		want  string // the error says this ("": no error)
	}{
		{"answers", "/a", nil, ""},
		{"answers slowly, above the floor", "/slow", nil, ""},
		{"never answers", "/a", &faultproxy.Fault{Kind: faultproxy.Hang}, "did not answer within 300ms"},
		{"stalls mid-body", "/a", &faultproxy.Fault{Kind: faultproxy.Stall, After: 100}, "sent nothing for 300ms"},
		{"drips below the floor", "/a", &faultproxy.Fault{Kind: faultproxy.Drip, Interval: 20 * time.Millisecond}, "less than 1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := faultproxy.New(strings.TrimPrefix(up.URL, "http://"))
			defer p.Close()
			if tc.fault != nil {
				f := *tc.fault
				f.Path = regexp.MustCompile("^/a$")
				p.Set(f)
			}
			tr := netbound.New(netbound.Bound(&http.Transport{}, bound), bound, "the server")
			c := &http.Client{Transport: tr}
			start := time.Now()
			got, err := get(c, "http://"+p.Host+tc.path)
			took := time.Since(start)
			if took > 3*bound && tc.fault != nil {
				t.Errorf("took %s, bound %s", took, bound)
			}
			if tc.want == "" {
				if err != nil || got != body {
					t.Fatalf("got %d bytes, %v", len(got), err)
				}
				return
			}
			var ne net.Error
			var be *netbound.Error
			switch {
			case err == nil || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			case !errors.As(err, &ne) || !ne.Timeout() || !errors.As(err, &be):
				t.Errorf("%v is not a netbound timeout", err)
			case be.Temporary():
				t.Errorf("%v is temporary: it would be retried", err)
			}
			// The budget is spent: the next request, to a path without a
			// fault, fails at once.
			start = time.Now()
			_, err = get(c, "http://"+p.Host+"/b")
			if !errors.As(err, &be) || !be.Earlier || time.Since(start) > bound/2 {
				t.Errorf("after the timeout: %v in %s", err, time.Since(start))
			}
			if tr.Spent() == nil {
				t.Error("Spent is nil")
			}
		})
	}
}

func get(c *http.Client, u string) (string, error) {
	resp, err := c.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return string(data), err
}
