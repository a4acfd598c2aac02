#!/usr/bin/env bash
# Recall and false positives of the secrets check on gitleaks' own rule test
# cases, side by side with the gitleaks CLI (issue 16).
#
# gitleaks' rule generators (cmd/generate/config/rules/*.go in the module
# cache, v8.30.0 as go.mod pins) hold each rule's true positives (tps, most
# made with random values at generation time: a fresh set every run) and
# false positives (fps). This script copies that source, makes its Validate
# record the cases instead of checking them, writes each case as a file
# (tps/<rule>/<n>.txt, fps/<rule>/<n>.txt; path-bound cases under their
# path), runs both tools over the tree, and prints, per tool, how many tp
# files got a finding and how many fp files did, and the tp files each
# missed. Trivy's secret testdata and detect-secrets' test data are not on
# this machine (no network to them): not measured here.
#
# Usage: bench/secrets-peers.sh   (KEEP=1 keeps the work dir)
# Needs: go, python3; gitleaks v$GL_CLI on PATH or in $(go env GOPATH)/bin
# (go install github.com/zricethezav/gitleaks/v8@v8.30.1, once).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$(mktemp -d -t mlwarden-peers-XXXXXX)}
KEEP=${KEEP:-0}
[ "$KEEP" = 1 ] || trap 'rm -rf "$WORK"' EXIT
GL_VERSION=$(awk '$1=="github.com/zricethezav/gitleaks/v8"{print $2}' "$ROOT/go.mod")
GL_SRC="$(go env GOMODCACHE)/github.com/zricethezav/gitleaks/v8@$GL_VERSION"
GL=$(command -v gitleaks || echo "$(go env GOPATH)/bin/gitleaks")
echo "work dir: $WORK; cases from gitleaks $GL_VERSION; CLI: $("$GL" version 2>/dev/null || echo missing)"

(cd "$ROOT" && go build -o "$WORK/mlwarden" ./cmd/mlwarden)
cp -r "$GL_SRC" "$WORK/glsrc" && chmod -R u+w "$WORK/glsrc"
python3 - "$WORK/glsrc" <<'PY'
import os, re, sys
root = sys.argv[1]
p = os.path.join(root, 'cmd/generate/config/utils/validate.go')
s = open(p).read()
s = s.replace('''func Validate(rule config.Rule, truePositives []string, falsePositives []string) *config.Rule {
	r := &rule''', '''type Case struct {
	Rule    string            `json:"rule"`
	TPs     []string          `json:"tps"`
	FPs     []string          `json:"fps"`
	TPPaths map[string]string `json:"tp_paths,omitempty"`
	FPPaths map[string]string `json:"fp_paths,omitempty"`
}

var Cases []Case

func Validate(rule config.Rule, truePositives []string, falsePositives []string) *config.Rule {
	Cases = append(Cases, Case{Rule: rule.RuleID, TPs: truePositives, FPs: falsePositives})
	r := &rule
	return r''')
s = s.replace('''func ValidateWithPaths(rule config.Rule, truePositives map[string]string, falsePositives map[string]string) *config.Rule {
	r := &rule''', '''func ValidateWithPaths(rule config.Rule, truePositives map[string]string, falsePositives map[string]string) *config.Rule {
	Cases = append(Cases, Case{Rule: rule.RuleID, TPPaths: truePositives, FPPaths: falsePositives})
	r := &rule
	return r''')
open(p, 'w').write(s)
calls = re.findall(r'^\s*(rules\.\w+\(\)),\s*$', open(os.path.join(root, 'cmd/generate/config/main.go')).read(), re.M)
os.makedirs(os.path.join(root, 'cmd/dumpcases'), exist_ok=True)
open(os.path.join(root, 'cmd/dumpcases/main.go'), 'w').write('package main\n\nimport (\n\t"encoding/json"\n\t"os"\n\n'
    '\t"github.com/zricethezav/gitleaks/v8/cmd/generate/config/rules"\n\t"github.com/zricethezav/gitleaks/v8/cmd/generate/config/utils"\n)\n\n'
    'func main() {\n' + ''.join('\t_ = %s\n' % c for c in calls) + '\tjson.NewEncoder(os.Stdout).Encode(utils.Cases)\n}\n')
PY
(cd "$WORK/glsrc" && GOFLAGS=-mod=mod go run ./cmd/dumpcases) > "$WORK/cases.json"

ROOT="$ROOT" python3 - "$WORK" <<'PY'
import json, os, sys
work = sys.argv[1]
cases = json.load(open(os.path.join(work, 'cases.json')))
corpus = os.path.join(work, 'corpus')
def put(rel, text):
    p = os.path.join(corpus, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    open(p, 'w').write(text)
n = {'tp': 0, 'fp': 0}
for c in cases:
    for kind in ('tp', 'fp'):
        for i, t in enumerate(c.get(kind + 's') or []):
            put('%ss/%s/%d.txt' % (kind, c['rule'], i), t + '\n'); n[kind] += 1
        for i, (path, t) in enumerate(sorted((c.get(kind + '_paths') or {}).items())):
            put('%ss/%s/p%d/%s' % (kind, c['rule'], i, path.lstrip('/')), t + '\n'); n[kind] += 1
print('cases: %d rules, %d true-positive files, %d false-positive files' % (len(cases), n['tp'], n['fp']))
PY

"$WORK/mlwarden" scan --checks secrets --max-archive-depth 0 --fail-on none --format json --output "$WORK/ml.json" "$WORK/corpus" >/dev/null 2>&1 || true
"$GL" dir "$WORK/corpus" --no-banner --log-level error --exit-code 0 --report-format json --report-path "$WORK/gl.json" >/dev/null 2>&1 || true

ROOT="$ROOT" python3 - "$WORK" <<'PY'
import json, os, sys
work = sys.argv[1]
corpus = os.path.join(work, 'corpus')
files = {'tp': set(), 'fp': set()}
for kind in files:
    for d, _, fs in os.walk(os.path.join(corpus, kind + 's')):
        for f in fs:
            files[kind].add(os.path.relpath(os.path.join(d, f), corpus))
import tomllib
names = tomllib.load(open(os.path.join(os.environ['ROOT'], 'rules/secrets.toml'), 'rb'))['mlwarden']['names']
back = {'secrets/' + v: k for k, v in names.items()}
mlf = [f for f in json.load(open(os.path.join(work, 'ml.json')))['findings'] if not f.get('suppressed')]
glf = json.load(open(os.path.join(work, 'gl.json')))
ml = {f['path'] for f in mlf}
gl = {os.path.relpath(f['File'], corpus) for f in glf}
# A false-positive case is its rule's: another rule's finding on it is that
# rule's true positive more often than not (gitleaks' fps of one Cloudflare
# rule are the others' formats).
same = {'mlwarden': {f['path'] for f in mlf if back.get(f['rule_id'], f['rule_id'][len('secrets/'):]) == f['path'].split('/')[1]},
        'gitleaks': {os.path.relpath(f['File'], corpus) for f in glf if f['RuleID'] == os.path.relpath(f['File'], corpus).split('/')[1]}}
for name, got in (('gitleaks', gl), ('mlwarden', ml)):
    tp, fp = files['tp'] & got, files['fp'] & got
    print('%-9s recall %d/%d (%.1f %%)   false positives: %d/%d by the case rule, %d/%d by any rule' % (name, len(tp), len(files['tp']), 100.0 * len(tp) / len(files['tp']),
          len(files['fp'] & same[name]), len(files['fp']), len(fp), len(files['fp'])))
    missed = {}
    for f in files['tp'] - got:
        r = f.split('/')[1]
        missed[r] = missed.get(r, 0) + 1
    print('  missed, by rule: ' + ', '.join('%s %d' % kv for kv in sorted(missed.items(), key=lambda kv: -kv[1])))
    print('  false positives by the own rule: ' + (', '.join(sorted(files['fp'] & same[name])) or 'none'))
print('tp files mlwarden misses that gitleaks finds: %d' % len((files['tp'] - ml) & gl))
print('tp files gitleaks misses that mlwarden finds: %d' % len((files['tp'] - gl) & ml))
PY

# Part 2: mlwarden's own rule cases (the ML formats, and the formats of
# issue 16), positives and negatives on five seeds each, made at test time.
echo
(cd "$ROOT" && MLWARDEN_SECRETS_CASES_DIR="$WORK/ours" go test -count=1 -run '^TestWriteRuleCases$' ./scanners/secrets >/dev/null)
"$WORK/mlwarden" scan --checks secrets --max-archive-depth 0 --fail-on none --format json --output "$WORK/ml-ours.json" "$WORK/ours" >/dev/null 2>&1 || true
"$GL" dir "$WORK/ours" --no-banner --log-level error --exit-code 0 --report-format json --report-path "$WORK/gl-ours.json" >/dev/null 2>&1 || true
# Part 3: the ML-style code of fixtures/secrets/mlcode (no credential in it).
"$WORK/mlwarden" scan --checks secrets --fail-on none --format json --output "$WORK/ml-code.json" "$ROOT/fixtures/secrets/mlcode" >/dev/null 2>&1 || true
"$GL" dir "$ROOT/fixtures/secrets/mlcode" --no-banner --log-level error --exit-code 0 --report-format json --report-path "$WORK/gl-code.json" >/dev/null 2>&1 || true
ROOT="$ROOT" python3 - "$WORK" <<'PY'
import json, os, sys
work = sys.argv[1]
ours = os.path.join(work, 'ours')
cases = {k: {(r, i) for r in os.listdir(os.path.join(ours, k)) for i in os.listdir(os.path.join(ours, k, r))} for k in ('pos', 'neg')}
def hits(paths):
    out = set()
    for p in paths:
        parts = p.split('/')
        if len(parts) >= 3 and parts[0] in ('pos', 'neg'):
            out.add((parts[0], parts[1], parts[2]))
    return out
ml = hits(f['path'] for f in json.load(open(os.path.join(work, 'ml-ours.json')))['findings'] if not f.get('suppressed'))
gl = hits(os.path.relpath(f['File'], ours) for f in json.load(open(os.path.join(work, 'gl-ours.json'))))
print("mlwarden's rule cases: %d positives, %d negatives (5 seeds each)" % (len(cases['pos']), len(cases['neg'])))
for name, got in (('gitleaks', gl), ('mlwarden', ml)):
    pos = {(r, i) for k, r, i in got if k == 'pos'}
    neg = {(r, i) for k, r, i in got if k == 'neg'}
    missed = {}
    for r, _ in cases['pos'] - pos:
        missed[r] = missed.get(r, 0) + 1
    print('%-9s found %d/%d positives, %d/%d negatives reported; missed: %s' % (name, len(pos), len(cases['pos']), len(neg), len(cases['neg']),
          ', '.join('%s %d' % kv for kv in sorted(missed.items())) or 'none'))
print()
print('fixtures/secrets/mlcode (ML-style code, no credential):')
for name, fs in (('gitleaks', [(os.path.relpath(f['File'], os.path.join(os.environ['ROOT'], 'fixtures/secrets/mlcode')), f['StartLine'], f['RuleID']) for f in json.load(open(os.path.join(work, 'gl-code.json')))]),
                 ('mlwarden', [(f['path'], f.get('line', 0), f['rule_id']) for f in json.load(open(os.path.join(work, 'ml-code.json')))['findings'] if not f.get('suppressed')])):
    print('%-9s %d findings (every one a false positive): %s' % (name, len(fs), ', '.join('%s:%d' % (p, l) for p, l, _ in sorted(fs))))
PY
