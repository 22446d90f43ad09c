/* Walking one thread's frame chain, innermost first, through the per-read
 * snapshot: PyFrameObject chains (2.7-3.10) and _PyInterpreterFrame chains
 * (3.11-3.15, skipping the interpreter's own shims and incomplete frames), with the GIL
 * check, eval-activation marks, depth/cycle limits and the optional verify. */
#include <string.h>

#include "copier_record.h"
#include "py_read.h"

#define OWNED_BY_GENERATOR 1
#define STATUS_HOLDS_GIL_BIT 5   /* 3.13 _status.holds_gil */

/* The code object a _PyInterpreterFrame runs: 3.14+ keep it as a tagged
 * _PyStackRef whose low bits say how it is referenced. */
static uint64_t frame_code(const struct py_offsets *o, const uint8_t *b)
{
	uint64_t v = rd64(b, o->if_code);
	return o->stackref_tag_bits > 0 ? v & ~(uint64_t)o->stackref_tag_bits : v;
}

/* <= 3.10 with the copier: where in a frame's copy it puts a method's
 * first argument (copier_record.h): three words after the code object pointer, if
 * no word ember reads is among them; 0: nowhere. */
void py_frames_init(struct ember_python *py)
{
	const struct py_offsets *o = &py->rt.off;
	py->fr->mark_off = 0;
	if (o->fo_localsplus <= 0 || o->fo_code < 0 || o->fo_code % 8)
		return;
	int32_t at = o->fo_code + 8, used[] = { o->ob_type, o->fo_back, o->fo_code, o->fo_lasti };
	for (size_t i = 0; i < sizeof used / sizeof used[0]; i++)
		if (used[i] < 0 || (used[i] + 8 > at && used[i] < at + 24))
			return;
	py->fr->mark_off = (uint32_t)at + 24 <= py->rt.fr_len ? (uint32_t)at : 0;
}

void py_frames_on_method(struct ember_python *py, void (*fn)(struct ember_python *py, uint64_t code_addr))
{
	py->fr->on_method = fn;
}

void py_frames_reset(struct ember_python *py)
{
	py->fr->naddrs = 0;
}

static void check_gil(struct ember_python *py, uint64_t tstate, uint64_t interp, const uint8_t *ts,
		      const struct ember_copier_record *rec, uint32_t *flags)
{
	const struct py_offsets *o = &py->rt.off;
	if (o->ts_holds_gil >= 0) {         /* 3.14+: an int of its own */
		*flags |= EMBER_PY_GIL_KNOWN;
		if (rd32(ts, o->ts_holds_gil) != 0)
			*flags |= EMBER_PY_HOLDS_GIL;
		return;
	}
	if (py->rt.major == 3 && py->rt.minor == 13) {
		*flags |= EMBER_PY_GIL_KNOWN;
		if ((rd32(ts, o->ts_status) >> STATUS_HOLDS_GIL_BIT) & 1)
			*flags |= EMBER_PY_HOLDS_GIL;
		return;
	}
	if (rec && (rec->flags & EMBER_COPIER_GIL_KNOWN)) {   /* read by the copier at the sample */
		*flags |= EMBER_PY_GIL_KNOWN;
		if (rec->flags & EMBER_COPIER_HOLDS_GIL)
			*flags |= EMBER_PY_HOLDS_GIL;
		return;
	}
	if (py->rt.gil_tstate_addr) {       /* 2.7-3.11: the current tstate pointer */
		const uint8_t *p = snap_get(py, py->rt.gil_tstate_addr, 8);
		if (p) {
			*flags |= EMBER_PY_GIL_KNOWN;
			if (rd64(p, 0) == tstate)
				*flags |= EMBER_PY_HOLDS_GIL;
		}
		return;
	}
	if (o->is_ceval_gil >= 0) {         /* 3.12: interp->ceval.gil -> {last_holder, locked} */
		const uint8_t *ip = snap_get(py, interp + o->is_ceval_gil, 8);
		uint64_t g = ip ? rd64(ip, 0) : 0;
		if (!rm_ptr_ok(g, 8))
			return;
		const uint8_t *gp = snap_get(py, g, (uint32_t)o->gil_locked + 4);
		if (gp) {
			*flags |= EMBER_PY_GIL_KNOWN;
			if (rd32(gp, o->gil_locked) == 1 && rd64(gp, o->gil_last_holder) == tstate)
				*flags |= EMBER_PY_HOLDS_GIL;
		}
	}
}

/* Returns a code id, or 0 when the pointer is not (or no longer) a code object. */
static uint32_t code_at(struct ember_python *py, uint64_t code)
{
	if (!rm_ptr_ok(code, 8))
		return 0;
	if (py->opts.code_recheck_ms) {
		uint32_t id = py_code_recent(py, code);
		if (id)
			return id;
	}
	/* Within one read an address always gives the same bytes (its
	 * snapshot entry): a code object checked a frame ago needs no check. */
	struct py_frames *fr = py->fr;
	if (fr->memo_id && code == fr->memo_code)
		return fr->memo_id;
	struct snap_ent *e;
	uint32_t co_len = py->rt.co_len;
	const uint8_t *hdr = snap_get_ent(py, code, co_len, &e);
	if (!hdr)
		return 0;
	/* The name's hash: after the header in a record (copier_record.h), else
	 * read with the snapshot. */
	uint64_t name_hash = e && e->copied && e->len >= co_len + 8 ? rd64(hdr, (int32_t)co_len)
								      : py_code_name_hash(py, hdr);
	uint32_t id = py_code_get(py, code, hdr, name_hash);
	if (e) {   /* not a scratch read */
		fr->memo_code = code;
		fr->memo_id = id;
	}
	return id;
}

/* A method's first argument and its type as the copier read them at the
 * sample, from the marked words of its frame's copy b (copier_record.h); else the
 * copier is asked for them from the code object's next sample on. */
static bool copied_first_arg(struct ember_python *py, uint64_t f, const uint8_t *b, uint32_t id, uint64_t *arg,
			     uint64_t *type)
{
	uint32_t at = py->fr->mark_off;
	if (!at || !py->fr->on_method)
		return false;
	if (rd64(b, (int32_t)at) == (f ^ EMBER_COPIER_ARG_MARK)) {
		*arg = rd64(b, (int32_t)at + 8);
		*type = rd64(b, (int32_t)at + 16);
		return true;
	}
	py->fr->on_method(py, py_code(py, id)->addr);
	return false;
}

/* <= 3.10 has no co_qualname: a method's class is guessed from its first
 * argument when it is named self (its type) or cls (itself), as py-spy does.
 * With frames copied at the sample (b, from_rec) the copier also took the
 * argument and its type: the call may be over, its arguments cleared and
 * self freed when ember reads the record.  Otherwise the argument, self's
 * type and the type's name cost small reads, batched into the next read's
 * prefetch. */
static uint32_t class_variant(struct ember_python *py, uint64_t f, const uint8_t *b, bool from_rec, uint32_t id)
{
	const struct py_offsets *o = &py->rt.off;
	const uint8_t *p;
	uint64_t arg = 0, type = 0;
	bool copied = from_rec && copied_first_arg(py, f, b, id, &arg, &type);
	if (!copied) {
		p = snap_get(py, f + (uint64_t)o->fo_localsplus, 8);
		arg = p ? rd64(p, 0) : 0;
	}
	if (!rm_ptr_ok(arg, 8))
		return id;
	if (py_code(py, id)->first_arg == PY_ARG_SELF && !copied) {
		p = snap_get(py, arg + (uint64_t)o->ob_type, 8);
		type = p ? rd64(p, 0) : 0;
	} else if (py_code(py, id)->first_arg != PY_ARG_SELF) {
		type = arg;   /* cls */
	}
	if (!rm_ptr_ok(type, 8))
		return id;
	p = snap_get(py, type + (uint64_t)o->type_name, 8);
	uint64_t tp_name = p ? rd64(p, 0) : 0;
	/* (Unreadable: the target has exited before the last drain.  The
	 * class named at this address before then.) */
	return tp_name ? py_code_variant(py, id, type, tp_name) : py_code_variant_known(py, id, type);
}

uint32_t py_frame_object_code(struct ember_python *py, uint64_t f, uint64_t *back, uint32_t *line)
{
	const struct py_offsets *o = &py->rt.off;
	uint8_t b[512], h[512];
	if (!rm_ptr_ok(f, 8) || py->rt.fr_len > sizeof b || py->rt.co_len > sizeof h ||
	    !rm_read(py->pid, f, b, py->rt.fr_len, NULL, &py->syscalls) || rd64(b, o->ob_type) != py->rt.t_frame)
		return 0;
	uint64_t code = rd64(b, o->fo_code), name_hash = 0;
	if (!rm_ptr_ok(code, 8) || !rm_read(py->pid, code, h, py->rt.co_len, NULL, &py->syscalls))
		return 0;
	uint64_t name = rd64(h, o->co_name);
	if (!py->rt.str_hash_off || !rm_ptr_ok(name, 8) ||
	    !rm_read(py->pid, name + py->rt.str_hash_off, &name_hash, 8, NULL, &py->syscalls))
		name_hash = 0;
	uint32_t id = py_code_get(py, code, h, name_hash);
	if (!id)
		return 0;
	int64_t lasti = rd32(b, o->fo_lasti);
	if (py->rt.minor == 10 && py->rt.major == 3)
		lasti *= 2;
	int l = py_code_line(py, id, lasti);
	*line = l < 0 ? 0 : (uint32_t)l;
	*back = rd64(b, o->fo_back);
	return id;
}

bool py_frame_starts_activation(struct ember_python *py, uint64_t f, uint32_t id)
{
	const struct py_offsets *o = &py->rt.off;
	uint8_t b[512];
	if (o->ts_frame >= 0 || !rm_ptr_ok(f, 8) || py->rt.fr_len > sizeof b ||
	    !rm_read(py->pid, f, b, py->rt.fr_len, NULL, &py->syscalls))
		return false;
	if (frame_code(o, b) != py_code(py, id)->addr)
		return false;
	if (o->if_is_entry >= 0)
		return b[o->if_is_entry] != 0;                 /* 3.11 */
	return b[o->if_owner] == OWNED_BY_GENERATOR;       /* 3.12+: resumed from C */
}

/* The frames a walk keeps, innermost first: the first max of them; past
 * that, the innermost max/2 stay and the rest of out is a ring of the
 * outermost frames met so far, so that a stack deeper than max keeps its
 * root side. */
struct keep {
	struct ember_py_frame *out;
	int max, n;
	int head, pos;             /* ring: out[head..max), pos the next slot to overwrite */
	bool ring;
	uint32_t dropped_starts;   /* activation starts among the frames left out */
};

static void keep_frame(struct ember_python *py, struct keep *k, struct ember_py_frame f)
{
	if (k->n < k->max) {
		k->out[k->n++] = f;
		return;
	}
	if (!k->ring) {
		if (k->max < 2)
			return;
		k->ring = true;
		k->head = k->pos = k->max / 2;
		snap_deep(py);   /* past any record: the rest is read now */
	}
	k->dropped_starts += k->out[k->pos].activation_start;
	k->out[k->pos] = f;
	if (++k->pos == k->max)
		k->pos = k->head;
}

/* The frame kept last (the outermost so far), or NULL. */
static struct ember_py_frame *keep_last(struct keep *k)
{
	if (!k->n)
		return NULL;
	return k->ring ? &k->out[k->pos == k->head ? k->max - 1 : k->pos - 1] : &k->out[k->n - 1];
}

static void reverse(struct ember_py_frame *a, int lo, int hi)
{
	for (; lo < hi; lo++, hi--) {
		struct ember_py_frame t = a[lo];
		a[lo] = a[hi];
		a[hi] = t;
	}
}

/* The walk is over: the ring put in order (innermost first) and the cut
 * marked on the last frame before it.  Returns the frames kept. */
static int keep_end(struct ember_python *py, struct keep *k, uint32_t *flags)
{
	if (!k->ring)
		return k->n;
	reverse(k->out, k->head, k->pos - 1);
	reverse(k->out, k->pos, k->max - 1);
	reverse(k->out, k->head, k->max - 1);
	/* Where the middle went: in the activation of the frames on both
	 * sides (no activation started in it), or in activations of its own,
	 * the one the innermost kept side ends in not counted. */
	struct ember_py_frame *c = &k->out[k->head - 1];
	uint32_t whole = k->dropped_starts - (!c->activation_start && k->dropped_starts ? 1 : 0);
	c->cut = true;
	c->cut_spans = !k->dropped_starts && !c->activation_start;
	c->cut_runs = (uint16_t)(whole > UINT16_MAX ? UINT16_MAX : whole);
	*flags |= EMBER_PY_CUT;
	if (py->fr->naddrs > (uint32_t)k->head)
		py->fr->naddrs = (uint32_t)k->head;
	return k->max;
}

static int walk_frameobjects(struct ember_python *py, uint64_t f, struct ember_py_frame *out, int max,
			     uint32_t *flags)
{
	const struct py_offsets *o = &py->rt.off;
	struct keep k = { .out = out, .max = max };
	uint32_t depth = 0;
	while (f) {
		if (depth++ >= py->opts.max_depth) {
			*flags |= EMBER_PY_TRUNCATED;
			break;
		}
		struct snap_ent *e = NULL;
		const uint8_t *b = rm_ptr_ok(f, 8) ? snap_get_ent(py, f, py->rt.fr_len, &e) : NULL;
		if (!b || rd64(b, o->ob_type) != py->rt.t_frame) {
			*flags |= EMBER_PY_UNREADABLE;
			break;
		}
		if (e) {
			if (e->visited) {
				*flags |= EMBER_PY_TORN;   /* cycle */
				break;
			}
			e->visited = true;
		}
		/* What the walk needs of the frame, before other objects are
		 * looked up: past the table, their reads may reuse b's window. */
		uint64_t back = rd64(b, o->fo_back);
		int64_t lasti = rd32(b, o->fo_lasti);
		uint32_t id = code_at(py, rd64(b, o->fo_code));
		if (!id) {
			*flags |= EMBER_PY_UNREADABLE;
			break;
		}
		if (py->rt.minor == 10 && py->rt.major == 3)
			lasti *= 2;
		int line = py_code_line(py, id, lasti);
		if (line == -2) {
			*flags |= EMBER_PY_TORN;
			line = 0;
		}
		if (py_code(py, id)->first_arg)
			id = class_variant(py, f, b, e && e->copied, id);
		if ((size_t)k.n < PY_FRAME_ADDRS && !k.ring) {
			py->fr->addrs[k.n] = f;
			py->fr->naddrs = (uint32_t)k.n + 1;
		}
		keep_frame(py, &k, (struct ember_py_frame){ .code = id, .line = (uint32_t)line, .activation_start = true });
		f = back;
		/* A thread's outermost frame is never a generator's: a chain ending
		 * at one was read while the generator yielded (its f_back is
		 * cleared just after the thread's current frame moved back). */
		if (!f && py_code(py, py_code_base(py, id))->generator)
			*flags |= EMBER_PY_TORN;
	}
	return keep_end(py, &k, flags);
}

static int walk_interpframes(struct ember_python *py, uint64_t f, struct ember_py_frame *out, int max,
			     uint32_t *flags)
{
	const struct py_offsets *o = &py->rt.off;
	struct keep k = { .out = out, .max = max };
	uint32_t depth = 0;
	bool v311 = o->if_is_entry >= 0;
	uint8_t last_owner = 0;
	while (f) {
		if (depth++ >= py->opts.max_depth) {
			*flags |= EMBER_PY_TRUNCATED;
			break;
		}
		struct snap_ent *e = NULL;
		const uint8_t *b = rm_ptr_ok(f, 8) ? snap_get_ent(py, f, py->rt.fr_len, &e) : NULL;
		if (!b) {
			*flags |= EMBER_PY_UNREADABLE;
			break;
		}
		if (e) {
			if (e->visited) {
				*flags |= EMBER_PY_TORN;
				break;
			}
			e->visited = true;
		}
		uint8_t owner = b[o->if_owner];
		uint64_t prev = rd64(b, o->if_previous);
		last_owner = owner;
		if (owner > o->if_owner_last) {
			*flags |= EMBER_PY_UNREADABLE;
			break;
		}
		if (o->if_owner_shim >= 0 && owner >= o->if_owner_shim) {
			if (k.n)
				keep_last(&k)->activation_start = true;
			f = prev;
			continue;
		}
		uint64_t code = frame_code(o, b), instr = rd64(b, o->if_instr);
		bool entry = v311 && b[o->if_is_entry] != 0;
		uint32_t id = code_at(py, code);
		if (!id) {
			if (py->rt.minor >= 13) {   /* f_executable may be None or non-code (3.13+): skip */
				f = prev;
				continue;
			}
			*flags |= EMBER_PY_UNREADABLE;
			break;
		}
		const struct py_code_entry *c = py_code(py, id);
		int64_t ip = (int64_t)(instr - (code + o->co_code_adaptive));
		int64_t idx = ip >> 1;   /* code units; -1 = not started */
		if (owner != OWNED_BY_GENERATOR && idx < c->firsttraceable) {
			f = prev;        /* incomplete frame (3.13 _Py_InitCleanup, setup) */
			continue;
		}
		int line;
		if (idx < -1 || idx >= c->k_size) {
			*flags |= EMBER_PY_TORN;
			line = 0;
		} else {
			line = py_code_line(py, id, idx * 2);
			if (line < 0)
				line = 0;
		}
		if ((size_t)k.n < PY_FRAME_ADDRS && !k.ring) {
			py->fr->addrs[k.n] = f;
			py->fr->naddrs = (uint32_t)k.n + 1;
		}
		keep_frame(py, &k, (struct ember_py_frame){
			.code = id, .line = (uint32_t)line,
			.activation_start = entry,
		});
		f = prev;
	}
	/* A thread's outermost frame is never a generator's: a chain ending at
	 * one was read while the generator yielded (its `previous` is cleared
	 * just after the thread's current frame moved back to its caller). */
	if (!f && k.n && last_owner == OWNED_BY_GENERATOR)
		*flags |= EMBER_PY_TORN;
	if (!f && k.n && !(*flags & (EMBER_PY_UNREADABLE | EMBER_PY_TORN)))
		keep_last(&k)->activation_start = true;   /* the bottom frame starts an activation */
	return keep_end(py, &k, flags);
}

static uint64_t top_frame(struct ember_python *py, const uint8_t *ts, bool *ok)
{
	const struct py_offsets *o = &py->rt.off;
	*ok = true;
	if (o->ts_frame >= 0)
		return rd64(ts, o->ts_frame);
	if (o->ts_current_frame >= 0)
		return rd64(ts, o->ts_current_frame);
	uint64_t cf = rd64(ts, o->ts_cframe);
	if (!cf)
		return 0;
	const uint8_t *c = rm_ptr_ok(cf, 8) ? snap_get(py, cf, (uint32_t)o->cf_current_frame + 8) : NULL;
	if (!c) {
		*ok = false;
		return 0;
	}
	return rd64(c, o->cf_current_frame);
}

/* Did a call or return happen while we read?  Re-read the top-frame
 * pointer (3.11/3.12: through the same _PyCFrame): false when it moved. */
static bool top_unchanged(struct ember_python *py, uint64_t tstate, const uint8_t *ts, uint64_t top)
{
	const struct py_offsets *o = &py->rt.off;
	uint64_t now = 0, cf = 0, cf_now = 0;
	struct rm_req r[2];
	if (o->ts_frame >= 0 || o->ts_current_frame >= 0) {
		r[0] = (struct rm_req){ tstate + (o->ts_frame >= 0 ? o->ts_frame : o->ts_current_frame), &now, 8, false };
		return snap_read_now(py, r, 1) && now == top;
	}
	cf = rd64(ts, o->ts_cframe);
	r[0] = (struct rm_req){ tstate + o->ts_cframe, &cf_now, 8, false };
	r[1] = (struct rm_req){ cf + o->cf_current_frame, &now, 8, false };
	return snap_read_now(py, r, 2) && cf_now == cf && now == top;
}

int py_walk(struct ember_python *py, uint64_t tstate, uint64_t interp, const uint8_t *ts,
	    const struct ember_copier_record *rec, struct ember_py_frame *out, int max, uint32_t *flags)
{
	bool ok = true;
	int n;

	py->fr->memo_id = 0;
	if (!py->opts.no_gil_check)
		check_gil(py, tstate, interp, ts, rec, flags);
	uint64_t top = rec ? rec->top : top_frame(py, ts, &ok);
	if (!ok) {
		*flags |= EMBER_PY_UNREADABLE;
		return 0;
	}
	if (max < 0)
		max = 0;
	if (py->rt.off.ts_frame >= 0)
		n = walk_frameobjects(py, top, out, max, flags);
	else
		n = walk_interpframes(py, top, out, max, flags);
	/* Not needed when the whole walk came from the one batched prefetch:
	 * that is a snapshot taken by a single system call, not several reads
	 * that a call or return could fall between; nor for a copy made at the
	 * sample, which is of one instant. */
	if (py->opts.verify && top && !snap_prefetch_only(py) && !rec && !top_unchanged(py, tstate, ts, top))
		*flags |= EMBER_PY_TORN;
	return n;
}

uint32_t ember_python_runs(const struct ember_py_frame *f, uint32_t n, uint32_t *lo, uint32_t *hi, uint32_t max)
{
	uint32_t nr = 0, start = 0;
	for (uint32_t i = 0; i < n && nr < max; i++)
		if (f[i].activation_start || f[i].cut || i == n - 1) {
			lo[nr] = start;
			hi[nr] = i;
			nr++;
			start = i + 1;
		}
	/* innermost-first -> root-first */
	for (uint32_t a = 0, b = nr ? nr - 1 : 0; a < b; a++, b--) {
		uint32_t t = lo[a];
		lo[a] = lo[b], lo[b] = t;
		t = hi[a];
		hi[a] = hi[b], hi[b] = t;
	}
	return nr;
}
