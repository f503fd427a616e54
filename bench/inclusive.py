#!/usr/bin/env python3
"""bench/inclusive.py CGA INCL_JSON CTXA STACKS_JSON NAME DIFFS: one program's
lines of bench/inclusive's table (see there), its differences appended to DIFFS
as "NAME KIND POINTS" (KIND: ir, paths).

ir:    dcpiprof -inclusive's share of time samples against callgrind's
       inclusive share of instructions (callgrind_annotate --inclusive=yes),
       for every procedure both name with 1% or more in either.
paths: the same stacks against callgrind's call paths with dcpi's own time:
       each sample whose leaf procedure Q callgrind names too is given to the
       procedures above Q in the share callgrind executed Q's instructions
       under each of them (--separate-callers: Q's cost kept by its chain of
       callers).  That is what the stacks should say if each procedure costs
       the same time per instruction wherever it is called from; it takes
       the time-versus-instructions difference (a loop that misses the cache
       takes more of the time than of the instructions) out of the
       comparison, so what is left is the stacks' own error.  Samples whose
       leaf only one names (the kernel, stripped code named by region) are
       left out of both sides; the line says what share that leaves in, and
       a program with fewer than 200 such samples is not compared."""
import json, re, statistics, sys

cga, incl_json, ctxa, stacks_json, name, diffs_path = sys.argv[1:7]
LINE = re.compile(r'^\s*([\d,]+) \(\s*[\d.]+%\)\s+([^:]*):(.*) \[(.*)\]\s*$')
TOTAL = re.compile(r'^\s*([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS')


def base(path):
    return path.rsplit('/', 1)[-1]


def named(fn):
    """A procedure both can name: not an address, not callgrind's (below
    main), not a function's cold part (callgrind counts the jump into it as
    a call, and its inclusive cost then holds its caller's)."""
    return not fn.startswith('0x') and fn != '(below main)' and '.cold' not in fn


def chain(names):
    """callgrind's Q'CALLER'CALLER..., recursion levels ('2) dropped."""
    return [t for t in names.split("'") if t and not t.isdigit()]


out = []


def report(kind, dc, truth, extra=''):
    keys = [k for k in set(dc) & set(truth) if max(dc[k], truth[k]) >= 1]
    diffs = sorted(abs(dc[k] - truth[k]) for k in keys)
    with open(diffs_path, 'a') as f:
        f.writelines('%s %s %.3f\n' % (name, kind, x) for x in diffs)
    if not diffs:
        print('%-9s %-6s %8d%s' % (name, kind, 0, extra))
        return
    print('%-9s %-6s %8d %8.1f %8.1f %8.0f%%%s' % (name, kind, len(diffs), statistics.median(diffs),
                                                 diffs[-1], 100.0 * sum(x <= 3 for x in diffs) / len(diffs), extra))
    for k in sorted(keys, key=lambda k: -abs(dc[k] - truth[k]))[:2]:
        if abs(dc[k] - truth[k]) > 1:
            print('%18s worst: %s (%s): dcpi %.1f%%, truth %.1f%%' % ('', k[0], k[1], dc[k], truth[k]))


# ir: dcpiprof -inclusive against callgrind's inclusive instructions.
cg, total = {}, None
for line in open(cga):
    m = LINE.match(line)
    if m:
        fn = m.group(3)  # fn'2 and deeper (recursion) hold the levels below again: left out
        if named(fn) and "'" not in fn:
            key = (fn, base(m.group(4)))
            cg[key] = max(cg.get(key, 0), int(m.group(1).replace(',', '')))
    m = TOTAL.match(line)
    if m:
        total = int(m.group(1).replace(',', ''))
d = json.load(open(incl_json))
tot = d['events'][0]['total']
dc = {(r['procedure'], base(r['image'])): 100.0 * r['inclusive']['counts'][0] / tot for r in d['rows']}
report('ir', dc, {k: 100.0 * v / total for k, v in cg.items()}, '%12d' % tot)

# paths: dcpi's stacks against callgrind's call paths weighted by dcpi's leaf time.
ir_q, ir_under, truncated = {}, {}, 0
for line in open(ctxa):
    m = LINE.match(line)
    if not m:
        continue
    ir, c = int(m.group(1).replace(',', '')), chain(m.group(3))
    if not c or not named(c[0]):
        continue
    q = (c[0], base(m.group(4)))
    ir_q[q] = ir_q.get(q, 0) + ir
    truncated += ir if len(c) > 60 else 0
    for p in set(c):
        ir_under[(q, p)] = ir_under.get((q, p), 0) + ir
s = json.load(open(stacks_json))
procs = [(p['procedure'], base(p['image'])) for p in s['procedures']]
leaf_w, dc_n, w = {}, {}, 0
for r in s['rows']:
    if not r['frames']:
        continue
    q, n = procs[r['frames'][-1]], r['counts'][0]
    if q not in ir_q:
        continue
    w += n
    leaf_w[q] = leaf_w.get(q, 0) + n
    for p in set(procs[f] for f in r['frames']):
        dc_n[p] = dc_n.get(p, 0) + n
MIN_SAMPLES = 200  # below it one sample is half a point: nothing to compare to 3 points
if w >= MIN_SAMPLES:
    names = {p for (_, p) in ir_under}
    truth = {}
    for p in set(dc_n) | set(ir_q):
        if not named(p[0]) or p[0] not in names:
            continue
        truth[p] = 100.0 * sum(n * ir_under.get((q, p[0]), 0) / ir_q[q] for q, n in leaf_w.items()) / w
    dcp = {p: 100.0 * n / w for p, n in dc_n.items() if p in truth}
    allw = s['events'][0]['total']
    report('paths', dcp, truth, '%12d  (%.0f%% of samples%s)' % (w, 100.0 * w / allw if allw else 0,
           ', %.1f%% of instructions past 60 callers' % (100.0 * truncated / sum(ir_q.values()))
           if truncated else ''))
else:
    print('%-9s %-6s %8s  (%d samples have a leaf both name: too few)' % (name, 'paths', '-', w))
