#!/usr/bin/env bash
# dcpi report of the golden database (cycles and instructions sampled, the
# committed program prog), rendered by headless Chromium: the DOM must hold
# the numbers the text tools print for it -- dcpiprof -ratio's column, the
# lost and unknown samples of the header, dcpicalc's estimates of hot's
# blocks (retired mode), dcpitopstalls -proc's rows and dcpiwhatcg's
# figures -- whatever the compiler, since prog and its samples are fixed.
. "$DCPI_ROOT/tests/tap.sh"
. "$DCPI_ROOT/tests/golden/fixture.bash"
BROWSER=$(command -v chromium || command -v chromium-browser)
if [ -z "$BROWSER" ]; then
	skip "Chromium is not installed (scripts/install-deps installs Debian's chromium)"
	done_testing
fi
golden_setup || done_testing
dom() {
	timeout 120 "$BROWSER" --headless --no-sandbox --disable-gpu --no-first-run \
		--user-data-dir="$T/chrome" --virtual-time-budget=5000 --dump-dom "file://$1" \
		2>"$T/chrome.err"
}

(cd "$T" && "$DCPI_BIN/dcpi" report -db "$DB" -o "$T/r" -n 3) >"$T/out" 2>"$T/err" ||
	fail "dcpi report of the golden database" "$(cat "$T/err")"
grep -q "3 procedure pages" "$T/out" && pass "three pages (-n 3): $(cat "$T/out" | sed "s|$T|@TMP@|")" ||
	fail "three pages" "$(cat "$T/out")"
dom "$T/r/index.html" >"$T/index.dom"
(cd "$T" && "$DCPI_BIN/dcpiprof" -db "$DB" -i -ratio instructions/cycles) >"$T/ratio.txt" 2>/dev/null
"$DCPI_BIN/dcpiprof" -db "$DB" -json >"$T/images.json" 2>/dev/null
check "the index: dcpiprof -ratio's column, the header's samples, lost and unknown" \
	python3 - "$T/index.dom" "$T/ratio.txt" "$T/images.json" <<'EOF'
import html.parser, json, re, sys
class P(html.parser.HTMLParser):
    def __init__(s):
        super().__init__(); s.rows = []; s.row = None; s.cell = None; s.dd = None; s.facts = []
    def handle_starttag(s, tag, a):
        a = dict(a)
        if tag == 'tr' and a.get('class') == 'procedure': s.row = []; s.rows.append(s.row)
        elif tag == 'td' and s.row is not None: s.cell = ''
        elif tag == 'dd': s.dd = ''
    def handle_endtag(s, tag):
        if tag == 'td' and s.cell is not None: s.row.append(s.cell); s.cell = None
        elif tag == 'tr': s.row = None
        elif tag == 'dd' and s.dd is not None: s.facts.append(s.dd); s.dd = None
    def handle_data(s, d):
        if s.cell is not None: s.cell += d
        if s.dd is not None: s.dd += d
p = P(); p.feed(open(sys.argv[1]).read())
# dcpiprof -ratio: "cycles % cum% instructions % cum% instructions/cycles procedure image"
want = {}
for l in open(sys.argv[2]):
    f = l.split()
    if len(f) >= 9 and re.match(r'^\d+$', f[0]) and f[1].endswith('%') and re.match(r'^[\d.]+$|^-$', f[6]):
        # the text escapes control bytes and what is not UTF-8 (\xNN, byte by
        # byte); the page shows the name itself, U+FFFD for each byte not UTF-8
        # (and a CR as HTML reads it, a newline)
        want[re.sub(rb'\\x([0-9a-f]{2})', lambda m: bytes([int(m.group(1), 16)]),
                    f[7].encode()).decode('utf-8', 'replace').replace('\r', '\n')] = f[6]
got = {r[0]: r[-1] for r in p.rows}
assert want and all(got.get(k) == v for k, v in want.items()), (want, got)
d = json.load(open(sys.argv[3]))
line = '%d, lost %d, unknown %d' % (d['samples'], d['lost'], d['unknown'])
assert any(f.startswith(line) for f in p.facts), (line, p.facts)
assert d['lost'] > 0 and d['unknown'] > 0
print('# ratios', want, '; samples', line)
EOF

# hot's page: dcpicalc's estimates (instructions sampled: retired mode) and
# its stalls as dcpitopstalls -proc prints them
page=$(python3 - "$T/r/index.html" <<'EOF'
import re, json, sys
s = open(sys.argv[1]).read()
m = re.search(r'<script type="application/json" id="pages">(.*?)</script>', s, re.S)
print([p['page'] for p in json.loads(m.group(1)) if p['procedure'] == 'hot'][0])
EOF
)
dom "$T/r/$page" >"$T/hot.dom"
(cd "$T" && "$DCPI_BIN/dcpicalc" -db "$DB" hot prog) >"$T/calc.txt" 2>/dev/null
(cd "$T" && "$DCPI_BIN/dcpitopstalls" -db "$DB" -json -n 50 -proc hot prog) >"$T/stalls.json" 2>/dev/null
(cd "$T" && "$DCPI_BIN/dcpitopstalls" -db "$DB" -n 50 -proc hot prog) >"$T/stalls.txt" 2>/dev/null
check "hot's page ($page): dcpicalc's estimates and dcpitopstalls -proc's rows, as it prints them" \
	python3 - "$T/hot.dom" "$T/calc.txt" "$T/stalls.json" "$T/stalls.txt" <<'EOF'
import html.parser, json, re, sys
class P(html.parser.HTMLParser):
    def __init__(s):
        super().__init__(); s.est = []; s.cell = None; s.rows = []; s.row = None; s.intable = 0
    def handle_starttag(s, tag, a):
        a = dict(a)
        if tag == 'td' and 'est' in (a.get('class') or '').split(): s.cell = ''
        if tag == 'section' and a.get('id') == 'stalls': s.intable = 1
        if tag == 'tr' and s.intable: s.row = []; s.rows.append(s.row)
        if tag == 'td' and s.row is not None and s.cell is None: s.cell = ''
    def handle_endtag(s, tag):
        if tag == 'td' and s.cell is not None:
            (s.row if s.row is not None else s.est).append(s.cell); s.cell = None
        if tag == 'tr': s.row = None
    def handle_data(s, d):
        if s.cell is not None: s.cell += d
p = P(); p.feed(open(sys.argv[1]).read())
text = open(sys.argv[2]).read().split('\nEdges')[0]
blocks = [l.split() for l in text.splitlines() if re.match(r'B\d+\s+0x', l)]
assert 'Mode: retired' in text
# "block address insns cycles instructions freq c ..."
want = ['%s %s' % (b[5], b[6]) for b in blocks]
assert p.est[:len(want)] == want, (p.est, want)
st = json.load(open(sys.argv[3]))['rows']
rows = [r for r in p.rows if r]
assert len(rows) == len(st) > 0, (rows, st)
# the text's rows by address: stall and avg as dcpitopstalls prints them (to their digits)
tx = {l.split()[7]: l.split() for l in open(sys.argv[4]) if re.match(r'\s*\d+\.\d+% ', l)}
for g, w in zip(rows, st):
    t = tx['0x%x' % int(w['address'], 16)]
    assert g[0] == t[2] and g[1] == '%.2f' % w['percent'] and g[3] == t[5] and g[5] == w['address'], (g, w, t)
print('# blocks', want, '; stalls', [(r[5], r[0], r[3]) for r in rows])
EOF
# the epoch's "where the cycles went": dcpiwhatcg's figures, as its text
# gives them (three significant digits, the sampling error two)
(cd "$T" && "$DCPI_BIN/dcpiwhatcg" -db "$DB") >"$T/whatcg.txt" 2>/dev/null
check "the index: dcpiwhatcg's figures, as it prints them" \
	python3 - "$T/index.dom" "$T/whatcg.txt" <<'EOF'
import html.parser, re, sys
class P(html.parser.HTMLParser):
    def __init__(s):
        super().__init__(); s.imgs = {}; s.cur = None; s.h3 = None; s.row = None; s.cell = None; s.note = None
    def handle_starttag(s, tag, a):
        a = dict(a)
        if tag == 'div' and a.get('class') == 'whatcg': s.cur = {}
        elif tag == 'h3' and s.cur is not None: s.h3 = ''
        elif tag == 'tr' and s.cur is not None: s.row = []
        elif tag == 'td' and s.row is not None: s.cell = ''
        elif tag == 'p' and s.cur is not None: s.note = ''
    def handle_endtag(s, tag):
        if tag == 'h3' and s.h3 is not None: s.imgs[s.h3] = s.cur; s.h3 = None
        elif tag == 'td' and s.cell is not None: s.row.append(s.cell); s.cell = None
        elif tag == 'tr' and s.row is not None:
            if len(s.row) >= 2: s.cur[s.row[0].strip()] = s.row[1]
            s.row = None
        elif tag == 'p' and s.note is not None:
            m = re.search(r'\(1 s\.e\.\) \u00b1(\S+);', s.note)
            if m: s.cur['error'] = m.group(1)
            s.note = None; s.cur = None
    def handle_data(s, d):
        for k in ('h3', 'cell', 'note'):
            if getattr(s, k) is not None: setattr(s, k, getattr(s, k) + d)
p = P(); p.feed(open(sys.argv[1]).read())
want, img = {}, None
for l in open(sys.argv[2]):
    m = re.match(r'^Image: (.*)$', l)
    if m: img = m.group(1).rsplit('/', 1)[-1]; want[img] = {}; continue
    m = re.match(r'^ +(.*?) {2,}(\+-)?(-?[0-9.]+[kMGT]?(\.\.[0-9.]+[kMGT]?)?) +-?[0-9.]+%', l)
    if img and m and m.group(2):
        want[img]['error'] = m.group(3)
    elif img and m:
        want[img][m.group(1)] = m.group(3).lstrip('-')
shown = {k: v for k, v in want.items() if k in p.imgs}
assert shown and all(v.get('Execution') for v in shown.values()), (want, p.imgs)
for k, v in shown.items():
    for label, fig in v.items():
        assert p.imgs[k].get(label) == fig, (k, label, fig, p.imgs[k])
print('# whatcg', {k: (v['Execution'], v['Total sampled'], v['error']) for k, v in shown.items()})
EOF
# the script's number formatting against C's printf("%.*f") (Python's %
# formats the exact double the same way, ties to even): shares like 3 of
# 480 (0.625) are where JavaScript's toFixed and C part
if command -v node >/dev/null; then
	sed -n '/function cfixed/,/^\t}/p' "$DCPI_ROOT/lib/export/report.js" >"$T/cfixed.js"
	python3 - "$T/cfixed.js" >"$T/cf.out" <<'EOF'
import random, sys
random.seed(7)
vals = [(100.0 * n / t, d) for t in (8, 16, 160, 480, 1643, 3200) for n in range(0, t + 1, max(1, t // 40)) for d in (0, 1, 2, 3)]
vals += [(random.uniform(-1e6, 1e6), random.randint(0, 4)) for _ in range(2000)]
vals += [(0.625, 2), (1.125, 2), (-0.625, 2), (2.5, 0), (3.5, 0), (0.5, 0), (-0.004, 2), (0.0, 2)]
with open(sys.argv[1], 'a') as f:
    f.write('const v = %s;\nfor (const [x, d] of v) console.log(cfixed(x, d));\n' % repr([[x, d] for x, d in vals]))
for x, d in vals:
    print('%.*f' % (d, x))
EOF
	node "$T/cfixed.js" >"$T/cf.js.out" 2>&1
	n=$(wc -l <"$T/cf.out")
	diff -q "$T/cf.out" "$T/cf.js.out" >/dev/null &&
		pass "report.js formats $n numbers as printf does (ties to even: 0.625 is 0.62)" ||
		fail "report.js's formatting differs from printf's" "$(diff "$T/cf.out" "$T/cf.js.out" | head -5)"
else
	skip "node is not installed: report.js's number formatting not checked"
fi
done_testing
