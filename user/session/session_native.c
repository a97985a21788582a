// SPDX-License-Identifier: GPL-2.0-only
/*
 * --native: a sample's native frames, from the registers and stack bytes BPF copied
 * with it, unwound and named by the parsing worker (native_worker.h), demangled here,
 * and interleaved with its Python frames by where each eval-loop activation
 * sits on the C stack (native_merge.h). What a stack cannot tell is marked, not
 * guessed: a walk that stopped short keeps the outer Python frames without their C
 * callers, with "[native walk cut: WHY]" where its frames stop, and one whose
 * activations disagree with the Python runs keeps the Python frames under "[native
 * unmatched]".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "native/native_demangle.h"
#include "native/native_fp.h"
#include "native/native_merge.h"
#include "native/native_worker.h"
#include "session/session_frame.h"
#include "session/session_priv.h"
#include "base/vec.h"

struct session_native {
	struct native_worker *worker;	/* unwinds and names: parses what targets map */
	struct native_demangle demangle;
	struct native_stack walk;
	struct native_worker_name wnames[NATIVE_MAX_FRAMES];
	struct native_merge_frame in[NATIVE_MAX_FRAMES];
	struct agg_frame names[NATIVE_MAX_FRAMES];
	struct native_merge_item items[NATIVE_MAX_FRAMES + DECODE_MAX_DEPTH];
	uint32_t unmatched_name;
	char *pair;		/* "FUNCTION\0SOURCE" being named (name_with_source) */
	size_t pair_cap;
	uint64_t walks, frames, failed, ns;
	uint64_t marked; /* stacks given a "[native walk cut: ...]" */
	uint64_t fp_walks, fp_dwarf_top, fp_resumed;
	uint64_t ends[NATIVE_END_MAX];
	uint64_t results[NATIVE_MERGE_UNMATCHED + 1];
};

_Static_assert(sizeof(((struct run_stats *)0)->native_ends) ==
		       sizeof(((struct session_native *)0)->ends) &&
	       sizeof(((struct run_stats *)0)->native_merges) ==
		       sizeof(((struct session_native *)0)->results),
	       "run_stats has a counter for each end and result");

int session_native__new(struct session *s)
{
	struct session_native *n;
	int64_t id;
	int err;

	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	err = native_worker__new(&n->worker);
	if (err) {
		pr_warn("--native: the parsing worker cannot be started: %s\n", strerror(-err));
		goto fail;
	}
	id = strtab__intern(s->strs, "[native unmatched]", 18);
	if (id < 0) {
		err = (int)id;
		goto fail;
	}
	n->unmatched_name = (uint32_t)id;
	s->native = n;
	return 0;
fail:
	native_worker__free(n->worker);
	free(n);
	return err;
}

void session_native__free(struct session *s)
{
	struct session_native *n = s->native;

	if (!n)
		return;
	native_worker__free(n->worker);
	native_demangle__close(&n->demangle);
	free(n->pair);
	free(n);
	s->native = NULL;
}

/*
 * How @t's native frames are found: --native-unwind fp or dwarf as asked; auto walks
 * frame pointers only where the object holding the interpreter was built with them
 * (CPython 3.15 as Debian builds it), since elsewhere a walk would end at the first
 * frame of the interpreter's own (native_fp.c), and copies the stack otherwise. An
 * interpreter that cannot be looked at gets the copy.
 */
static int choose_unwind(struct session *s, struct target *t)
{
	struct native_fpcheck fc = { 0 };
	int err;

	t->native_fp = s->opts.native_unwind == SESSION_UNWIND_FP;
	if (s->opts.native_unwind != SESSION_UNWIND_AUTO &&
	    s->opts.native_unwind != SESSION_UNWIND_DEFAULT)
		return 0;
	err = native_worker__fpcheck(t->native, t->interp.path, &fc);
	if (err == -ENOMEM)
		return err;
	if (err)
		pr_debug("pid %d: %s: frame pointers unknown (%s): stack copies\n",
			 (int)t->interp.pid, t->interp.path, strerror(-err));
	t->native_fp = !err && fc.frame_pointers;
	pr_info("pid %d: native frames by %s\n", (int)t->interp.pid,
		t->native_fp ? "frame-pointer walks" : "stack copies");
	return 0;
}

int session_native__target(struct session *s, struct target *t)
{
	int err;

	if (!s->native || t->native)
		return 0;
	err = native_worker__proc(s->native->worker, t->interp.pid, &t->native);
	if (!err)
		err = choose_unwind(s, t);
	return err;
}

void session_native__refresh(struct session *s)
{
	uint64_t now = clock__mono_ns();

	for (size_t i = 0; s->native && i < s->targets.n; i++)
		if (s->targets.v[i]->native)
			native_worker__refresh(s->targets.v[i]->native, now);
}

void session_native__remap(struct session *s, struct strtab_remap *map)
{
	if (s->native)
		strtab_remap__id(map, &s->native->unmatched_name);
}

static int intern(struct session *s, const char *text, uint32_t *id)
{
	int64_t r = strtab__intern(s->strs, text, strlen(text));

	if (r < 0)
		return (int)r;
	*id = (uint32_t)r;
	return 0;
}

/* A build-id as lower-case hex, "" if it has none. */
static void build_id_hex(const uint8_t *id, size_t len, char *buf)
{
	size_t i;

	for (i = 0; i < len; i++)
		snprintf(buf + 2 * i, 3, "%02x", id[i]);
	buf[2 * i] = 0;
}

/*
 * A frame with DWARF line info is named by the pair "FUNCTION\0SOURCE" (one strtab id,
 * strtab__second() reads the source): its line is then a source line, as a Python
 * frame's, and the object stays in file for colours and pprof's mappings. Lines follow
 * the options as Python frames' do: --function-lines gives where the function is
 * declared, --nolineno none.
 */
static int name_with_source(struct session *s, const struct native_symbol *sym,
			    struct agg_frame *a)
{
	struct session_native *n = s->native;
	size_t nf = strlen(sym->function), ns = strlen(sym->source);
	int64_t id;
	int err;

	err = vec__reserve((void **)&n->pair, &n->pair_cap, nf + 1 + ns, 1, 256);
	if (err)
		return err;
	memcpy(n->pair, sym->function, nf + 1);
	memcpy(n->pair + nf + 1, sym->source, ns);
	id = strtab__intern(s->strs, n->pair, nf + 1 + ns);
	if (id < 0)
		return (int)id;
	a->name = (uint32_t)id;
	if (s->opts.nolineno)
		a->line = -1;
	else if (s->opts.function_lines)
		a->line = sym->func_line > 0 ? sym->func_line : -1;
	else
		a->line = sym->line;
	return 0;
}

/*
 * Names walked frame @i: its agg frame in n->names[i], its object for the merge in
 * n->in[i].module, and its object and function start in the aggregate for pprof.
 */
static int name_frame(struct target *t, uint32_t i)
{
	struct session *s = t->session;
	struct session_native *n = s->native;
	const struct native_frame *f = &n->walk.frames[i];
	const struct native_worker_name *nm = &n->wnames[i];
	struct native_symbol sym = nm->sym;
	struct agg_frame *a = &n->names[i];
	char text[512];	/* an object's base name and an address, or a build-id in hex */
	char *demangled = NULL;
	uint32_t path = 0, bid = 0;
	int err;

	/* The worker leaves C++ names mangled: demangling has a process of its own. */
	if (native_demangle__in_place(&n->demangle, &sym.function, &demangled))
		return -ENOMEM;
	*a = (struct agg_frame){ .kind = AGG_NATIVE, .line = -1 };
	err = intern(s, sym.module, &a->file);
	if (err)
		goto cleanup;
	if (sym.function && sym.source) {
		err = name_with_source(s, &sym, a);
	} else if (sym.function) {
		err = intern(s, sym.function, &a->name);
		if (!s->opts.nolineno)
			a->line = s->opts.function_lines ? 0 : (int32_t)(sym.offset & INT32_MAX);
	} else if (sym.func_rel) {
		snprintf(text, sizeof(text), "%s+0x%llx", sym.module,
			 (unsigned long long)sym.func_rel);
		err = intern(s, text, &a->name);
		if (!s->opts.nolineno && sym.rel >= sym.func_rel)
			a->line = s->opts.function_lines ? 0 :
				  (int32_t)((sym.rel - sym.func_rel) & INT32_MAX);
	} else {
		snprintf(text, sizeof(text), "%s+0x%llx", sym.module, (unsigned long long)sym.rel);
		err = intern(s, text, &a->name);
	}
	if (err)
		goto cleanup;
	/* Any id will do for the merge, so long as 0 is "no object". */
	n->in[i] = (struct native_merge_frame){ .sp = f->sp,
						.module = nm->known ? a->file + 1 : 0 };
	if (!nm->path)
		goto cleanup;
	build_id_hex(nm->build_id, nm->build_id_len, text);
	err = intern(s, nm->path, &path);
	if (!err)
		err = intern(s, text, &bid);
	if (!err)
		err = aggregate__native_object(s->agg, t->interp.pid, a->file, path, bid);
	if (err == -EEXIST) {
		err = 0;	/* another object of that base name named first: it stays */
		goto cleanup;
	}
	if (!err && sym.func_rel)
		err = aggregate__native_function(s->agg, t->interp.pid, a->file, a->name,
						 sym.func_rel);
	if (err == -EEXIST)
		err = 0;
cleanup:
	free(demangled);
	return err;
}

/* The snapshot BPF took with @st. */
static int snapshot_of(const struct stack *st, struct native_snapshot *snap)
{
	const struct pbp_native *nv = st->native;

	if (!nv || (!st->native_stack && !st->native_fp))
		return -ENOENT;
	*snap = (struct native_snapshot){
		.tid = st->tid,
		.regs_mask = nv->regs_mask & ((1u << NATIVE_NREGS) - 1),
		.stack = st->native_stack,
		.stack_len = nv->stack_len,
	};
	memcpy(snap->regs, nv->regs, sizeof(snap->regs));
	return 0;
}

/* The runs that hold the stack's own Python frames: with --async only the innermost
 * @keep are, the rest being the event loop's, which the task chain replaces. */
static uint32_t runs_kept(const struct stack *st, uint32_t keep)
{
	uint32_t k = 0;

	while (k < st->nruns && st->runs[k].first < keep)
		k++;
	return k;
}

/*
 * "[native walk cut: WHY]" for a walk that stopped before the frames @in's view shows
 * below it, and in *@at the item it goes above (the items from @at on are the Python
 * frames the walk did not reach); *@at = UINT32_MAX where nothing the view shows is
 * missing. The default view drops what lies below the outermost activation, so a walk
 * that reached it lacks nothing there (3.15's frame-pointer walks end in libc under
 * main()); a cut's Python frames, --native-all and a stack without Python frames show
 * what lies below the walk's last frame.
 */
static int cut_marker(struct target *t, const struct native_merge_in *in, uint32_t nitems,
		      enum native_merge_result result, uint32_t *at, uint32_t *name)
{
	struct session *s = t->session;
	const struct native_stack *w = &s->native->walk;
	uint32_t placed, tail = 0;
	char text[320];
	int python = 0;

	*at = UINT32_MAX;
	for (uint32_t k = 0; k < in->nruns; k++)
		python |= in->runs[k].n > 0;
	if (result != NATIVE_MERGE_CUT && (in->complete || (!in->all && python)))
		return 0;
	if (result == NATIVE_MERGE_CUT) {
		placed = native_merge__placed(in);
		for (uint32_t k = placed; k < in->nruns; k++)
			tail += in->runs[k].n;
	}
	*at = nitems - tail;
	if (w->end == NATIVE_END_OUTERMOST) /* whole, but a run's activation unknown */
		snprintf(text, sizeof(text), "[native walk cut: C callers not placed]");
	else if (w->n && (w->end == NATIVE_END_NO_FP || w->end == NATIVE_END_NO_CFI ||
			  w->end == NATIVE_END_BAD_FRAME))
		snprintf(text, sizeof(text), "[native walk cut: %s in %.256s]",
			 native_end__name(w->end),
			 strtab__get(s->strs, s->native->names[w->n - 1].file));
	else
		snprintf(text, sizeof(text), "[native walk cut: %s]", native_end__name(w->end));
	return intern(s, text, name);
}

/* The worker reads stack copies in the samples ring itself, once it knows where. */
static void give_ring(struct session *s)
{
	const uint8_t *data;
	uint32_t bytes;
	int fd;

	if (s->sampler && !sampler__ring(s->sampler, &fd, &bytes, &data))
		native_worker__ring(s->native->worker, fd, bytes, data);
}

static int walk(struct target *t, const struct stack *st, uint32_t keep, uint32_t *nitems,
		enum native_merge_result *result, uint32_t *cut_at, uint32_t *cut_name)
{
	struct session_native *n = t->session->native;
	struct native_snapshot snap;
	struct native_merge_in in;
	struct native_fp_chain chain;
	int err;

	err = snapshot_of(st, &snap);
	if (err)
		return err;
	/* BPF walked the frame pointers: its records, checked against CFI (native_fp.c). */
	if (st->native_fp)
		chain = (struct native_fp_chain){ .rec = st->native_fp, .n = st->native->nfp,
						  .flags = st->native->flags };
	give_ring(t->session);
	err = native_worker__walk(t->native, &snap, st->native_fp ? &chain : NULL,
				  NATIVE_MAX_FRAMES, clock__mono_ns(), &n->walk, n->wnames);
	if (err)
		return err;
	n->walks++;
	if (st->native_fp) {
		n->fp_walks++;
		n->fp_dwarf_top += !!n->walk.fp_dwarf_top;
		n->fp_resumed += !!n->walk.fp_resumed;
	}
	n->ends[n->walk.end]++;
	n->frames += n->walk.n;
	for (uint32_t i = 0; i < n->walk.n; i++) {
		err = name_frame(t, i);
		if (err)
			return err;
	}
	in = (struct native_merge_in){
		.frames = n->in,
		.nframes = n->walk.n,
		.complete = n->walk.end == NATIVE_END_OUTERMOST,
		.runs = st->runs,
		.nruns = runs_kept(st, keep),
		.all = t->session->opts.native_all,
	};
	err = native_merge__interleave(&in, n->items, (uint32_t)(sizeof(n->items) /
								  sizeof(n->items[0])),
				       nitems, result);
	if (err)
		return err;
	n->results[*result]++;
	if (*result == NATIVE_MERGE_UNMATCHED)
		return 0;
	err = cut_marker(t, &in, *nitems, *result, cut_at, cut_name);
	if (!err)
		n->marked += *cut_at != UINT32_MAX;
	return err;
}

int session_native__frames(struct target *t, const struct stack *st, uint32_t keep,
			   struct agg_frame *out, uint32_t *n)
{
	struct session *s = t->session;
	struct session_native *nat = s->native;
	enum native_merge_result result;
	uint32_t nitems, depth = *n, cut_at = UINT32_MAX, cut_name = 0;
	uint64_t t0;
	int err;

	if (!nat || !t->native || !st->native)
		return -ENOENT;
	/* Wall time: the walk is the worker's CPU, and this thread waits for it. */
	t0 = clock__mono_ns();
	err = walk(t, st, keep, &nitems, &result, &cut_at, &cut_name);
	nat->ns += clock__mono_ns() - t0;
	if (err == -ENOMEM)
		return err;
	if (err) {
		nat->failed++;
		return -ENOENT;
	}
	if (result == NATIVE_MERGE_UNMATCHED) {
		out[depth++] = (struct agg_frame){ .kind = AGG_MARKER,
						   .name = nat->unmatched_name };
		*n = depth;
		return -ENOENT;	/* the caller adds the Python frames alone */
	}
	for (uint32_t i = nitems; i-- > 0;) {
		const struct native_merge_item *it = &nat->items[i];

		if (i + 1 == cut_at)
			out[depth++] = (struct agg_frame){ .kind = AGG_MARKER, .name = cut_name };
		if (it->kind == NATIVE_MERGE_NATIVE)
			out[depth++] = nat->names[it->index];
		else if (it->index < keep)
			out[depth++] = session_frame__python(&s->opts, &st->frames[it->index]);
	}
	if (!cut_at)
		out[depth++] = (struct agg_frame){ .kind = AGG_MARKER, .name = cut_name };
	*n = depth;
	return 0;
}

void session_native__stats(const struct session *s, struct run_stats *st)
{
	const struct session_native *n = s->native;
	struct native_worker_stats w;

	if (!n)
		return;
	native_worker__stats(n->worker, &w);
	st->native_demangle_given_up += n->demangle.given_up;
	st->native_worker_starts += w.starts;
	st->native_worker_timeouts += w.timeouts;
	st->native_worker_deaths += w.deaths;
	st->native_worker_quarantined += w.quarantined;
	st->native_worker_refused += w.refused;
	st->native_stacks_from_ring += w.ring_walks;
	st->native_walks += n->walks;
	st->native_frames += n->frames;
	st->native_failed += n->failed;
	st->native_ns += n->ns;
	st->native_fp_walks += n->fp_walks;
	st->native_fp_dwarf_top += n->fp_dwarf_top;
	st->native_fp_resumed += n->fp_resumed;
	st->native_cut_marked += n->marked;
	for (size_t i = 0; i < sizeof(n->ends) / sizeof(n->ends[0]); i++)
		st->native_ends[i] += n->ends[i];
	for (size_t i = 0; i < sizeof(n->results) / sizeof(n->results[0]); i++)
		st->native_merges[i] += n->results[i];
}
