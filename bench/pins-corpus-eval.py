#!/usr/bin/python3
"""Score mlwarden and Scorecard on the pins corpus (bench/pins-corpus.sh).

pins-corpus-eval.py WORK EXPECT [--misses] [--only=GROUP]...

WORK holds mlwarden-GROUP.json, scorecard-GROUP.tsv and hadolint-labels.tsv
as pins-corpus.sh writes them; EXPECT is bench/pins-corpus.expect. Prints,
per construct: expected, and for each tool found (true positives) and false
(reported where nothing is expected), then precision and recall. --misses
also lists every miss and false finding.

Line groups (scorecard, zizmor, mlwarden) are scored by (file, line,
construct), a line matching within one either way (the tools count a
multi-line command's or a YAML block's first line differently). The hadolint
group is scored per case file, for the construct of the case's rule only.
"""
import json
import os
import sys
from collections import defaultdict

# mlwarden rule -> construct. Rules not listed (unparsed, pip-no-hash,
# pyproject-unlocked, torch-load-unsafe, other misconfig rules) are not
# scored.
RULES = {
    'pins/image-latest': 'image', 'pins/image-not-digest': 'image', 'pins/image-variable': 'image',
    'pins/action-not-sha': 'action',
    'pins/curl-pipe-shell': 'download-run', 'pins/download-exec': 'download-run',
    'pins/download-no-checksum': 'download-data',
    'pins/pip-unpinned': 'pip', 'pins/vcs-unpinned': 'pip',
    'pins/requirements-not-in-target': 'requirements',
    'pins/npm-global-unpinned': 'npm', 'pins/npm-unpinned': 'npm', 'pins/npm-install-not-ci': 'npm',
    'pins/go-install-latest': 'go',
    'pins/os-package-unpinned': 'os-package',
    'pins/windows-package-unpinned': 'windows',
    'pins/conda-unpinned': 'conda',
    'pins/hf-revision': 'hf',
    'pins/trust-remote-code': 'trust-remote-code',
    'pins/git-clone-unpinned': 'git-clone',
    'pins/module-unversioned': 'module',
    'pins/pip-extra-index-url': 'extra-index',
    'misconfig/service-exposed': 'exposed', 'misconfig/notebook-exposed': 'exposed',
}

# Scorecard dependency type -> the constructs it can stand for. pip -r FILE
# is Scorecard's pipCommand and mlwarden's requirements construct; a
# uses: docker://IMAGE is Scorecard's GitHubAction and mlwarden's image.
SCORECARD = {
    'GitHubAction': {'action', 'image'}, 'containerImage': {'image'}, 'downloadThenRun': {'download-run'},
    'goCommand': {'go'}, 'pipCommand': {'pip', 'requirements'}, 'npmCommand': {'npm'},
    'chocoCommand': {'windows'}, 'nugetCommand': {'windows'},
}
SCORECARD_CONSTRUCTS = set().union(*SCORECARD.values())

# hadolint rule -> construct of its cases.
HADOLINT = {
    'DL3006': 'image-tag', 'DL3007': 'image-tag',
    'DL3008': 'os-package', 'DL3018': 'os-package', 'DL3028': 'os-package', 'DL3033': 'os-package',
    'DL3037': 'os-package', 'DL3041': 'os-package', 'DL3013': 'pip', 'DL3016': 'npm',
}
# Which findings answer a hadolint case: an untagged or :latest image is
# mlwarden's image-latest (image-not-digest is a pinned tag, which DL3006
# accepts); Scorecard has only "not by digest".
HADOLINT_ML = {'image-tag': {'pins/image-latest'}}
LINE_GROUPS = ('scorecard', 'zizmor', 'mlwarden')


def load_mlwarden(work, group, prefix='mlwarden'):
    out = set()
    p = os.path.join(work, '%s-%s.json' % (prefix, group))
    with open(p) as f:
        for fd in json.load(f)['findings']:
            c = RULES.get(fd['rule_id'])
            if c:
                out.add((fd['path'], fd.get('line', 0), frozenset([c]), fd['rule_id']))
    return out


def load_scorecard(work, group):
    p = os.path.join(work, 'scorecard-%s.tsv' % group)
    if not os.path.exists(p):
        return None
    out = set()
    with open(p) as f:
        for l in f:
            parts = l.rstrip('\n').split('\t')
            if len(parts) < 4 or parts[3] != 'false':
                continue
            cs = SCORECARD.get(parts[2])
            if cs:
                out.add((parts[0], int(parts[1]), frozenset(cs), parts[2]))
    return out


def load_expect(path):
    """Lines "GROUP/PATH LINE[-END] CONSTRUCT" (a range for a command over
    several lines, either end of which a tool may name) and, for hadolint
    cases, "hadolint/PATH 0 CONSTRUCT +|-" overriding hadolint's verdict."""
    lines, overrides = set(), {}
    with open(path) as f:
        for l in f:
            l = l.split('#', 1)[0].strip()
            if not l:
                continue
            parts = l.split()
            if parts[0].startswith('hadolint/'):
                overrides[parts[0][len('hadolint/'):]] = parts[3] == '+'
                continue
            g, rel = parts[0].split('/', 1)
            lo, _, hi = parts[1].partition('-')
            lines.add((g, rel, int(lo), int(hi or lo), parts[2]))
    return lines, overrides


class Score:
    def __init__(self):
        self.expected = defaultdict(int)
        self.found = defaultdict(lambda: defaultdict(int))
        self.false = defaultdict(lambda: defaultdict(int))
        self.notes = []


def score_lines(sc, tool, group, reports, expected):
    """Match reports to expected lines one to one, nearest first: a report
    matches an expected line of its construct within the line's range, or
    one line off it (tools count a YAML scalar's or a command's first line
    differently). Unmatched expected lines are misses; unmatched reports,
    once per (file, line, construct), are false."""
    exp = sorted(e for e in expected if e[0] == group)
    reps = {}
    for r in sorted(reports, key=lambda r: (r[0], r[1], sorted(r[2]), r[3])):
        reps.setdefault((r[0], r[1], tuple(sorted(r[2]))), r)
    reps = [reps[k] for k in sorted(reps)]
    pairs = []
    for i, e in enumerate(exp):
        _, rel, lo, hi, c = e
        for j, r in enumerate(reps):
            if r[0] != rel or c not in r[2]:
                continue
            d = 0 if lo <= r[1] <= hi else min(abs(r[1] - lo), abs(r[1] - hi))
            if d <= 1:
                pairs.append((d, i, j))
    pairs.sort()
    ei, rj = set(), set()
    for d, i, j in pairs:
        if i in ei or j in rj:
            continue
        ei.add(i)
        rj.add(j)
    for i, e in enumerate(exp):
        if i in ei:
            sc.found[tool][e[4]] += 1
        else:
            sc.notes.append('%s misses %s/%s:%d %s' % (tool, group, e[1], e[2], e[4]))
    for j, r in enumerate(reps):
        if j in rj:
            continue
        c = sorted(r[2])[0]
        sc.false[tool][c] += 1
        sc.notes.append('%s false %s/%s:%d %s (%s)' % (tool, group, r[0], r[1], c, r[3]))


def main():
    work, expect_path = sys.argv[1], sys.argv[2]
    show = '--misses' in sys.argv
    only = [a.split('=', 1)[1] for a in sys.argv if a.startswith('--only=')]
    expected, overrides = load_expect(expect_path)
    if only:
        expected = {e for e in expected if e[0] in only}
    sc = Score()
    tools = ['mlwarden']
    have_before = all(os.path.exists(os.path.join(work, 'before-%s.json' % g)) for g in LINE_GROUPS + ('hadolint',))
    if have_before:
        tools.append('before')
    have_scorecard = all(os.path.exists(os.path.join(work, 'scorecard-%s.tsv' % g)) for g in LINE_GROUPS + ('hadolint',))
    if have_scorecard:
        tools.append('scorecard')
    for e in expected:
        sc.expected[e[4]] += 1
    for g in LINE_GROUPS:
        if only and g not in only:
            continue
        score_lines(sc, 'mlwarden', g, load_mlwarden(work, g), expected)
        if have_before:
            score_lines(sc, 'before', g, load_mlwarden(work, g, 'before'), expected)
        if have_scorecard:
            score_lines(sc, 'scorecard', g, load_scorecard(work, g), expected)
    # hadolint: per case file.
    ml = load_mlwarden(work, 'hadolint')
    before = load_mlwarden(work, 'hadolint', 'before') if have_before else set()
    scr = load_scorecard(work, 'hadolint') if have_scorecard else set()
    with open(os.path.join(work, 'hadolint-labels.tsv')) as f:
        for l in (f if not only or 'hadolint' in only else []):
            rel, rule, catches = l.rstrip('\n').split('\t')
            c = HADOLINT[rule]
            want = overrides.get(rel, catches == '1')
            key = 'hadolint:' + c
            if want:
                sc.expected[key] += 1
            rules = HADOLINT_ML.get(c)
            got = {'mlwarden': any(r[0] == rel and (r[3] in rules if rules else c in r[2]) for r in ml)}
            if have_before:
                got['before'] = any(r[0] == rel and (r[3] in rules if rules else c in r[2]) for r in before)
            if have_scorecard:
                sc_c = 'image' if c == 'image-tag' else c
                got['scorecard'] = any(r[0] == rel and sc_c in r[2] for r in scr)
            for t, g in got.items():
                if g and want:
                    sc.found[t][key] += 1
                elif g:
                    sc.false[t][key] += 1
                    sc.notes.append('%s false hadolint/%s %s' % (t, rel, c))
                elif want:
                    sc.notes.append('%s misses hadolint/%s %s' % (t, rel, c))

    constructs = sorted(set(sc.expected) | {c for t in tools for c in sc.false[t]})
    print('%-28s %8s |' % ('construct', 'expected') + ''.join(' %-17s |' % t for t in tools))
    print('%-28s %8s |' % ('', '') + ' %8s %8s |' % ('found', 'false') * len(tools))
    tot = defaultdict(lambda: [0, 0, 0])  # (scope, tool) -> expected, found, false
    for c in constructs:
        base = c.split(':')[-1]
        sc_scope = base in SCORECARD_CONSTRUCTS or base == 'image-tag'
        row = '%-28s %8d |' % (c, sc.expected[c])
        for t in tools:
            if t == 'scorecard' and not sc_scope:
                row += ' %8s %8s |' % ('-', '-')
            else:
                row += ' %8d %8d |' % (sc.found[t][c], sc.false[t][c])
            for scope in ('all', 'scorecard kinds'):
                if scope == 'scorecard kinds' and not sc_scope:
                    continue
                if t == 'scorecard' and scope == 'all':
                    continue  # Scorecard has no check for the others
                v = tot[(scope, t)]
                v[0] += sc.expected[c]
                v[1] += sc.found[t][c]
                v[2] += sc.false[t][c]
        print(row.rstrip('|').rstrip())
    print()
    for (scope, t), (e, f, fa) in sorted(tot.items()):
        p = f / (f + fa) if f + fa else 1.0
        r = f / e if e else 1.0
        print('%-10s on %-16s expected %4d found %4d false %3d  precision %.3f recall %.3f' % (t, scope, e, f, fa, p, r))
    if show:
        print()
        for n in sorted(sc.notes):
            print(n)


if __name__ == '__main__':
    main()
