# -*- coding: utf-8 -*-
"""Validate pstats files written by ember (exporters/pstats.c).

Runs on every Python from 2.7 to 3.13 (so: no f-strings, no keyword-only
arguments).  Usage:

    check_pstats.py --interval SECONDS PATH,EXPECT,TOTAL_SAMPLES ...

EXPECT names the synthetic profile the file was written from
(tests/unit/synthetic_profiles.h): mixed, mixed-threads, recursive:D:C,
hostile, hostile-threads, empty, or "any" for the generic checks only.

For each file this checks, in order:
  1. the bytes: only the marshal subset of docs/consumers.md §3.2 ('{' '0' '('
     'i' 'l' 'g' 'u', no FLAG_REF), valid UTF-8 without surrogates or
     control characters, nothing after the dict;
  2. marshal.load: the dict shape pstats needs (§3.1);
  3. pstats: Stats(file).sort_stats('cumulative').print_stats(),
     print_callers(), print_callees(), other sort keys, strip_dirs(),
     Stats(file, file) (add);
  4. the invariants of §3.4 and ember's count convention;
  5. what snakeviz and gprof2dot need (§3.3).  Neither tool can be installed
     here (not in Debian, no PyPI access), so check_snakeviz() and
     check_gprof2dot() reproduce the steps of theirs that fail on bad
     input, written from the documented behaviour, not copied;
  6. the known numbers of the synthetic profile named by EXPECT.
Exit status 0 when every check passed, 1 otherwise.
"""
from __future__ import print_function

import marshal
import os
import sys

PY2 = sys.version_info[0] == 2
if PY2:
    from StringIO import StringIO  # takes unicode and ASCII str alike
    text_type = unicode  # noqa: F821
    int_types = (int, long)  # noqa: F821
else:
    from io import StringIO
    text_type = str
    int_types = (int,)

failures = []


def fail(path, msg):
    failures.append('%s: %s' % (os.path.basename(path), msg))


def close(a, b, total):
    return abs(a - b) <= 1e-9 * max(1.0, abs(total))


# ---- 1. bytes ----

ALLOWED_CODES = set(bytearray(b'{(ilgu'))


def scan_marshal(data, path):
    """Walk the object at data[0:] by hand; return the end offset."""
    pos = [0]

    def need(n):
        if pos[0] + n > len(data):
            raise ValueError('truncated at byte %d' % pos[0])

    def i32():
        need(4)
        b = data[pos[0]:pos[0] + 4]
        pos[0] += 4
        v = b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24
        return v - (1 << 32) if v & 0x80000000 else v

    def obj(allow_null=False):
        need(1)
        code = data[pos[0]]
        at = pos[0]
        pos[0] += 1
        if code & 0x80:
            raise ValueError('FLAG_REF set at byte %d (code %r)' % (at, chr(code & 0x7f)))
        if code == ord('0') and allow_null:
            return None
        if code not in ALLOWED_CODES:
            raise ValueError('type code %r at byte %d is outside the 2.7-readable subset'
                             % (chr(code), at))
        c = chr(code)
        if c == 'i':
            i32()
        elif c == 'l':
            n = i32()
            need(2 * abs(n))
            pos[0] += 2 * abs(n)
        elif c == 'g':
            need(8)
            pos[0] += 8
        elif c == 'u':
            n = i32()
            if n < 0:
                raise ValueError('negative string length at byte %d' % at)
            need(n)
            raw = bytes(data[pos[0]:pos[0] + n])
            pos[0] += n
            s = raw.decode('utf-8')  # strict: raises on ill-formed input
            # 2.7's decoder lets encoded surrogates (ED A0..BF ..) through
            rb = bytearray(raw)
            for k in range(len(rb) - 1):
                if rb[k] == 0xed and rb[k + 1] >= 0xa0:
                    raise ValueError('encoded surrogate in %r' % s)
            for ch in s:
                if ord(ch) < 0x20 or 0x7f <= ord(ch) < 0xa0:
                    raise ValueError('control character U+%04X in %r' % (ord(ch), s))
        elif c == '(':
            n = i32()
            for _ in range(n):
                obj()
        elif c == '{':
            n = 0
            while obj(allow_null=True) is not None:
                obj()
                n += 1
            return n
        return c

    n = obj()
    if not isinstance(n, int):
        raise ValueError('top-level object is not a dict')
    if n == 0:
        raise ValueError('empty dict (pstats cannot load it)')
    return pos[0]


def check_bytes(path):
    with open(path, 'rb') as f:
        data = bytearray(f.read())
    try:
        end = scan_marshal(data, path)
    except ValueError as e:
        fail(path, 'bytes: %s' % e)
        return
    if end != len(data):
        fail(path, 'bytes: %d trailing bytes after the dict' % (len(data) - end))


# ---- 2. shape ----

def check_shape(path):
    with open(path, 'rb') as f:
        d = marshal.load(f)
    if not isinstance(d, dict) or not d:
        fail(path, 'not a non-empty dict')
        return None
    for k, v in d.items():
        if not (isinstance(k, tuple) and len(k) == 3 and isinstance(k[0], text_type)
                and isinstance(k[1], int_types) and isinstance(k[2], text_type)):
            fail(path, 'bad key %r' % (k,))
        if not (isinstance(v, tuple) and len(v) == 5 and isinstance(v[4], dict)):
            fail(path, 'bad value for %r' % (k,))
            continue
        cc, nc, tt, ct, callers = v
        if not (isinstance(cc, int_types) and isinstance(nc, int_types)
                and isinstance(tt, float) and isinstance(ct, float)):
            fail(path, 'bad value types for %r' % (k,))
        for ck, cv in callers.items():
            if not (isinstance(ck, tuple) and len(ck) == 3):
                fail(path, 'bad caller key %r' % (ck,))
            if not (isinstance(cv, tuple) and len(cv) == 4):
                fail(path, 'caller value of %r from %r is not a 4-tuple' % (k, ck))
    return d


# ---- 3. pstats ----

def check_pstats(path, total_s):
    import pstats
    out = StringIO()
    st = pstats.Stats(path, stream=out)
    st.sort_stats('cumulative').print_stats()
    st.print_callers()
    st.print_callees()
    for key in ('time', 'calls', 'pcalls', 'name', 'filename', 'line', 'nfl', 'stdname'):
        st.sort_stats(key).print_stats(5)
    st2 = pstats.Stats(path, stream=out)
    st2.strip_dirs().sort_stats('cumulative').print_stats()
    st2.print_callers()
    both = pstats.Stats(path, path, stream=out)
    both.sort_stats('cumulative').print_stats()
    text = out.getvalue()
    if 'function calls' not in text:
        fail(path, 'pstats printed no header')
    if not close(st.total_tt, total_s, total_s):
        fail(path, 'pstats total_tt %r, expected %r' % (st.total_tt, total_s))
    if not close(both.total_tt, 2 * total_s, total_s):
        fail(path, 'Stats(f, f).total_tt %r, expected %r' % (both.total_tt, 2 * total_s))
    return text


# ---- 4. invariants ----

def check_invariants(path, d, total, dt):
    total_s = total * dt
    eps = 1e-9 * max(1.0, total_s)
    sum_tt = 0.0
    for k, (cc, nc, tt, ct, callers) in d.items():
        sum_tt += tt
        if cc < 0 or nc < 0 or tt < 0 or ct < 0:
            fail(path, 'negative numbers in %r' % (k,))
        if cc != nc:
            fail(path, 'cc != nc for %r' % (k,))
        if tt > ct + eps:
            fail(path, 'tt %r > ct %r for %r' % (tt, ct, k))
        if ct > total_s + eps:
            fail(path, 'ct %r > total %r for %r' % (ct, total_s, k))
        if total and not close(ct, nc * dt, total_s):
            fail(path, 'ct %r != nc * interval for %r' % (ct, k))
        if total and abs(tt / dt - round(tt / dt)) > 1e-6:
            fail(path, 'tt of %r is not a whole number of samples' % (k,))
        for ck, cv in callers.items():
            if ck not in d:
                fail(path, 'caller %r of %r is not a top-level key' % (ck, k))
                continue
            if not isinstance(cv, tuple) or len(cv) != 4:
                continue  # reported by check_shape
            enc, ecc, ett, ect = cv
            if enc < 0 or ecc < 0 or ett < 0 or ect < 0 or enc != ecc:
                fail(path, 'bad caller counts %r -> %r' % (ck, k))
            if ect > min(ct, d[ck][3]) + eps:
                fail(path, 'edge ct %r > min(ct callee %r, ct caller %r) for %r -> %r'
                     % (ect, ct, d[ck][3], ck, k))
            if ett > ect + eps:
                fail(path, 'edge tt > edge ct for %r -> %r' % (ck, k))
    if not close(sum_tt, total_s, total_s):
        fail(path, 'sum of tt %r != total samples * interval %r' % (sum_tt, total_s))


# ---- 5. consumers ----

def check_snakeviz(path, d):
    """snakeviz (snakeviz/stats.py, static/snakeviz.js), reproduced."""
    import pstats
    st = pstats.Stats(path, stream=StringIO())
    # table_rows: basename:line(name), per-call columns divide by nc and cc
    for k, v in st.stats.items():
        u'{0}:{1}({2})'.format(os.path.basename(k[0]), k[1], k[2])
        if v[1]:
            v[2] / v[1]
        if v[0]:
            v[3] / v[0]
    # json_stats: callers as lists, callees from calc_callees, then every
    # function named in all_callees is looked up in stats (KeyError there)
    st.calc_callees()
    tree = {}
    for func, info in st.stats.items():
        callers = dict((ck, list(cv)) for ck, cv in info[4].items())
        for cv in callers.values():
            if len(cv) != 4:
                fail(path, 'snakeviz: caller value of length %d' % len(cv))
        tree[func] = {'stats': info[:4], 'callers': callers,
                      'callees': dict((ce, list(v)) for ce, v in st.all_callees[func].items())}
    for func in st.all_callees:
        if func not in st.stats:
            fail(path, 'snakeviz: KeyError for %r (a caller that is not a key)' % (func,))
            return None
    # sv_find_root: functions nobody calls; several: the one with max ct
    roots = [f for f, n in tree.items() if not n['callers']]
    if not roots:
        fail(path, 'snakeviz: no root (every function has a caller)')
        return None
    root = max(roots, key=lambda f: (tree[f]['stats'][3], f))

    # the sunburst: a child's size is the caller-edge ct, children summing
    # to more than the parent are scaled down, recursion is cut
    def walk(node, size, path_set, depth):
        if depth > 10:
            return
        kids = [(c, tree[c]['callers'][node][3]) for c in tree[node]['callees']
                if c not in path_set]
        s = sum(x for _, x in kids)
        scale = size / s if s > size and s > 0 else 1.0
        for c, x in kids:
            walk(c, x * scale, path_set | set([c]), depth + 1)
    walk(root, tree[root]['stats'][3], set([root]), 0)
    return roots


def check_gprof2dot(path, d):
    """gprof2dot -f pstats (PstatsParser.parse, Profile.validate/ratio),
    reproduced: functions by key, caller functions made on first sight,
    then ratio() asserts every function got TIME and TOTAL_TIME."""
    import pstats
    st = pstats.Stats(path, stream=StringIO())
    tol = 2.0 ** -23
    warnings = []

    def ratio(num, den):
        try:
            r = float(num) / float(den)
        except ZeroDivisionError:
            return 1.0
        if r < -tol or r > 1.0 + tol:
            warnings.append('ratio %r/%r' % (num, den))
        return min(max(r, 0.0), 1.0)

    funcs = {}

    def function(key):
        if key not in funcs:
            filename, line, name = key
            module = os.path.basename(os.path.splitext(filename)[0])
            funcs[key] = {'name': '%s:%d:%s' % (module, line, name), 'calls': {}}
        return funcs[key]

    prof_time, prof_total = 0.0, st.total_tt
    for fn, (cc, nc, tt, ct, callers) in st.stats.items():
        callee = function(fn)
        callee['called'], callee['total'], callee['time'] = nc, ct, tt
        prof_time += tt
        prof_total = max(prof_total, ct)
        for cfn, value in callers.items():
            caller = function(cfn)
            if not isinstance(value, tuple) or len(value) % 4:
                fail(path, 'gprof2dot: caller value %r' % (value,))
                continue
            call = {'calls': 0, 'total': 0.0}
            for i in range(0, len(value), 4):
                enc, ecc, ett, ect = value[i:i + 4]
                call['calls'] += ecc
                call['total'] += ect
            if fn in caller['calls']:
                warnings.append('overwriting call %r -> %r' % (cfn, fn))
            caller['calls'][fn] = call
    for key, f in funcs.items():
        if 'time' not in f or 'total' not in f:
            fail(path, 'gprof2dot: AssertionError in ratio(): %r has no time' % (key,))
            return
        ratio(f['time'], prof_time)
        ratio(f['total'], prof_total)
        for call in f['calls'].values():
            ratio(call['total'], prof_total)
    for w in warnings:
        fail(path, 'gprof2dot warning: %s' % w)


# ---- 6. known numbers ----

def mixed_expect(threads):
    """key -> (hits, self, {caller: (edge hits, edge leaf hits)})"""
    mod = (u'pipeline.py', 1, u'<module>')
    main = (u'pipeline.py', 30, u'main')
    fwd = (u'model.py', 10, u'Model.forward')
    relu = (u'model.py', 4, u'relu')
    ev = (u'~', 0, u'<_PyEval_EvalFrameDefault>')
    blur = (u'~', 0, u'<cv::GaussianBlur(cv::_InputArray const&, cv::_OutputArray const&)>')
    row = (u'~', 0, u'<cv::hlineSmooth>')
    rd = (u'~', 0, u'<read>')
    ks = (u'~', 0, u'<ksys_read [kernel]>')
    st = (u'~', 0, u'<start_thread>')
    gemm = (u'~', 0, u'<dgemm_kernel_SKYLAKEX>')
    child = (u'multiprocessing/pool.py', 114, u'worker_main')
    e = {
        mod: (850, 0, {}),
        main: (850, 0, {mod: (850, 0)}),
        fwd: (800, 0, {main: (800, 0)}),
        relu: (100, 100, {fwd: (100, 100)}),
        ev: (700, 0, {fwd: (700, 0)}),
        blur: (700, 0, {ev: (700, 0)}),
        row: (700, 700, {blur: (700, 700)}),
        rd: (50, 0, {main: (50, 0)}),
        ks: (50, 50, {rd: (50, 50)}),
        st: (100, 0, {}),
        gemm: (100, 100, {st: (100, 100)}),
        child: (50, 50, {}),
    }
    if threads:
        allk = (u'~', 0, u'<all threads>')
        t1 = (u'~', 0, u'<thread python3 (4242)>')
        t2 = (u'~', 0, u'<thread blas-worker (4250)>')
        t3 = (u'~', 0, u'<thread python3 (4300)>')
        e[allk] = (1000, 0, {})
        e[t1] = (850, 0, {allk: (850, 0)})
        e[t2] = (100, 0, {allk: (100, 0)})
        e[t3] = (50, 0, {allk: (50, 0)})
        e[mod] = (850, 0, {t1: (850, 0)})
        e[st] = (100, 0, {t2: (100, 0)})
        e[child] = (50, 50, {t3: (50, 50)})
    return e


def recursive_expect(depth, count):
    main = (u'rec.py', 18, u'main')
    rec = (u'rec.py', 7, u'rec')
    leaf = (u'rec.py', 2, u'leaf')
    half = count // 2 + 1
    total = depth * (count + half)
    return {
        main: (total, 0, {}),
        # rec is on every stack once per sample, however deep: ct = total,
        # not the sum over depths
        rec: (total, depth * half, {main: (total, half),
                                    rec: ((depth - 1) * (count + half), (depth - 1) * half)}),
        leaf: (depth * count, depth * count, {rec: (depth * count, depth * count)}),
    }


def check_expected(path, d, expect, dt, printed):
    if expect in ('mixed', 'mixed-threads'):
        want = mixed_expect(expect == 'mixed-threads')
    elif expect.startswith('recursive:'):
        _, depth, count = expect.split(':')
        want = recursive_expect(int(depth), int(count))
    elif expect == 'empty':
        want = {(u'~', 0, u'<no samples>'): (0, 0, {})}
    else:
        want = None
    if want is not None:
        if set(d) != set(want):
            fail(path, 'keys differ: extra %r, missing %r'
                 % (sorted(set(d) - set(want)), sorted(set(want) - set(d))))
        for k, (hits, self_, callers) in want.items():
            if k not in d:
                continue
            cc, nc, tt, ct, got = d[k]
            if (cc, nc) != (hits, hits) or not close(ct, hits * dt, 1) \
                    or not close(tt, self_ * dt, 1):
                fail(path, '%r: got (%r, %r, %r, %r), expected %d hits, %d self'
                     % (k, cc, nc, tt, ct, hits, self_))
            if set(got) != set(callers):
                fail(path, '%r: callers %r, expected %r' % (k, sorted(got), sorted(callers)))
                continue
            for ck, (eh, el) in callers.items():
                enc, ecc, ett, ect = got[ck]
                if (enc, ecc) != (eh, eh) or not close(ect, eh * dt, 1) \
                        or not close(ett, el * dt, 1):
                    fail(path, '%r -> %r: got %r, expected %d hits, %d leaf'
                         % (ck, k, got[ck], eh, el))
    if expect.startswith('mixed'):
        for needle in (u'Model.forward', u'{cv::GaussianBlur(', u'{ksys_read [kernel]}'):
            if needle not in printed:
                fail(path, 'pstats output lacks %r' % needle)
    if expect.startswith('hostile'):
        names = set(k[2] for k in d)
        for want_name in (u'<nonascii_\u51fd\u6570_\xfcn\xef_\U0001f600>', u'bad\ufffd\ufffdutf8',
                          u'ctrl   ', u'<new line>', u'[unknown]'):
            if want_name not in names:
                fail(path, 'hostile: no key named %r' % want_name)


def main(argv):
    if len(argv) < 3 or argv[0] != '--interval':
        print(__doc__)
        return 2
    dt = float(argv[1])
    for spec in argv[2:]:
        path, expect, total = spec.rsplit(',', 2)
        total = int(total)
        before = len(failures)
        check_bytes(path)
        d = check_shape(path)
        if d is None:
            continue
        try:
            printed = check_pstats(path, total * dt)
        except Exception as e:  # any exception from pstats is a failure
            fail(path, 'pstats raised %s: %s' % (type(e).__name__, e))
            printed = u''
        check_invariants(path, d, total, dt)
        try:
            roots = check_snakeviz(path, d)
            if roots is not None and expect.endswith('-threads') and total:
                if roots != [(u'~', 0, u'<all threads>')]:
                    fail(path, 'snakeviz: roots %r, expected one <all threads>' % (roots,))
            check_gprof2dot(path, d)
        except Exception as e:
            fail(path, 'consumer check raised %s: %s' % (type(e).__name__, e))
        check_expected(path, d, expect, dt, printed)
        print('%-4s %s (%s, %d keys)' % ('ok' if len(failures) == before else 'FAIL',
                                        os.path.basename(path), expect, len(d)))
    for f in failures:
        print('FAIL ' + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
