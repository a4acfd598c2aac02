package image

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/internal/registrytest"
)

// TestImageDialOption: every registry connection goes through Options.Dial
// when it is set, with the network bound or without; a dial that refuses
// ends the target with that error and no file is scanned.
func TestImageDialOption(t *testing.T) {
	host := registrytest.Any(t)
	ref := registrytest.Repo(t, host) + ":v1"
	registrytest.PushRandom(t, ref)
	refused := errors.New("refused by the test's dial")
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		refuse  bool
	}{
		{"bounded", 0, false},
		{"unbounded", -1, false},
		{"bounded refused", 0, true},
		{"unbounded refused", -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var dialed []string
			dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
				mu.Lock()
				dialed = append(dialed, addr)
				mu.Unlock()
				if tc.refuse {
					return nil, refused
				}
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			}
			res, rec := imgScan(t, SchemeRegistry, ref, Options{NoCache: true, NetworkTimeout: tc.timeout, Dial: dial})
			mu.Lock()
			defer mu.Unlock()
			if len(dialed) == 0 {
				t.Fatal("Options.Dial was not used")
			}
			for _, a := range dialed {
				if a != host && !strings.HasPrefix(a, host) {
					t.Errorf("dialed %s, not the registry %s", a, host)
				}
			}
			switch {
			case tc.refuse && (len(res.Errors) == 0 || !strings.Contains(res.Errors[0].Message, refused.Error()) || len(rec.paths()) > 0):
				t.Errorf("refused dial: errors %s, files %v", imgDump(res), rec.paths())
			case !tc.refuse && (len(res.Errors) > 0 || len(rec.paths()) == 0):
				t.Errorf("errors %s, files %v", imgDump(res), rec.paths())
			}
		})
	}
}
