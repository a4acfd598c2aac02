package hubtest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func get(t *testing.T, u string, hdr map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestServer(t *testing.T) {
	s := New(t)
	s.PageSize = 2
	commit := s.AddFiles("org/m", []File{
		Bytes("config.json", []byte(`{"a": 1}`), false),
		Bytes("sub/model.safetensors", []byte("0123456789"), true),
		Bytes("sub/x.txt", []byte("x"), false),
	})
	s.Add(&Repo{ID: "org/gated", Gated: true, Refs: map[string]string{"main": commit}, Commits: map[string][]File{commit: nil}})
	ep := s.Endpoint()

	var info struct{ SHA string }
	resp := get(t, ep+"/api/models/org/m/revision/main", nil)
	json.NewDecoder(resp.Body).Decode(&info)
	if resp.StatusCode != 200 || info.SHA != commit {
		t.Fatalf("revision: %s %+v", resp.Status, info)
	}
	// The tree, two entries a page, linked.
	var paths []string
	for u := ep + "/api/models/org/m/tree/" + commit + "?recursive=true"; u != ""; {
		resp := get(t, u, nil)
		var page []struct{ Path, Type string }
		json.NewDecoder(resp.Body).Decode(&page)
		for _, e := range page {
			paths = append(paths, e.Type+":"+e.Path)
		}
		u = ""
		if l := resp.Header.Get("Link"); l != "" {
			u = strings.TrimSuffix(strings.TrimPrefix(strings.Split(l, ";")[0], "<"), ">")
		}
	}
	if got := strings.Join(paths, " "); got != "file:config.json directory:sub file:sub/model.safetensors file:sub/x.txt" {
		t.Errorf("tree: %s", got)
	}
	// A git file is served with Range; an LFS file is redirected.
	resp = get(t, ep+"/org/m/resolve/"+commit+"/config.json", map[string]string{"Range": "bytes=1-3"})
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusPartialContent || string(body) != `"a"` || resp.Header.Get("X-Repo-Commit") != commit {
		t.Errorf("config.json: %s %q", resp.Status, body)
	}
	resp = get(t, ep+"/org/m/resolve/main/sub/model.safetensors", nil)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc, s.Files.URL) || resp.Header.Get("X-Linked-Size") != "10" {
		t.Fatalf("LFS file: %s %s", resp.Status, loc)
	}
	resp = get(t, loc, map[string]string{"Range": "bytes=8-"})
	body, _ = io.ReadAll(resp.Body)
	if string(body) != "89" {
		t.Errorf("file host: %s %q", resp.Status, body)
	}
	if resp := get(t, loc, map[string]string{"Authorization": "Bearer x"}); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("the file host took a token: %s", resp.Status)
	}
	if got := s.Served("sub/model.safetensors"); len(got) != 1 || got[0] != [2]int64{8, 10} {
		t.Errorf("Served = %v", got)
	}
	// The Hub's errors.
	errs := []struct {
		path, token string
		status      int
		code        string
	}{
		{"/api/models/org/none/revision/main", "", 401, "RepoNotFound"},
		{"/api/models/org/none/revision/main", s.Token(), 404, "RepoNotFound"},
		{"/api/models/org/m/revision/nope", "", 404, "RevisionNotFound"},
		{"/api/models/org/gated/revision/main", "", 401, "GatedRepo"},
		{"/api/models/org/gated/revision/main", s.Token(), 403, "GatedRepo"},
		{"/api/models/org/gated/revision/main", s.Token("model/org/gated"), 200, ""},
		{"/api/models/org/m/revision/main", "hf_unknown", 401, ""},
		{"/org/m/resolve/main/missing", "", 404, "EntryNotFound"},
	}
	for _, e := range errs {
		hdr := map[string]string{}
		if e.token != "" {
			hdr["Authorization"] = "Bearer " + e.token
		}
		resp := get(t, ep+e.path, hdr)
		if resp.StatusCode != e.status || resp.Header.Get("X-Error-Code") != e.code {
			t.Errorf("%s: %s %q, want %d %q", e.path, resp.Status, resp.Header.Get("X-Error-Code"), e.status, e.code)
		}
	}
	s.RateLimit(1, 7)
	resp = get(t, ep+"/api/models/org/m/revision/main", nil)
	if resp.StatusCode != 429 || resp.Header.Get("RateLimit") != `"api";r=0;t=7` || resp.Header.Get("Retry-After") != "7" {
		t.Errorf("rate limit: %s %v", resp.Status, resp.Header)
	}
	if resp := get(t, ep+"/api/models/org/m/revision/main", nil); resp.StatusCode != 200 {
		t.Errorf("after the rate limit: %s", resp.Status)
	}
}
