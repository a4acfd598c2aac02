package slurmhook

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

func TestReadRequest(t *testing.T) {
	var b bytes.Buffer
	WriteNetstring(&b, "name", []byte("job script"))
	WriteNetstring(&b, "env", []byte("A=1"))
	WriteNetstring(&b, "arg", []byte("-p"))
	WriteNetstring(&b, "fail-on", []byte("medium"))
	WriteNetstring(&b, "script", []byte("#!/bin/sh\n,:\x00"))
	req, err := ReadRequest(bufio.NewReader(&b))
	if err != nil {
		t.Fatal(err)
	}
	if req.Name != "job script" || len(req.Env) != 1 || len(req.Args) != 1 || req.FailOn == nil || *req.FailOn != scanners.SeverityMedium || string(req.Script) != "#!/bin/sh\n,:\x00" {
		t.Errorf("parsed %+v", req)
	}
	b.Reset()
	WriteNetstring(&b, "fail-on", []byte("none"))
	WriteNetstring(&b, "script", nil)
	if req, err := ReadRequest(bufio.NewReader(&b)); err != nil || !req.NeverFail {
		t.Errorf("fail-on none: %+v, %v", req, err)
	}
	for _, bad := range []string{"", "x:", "3:abc", "999999999999:", "4:name,2:ab;", "5:bogus,0:,", "4:show,4:none,"} {
		if _, err := ReadRequest(bufio.NewReader(strings.NewReader(bad))); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzSbatchRequest(f *testing.F) {
	f.Add([]byte("4:name,1:x,6:script,2:ab,"))
	f.Add([]byte("3:env,3:A=1,6:script,0:,"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ReadRequest(bufio.NewReader(bytes.NewReader(data)))
	})
}
