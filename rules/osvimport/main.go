// Command osvimport writes advisory rows for Python packages from a local
// copy of the OSV export, in the format of rules/advisories.yaml, so that
// the table can be regenerated offline and reproducibly:
//
//	osvimport -packages torch,transformers,vllm,ray,mlflow,gradio,jupyter-server \
//	    -o advisories-osv.yaml ~/osv/PyPI/all.zip
//
// Its arguments are OSV JSON files, directories of them, or the zip files
// of the export (https://osv-vulnerabilities.storage.googleapis.com/PyPI/all.zip,
// fetched by the user: the command never downloads). The output is a
// complete advisory file: pass it to mlwarden with --advisories (its rows
// replace built-in rows with the same CVE), or merge rows into
// rules/advisories.yaml after reviewing them. Rows are sorted and every
// row is validated as the loader validates the table.
package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mlwarden/mlwarden/rules"
)

// maxRecord bounds one OSV record.
const maxRecord = 4 << 20

func main() {
	pkgs := flag.String("packages", "torch,transformers,vllm,ray,mlflow,gradio,jupyter-server,notebook", "comma list of PyPI packages")
	out := flag.String("o", "-", "output file (- for standard output)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: osvimport [-packages LIST] [-o FILE] OSV_FILE_DIR_OR_ZIP...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var names []string
	for _, p := range strings.Split(*pkgs, ",") {
		if p = rules.NormalizePyPI(p); p != "" {
			names = append(names, p)
		}
	}
	recs, err := readAll(flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "osvimport:", err)
		os.Exit(2)
	}
	data, warnings, err := Convert(recs, names)
	for _, w := range warnings {
		fmt.Fprintln(os.Stderr, "osvimport: warning:", w)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "osvimport:", err)
		os.Exit(1)
	}
	if *out == "-" {
		os.Stdout.Write(data)
		return
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "osvimport:", err)
		os.Exit(1)
	}
}

// Record is the part of an OSV record the conversion reads
// (https://ossf.github.io/osv-schema/).
type Record struct {
	ID        string   `json:"id"`
	Aliases   []string `json:"aliases"`
	Summary   string   `json:"summary"`
	Details   string   `json:"details"`
	Published string   `json:"published"`
	Withdrawn string   `json:"withdrawn"`
	Severity  []struct {
		Type  string `json:"type"`
		Score string `json:"score"`
	} `json:"severity"`
	Affected []struct {
		Package struct {
			Ecosystem string `json:"ecosystem"`
			Name      string `json:"name"`
		} `json:"package"`
		Ranges []struct {
			Type   string `json:"type"`
			Events []struct {
				Introduced   string `json:"introduced"`
				Fixed        string `json:"fixed"`
				LastAffected string `json:"last_affected"`
			} `json:"events"`
		} `json:"ranges"`
	} `json:"affected"`
	References []struct {
		Type string `json:"type"`
		URL  string `json:"url"`
	} `json:"references"`
	DatabaseSpecific struct {
		Severity string `json:"severity"`
	} `json:"database_specific"`
}

// readAll reads OSV records from files, directories and zip files.
func readAll(args []string) ([]Record, error) {
	var recs []Record
	add := func(name string, r io.Reader) error {
		data, err := io.ReadAll(io.LimitReader(r, maxRecord+1))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if len(data) > maxRecord {
			return fmt.Errorf("%s: larger than %d bytes", name, maxRecord)
		}
		var rec Record
		if err := json.Unmarshal(data, &rec); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		recs = append(recs, rec)
		return nil
	}
	for _, arg := range args {
		fi, err := os.Stat(arg)
		if err != nil {
			return nil, err
		}
		switch {
		case fi.IsDir():
			err = filepath.WalkDir(arg, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
					return err
				}
				f, err := os.Open(p)
				if err != nil {
					return err
				}
				defer f.Close()
				return add(p, f)
			})
		case strings.HasSuffix(arg, ".zip"):
			err = readZip(arg, add)
		default:
			var f *os.File
			if f, err = os.Open(arg); err == nil {
				err = add(arg, f)
				f.Close()
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return recs, nil
}

func readZip(name string, add func(string, io.Reader) error) error {
	z, err := zip.OpenReader(name)
	if err != nil {
		return err
	}
	defer z.Close()
	for _, f := range z.File {
		if !strings.HasSuffix(f.Name, ".json") || f.FileInfo().IsDir() {
			continue
		}
		r, err := f.Open()
		if err != nil {
			return fmt.Errorf("%s: %s: %w", name, f.Name, err)
		}
		err = add(name+":"+f.Name, r)
		r.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// Convert turns OSV records into an advisory file for the named PyPI
// packages. Records for other packages, withdrawn records and ranges that
// are not ECOSYSTEM ranges are left out; what cannot be converted is a
// warning.
func Convert(recs []Record, packages []string) ([]byte, []string, error) {
	var warnings []string
	// GitHub's records carry a severity; read them before PyPA's.
	slices.SortStableFunc(recs, func(a, b Record) int { return strings.Compare(rank(a.ID)+a.ID, rank(b.ID)+b.ID) })
	byID := map[string]int{}
	var out []rules.Advisory
	for _, r := range recs {
		if r.Withdrawn != "" {
			continue
		}
		adv, ok, ws := convert(r, packages)
		warnings = append(warnings, ws...)
		if !ok {
			continue
		}
		if i, dup := byID[adv.ID]; dup {
			for _, a := range append([]string{r.ID}, r.Aliases...) {
				if a != out[i].ID && !slices.Contains(out[i].Aliases, a) {
					out[i].Aliases = append(out[i].Aliases, a)
				}
			}
			continue
		}
		byID[adv.ID] = len(out)
		out = append(out, adv)
	}
	slices.SortFunc(out, func(a, b rules.Advisory) int {
		return strings.Compare(a.Affected[0].Package+" "+a.ID, b.Affected[0].Package+" "+b.ID)
	})
	for i := range out {
		slices.Sort(out[i].Aliases)
	}
	var buf bytes.Buffer
	buf.WriteString("# Generated by rules/osvimport from a local copy of the OSV export; review before merging\n# into rules/advisories.yaml. Packages: " + strings.Join(packages, ", ") + ".\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(rules.AdvisoryTable{Version: 1, Advisories: out}); err != nil {
		return nil, warnings, err
	}
	enc.Close()
	if _, err := rules.ParseAdvisories(buf.Bytes()); err != nil {
		return nil, warnings, fmt.Errorf("generated table does not load: %w", err)
	}
	return buf.Bytes(), warnings, nil
}

func rank(id string) string {
	if strings.HasPrefix(id, "GHSA-") {
		return "0"
	}
	return "1"
}

// convert makes one row of a record, if it affects one of the packages.
func convert(r Record, packages []string) (rules.Advisory, bool, []string) {
	var warnings []string
	adv := rules.Advisory{ID: r.ID}
	var cves []string
	for _, a := range r.Aliases {
		if strings.HasPrefix(a, "CVE-") {
			cves = append(cves, a)
		}
	}
	// Key on the CVE, as the built-in table does, so that a generated row
	// replaces a built-in one.
	if len(cves) == 1 && !strings.HasPrefix(r.ID, "CVE-") {
		adv.ID = cves[0]
		adv.Aliases = append(adv.Aliases, r.ID)
	}
	for _, a := range r.Aliases {
		if a != adv.ID && !slices.Contains(adv.Aliases, a) {
			adv.Aliases = append(adv.Aliases, a)
		}
	}
	for _, af := range r.Affected {
		if af.Package.Ecosystem != rules.EcosystemPyPI {
			continue
		}
		name := rules.NormalizePyPI(af.Package.Name)
		if !slices.Contains(packages, name) {
			continue
		}
		out := rules.Affected{Ecosystem: rules.EcosystemPyPI, Package: name}
		for _, rg := range af.Ranges {
			if rg.Type != "ECOSYSTEM" {
				continue
			}
			var cur *rules.Range
			for _, e := range rg.Events {
				switch {
				case e.Introduced != "":
					cur = &rules.Range{Introduced: e.Introduced}
					if cur.Introduced == "0" {
						cur.Introduced = ""
					}
				case cur != nil && e.Fixed != "":
					cur.Fixed = e.Fixed
					out.Ranges = append(out.Ranges, *cur)
					cur = nil
				case cur != nil && e.LastAffected != "":
					cur.LastAffected = e.LastAffected
					out.Ranges = append(out.Ranges, *cur)
					cur = nil
				}
			}
			if cur != nil {
				out.Ranges = append(out.Ranges, *cur) // no fix yet
			}
		}
		var ok []rules.Range
		for _, rg := range out.Ranges {
			if valid(rg) {
				ok = append(ok, rg)
			} else {
				warnings = append(warnings, fmt.Sprintf("%s %s: range %+v has a version that is not PEP 440; left out", r.ID, name, rg))
			}
		}
		out.Ranges = ok
		if len(out.Ranges) > 0 {
			adv.Affected = append(adv.Affected, out)
		}
	}
	if len(adv.Affected) == 0 {
		return adv, false, warnings
	}
	adv.Severity, adv.CVSS, adv.Note = severity(r)
	adv.Impact = impact(r)
	adv.Source = source(r)
	if len(r.Published) >= 10 {
		adv.Published = r.Published[:10]
	}
	return adv, true, warnings
}

func valid(r rules.Range) bool {
	for _, v := range []string{r.Introduced, r.Fixed, r.LastAffected} {
		if v != "" && !rules.ValidVersion(rules.EcosystemPyPI, v) {
			return false
		}
	}
	return true
}

// severity is the record's: GitHub's database severity, else the CVSS v3
// base score computed from the vector, else medium with a note.
func severity(r Record) (sev, score, note string) {
	for _, s := range r.Severity {
		if strings.HasPrefix(s.Type, "CVSS_V3") {
			if v, err := CVSS3(s.Score); err == nil {
				score = fmt.Sprintf("%.1f", v)
				sev = fromScore(v)
			}
		}
	}
	switch strings.ToUpper(r.DatabaseSpecific.Severity) {
	case "CRITICAL":
		sev = "critical"
	case "HIGH":
		sev = "high"
	case "MODERATE", "MEDIUM":
		sev = "medium"
	case "LOW":
		sev = "low"
	}
	if sev == "" {
		return "medium", "", "the OSV record gives no severity this converter reads (CVSS v3 or GitHub's); medium assumed"
	}
	return sev, score, ""
}

func fromScore(v float64) string {
	switch {
	case v >= 9:
		return "critical"
	case v >= 7:
		return "high"
	case v >= 4:
		return "medium"
	}
	return "low"
}

func impact(r Record) string {
	s := strings.TrimSpace(r.Summary)
	if s == "" {
		s, _, _ = strings.Cut(strings.TrimSpace(r.Details), "\n")
	}
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		s = "see the source"
	}
	if rs := []rune(s); len(rs) > 200 {
		s = string(rs[:199]) + "…"
	}
	return s
}

func source(r Record) string {
	for _, t := range []string{"ADVISORY", "WEB"} {
		for _, ref := range r.References {
			if ref.Type == t && strings.HasPrefix(ref.URL, "https://") {
				return ref.URL
			}
		}
	}
	return "https://osv.dev/vulnerability/" + r.ID
}

// CVSS3 computes a CVSS 3.0 or 3.1 base score from its vector, as the
// specification's formula does (https://www.first.org/cvss/v3.1/specification-document).
func CVSS3(vector string) (float64, error) {
	parts := strings.Split(vector, "/")
	if len(parts) < 9 || !strings.HasPrefix(parts[0], "CVSS:3.") {
		return 0, errors.New("not a CVSS 3 vector")
	}
	m := map[string]string{}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, ":")
		if !ok {
			return 0, fmt.Errorf("metric %q", p)
		}
		m[k] = v
	}
	pick := func(k string, vals map[string]float64) (float64, error) {
		v, ok := vals[m[k]]
		if !ok {
			return 0, fmt.Errorf("metric %s:%s", k, m[k])
		}
		return v, nil
	}
	changed := m["S"] == "C"
	if m["S"] != "C" && m["S"] != "U" {
		return 0, fmt.Errorf("metric S:%s", m["S"])
	}
	pr := map[string]float64{"N": 0.85, "L": 0.62, "H": 0.27}
	if changed {
		pr = map[string]float64{"N": 0.85, "L": 0.68, "H": 0.5}
	}
	cia := map[string]float64{"H": 0.56, "L": 0.22, "N": 0}
	var vals [7]float64
	var err error
	for i, x := range []struct {
		k    string
		vals map[string]float64
	}{
		{"AV", map[string]float64{"N": 0.85, "A": 0.62, "L": 0.55, "P": 0.2}},
		{"AC", map[string]float64{"L": 0.77, "H": 0.44}},
		{"PR", pr},
		{"UI", map[string]float64{"N": 0.85, "R": 0.62}},
		{"C", cia}, {"I", cia}, {"A", cia},
	} {
		if vals[i], err = pick(x.k, x.vals); err != nil {
			return 0, err
		}
	}
	iss := 1 - (1-vals[4])*(1-vals[5])*(1-vals[6])
	var imp float64
	if changed {
		imp = 7.52*(iss-0.029) - 3.25*math.Pow(iss-0.02, 15)
	} else {
		imp = 6.42 * iss
	}
	if imp <= 0 {
		return 0, nil
	}
	expl := 8.22 * vals[0] * vals[1] * vals[2] * vals[3]
	if changed {
		return roundUp(math.Min(1.08*(imp+expl), 10)), nil
	}
	return roundUp(math.Min(imp+expl, 10)), nil
}

// roundUp is the specification's Roundup: the smallest number of one
// decimal that is at least x, free of floating-point artefacts.
func roundUp(x float64) float64 {
	i := int64(math.Round(x * 100000))
	if i%10000 == 0 {
		return float64(i) / 100000
	}
	return (math.Floor(float64(i)/10000) + 1) / 10
}
