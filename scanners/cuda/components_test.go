package cuda

import (
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

func TestComponents(t *testing.T) {
	a := &scanners.Artifact{Path: "requirements.txt"}
	d := ExtractFile("requirements.txt", []byte("torch==2.4.0+cu121\nnumpy\n"))
	cs := components(a, d)
	var cuda, torch bool
	for _, c := range cs {
		switch {
		case c.Kind == scanners.ComponentCUDA && c.Version == "12.1" && c.Properties["declared-as"] != "":
			cuda = true
		case c.Kind == scanners.ComponentFramework && c.Name == "torch" && c.Version == "2.4.0+cu121":
			torch = true
		}
	}
	if !cuda || !torch {
		t.Errorf("components %+v", cs)
	}
	if cs := components(a, ExtractFile("requirements.txt", []byte("numpy\nrequests\n"))); len(cs) != 0 {
		t.Errorf("no declaration, components %+v", cs)
	}
}
