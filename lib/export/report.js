/* dcpi report: draws a page from the JSON the dcpi tools printed, which
 * the page carries (<script type="application/json">).  Every string goes
 * in as text (textContent), never as markup; nothing is fetched. */
'use strict';
(function () {
	function data(id) {
		var e = document.getElementById(id);
		return e ? JSON.parse(e.textContent) : null;
	}
	/* el('td', {class: 'num'}, 'text', node, ...) */
	function el(tag, attrs) {
		var e = document.createElement(tag);
		for (var k in attrs || {}) {
			if (attrs[k] === null || attrs[k] === undefined) continue;
			if (k === 'class') e.className = attrs[k];
			else e.setAttribute(k, attrs[k]);
		}
		for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
		return e;
	}
	function add(e, kid) {
		if (kid === null || kid === undefined) return;
		if (Array.isArray(kid)) kid.forEach(function (k) { add(e, k); });
		else e.appendChild(typeof kid === 'object' ? kid : document.createTextNode(String(kid)));
	}
	var main = document.getElementById('main');
	function section(title, id) {
		var s = el('section', { id: id }, el('h2', null, title));
		main.appendChild(s);
		return s;
	}
	function base(p) { var i = String(p).lastIndexOf('/'); return i < 0 ? p : p.slice(i + 1); }
	/* v to d decimals as C's printf("%.*f") writes it: JavaScript's
	   toFixed rounds an exact tie (0.625 to 2 decimals) up, glibc to even
	   ("0.62"); the tie is found in v's exact decimal expansion. */
	function cfixed(v, d) {
		var a = Math.abs(v), s, dot, rest;
		if (!isFinite(v) || a >= 1e21) return String(v);
		s = a.toFixed(100);
		dot = s.indexOf('.');
		rest = s.slice(dot + 1 + d);
		if (/^50*$/.test(rest)) {
			var kept = s.slice(0, dot + 1 + d).replace(/\.$/, ''), last = kept.charCodeAt(kept.length - 1) - 48;
			if (last % 2 === 0)
				return (v < 0 && /[1-9]/.test(kept) ? '-' : '') + kept;
		}
		return v.toFixed(d);
	}
	function fixed(v, d) { return v === null || v === undefined ? '' : cfixed(Number(v), d); }
	function pct(v) { return v === null || v === undefined ? '' : cfixed(Number(v), 2) + '%'; }
	/* a share as the text tools print it: 100 * n / total, computed in the
	   same order as report_pct, not the JSON's four-decimal rounding of it */
	function share(n, t) { return t ? 100 * Math.min(n, t) / t : 0; }

	/* An estimated count to the digits it carries, as the text tools
	 * print it (dcpi_count_str): the JSON's digits where given (an H from
	 * a software clock carries two), else its confidence's: H three
	 * significant digits, M two, L its order of magnitude with '~'; E
	 * (exact) in full. */
	function estimate(v, conf, given) {
		var sfx = ['', 'k', 'M', 'G', 'T', 'P'];
		var digits = typeof given === 'number' ? given :
			conf === 'H' ? 3 : conf === 'M' ? 2 : conf === 'L' ? 1 : 0;
		var k = 0, scale = 1, lead, m, d;
		if (!digits || !(v > 0) || !isFinite(v)) return cfixed(v > 0 && isFinite(v) ? v : 0, 0);
		lead = Math.floor(Math.log10(v));
		m = Math.pow(10, lead - digits + 1);
		v = Math.round(v / m) * m;
		while (v >= 1e3 * scale && k < 5) { scale *= 1e3; k++; }
		lead = Math.floor(Math.log10(v / scale));
		d = digits - 1 - lead > 0 ? digits - 1 - lead : 0;
		return (conf === 'L' ? '~' : '') + cfixed(v / scale, d) + sfx[k];
	}
	/* A figure of dcpiwhatcg's to the digits its text gives it (three, the
	 * sampling error two), signed. */
	function fig(v, digits) {
		return v < 0 ? '-' + estimate(-v, 'H', digits) : estimate(v, 'H', digits);
	}
	/* A measured ratio (a cpi, a stall per execution) to the significant
	 * digits the JSON says it carries, as dcpi_quantum_str prints it (at
	 * most three decimals); two decimals where the JSON gives none. */
	function sig(v, digits) {
		var lead, m;
		if (v === null || v === undefined) return '-';
		if (typeof digits !== 'number') return cfixed(Number(v), 2);
		if (!(v > 0) || !isFinite(v) || digits <= 0) return '0';
		lead = Math.floor(Math.log10(v));
		m = Math.pow(10, lead - digits + 1);
		return cfixed(Math.round(v / m) * m, Math.min(3, Math.max(0, digits - 1 - lead)));
	}
	var confName = { H: 'high confidence', M: 'medium confidence', L: 'low confidence: an order of magnitude', E: 'exact (dcpix)' };
	/* why holds "ran" (a block's JSON): the graph gave it 0, its samples say it ran */
	function estCell(v, conf, why, digits) {
		var ran = why && why.indexOf('ran') >= 0;
		return el('td', { class: 'num est conf-' + conf, title: ran ? 'ran (its samples say so), the graph gave it no count' : 'estimate, ' + (confName[conf] || conf), 'data-v': v },
			ran ? '>0' : estimate(v, conf, digits), ' ', el('span', { class: 'conf' }, conf));
	}

	/* A table that sorts by a column (click its head) and filters rows by
	 * the text in them.  cols: {label, num, cell(row) -> td, key(row)}. */
	function table(cols, rows, opts) {
		opts = opts || {};
		var wrap = el('div', { class: 'table' });
		var tbody = el('tbody');
		var count = el('span', { class: 'count' });
		var trs = rows.map(function (r, i) {
			var tr = el('tr', opts.rowAttrs ? opts.rowAttrs(r) : null);
			cols.forEach(function (c) { tr.appendChild(c.cell(r)); });
			tr._row = r;
			tr._i = i;
			return tr;
		});
		function show() {
			var q = filter ? filter.value.toLowerCase() : '', n = 0;
			trs.forEach(function (tr) {
				var on = !q || tr.textContent.toLowerCase().indexOf(q) >= 0;
				tr.classList.toggle('hidden', !on);
				n += on;
			});
			count.textContent = n + ' of ' + trs.length + ' rows';
		}
		var heads = cols.map(function (c, ci) {
			var th = el('th', { class: c.num ? 'num' : null, title: c.title }, c.label);
			th.addEventListener('click', function () {
				var desc = !th.classList.contains('sorted-desc');
				heads.forEach(function (h) { h.classList.remove('sorted-desc', 'sorted-asc'); });
				th.classList.add(desc ? 'sorted-desc' : 'sorted-asc');
				trs.sort(function (a, b) {
					var x = c.key(a._row), y = c.key(b._row), r;
					r = typeof x === 'number' ? x - y : String(x).localeCompare(String(y));
					return (desc ? -r : r) || a._i - b._i;
				});
				trs.forEach(function (tr) { tbody.appendChild(tr); });
			});
			return th;
		});
		var filter = rows.length > 10 ? el('input', { class: 'filter', type: 'search', placeholder: 'filter rows' }) : null;
		if (filter) filter.addEventListener('input', show);
		add(wrap, [filter, count, el('div', { class: rows.length > 25 ? 'scroll' : null }, el('table', { class: opts.cls }, el('thead', null, el('tr', null, heads)), tbody))]);
		trs.forEach(function (tr) { tbody.appendChild(tr); });
		show();
		return wrap;
	}
	function numCol(label, get, digits, title) {
		return { label: label, num: true, title: title, key: function (r) { var v = get(r); return v === null ? -Infinity : v; },
			cell: function (r) { var v = get(r); return el('td', { class: 'num' }, v === null || v === undefined ? '' : digits === undefined ? v : fixed(v, digits)); } };
	}
	function textCol(label, get, link) {
		return { label: label, key: get, cell: function (r) {
			var t = get(r), href = link ? link(r) : null;
			return el('td', { class: 'name' }, href ? el('a', { href: href }, t) : t);
		} };
	}
	function imageCol() {
		return { label: 'image', key: function (r) { return r.image; }, cell: function (r) {
			return el('td', { class: 'name', title: r.image }, base(r.image));
		} };
	}
	/* a count and a share column per event of doc */
	function eventCols(doc) {
		var cols = [], ev = doc.events;
		ev.forEach(function (e, i) {
			cols.push(numCol(e.name, function (r) { return r.counts[i]; }, undefined, 'samples of ' + e.name));
			cols.push(numCol('%', function (r) { return share(r.counts[i], e.total); }, 2, 'share of ' + e.name + ' samples'));
		});
		/* two events: the ratio of their samples, as dcpiprof -ratio B/A prints it */
		if (ev.length >= 2)
			cols.push({ label: ev[1].name + '/' + ev[0].name, num: true, title: 'dcpiprof -ratio ' + ev[1].name + '/' + ev[0].name + ': the ratio of their samples',
				key: function (r) { return r.counts[0] ? r.counts[1] / r.counts[0] : -Infinity; },
				cell: function (r) { return el('td', { class: 'num ratio' }, r.counts[0] ? cfixed(r.counts[1] / r.counts[0], 3) : '-'); } });
		return cols;
	}

	function warnings(docs) {
		var seen = {}, out = [];
		docs.forEach(function (d) {
			if (!d) return;
			(d.warnings || []).forEach(function (w) { if (!seen[w]) { seen[w] = 1; out.push(el('div', { class: 'warn' }, w)); } });
			if (d.error) out.push(el('div', { class: 'err' }, d.error));
		});
		return out;
	}
	function facts(doc, extra) {
		var dl = el('dl', { class: 'facts' });
		function f(k, v) { add(dl, [el('dt', null, k), el('dd', null, v)]); }
		f('Database', doc.database);
		f('Epochs', doc.epochs.join(', '));
		f('Hosts', doc.hosts.join(', '));
		doc.events.forEach(function (ev) {
			f('Event ' + ev.name, ev.total + ' samples, period ' + ev.period);
		});
		f('Samples', doc.samples + ', lost ' + doc.lost + ', unknown ' + doc.unknown +
			' (' + cfixed(share(doc.unknown, doc.samples), 2) + '%), throttled ' + doc.throttled);
		if (doc.clock_khz) f('Clock', cfixed(doc.clock_khz / 1e6, 3) + ' GHz (measured by the collector)');
		if (doc.overhead) {
			var o = doc.overhead;
			f('Overhead', cfixed(o.percent, 2) + '% of the CPU time monitored: the collector\'s own ' + cfixed(o.collector_cpu_ns / 1e9, 2) + ' s (measured)' +
				(o.sample_cost_ns ? ' and interrupts ~' + cfixed(o.interrupt_ns / 1e9, 2) + ' s (estimated: ' + o.sample_cost_ns + ' ns a sample)' : '; interrupts not measured'));
		}
		(extra || []).forEach(function (x) { f(x[0], x[1]); });
		return dl;
	}

	/* ---- the epoch ---- */
	function whatcg(doc, s) {
		if (!doc || doc.error) { add(s, warnings([doc])); return; }
		add(s, el('p', { class: 'note' }, 'Estimated from the samples and a static cost model (dcpiwhatcg, of the images with most samples), in ' + doc.unit +
			'; a culprit is a range min..max, as a stall with several possible culprits counts towards each.'));
		var none = [];
		doc.images.slice().sort(function (a, b) { return b.total - a.total; }).forEach(function (im) {
			var t = im.total || 1, rows = [], box = el('div', { class: 'whatcg' });
			if (im.not_analysed >= im.total) { none.push(base(im.image)); return; }
			rows.push(['Execution', im.execution, null, 'k-exec']);
			rows.push(['Static stalls', im.static_stall, null, 'k-static']);
			rows.push(['Dynamic stalls', im.dynamic_stall, null, 'k-dyn']);
			im.culprits.forEach(function (c) { if (c.max > 0) rows.push(['  ' + c.name + ' (' + c.code + ')', c.min, c.max, 'k-range']); });
			rows.push(['  Unexplained stall', im.unexplained_stall, null, 'k-unexp']);
			rows.push(['Unexplained gain', im.unexplained_gain, null, 'k-unexp']);
			rows.push(['Not analysed', im.not_analysed, null, 'k-unexp']);
			var tb = el('tbody');
			rows.forEach(function (r) {
				var lo = Math.max(0, r[1]) / t * 100, hi = r[2] === null ? lo : Math.max(0, r[2]) / t * 100;
				var bar = el('div', { class: 'bar', style: 'height:12px;width:30em;border:0' },
					el('span', { class: r[3] === 'k-range' ? 'k-dyn' : r[3], style: 'width:' + Math.min(lo, 100) + '%' }),
					hi > lo ? el('span', { class: 'k-range', style: 'width:' + Math.min(hi - lo, 100 - Math.min(lo, 100)) + '%' }) : null);
				add(tb, el('tr', null, el('td', { class: 'mono', style: 'white-space:pre' }, r[0]),
					el('td', { class: 'num' }, r[2] === null ? fig(r[1], 3) : fig(r[1], 3) + '..' + fig(r[2], 3)),
					el('td', { class: 'num' }, r[2] === null ? fixed(r[1] / t * 100, 1) + '%' : fixed(r[1] / t * 100, 1) + '%..' + fixed(r[2] / t * 100, 1) + '%'),
					el('td', null, bar)));
			});
			add(tb, el('tr', null, el('td', null, 'Total sampled'), el('td', { class: 'num' }, fig(im.total, 3)), el('td', { class: 'num' }, '100.0%'), el('td')));
			add(box, [el('h3', { title: im.image }, base(im.image)), el('table', null, tb),
				el('p', { class: 'note' }, 'Net sampling error (1 s.e.) \u00b1' + fig(im.sampling_error, 2) +
					'; samples with confidence H or M: ' + fixed(im.confident_percent, 1) + '%.' +
					(im.unexplained_gain < 0 ? ' The code ran faster than the model says it can (unexplained gain): read Execution and Static stalls as upper bounds.' : ''))]);
			add(s, box);
		});
		if (none.length)
			add(s, el('p', { class: 'note' }, 'Not analysed (no code to read, so every sample is unexplained): ' + none.join(', ') + '.'));
	}
	function stallCols(withProc) {
		var cols = [{ label: 'stall', num: true, title: 'stall cycles above the static best case, to the digits they carry', key: function (r) { return r.stall; }, cell: function (r) {
				return el('td', { class: 'num' }, typeof r.stall_digits === 'number' ? (r.stall_digits > 0 ? estimate(r.stall, 'H', r.stall_digits) : '0') : fixed(r.stall, 0)); } },
			numCol('%', function (r) { return r.percent; }, 2),
			{ label: 'count', num: true, key: function (r) { return r.count; }, cell: function (r) { return estCell(r.count, r.conf, null, r.digits); } },
			{ label: 'avg', num: true, title: 'stall cycles per execution', key: function (r) { return r.avg_stall; }, cell: function (r) {
				return el('td', { class: 'num' }, typeof r.avg_stall_digits === 'number' ? sig(r.avg_stall, r.avg_stall_digits) : fixed(r.avg_stall, 3)); } },
			textCol('culprits', function (r) { return (r.culprits || []).map(function (c) { return c.code || c; }).join(' ') || '?'; }),
			textCol('address', function (r) { return r.address; }, withProc ? null : function (r) { return '#i' + r.address; })];
		if (withProc) cols.push(textCol('procedure', function (r) { return r.procedure; }, function (r) { return pageOf(r.image, r.procedure); }));
		cols.push(textCol('instruction', function (r) { return r.instruction; }));
		cols.push(textCol('line', function (r) { return r.file ? base(r.file) + ':' + r.line : ''; }));
		return cols;
	}
	var pages = {};
	function pageOf(image, proc) { return pages[image + '\u0000' + proc] || null; }

	/* ---- call stacks ---- */
	function stacksNote(D) {
		var t = D.events[0].total;
		return el('p', { class: 'note' }, t + ' samples of ' + D.events[0].name + ' with a call stack (dcpiprof -stacks): ' +
			'the outermost frame at the top, the sampled procedure at the bottom; a box\'s width is its share of the samples. ' +
			'Stacks whose walk stopped short begin with a box that says why.');
	}
	/* A flame graph drawn top-down (an icicle) from dcpiprof -stacks -json. */
	function flame(D) {
		var P = D.procedures, total = 0, root = { name: 'all', image: '', v: 0, kids: [], by: {} };
		function kid(n, name, image) {
			var k = name + '\u0000' + image;
			if (!n.by[k]) { n.by[k] = { name: name, image: image, v: 0, kids: [], by: {} }; n.kids.push(n.by[k]); }
			return n.by[k];
		}
		D.rows.forEach(function (r) {
			var v = r.counts[0], n = root;
			root.v += v;
			if (r.end !== 'whole' && r.end !== 'kernel thread') { n = kid(n, '[' + r.end + ']', ''); n.v += v; }
			r.frames.forEach(function (f) { n = kid(n, P[f].procedure, P[f].image); n.v += v; });
		});
		if (D.other && D.other.stacks) { var o = kid(root, '[' + D.other.stacks + ' more stacks]', ''); o.v += D.other.counts[0]; root.v += o.v; }
		total = root.v;
		function hue(s) { var h = 0; for (var i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) % 360; return h; }
		function draw(n, depth) {
			var pct = total ? 100 * n.v / total : 0, link = pageOf(n.image, n.name);
			var label = el('div', { class: 'flabel', title: n.name + (n.image ? ' (' + n.image + ')' : '') + ': ' + n.v + ' samples, ' + cfixed(pct, 2) + '%',
				style: 'background:hsl(' + (n.image ? hue(n.image) : 0) + ',55%,' + (n.image ? 78 : 88) + '%)' },
				link ? el('a', { href: link }, n.name) : n.name);
			var kids = el('div', { class: 'fkids' });
			n.kids.sort(function (a, b) { return b.v - a.v || (a.name < b.name ? -1 : a.name > b.name); });
			n.kids.forEach(function (k) {
				if (depth < 96 && total && k.v / total >= 0.002) kids.appendChild(draw(k, depth + 1));
			});
			var box = el('div', { class: 'fnode', 'data-samples': n.v, 'data-name': n.name, 'data-image': n.image, style: 'width:' + (n === root ? 100 : 100 * n.v / n.parentV) + '%' }, label, kids);
			return box;
		}
		(function setParents(n) { n.kids.forEach(function (k) { k.parentV = n.v; setParents(k); }); })(root);
		return el('div', { class: 'flame' }, draw(root, 0));
	}
	function edgeTable(D, what) {
		return table([textCol(what, function (r) { return r.procedure; }, function (r) { return pageOf(r.image, r.procedure); }),
			{ label: 'image', key: function (r) { return r.image; }, cell: function (r) { return el('td', { class: 'name', title: r.image }, r.image ? base(r.image) : ''); } },
			numCol(D.events[0].name, function (r) { return r.counts[0]; }, undefined, 'samples'),
			numCol('%', function (r) { return share(r.counts[0], D.inclusive.counts[0]); }, 2, 'share of the procedure\'s inclusive samples')],
			D.rows, { rowAttrs: function () { return { class: what }; } });
	}

	function indexPage() {
		var I = data('images'), P = data('procs'), W = data('whatcg'), S = data('stalls'), L = data('labels');
		(data('pages') || []).forEach(function (p) { pages[p.image + '\u0000' + p.procedure] = p.page; });
		var s = section('The epoch', 'epoch');
		add(s, facts(I));
		add(s, warnings([I, P]));
		if (L && !L.error && L.rows.some(function (r) { return r.label !== null; })) {
			s = section('Labels', 'labels');
			add(s, table([textCol('label', function (r) { return r.label === null ? '(unlabelled)' : r.label; }),
				numCol('profiles', function (r) { return r.profiles; })].concat(eventCols(L)), L.rows));
		}
		s = section('Images', 'images');
		add(s, table([textCol('image', function (r) { return r.image; })].concat(eventCols(I)), I.rows, { rowAttrs: function () { return { class: 'image' }; } }));
		s = section('Where the cycles went', 'whatcg');
		whatcg(W, s);
		s = section('Procedures', 'procedures');
		add(s, el('p', { class: 'note' }, 'The ' + P.rows.length + ' procedures with most samples; those with a page are links.'));
		add(s, table([textCol('procedure', function (r) { return r.procedure; }, function (r) { return pageOf(r.image, r.procedure); }), imageCol()].concat(eventCols(P)),
			P.rows, { rowAttrs: function () { return { class: 'procedure' }; } }));
		var St = data('stacks'), In = data('inclusive');
		if (St) {
			s = section('Call stacks', 'stacks');
			if (!St.error) { add(s, stacksNote(St)); add(s, flame(St)); }
			else add(s, warnings([St]));
		}
		if (In && !In.error) {
			s = section('Inclusive time', 'inclusive');
			add(s, el('p', { class: 'note' }, 'Procedures by the samples in them and in what they called (dcpiprof -inclusive); self: in them alone.'));
			add(s, table([textCol('procedure', function (r) { return r.procedure; }, function (r) { return pageOf(r.image, r.procedure); }), imageCol(),
				numCol('self', function (r) { return r.self.counts[0]; }), numCol('self %', function (r) { return share(r.self.counts[0], In.events[0].total); }, 2),
				numCol('inclusive', function (r) { return r.inclusive.counts[0]; }), numCol('incl %', function (r) { return share(r.inclusive.counts[0], In.events[0].total); }, 2)],
				In.rows, { rowAttrs: function () { return { class: 'inclusive' }; } }));
		}
		else if (In) add(s, warnings([In]));
		s = section('Top stalls', 'stalls');
		if (S && !S.error) {
			add(s, el('p', { class: 'note' }, 'Instructions with the most stall ' + S.stall_unit + ' in the images with most samples (dcpitopstalls); counts are estimates with their confidence.'));
			add(s, table(stallCols(true), S.rows));
		} else add(s, warnings([S]));
	}

	/* ---- a procedure ---- */
	function procPage() {
		var Li = data('list'), C = data('calc'), S = data('stalls');
		var s = section('The procedure', 'procedure');
		if (Li.error) { add(s, warnings([Li])); return; }
		add(s, facts(Li, [['Image', Li.image], ['Procedure', Li.procedure], ['Addresses', Li.lo + '..' + Li.hi]]));
		add(s, warnings([Li, C, S]));
		(Li.notes || []).forEach(function (n) { add(s, el('div', { class: 'note' }, n)); });
		var cfg = document.getElementById('cfg');
		s = section('Control-flow graph', 'graph');
		if (cfg) {
			add(s, el('p', { class: 'note' }, 'Blocks with their estimated counts and confidence (dcpicalc -svg); a block\'s colour is its share of the samples. Click a block for its instructions.'));
			s.appendChild(cfg);
			var starts = {};
			if (C && C.blocks) C.blocks.forEach(function (b) { starts['B' + b.id] = b.start; });
			Array.prototype.forEach.call(cfg.querySelectorAll('g.node'), function (g) {
				var t = g.querySelector('title'), at = t ? starts[t.textContent] : null;
				if (at) g.addEventListener('click', function () { location.hash = '#i' + at; });
			});
		} else add(s, el('p', { class: 'note' }, Li.has_code === false ? 'No code to read for this procedure (see the notes above): no graph, estimates or stalls; its samples are below.' : 'No graph could be drawn.'));
		if (C && C.blocks) {
			s = section('Basic blocks', 'blocks');
			add(s, el('p', { class: 'note' }, (C.absolute ? 'Estimated executions' : 'Estimated relative frequencies') +
				' of each block (dcpicalc, mode ' + C.mode + '): H, M and L are the estimate\'s confidence; L is an order of magnitude.'));
			add(s, table([textCol('block', function (r) { return 'B' + r.id; }, function (r) { return '#i' + r.start; }),
				textCol('start', function (r) { return r.start; }),
				numCol('insns', function (r) { return r.instructions; }),
				{ label: C.absolute ? 'executions' : 'rel. freq', num: true, key: function (r) { return r.freq; }, cell: function (r) { return estCell(r.freq, r.conf, r.why, r.digits); } },
				numCol('samples', function (r) { return r.samples[0]; }),
				{ label: 'cpi', num: true, key: function (r) { return r.cpi === null ? -Infinity : r.cpi; }, cell: function (r) {
					var below = r.cpi !== null && r.cpi < r.best_cpi;
					return el('td', { class: 'num cpi', title: below ? 'below the best case, which no block can run: its count is over-estimated, or the cost model is slower than this core' : null },
						r.cpi === null ? '-' : sig(r.cpi, r.cpi_digits) + (below ? '!' : '')); } },
				numCol('best cpi', function (r) { return r.best_cpi; }, 2),
				textCol('bound', function (r) { return r.bound; })], C.blocks));
		} else if (C) add(s, warnings([C]));
		s = section('Source and instructions', 'listing');
		if (Li.vtrace) add(s, el('p', { class: 'note' }, 'latency: the measured latency of the sampled loads (' + (Li.vtrace.kind === 'ldlat' ? 'precise samples, ldlat; dcpilist -vtrace): mean core cycles as the PMU measured them' : Li.vtrace.kind + ', ' + Li.vtrace.processes + (Li.vtrace.processes === 1 ? ' process' : ' processes') + '; dcpilist -vtrace): mean time-stamp counter cycles') + ', samples, and the bin most of them fell in (' + Li.vtrace.bins.map(function (b) { return b.name + ' ' + b.min + (b.max >= 1e19 ? '+' : '-' + b.max); }).join(', ') + '); hot values: the values loaded most often, with their share (<=: an upper bound).'));
		add(s, listing(Li));
		var Ca = data('callers'), Ce = data('callees');
		if (Ca || Ce) {
			s = section('Callers and callees', 'callers');
			if (Ca && !Ca.error) {
				add(s, el('p', { class: 'note' }, 'Who called it: ' + Ca.inclusive.counts[0] + ' samples in it and below (dcpiprof -callers); shares are of those.'));
				add(s, edgeTable(Ca, 'caller'));
			}
			if (Ce && !Ce.error) {
				add(s, el('p', { class: 'note' }, 'What it spent them in: itself ([self]) and what it called (dcpiprof -callees).'));
				add(s, edgeTable(Ce, 'callee'));
			}
			add(s, warnings([Ca, Ce]));
		}
		s = section('Stalls', 'stalls');
		if (S && !S.error && S.rows.length) add(s, table(stallCols(false), S.rows));
		else if (S && S.error) add(s, warnings([S]));
		else if (S) add(s, el('p', { class: 'note' }, 'No stall was estimated in this procedure.'));
		else add(s, el('p', { class: 'note' }, 'Stalls need the code: none.'));
		if (location.hash) { var t = document.getElementById(location.hash.slice(1)); if (t) t.scrollIntoView(); }
	}
	function heat(p) { return p > 0 ? 'background:hsl(0,85%,' + (97 - Math.min(p, 100) * 0.37).toFixed(1) + '%)' : null; }
	/* dcpilist -vtrace: a load's measured latency (mean, the bin most of its
	   samples fell in) and its hot values, two cells; empty ones elsewhere */
	function vtraceCells(Li, x) {
		if (!Li.vtrace) return [];
		if (!x || !x.vtrace) return [el('td'), el('td')];
		var best = null;
		Object.keys(x.latency).forEach(function (k) { if (k && (best === null || x.latency[k] > x.latency[best])) best = k; });
		var lat = fixed(x.vtrace.mean_cycles, 1) + ' (' + x.vtrace.samples + (best !== null && x.latency[best] ? ', ' + best + ' ' + pct(share(x.latency[best], x.vtrace.samples)) : '') + ')';
		var sure = x.values.filter(function (v) { return !v.approximate || v.share_min >= 0.01; });
		var vals = sure.slice(0, 3).map(function (v) { return v.value + ' ' + (v.approximate ? fixed(100 * v.share_min, 1) + '-' + pct(100 * v.share_max) : pct(100 * v.share)); }).join(', ');
		if (!sure.length && x.values.length) vals = 'none stands out';
		return [el('td', { class: 'num vlat' }, lat), el('td', { class: 'code vvals' }, vals)];
	}
	function listing(Li) {
		var tb = el('tbody'), last = -1, ev = Li.events.map(function (e) { return e.name; });
		var head = el('tr', null, el('th', null, 'address'), el('th', null, 'instruction'),
			ev.map(function (n) { return [el('th', { class: 'num' }, n), el('th', { class: 'num' }, '%')]; }),
			Li.vtrace ? [el('th', { class: 'num', title: 'measured load latency: mean cycles (samples, main bin)' }, 'latency'), el('th', null, 'hot values')] : []);
		(Li.instructions || []).forEach(function (x) {
			if (x.line_index !== null && x.line_index !== undefined && x.line_index !== last) {
				var l = Li.lines[x.line_index];
				last = x.line_index;
				add(tb, el('tr', { class: 'srcline', style: heat(l.percent[0]) },
					el('td', { class: 'mono' }, base(l.file) + ':' + l.line), el('td', { class: 'src' }, l.text === null ? '' : l.text),
					ev.map(function (n, i) { return [el('td', { class: 'num' }, l.counts[i]), el('td', { class: 'num' }, pct(share(l.counts[i], Li.events[i].total)))]; }),
					vtraceCells(Li, null)));
			}
			add(tb, el('tr', { class: 'insn', id: 'i' + x.address, style: heat(x.percent[0]) },
				el('td', { class: 'code' }, x.address), el('td', { class: 'code' }, x.mnemonic + (x.operands ? ' ' + x.operands : '')),
				ev.map(function (n, i) { return [el('td', { class: 'num' }, x.counts[i]), el('td', { class: 'num' }, pct(share(x.counts[i], Li.events[i].total)))]; }),
				vtraceCells(Li, x)));
		});
		if (!Li.instructions || !Li.instructions.length)
			(Li.lines || []).forEach(function (l) {
				add(tb, el('tr', { class: 'srcline', style: heat(l.percent[0]) }, el('td', { class: 'mono' }, base(l.file) + ':' + l.line),
					el('td', { class: 'src' }, l.text === null ? '' : l.text),
					ev.map(function (n, i) { return [el('td', { class: 'num' }, l.counts[i]), el('td', { class: 'num' }, pct(share(l.counts[i], Li.events[i].total)))]; })));
			});
		return el('table', { class: 'listing' }, el('thead', null, head), tb);
	}

	/* ---- two epochs ---- */
	function diffPage() {
		var DI = data('diff-images'), D = data('diff');
		var s = section('The comparison', 'comparison');
		var dl = el('dl', { class: 'facts' });
		[['A', D.a], ['B', D.b]].forEach(function (x) {
			add(dl, [el('dt', null, 'Side ' + x[0]), el('dd', null, x[1].epochs.join(', ') + ' on ' + x[1].hosts.join(', ') + ': ' + x[1].total + ' samples of ' + D.event)]);
		});
		add(dl, [el('dt', null, 'Compared'), el('dd', null, D.compare + '; a change is marked significant when an exact Poisson test says it is more than sampling noise (95%)')]);
		add(s, [dl].concat(warnings([D.a, D.b])));
		function cols(first) {
			return first.concat([numCol('A', function (r) { return r.a; }), numCol('B', function (r) { return r.b; }),
				{ label: 'change', num: true, key: function (r) { return r.delta; }, cell: function (r) {
					return el('td', { class: 'num ' + (r.delta > 0 ? 'up' : r.delta < 0 ? 'down' : '') + (r.significant ? ' sig' : '') },
						(r.delta > 0 ? '+' : '') + fixed(r.delta, 0)); } },
				numCol('B/A', function (r) { return r.ratio; }, 2),
				numCol('% of A', function (r) { return share(r.a, D.a.total); }, 2), numCol('% of B', function (r) { return share(r.b, D.b.total); }, 2),
				numCol('change, points', function (r) { return r.delta_pp; }, 2),
				{ label: 'significant', key: function (r) { return r.significant ? 1 : 0; }, cell: function (r) {
					return el('td', { class: r.significant ? 'sig' : 'note', title: 'p = ' + fixed(r.p, 6) }, r.significant ? 'yes' : 'no'); } }]);
		}
		s = section('Images', 'images');
		add(s, table(cols([textCol('image', function (r) { return r.image; })]), DI.rows, { rowAttrs: function (r) { return { class: 'image' + (r.significant ? ' significant' : '') }; } }));
		s = section('Procedures', 'procedures');
		add(s, table(cols([textCol('procedure', function (r) { return r.procedure; }), imageCol()]), D.rows, { rowAttrs: function (r) { return { class: 'procedure' + (r.significant ? ' significant' : '') }; } }));
	}

	var kind = document.body.getAttribute('data-page');
	main.textContent = '';
	if (kind === 'index') indexPage();
	else if (kind === 'proc') procPage();
	else if (kind === 'diff') diffPage();
}());
