#!/usr/bin/python3
"""Extract hadolint's rule test cases (test/Hadolint/Rule/DLxxxxSpec.hs) into
one Dockerfile per case, with hadolint's own verdict, for bench/pins-corpus.sh.

Reads each spec given on the command line; writes OUT/DLxxxx/NN/Dockerfile and
prints "DLxxxx/NN/Dockerfile<TAB>DLxxxx<TAB>1|0" (1: ruleCatches, 0:
ruleCatchesNot) per case. onBuild variants and cases built by anything but a
string literal or Text.unlines of a literal list are skipped. Nothing of
hadolint is copied into the repository: the cases go to a temporary directory.
"""
import os
import re
import sys


def tokens(src):
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c == '-' and src.startswith('--', i):
            j = src.find('\n', i)
            i = n if j < 0 else j
            continue
        if c == '"':
            i += 1
            out = []
            while i < n and src[i] != '"':
                if src[i] == '\\':
                    i += 1
                    e = src[i]
                    if e.isspace():  # a string gap: \ whitespace \
                        while src[i] != '\\':
                            i += 1
                        i += 1
                        continue
                    m = {'n': '\n', 't': '\t', '\\': '\\', '"': '"', "'": "'", '&': ''}
                    if e in m:
                        out.append(m[e])
                        i += 1
                    elif e.isdigit():
                        j = i
                        while src[j].isdigit():
                            j += 1
                        out.append(chr(int(src[i:j])))
                        i = j
                    else:
                        out.append(e)
                        i += 1
                    continue
                out.append(src[i])
                i += 1
            i += 1
            yield ('str', ''.join(out))
            continue
        if c.isalpha() or c == '_':
            j = i
            while j < n and (src[j].isalnum() or src[j] in "_.'"):
                j += 1
            yield ('id', src[i:j])
            i = j
            continue
        if c.isspace():
            i += 1
            continue
        yield ('op', c)
        i += 1


def cases(src):
    toks = list(tokens(src))
    lists = {}
    out = []
    for k, (kind, val) in enumerate(toks):
        # let name = [ "a", "b" ]
        if kind == 'id' and k + 2 < len(toks) and toks[k + 1] == ('op', '=') and toks[k + 2] == ('op', '['):
            items, j = [], k + 3
            while j < len(toks) and toks[j] != ('op', ']'):
                if toks[j][0] == 'str':
                    items.append(toks[j][1])
                elif toks[j] != ('op', ','):
                    items = None
                    break
                j += 1
            if items is not None:
                lists[val] = items
        if kind != 'id' or val not in ('ruleCatches', 'ruleCatchesNot'):
            continue
        if k + 2 >= len(toks) or toks[k + 1][0] != 'str':
            continue
        rule = toks[k + 1][1]
        nxt = toks[k + 2]
        text = None
        if nxt[0] == 'str':
            text = nxt[1]
        elif nxt == ('op', '$') and k + 4 < len(toks) and toks[k + 3][1] in ('Text.unlines', 'unlines') and toks[k + 4][1] in lists:
            text = ''.join(l + '\n' for l in lists[toks[k + 4][1]])
        if text is not None:
            out.append((rule, 1 if val == 'ruleCatches' else 0, text))
    return out


def main():
    outdir = sys.argv[1]
    for spec in sys.argv[2:]:
        with open(spec, encoding='utf-8') as f:
            src = f.read()
        for n, (rule, catches, text) in enumerate(cases(src)):
            rel = '%s/%02d/Dockerfile' % (rule, n)
            os.makedirs(os.path.join(outdir, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(outdir, rel), 'w', encoding='utf-8') as f:
                f.write(text if text.endswith('\n') else text + '\n')
            print('%s\t%s\t%d' % (rel, rule, catches))


if __name__ == '__main__':
    main()
