#!/usr/bin/python3
"""Label the peers' suites, run mlwarden and the peers on every file, print the tables.

Usage: MLWARDEN=bin run.py DIR labels.tsv

Files: each suite's checked-in test data (SUITES below) and what bench/peersuites/generate.py
wrote into DIR/gen, deduplicated by content within a suite. Labels: the first rule of
labels.tsv (suite, path regex, label, reason) whose regex matches the file's path; label is
malicious, benign, or skip (not a model file any of the scanners reads, or no payload and no
benign intent: the reason says which). Blocked: the scanner would fail a CI step on the file:
mlwarden (scan --checks models) reports a finding at high or above or cannot scan it in full
(exit 1 or 2); picklescan and fickling (--check-safety) exit non-zero (1: unsafe, 2: scan
error); modelscan exits 1 (issues) or 2 (scan error), not 3 (no supported file). Results go
to DIR/results.json; the tables go to standard output.
"""

import concurrent.futures
import hashlib
import json
import os
import re
import subprocess
import sys

DIR, LABELS = sys.argv[1], sys.argv[2]
SRC, GEN = os.path.join(DIR, "src"), os.path.join(DIR, "gen")
HERE = os.path.dirname(os.path.abspath(__file__))
MLWARDEN = os.environ["MLWARDEN"]
PY = sys.executable

SUITES = {
    "picklescan": ["tests/data", "tests/data2"],
    "fickling": ["test/fixtures"],
    "modelscan": ["tests/data"],
    "modelaudit": ["tests/assets"],
}
NOT_DATA = re.compile(r"(\.py|\.md|/\.commit|/\.missing)$")


def files():
    out = {}
    for suite, roots in SUITES.items():
        seen, lst = set(), []
        bases = [(os.path.join(SRC, suite), r, "src") for r in roots] + [(os.path.join(GEN, suite), "", "gen")]
        for base, root, origin in bases:
            top = os.path.join(base, root)
            for d, _, fs in sorted(os.walk(top)):
                for f in sorted(fs):
                    p = os.path.join(d, f)
                    rel = origin + ":" + os.path.relpath(p, base)
                    if NOT_DATA.search(p) or "/generators/" in p:
                        continue
                    h = hashlib.sha256(open(p, "rb").read()).hexdigest()
                    if h in seen:
                        continue
                    seen.add(h)
                    lst.append((rel, p))
        out[suite] = lst
    return out


def labels():
    rules = []
    for line in open(LABELS):
        if not line.strip() or line.startswith("#"):
            continue
        suite, rx, label, reason = line.rstrip("\n").split("\t")
        rules.append((suite, re.compile(rx), label, reason))
    return rules


def label(rules, suite, rel, path):
    if os.path.getsize(path) == 0:
        return "skip", "empty: its generator failed here (see generate.py's report)"
    for s, rx, lab, reason in rules:
        if s == suite and rx.search(rel):
            return lab, reason
    return "unlabelled", ""


def mlwarden(paths):
    """One run over every file; blocked per file from the JSON report."""
    r = subprocess.run([MLWARDEN, "scan", "--checks", "models", "--format", "json", "--fail-on", "none"] + paths,
                       capture_output=True, text=True, timeout=3600)
    rep = json.loads(r.stdout)
    out = {p: {"blocked": False, "why": ""} for p in paths}
    for f in rep.get("findings", []):
        p = f["target"]
        if p in out and f["severity"] in ("high", "critical") and not f.get("suppressed"):
            if not out[p]["blocked"]:
                out[p] = {"blocked": True, "why": "%s %s" % (f["severity"], f["rule_id"])}
    for e in rep.get("errors", []):
        p = e.get("target")
        if p in out and not out[p]["blocked"]:
            out[p] = {"blocked": True, "why": "error: " + e.get("message", "")[:80]}
    return out


def peer_cmd(tool, path):
    shim = "import sys; sys.path[:0] = [%r, %r]; import peershim; " % (HERE, os.path.join(SRC, tool, "src" if tool == "picklescan" else ""))
    if tool == "picklescan":
        code = shim + "from picklescan.cli import main; sys.argv = ['picklescan', '--path', sys.argv[1]]; sys.exit(main())"
    elif tool == "fickling":
        code = shim + "from fickling.cli import main; sys.exit(main(['fickling', '--check-safety', sys.argv[1]]))"
    else:
        # main(), not cli(): the click group returns the scan's code to main,
        # which exits with it (cli() alone exits 0 whatever was found).
        code = shim + "from modelscan.cli import main; sys.argv = ['modelscan', 'scan', '-p', sys.argv[1]]; main()"
    return [PY, "-c", code, path]


def peer(tool, path):
    try:
        r = subprocess.run(peer_cmd(tool, path), capture_output=True, text=True, timeout=120)
        rc = r.returncode
    except subprocess.TimeoutExpired:
        return {"blocked": True, "why": "timeout", "rc": -1}
    if tool == "modelscan":
        blocked = rc in (1, 2)
    else:
        blocked = rc != 0
    why = {0: "clean", 1: "unsafe", 2: "error", 3: "not supported"}.get(rc, "exit %d" % rc)
    return {"blocked": blocked, "why": why, "rc": rc}


def main():
    rules = labels()
    fs = files()
    allpaths = [p for lst in fs.values() for _, p in lst]
    ml = mlwarden(allpaths)
    # The peers' verdicts depend only on the file and the peer's commit:
    # kept in DIR/peers.json, so that a rerun after a change to mlwarden
    # runs mlwarden alone. Remove the file to run the peers again.
    cache_path = os.path.join(DIR, "peers.json")
    cache = json.load(open(cache_path)) if os.path.exists(cache_path) else {}
    commits = {t: open(os.path.join(SRC, t, ".commit")).read().strip() for t in ("picklescan", "fickling", "modelscan")}

    def peer_cached(tool, p):
        key = "%s@%s:%s" % (tool, commits[tool], hashlib.sha256(open(p, "rb").read()).hexdigest())
        if key not in cache:
            cache[key] = peer(tool, p)
        return cache[key]

    jobs = [(suite, rel, p, tool) for suite, lst in fs.items() for rel, p in lst for tool in ("picklescan", "fickling", "modelscan")]
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
        verdicts = list(ex.map(lambda j: peer_cached(j[3], j[2]), jobs))
    json.dump(cache, open(cache_path, "w"))
    results = {}
    for (suite, rel, p, tool), v in zip(jobs, verdicts):
        if rel not in results.get(suite, {}):
            lab, reason = label(rules, suite, rel, p)
            results.setdefault(suite, {})[rel] = {"label": lab, "reason": reason, "mlwarden": ml[p]}
        results[suite][rel][tool] = v
    with open(os.path.join(DIR, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    tools = ["mlwarden", "picklescan", "fickling", "modelscan"]
    print("%-11s %-10s %18s %18s" % ("suite", "scanner", "malicious blocked", "benign blocked"))
    bad = []
    for suite, rs in results.items():
        mal = [r for r in rs.values() if r["label"] == "malicious"]
        ben = [r for r in rs.values() if r["label"] == "benign"]
        for t in tools:
            print("%-11s %-10s %11d / %-4d %11d / %-4d" % (suite, t, sum(r[t]["blocked"] for r in mal), len(mal),
                                                          sum(r[t]["blocked"] for r in ben), len(ben)))
        skipped = [k for k, r in rs.items() if r["label"] not in ("malicious", "benign")]
        print("%-11s %d files skipped (see labels.tsv)" % (suite, len(skipped)))
        for k, r in rs.items():
            if r["label"] == "malicious" and not r["mlwarden"]["blocked"]:
                peers = [t for t in tools[1:] if r[t]["rc"] == 1]
                bad.append((suite, k, "mlwarden misses" + (" (blocked by %s)" % ", ".join(peers) if peers else "")))
            if r["label"] == "benign" and r["mlwarden"]["blocked"]:
                bad.append((suite, k, "mlwarden blocks a benign file: " + r["mlwarden"]["why"]))
            if r["label"] == "unlabelled":
                bad.append((suite, k, "unlabelled"))
    print()
    for b in bad:
        print("%s\t%s\t%s" % b)


main()
