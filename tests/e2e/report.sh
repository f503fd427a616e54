#!/usr/bin/env bash
# dcpi report in a real browser: a workload whose time goes to one loop is
# recorded, the report made, and headless Chromium renders its pages; the
# DOM it builds must hold the same procedures and counts as dcpiprof -json,
# the same block estimates as dcpicalc prints, every link must resolve
# inside the report, and nothing may name a network address.  Hostile
# names (markup, quotes, control bytes, 10 KiB) render as text.  The diff
# view marks the change dcpidiff finds significant.
. "$DCPI_ROOT/tests/tap.sh"

BROWSER=$(command -v chromium || command -v chromium-browser)
if [ -z "$BROWSER" ]; then
	skip "Chromium is not installed (scripts/install-deps installs Debian's chromium)"
	done_testing
fi
REC="$DCPI_BIN/dcpi-record"
REP="$DCPI_BIN/dcpi"

# The DOM Chromium builds for a page once its script has run.
dom() {
	timeout 120 "$BROWSER" --headless --no-sandbox --disable-gpu --no-first-run \
		--user-data-dir="$T/chrome" --virtual-time-budget=5000 --dump-dom "file://$1" \
		2>"$T/chrome.err"
}

cp "$DCPI_ROOT/tests/workloads/srcline_hot.c" "$T/hot.c"
(cd "$T" && cc -g -O2 -o "$T/hot" hot.c) || fail "build the workload"
"$REC" -quiet -db "$T/db" -- "$T/hot" 300000000 >"$T/rec.out" 2>&1 ||
	fail "dcpi record" "$(cat "$T/rec.out")"

out=$("$REP" report -db "$T/db" -o "$T/r" -n 3 2>"$T/err"); rc=$?
[ $rc -eq 0 ] && grep -q "^$T/r/index.html: epoch " <<<"$out" && pass "dcpi report says where it wrote: $out" ||
	fail "dcpi report" "rc=$rc $out $(cat "$T/err")"
n=$(ls "$T/r/p" | wc -l)
[ -f "$T/r/index.html" ] && [ -f "$T/r/report.js" ] && [ -f "$T/r/report.css" ] && [ "$n" -ge 1 ] &&
	[ "$n" -le 3 ] && pass "index.html, report.js, report.css and $n procedure pages (-n 3)" ||
	fail "the report's files" "$(ls -R "$T/r")"

dom "$T/r/index.html" >"$T/index.dom"
"$DCPI_BIN/dcpiprof" -db "$T/db" -i -json -keep 500 >"$T/procs.json"
"$DCPI_BIN/dcpiprof" -db "$T/db" -json >"$T/images.json"
check "the browser's DOM holds dcpiprof's procedures and images, counts and shares" \
	python3 - "$T/index.dom" "$T/procs.json" "$T/images.json" <<'EOF'
import html.parser, json, sys
class Rows(html.parser.HTMLParser):
    def __init__(s):
        super().__init__(); s.rows = {}; s.cls = None; s.cell = None; s.row = None
    def handle_starttag(s, tag, a):
        a = dict(a)
        if tag == 'tr' and a.get('class') in ('procedure', 'image'):
            s.row = []; s.rows.setdefault(a['class'], []).append(s.row)
        elif tag == 'td' and s.row is not None:
            s.cell = ''
    def handle_endtag(s, tag):
        if tag == 'td' and s.cell is not None:
            s.row.append(s.cell); s.cell = None
        elif tag == 'tr':
            s.row = None
    def handle_data(s, d):
        if s.cell is not None: s.cell += d
p = Rows(); p.feed(open(sys.argv[1]).read())
procs, images = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
got, want = p.rows.get('procedure', []), procs['rows']
assert len(got) == len(want) > 0, (len(got), len(want))
for g, w in zip(got, want):
    assert g[0] == w['procedure'], (g, w)
    assert g[1] == w['image'].rsplit('/', 1)[-1], (g, w)
    # the share as dcpiprof's text prints it: printf("%.2f") of 100 * n / total,
    # ties to even (Python's % rounds the exact double the same way)
    total = procs['events'][0]['total']
    assert g[2] == str(w['counts'][0]) and g[3] == '%.2f' % (100.0 * w['counts'][0] / total), (g, w)
gi = p.rows.get('image', [])
assert [(g[0], g[1]) for g in gi] == [(w['image'], str(w['counts'][0])) for w in images['rows']], gi
assert got[0][0] == 'hot_loop', got[0]
print('#', len(got), 'procedures,', len(gi), 'images; top', got[0][:3])
EOF

# the header's overhead line (dcpi record measured its own CPU time) on the page
want=$("$DCPI_BIN/dcpiprof" -db "$T/db" 2>/dev/null | sed -n 's/^Overhead: //p')
[ -n "$want" ] && grep -qF "<dd>$want</dd>" "$T/index.dom" && pass "the overhead, as dcpiprof says it: $want" ||
	fail "the overhead on the index" "want '$want'; $(grep -o '<dt>Overhead</dt><dd>[^<]*' "$T/index.dom")"

# the top procedure's page: the graph's blocks, the estimates as dcpicalc
# prints them, every instruction of dcpilist
top=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rows"][0]["procedure"])' "$T/procs.json")
dom "$T/r/p/0.html" >"$T/p0.dom"
"$DCPI_BIN/dcpicalc" -db "$T/db" hot_loop "$T/hot" >"$T/calc.txt"
"$DCPI_BIN/dcpilist" -db "$T/db" -both -json hot_loop "$T/hot" >"$T/list.json"
check "the procedure page of $top: its graph, dcpicalc's estimates and cpi, dcpilist's instructions" \
	python3 - "$T/p0.dom" "$T/calc.txt" "$T/list.json" <<'EOF'
import html.parser, json, re, sys
class P(html.parser.HTMLParser):
    def __init__(s):
        super().__init__(); s.nodes = 0; s.est = []; s.cpi = []; s.insns = []; s.cell = None; s.title = 0
    def handle_starttag(s, tag, a):
        a = dict(a)
        if tag == 'g' and a.get('class') == 'node': s.nodes += 1
        if tag == 'tr' and a.get('class') == 'insn': s.insns.append(a.get('id'))
        if tag == 'td' and 'est' in (a.get('class') or '').split(): s.cell = ''; s.into = s.est
        if tag == 'td' and 'cpi' in (a.get('class') or '').split(): s.cell = ''; s.into = s.cpi
    def handle_endtag(s, tag):
        if tag == 'td' and s.cell is not None: s.into.append(s.cell); s.cell = None
    def handle_data(s, d):
        if s.cell is not None: s.cell += d
p = P(); p.feed(open(sys.argv[1]).read())
text = open(sys.argv[2]).read().split('\nEdges')[0]   # the block table, before the edges
blocks = [l.split() for l in text.splitlines() if re.match(r'B\d+\s+0x', l)]
want = ['%s %s' % (b[4], b[5]) for b in blocks]   # freq and its confidence, as printed
cpis = [b[7] for b in blocks]                      # cpi to its digits, '!' below the best case
assert p.nodes == len(blocks) > 0, (p.nodes, len(blocks))
assert p.est[:len(want)] == want, (p.est, want)   # the block table, then the stalls'
assert p.cpi == cpis, (p.cpi, cpis)
li = json.load(open(sys.argv[3]))
assert p.insns == ['i' + x['address'] for x in li['instructions']], (p.insns[:3], len(li['instructions']))
print('#', p.nodes, 'blocks drawn, estimates', want[:3], 'cpi', cpis[:3], len(p.insns), 'instructions')
EOF

# links resolve inside the report; nothing names the network
for f in "$T/r/index.html" "$T/r"/p/*.html; do dom "$f" >"$f.dom"; done
check "every link of every page resolves inside the report" \
	python3 - "$T/r" <<'EOF'
import glob, html.parser, os, sys
class L(html.parser.HTMLParser):
    def __init__(s):
        super().__init__(); s.links = []; s.ids = set()
    def handle_starttag(s, tag, a):
        for k, v in a:
            if k == 'id': s.ids.add(v)
            if k in ('href', 'src', 'xlink:href') and v is not None: s.links.append(v)
root = sys.argv[1]; n = 0
for d in glob.glob(root + '/*.html.dom') + glob.glob(root + '/p/*.html.dom'):
    p = L(); p.feed(open(d).read()); here = os.path.dirname(d)
    for l in p.links:
        path, _, frag = l.partition('#')
        assert ':' not in path, (d, l)
        target = os.path.normpath(os.path.join(here, path)) if path else d[:-4]
        assert os.path.isfile(target), (d, l)
        assert os.path.realpath(target).startswith(os.path.realpath(root) + '/'), (d, l)
        if frag:
            t = p if not path else L()
            if path: t.feed(open(target + '.dom').read() if os.path.exists(target + '.dom') else open(target).read())
            assert frag in t.ids, (d, l)
        n += 1
assert n > 0
print('#', n, 'links')
EOF
urls=$(grep -rlE 'https?:|ftp:|//[a-z0-9]' "$T/r" --include='*.html' --include='*.js' --include='*.css' --include='*.dom')
[ -z "$urls" ] && pass "no http, https or protocol-relative address in any file or rendered DOM" ||
	fail "addresses of the network in the report" "$(grep -rhoE '.{20}(https?:|//[a-z0-9]).{20}' $urls | head -5)"
sz=$(du -sk "$T/r" | cut -f1)
pass "the report is ${sz} KiB"

# hostile names: markup, quotes, entities, control bytes, 10 KiB; in a
# directory named with them too
d=$T/$'we<i>rd"&\x01dir'
mkdir -p "$d"
long=$(printf 'A%.0s' $(seq 1 10240))
name=$'<script>alert(1)</script>"&amp;\x01\x1b[31m'"$long"
objcopy --redefine-sym "hot_loop=$name" "$T/hot" "$d/prog" || fail "objcopy"
"$REC" -quiet -db "$T/hdb" -- "$d/prog" 300000000 >"$T/rec.out" 2>&1 || fail "dcpi record" "$(cat "$T/rec.out")"
"$REP" report -db "$T/hdb" -o "$T/h" -n 1 >"$T/out" 2>"$T/err" || fail "dcpi report, hostile names" "$(cat "$T/err")"
dom "$T/h/index.html" >"$T/h.dom"
dom "$T/h/p/0.html" >"$T/h0.dom"
check "a hostile procedure name and path render as text, whole, never as markup" \
	python3 - "$T/h.dom" "$T/h0.dom" "$T/h/index.html" <<'EOF'
import html.parser, sys
want = '<script>alert(1)</script>"&amp;\x01\x1b[31m' + 'A' * 10240
class P(html.parser.HTMLParser):
    def __init__(s):
        super().__init__(); s.scripts = 0; s.text = ''; s.bad = []
    def handle_starttag(s, tag, a):
        if tag == 'script' and not dict(a).get('type') and not dict(a).get('src'): s.scripts += 1
        if tag in ('i', 'b') or any(k.startswith('on') for k, v in a): s.bad.append((tag, a))
    def handle_data(s, d): s.text += d
for f in sys.argv[1:3]:
    p = P(); p.feed(open(f, encoding='utf-8', errors='replace').read())
    assert p.scripts == 0 and not p.bad, (f, p.scripts, p.bad[:2])
    assert want in p.text, (f, len(p.text))
raw = open(sys.argv[3], encoding='utf-8', errors='replace').read()
assert '<script>alert' not in raw and 'we<i>rd' not in raw
print('# the name, 10 KiB, is text on both pages; no markup came from it')
EOF
grep -q '"error"' "$T/h/p/0.html" && fail "the hostile procedure's page has its listing" "$(grep -o '"error": "[^"]\{0,200\}' "$T/h/p/0.html")" ||
	pass "the hostile procedure's page has its listing and graph"

# two epochs compared: the procedure rows as dcpidiff prints them, the
# significant change marked
"$REC" -quiet -db "$T/db" -- "$T/hot" 900000000 >"$T/rec.out" 2>&1 || fail "dcpi record, B"
read -r ea eb < <(ls "$T/db" | grep -E '^[0-9]{8}T' | sort | head -2 | tr '\n' ' ')
"$REP" report -db "$T/db" -diff "$ea" "$eb" -o "$T/d" >"$T/out" 2>"$T/err" ||
	fail "dcpi report -diff" "$(cat "$T/err")"
dom "$T/d/index.html" >"$T/d.dom"
"$DCPI_BIN/dcpidiff" -db "$T/db" -i -json -keep 500 "$ea" "$eb" >"$T/diff.json"
check "the diff view: dcpidiff's procedures, amounts, and which changes are significant" \
	python3 - "$T/d.dom" "$T/diff.json" <<'EOF'
import html.parser, json, sys
class Rows(html.parser.HTMLParser):
    def __init__(s):
        super().__init__(); s.rows = []; s.cell = None; s.row = None
    def handle_starttag(s, tag, a):
        a = dict(a)
        if tag == 'tr' and (a.get('class') or '').startswith('procedure'):
            s.row = [a['class']]; s.rows.append(s.row)
        elif tag == 'td' and s.row is not None: s.cell = ''
    def handle_endtag(s, tag):
        if tag == 'td' and s.cell is not None: s.row.append(s.cell); s.cell = None
        elif tag == 'tr': s.row = None
    def handle_data(s, d):
        if s.cell is not None: s.cell += d
p = Rows(); p.feed(open(sys.argv[1]).read())
want = json.load(open(sys.argv[2]))['rows']
assert len(p.rows) == len(want) > 0
for g, w in zip(p.rows, want):
    assert g[1] == w['procedure'] and g[3] == str(w['a']) and g[4] == str(w['b']), (g, w)
    assert ('significant' in g[0].split()) == w['significant'] and g[-1] == ('yes' if w['significant'] else 'no'), (g, w)
hot = [g for g in p.rows if g[1] == 'hot_loop'][0]
assert hot[-1] == 'yes', hot
print('# hot_loop:', hot[1:6], 'significant')
EOF

# call stacks: the flame graph, the inclusive table and each page's callers
# and callees, the same numbers as dcpiprof -stacks/-inclusive/-callers
cc -O2 -fomit-frame-pointer -o "$T/callers" "$DCPI_ROOT/tests/workloads/callers.c" || fail "build callers"
# on until 1 s of CPU (2,000 samples): six rounds were 250 samples on a fast
# host, where six's share strays 3 points by the samples' spread alone
"$REC" -quiet -db "$T/sdb" -stacks -- "$T/callers" ratio 6 1.0 >"$T/rec.out" 2>&1 ||
	fail "dcpi record -stacks" "$(cat "$T/rec.out")"
"$REP" report -db "$T/sdb" -o "$T/rs" -n 4 >/dev/null 2>&1 || fail "dcpi report of an epoch with stacks"
dom "$T/rs/index.html" >"$T/rs.dom"
"$DCPI_BIN/dcpiprof" -db "$T/sdb" -stacks -json -keep 3000 >"$T/stacks.json"
"$DCPI_BIN/dcpiprof" -db "$T/sdb" -inclusive -json -keep 500 >"$T/incl.json"
check "the flame graph: every sample, _start to leaf, six/three/one as dcpiprof -stacks counts them" \
	python3 - "$T/rs.dom" "$T/stacks.json" <<'EOF'
import html.parser, json, sys
class Flame(html.parser.HTMLParser):
    def __init__(s):
        super().__init__(); s.path = []; s.nodes = {}; s.depth = 0; s.stack = []
    def handle_starttag(s, tag, a):
        a = dict(a)
        if tag == 'div':
            if a.get('class') == 'fnode':
                s.path.append((a['data-name'], a.get('data-image') or '')); s.nodes[tuple(s.path)] = int(a['data-samples'])
                s.stack.append(True)
            else:
                s.stack.append(False)
    def handle_endtag(s, tag):
        if tag == 'div' and s.stack and s.stack.pop():
            s.path.pop()
f = Flame(); f.feed(open(sys.argv[1]).read())
d = json.load(open(sys.argv[2]))
total = d['events'][0]['total']
root = (('all', ''),)
assert f.nodes[root] == total, (f.nodes.get(root), total)
want = {}
for r in d['rows']:
    names = [('all', '')] + ([] if r['end'] in ('whole', 'kernel thread') else [('[%s]' % r['end'], '')]) + \
            [(d['procedures'][i]['procedure'], d['procedures'][i]['image']) for i in r['frames']]
    for k in range(1, len(names) + 1):
        want[tuple(names[:k])] = want.get(tuple(names[:k]), 0) + r['counts'][0]
shown = {k: v for k, v in want.items() if v / total >= 0.002}
bad = [(k, f.nodes.get(k), v) for k, v in shown.items() if f.nodes.get(k) != v]
assert not bad, bad[:5]
six = [k for k in f.nodes if [n for n, i in k[-2:]] == ['six', 'leaf']]
assert six and abs(100.0 * f.nodes[six[0]] / total - 60) <= 3, six
print('#', len(f.nodes), 'boxes; six/leaf', f.nodes[six[0]], 'of', total)
EOF
check "the inclusive table: dcpiprof -inclusive's rows, self and inclusive" \
	python3 - "$T/rs.dom" "$T/incl.json" <<'EOF'
import json, re, sys
dom = open(sys.argv[1]).read()
rows = [[re.sub('<[^>]+>', '', c) for c in re.findall(r'<td[^>]*>(.*?)</td>', r)]
        for r in re.findall(r'<tr class="inclusive">(.*?)</tr>', dom)]
d = json.load(open(sys.argv[2]))
t = d['events'][0]['total']
assert len(rows) == len(d['rows']) > 0, (len(rows), len(d['rows']))
for g, w in zip(rows, d['rows']):
    assert g[0] == w['procedure'] and g[2] == str(w['self']['counts'][0]) and g[4] == str(w['inclusive']['counts'][0]), (g, w)
    assert g[5] == '%.2f' % (100.0 * w['inclusive']['counts'][0] / t), (g, w)
EOF
leafpage=$(grep -o 'href="p/[0-9]*.html">leaf<' "$T/rs.dom" | head -1 | sed 's/href="\([^"]*\)".*/\1/')
if [ -n "$leafpage" ]; then
	dom "$T/rs/$leafpage" >"$T/leaf.dom"
	"$DCPI_BIN/dcpiprof" -db "$T/sdb" -json -keep 50 -callers leaf "$T/callers" >"$T/callers.json"
	"$DCPI_BIN/dcpiprof" -db "$T/sdb" -json -keep 50 -callees leaf "$T/callers" >"$T/callees.json"
	check "leaf's page: its callers and callees, as dcpiprof -callers/-callees give them" \
		python3 - "$T/leaf.dom" "$T/callers.json" "$T/callees.json" <<'EOF'
import json, re, sys
dom = open(sys.argv[1]).read()
for cls, f in (('caller', sys.argv[2]), ('callee', sys.argv[3])):
    rows = [[re.sub('<[^>]+>', '', c) for c in re.findall(r'<td[^>]*>(.*?)</td>', r)]
            for r in re.findall(r'<tr class="%s">(.*?)</tr>' % cls, dom)]
    d = json.load(open(f))
    inc = d['inclusive']['counts'][0]
    assert len(rows) == len(d['rows']) > 0, (cls, rows, d['rows'])
    for g, w in zip(rows, d['rows']):
        assert g[0] == w['procedure'] and g[2] == str(w['counts'][0]), (g, w)
        assert g[3] == '%.2f' % (100.0 * w['counts'][0] / inc), (g, w)
print('# callers', [r for r in re.findall(r'<tr class="caller">(.*?)</tr>', dom)][:1])
EOF
else
	fail "leaf's page is linked from the index" "$(grep -o 'p/[0-9]*.html">[^<]*' "$T/rs.dom" | head)"
fi
out=$(grep -c 'id="stacks"' "$T/index.dom")
[ "$out" = 0 ] && pass "an epoch without stacks: no call-stacks section" ||
	fail "an epoch without stacks: no call-stacks section" "$out"

# refusals
out=$("$REP" report -db "$T/db" -diff "$ea" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "EPOCH_B" <<<"$out" && pass "-diff without EPOCH_B: usage error" || fail "-diff alone" "rc=$rc $out"
out=$("$REP" report -db "$T/db" -o "$T/nonexistent/deeper" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "nonexistent/deeper" <<<"$out" && pass "an -o whose parent is missing: an error naming it" ||
	fail "-o in a missing directory" "rc=$rc $out"
ln -s "$T/r" "$T/link"
out=$("$REP" report -db "$T/db" -o "$T/link" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "not a directory" <<<"$out" && pass "-o a symbolic link: refused" || fail "-o a link" "rc=$rc $out"
if [ "$(id -u)" -eq 0 ]; then
	mkdir "$T/theirs" && chown nobody "$T/theirs"
	out=$("$REP" report -db "$T/db" -o "$T/theirs" 2>&1); rc=$?
	[ $rc -eq 1 ] && grep -q "owned by uid" <<<"$out" && [ -z "$(ls "$T/theirs")" ] &&
		pass "-o another user's directory: refused, nothing written" ||
		fail "-o another user's directory" "rc=$rc $out $(ls "$T/theirs")"
fi
out=$(cd "$T" && "$REP" report -db "$T/nodb" 2>&1); rc=$?
[ $rc -ne 0 ] && [ ! -e "$T/dcpi-report" ] && pass "no database: an error, nothing written ($(head -1 <<<"$out"))" ||
	fail "no database" "rc=$rc $out"
done_testing
