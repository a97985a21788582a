// SPDX-License-Identifier: GPL-2.0-only
/*
 * --native-unwind fp: native frames from BPF's frame-pointer walk, the way `perf
 * --call-graph fp` would take them, but without believing a record that code without
 * frame pointers left behind.
 *
 * BPF follows RBP's chain blindly: each record is (saved RBP, return address) at the
 * current RBP. That is exact where every function on the way keeps a frame pointer
 * (CPython 3.15 as Debian builds it, PEP 831, and extensions built with its sysconfig
 * flags) and wrong elsewhere in two ways: a function that uses RBP as a register
 * leaves garbage, and one that leaves RBP alone drops itself, and its caller's record
 * names its caller's caller. Debian's glibc and most wheels have no frame pointers.
 *
 * The rules, so that a stack is never given in a wrong order:
 *
 * 1. A record is followed only from a frame whose function keeps a frame pointer at
 *    its PC, as that object's own CFI says: CFA = RBP + 16 and RBP saved at CFA - 16.
 *    Then RBP is that frame's base, the record at it is exactly what DWARF would
 *    unwind, and the caller's stack pointer is the CFA, RBP + 16 (native_frame.sp, as
 *    native_unwind gives it, which the merge with the Python runs needs).
 * 2. The first frame whose PC has CFI that says otherwise ends the records' part,
 *    itself kept: its PC came from a trusted record, but its caller cannot be known
 *    without its stack bytes (NATIVE_END_NO_FP, unless rule 4 goes on). A PC in no
 *    object, or one without CFI there, ends the walk too (NATIVE_END_NO_CFI). The walk
 *    is then cut, never guessed: the merge places the Python runs it did not reach
 *    after the native frames (NATIVE_MERGE_CUT), in their own order, and the session
 *    marks the place.
 * 3. The top frames: when the code at RIP keeps no frame pointer (a leaf in libc, a
 *    prologue or epilogue, the vDSO), libdwfl unwinds them with DWARF over the small
 *    stack copy that came with the records, until a frame of code that keeps a frame
 *    pointer whose RBP, as CFI restored it, is the address of one of the records: the
 *    records from there on are that frame's chain. A copy exhausted before that ends
 *    the walk as a copy walk would (NATIVE_END_STACK_COPY).
 * 4. Where the copy holds the stack of the frame rule 2 stopped at (a copy longer than
 *    the default, or a shallow stack), DWARF goes on from that frame as in rule 3, back
 *    to the records (resume()).
 *
 * So on 3.15 a walk normally runs from the sampled PC down to the frame below main()
 * or the thread's start function (__libc_start_call_main, start_thread: libc, no frame
 * pointers), which is as far as the merge needs: every eval-loop activation lies
 * above it. Through ctypes into libc's qsort and back, it stops at the first libffi or
 * libc frame, and the Python frames that called qsort follow as a cut: the 1 KiB copy
 * ends below libffi's frame (about 1.2 KiB above RSP), and the frames up to the next
 * frame pointer hold qsort_r's 1 KiB buffer; --native-stack 16K gets through.
 *
 * Cost: the CFI lookup behind rule 1 runs libdw's CFI interpreter (most of a copy
 * walk's time); its answer is cached per PC, direct-mapped, checked against the
 * unwinder's generation (its modules).
 */
#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "native/native_fp.h"

enum fp_kind {
	FP_NO_CFI, /* no object, or no CFI, at the PC */
	FP_FRAMED, /* CFA = RBP + 16, RBP at CFA - 16, RA at CFA - 8 */
	FP_UNFRAMED,
};

struct fp_slot {
	uint64_t pc;
	uint32_t gen; /* the unwinder's generation + 1; 0: empty */
	uint32_t kind;
};

struct native_fp {
	struct fp_slot slots[NATIVE_FP_CACHE_SLOTS];
	struct native_fp_stats st;
	struct native_stack cont; /* a continuation's DWARF walk (rule 4) */
};

_Static_assert((NATIVE_FP_CACHE_SLOTS & (NATIVE_FP_CACHE_SLOTS - 1)) == 0, "a power of two");

int native_fp__new(struct native_fp **out)
{
	struct native_fp *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	*out = f;
	return 0;
}

void native_fp__free(struct native_fp *f)
{
	free(f);
}

void native_fp__stats(const struct native_fp *f, struct native_fp_stats *st)
{
	*st = f->st;
}

/* Whether register @reg's rule in @frame is "saved at CFA + @off". */
static int saved_at(Dwarf_Frame *frame, int reg, int64_t off)
{
	Dwarf_Op ops_mem[3], *ops;
	size_t nops;

	if (dwarf_frame_register(frame, reg, ops_mem, &ops, &nops) || nops != 2)
		return 0;
	return ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst &&
		(int64_t)ops[1].number == off;
}

static enum fp_kind classify(Dwfl *dwfl, uint64_t pc)
{
	Dwarf_Frame *frame = native_unwind__row(dwfl, pc);
	Dwarf_Op *ops;
	size_t nops;
	enum fp_kind kind = FP_UNFRAMED;

	if (!frame)
		return FP_NO_CFI;
	/* libdw gives a register + offset CFA as one DW_OP_bregx. */
	if (!dwarf_frame_cfa(frame, &ops, &nops) && nops == 1 && ops[0].atom == DW_OP_bregx &&
	    ops[0].number == NATIVE_REG_RBP && ops[0].number2 == 16 &&
	    saved_at(frame, NATIVE_REG_RBP, -16) && saved_at(frame, NATIVE_REG_RIP, -8))
		kind = FP_FRAMED;
	free(frame);
	return kind;
}

static enum fp_kind kind_at(struct native_fp *f, Dwfl *dwfl, uint32_t gen, uint64_t pc)
{
	/* Return addresses spread over the low bits once the last few are dropped. */
	struct fp_slot *s = &f->slots[(pc ^ pc >> 11) & (NATIVE_FP_CACHE_SLOTS - 1)];

	f->st.lookups++;
	if (s->gen == gen && s->pc == pc)
		return (enum fp_kind)s->kind;
	f->st.misses++;
	*s = (struct fp_slot){ .pc = pc, .gen = gen, .kind = classify(dwfl, pc) };
	return (enum fp_kind)s->kind;
}

struct fp_walk {
	struct native_fp *f;
	Dwfl *dwfl;
	uint32_t gen;
	const struct native_fp_chain *c;
	uint32_t k; /* the record of the last frame, once found */
	int found;
	uint32_t last_rec; /* follow(): the record the last frame came from */
};

/* The record at @rbp, or -1. Records rise, so a bisection would do; there are few. */
static int64_t record_at(const struct native_fp_chain *c, uint64_t rbp)
{
	for (uint32_t i = 0; i < c->n && c->rec[i].fp <= rbp; i++)
		if (c->rec[i].fp == rbp)
			return i;
	return -1;
}

/* native_unwind_stop_fn: the DWARF walk of the top frames ends at the first frame
 * that keeps a frame pointer and whose RBP has a record. */
static int stop_at_record(void *arg, const struct native_frame *fr, uint64_t rbp, int known)
{
	struct fp_walk *w = arg;
	int64_t k;

	if (!known || (k = record_at(w->c, rbp)) < 0)
		return 0;
	if (kind_at(w->f, w->dwfl, w->gen, fr->lookup) != FP_FRAMED)
		return 0;
	w->k = (uint32_t)k;
	w->found = 1;
	return 1;
}

/* Follows the records from rec[w->k], the record of out's last frame, which keeps a
 * frame pointer (rule 1), to the first frame that does not (rule 2). */
static void follow(struct fp_walk *w, unsigned int max, struct native_stack *out)
{
	const struct native_fp_chain *c = w->c;

	for (uint32_t i = w->k;; i++) {
		const struct native_frame *last = &out->frames[out->n - 1];
		struct native_frame *f = &out->frames[out->n];
		enum fp_kind kind;

		if (i >= c->n) {
			/* The last frame keeps a frame pointer, yet BPF found no record
			 * there: a 0 return address is the end of the stack by the ABI;
			 * anything else is a frame pointer no frame would have. */
			out->end = c->flags & PBP_NF_FP_ZERO ? NATIVE_END_OUTERMOST
				: c->flags & PBP_NF_FP_LIMIT ? NATIVE_END_BOUND
							     : NATIVE_END_BAD_FRAME;
			return;
		}
		if (out->n >= max) {
			out->end = NATIVE_END_BOUND;
			return;
		}
		/* Records rise (the decoder checked), so the areas do. */
		if (c->rec[i].fp + 16 <= last->sp) {
			out->end = NATIVE_END_BAD_FRAME;
			return;
		}
		if (!out->fp_first)
			out->fp_first = out->n;
		*f = (struct native_frame){
			.pc = c->rec[i].ret,
			.lookup = c->rec[i].ret - 1,
			.sp = c->rec[i].fp + 16,
		};
		out->n++;
		w->last_rec = i;
		kind = kind_at(w->f, w->dwfl, w->gen, f->lookup);
		if (kind == FP_NO_CFI) {
			out->end = NATIVE_END_NO_CFI;
			return;
		}
		if (kind == FP_UNFRAMED) {
			out->end = NATIVE_END_NO_FP;
			return;
		}
	}
}

/* *@v = the 8 bytes at @addr in @s's stack copy; 0 if the copy does not hold them. */
static int copy_u64(const struct native_snapshot *s, uint64_t addr, uint64_t *v)
{
	uint64_t rsp = s->regs[NATIVE_REG_RSP];

	if (addr < rsp || addr - rsp > s->stack_len || s->stack_len - (addr - rsp) < 8)
		return 0;
	memcpy(v, s->stack + (addr - rsp), 8);
	return 1;
}

/*
 * Rule 4: the last frame keeps no frame pointer, but the copy holds its stack (a copy
 * longer than the default, --native-stack): DWARF goes on from it over the copy, as
 * for the top frames, until a frame that keeps a frame pointer and whose RBP has a
 * record (1: follow the records from there), or to the copy's end (0, out->end says
 * how). Its registers are those a DWARF walk would have there: PC and CFA from the
 * record it came from, RBP the value its callee saved at that record; the other
 * callee-saved ones unknown, which CFI that needs them ends the walk on. The PC is
 * given as the call's address (the return address - 1), since libdwfl takes a first
 * frame's PC as the place it stopped, and the CFI row at a return address may be the
 * next function's (a call to a noreturn function).
 */
static int resume(struct fp_walk *w, struct native_unwind *u, const struct native_snapshot *s,
		  unsigned int max, struct native_stack *out)
{
	const struct native_frame *last = &out->frames[out->n - 1];
	struct native_stack *cont = &w->f->cont;
	uint64_t rsp = s->regs[NATIVE_REG_RSP], off, rbp;
	struct native_snapshot from;

	if (last->sp < rsp || (off = last->sp - rsp) >= s->stack_len || out->n >= max)
		return 0;
	from = (struct native_snapshot){
		.tid = s->tid,
		.regs_mask = 1u << NATIVE_REG_RIP | 1u << NATIVE_REG_RSP,
		.stack = s->stack + off,
		.stack_len = s->stack_len - off,
	};
	from.regs[NATIVE_REG_RIP] = last->lookup;
	from.regs[NATIVE_REG_RSP] = last->sp;
	if (copy_u64(s, w->c->rec[w->last_rec].fp, &rbp)) {
		from.regs[NATIVE_REG_RBP] = rbp;
		from.regs_mask |= 1u << NATIVE_REG_RBP;
	}
	w->found = 0;
	w->f->st.resumed++;
	if (native_unwind__walk_until(u, &from, max - out->n + 1, stop_at_record, w, cont) ||
	    cont->n < 2)
		return 0;	/* nothing gained: the end stays NO_FP */
	out->fp_resumed++;
	/* Its first frame is the last frame again. */
	for (uint32_t i = 1; i < cont->n && out->n < max; i++)
		out->frames[out->n++] = cont->frames[i];
	if (w->found)
		return 1;
	out->end = cont->end == NATIVE_END_BOUND && out->n < max ? NATIVE_END_BAD_FRAME
								  : cont->end;
	return 0;
}

int native_fp__walk(struct native_fp *f, struct native_unwind *u, const struct native_snapshot *s,
		    const struct native_fp_chain *c, unsigned int max_frames,
		    struct native_stack *out)
{
	const uint32_t need = 1u << NATIVE_REG_RIP | 1u << NATIVE_REG_RSP | 1u << NATIVE_REG_RBP;
	struct fp_walk w = { .f = f, .c = c };
	uint64_t rip, rbp;
	int err;

	native_unwind__clear_stack(out);
	if ((s->regs_mask & need) != need)
		return -EINVAL;
	w.dwfl = native_unwind__dwfl(u);
	if (!w.dwfl)
		return -ENOENT;
	w.gen = (uint32_t)native_unwind__generation(u) + 1;
	if (max_frames > NATIVE_MAX_FRAMES)
		max_frames = NATIVE_MAX_FRAMES;
	if (!max_frames)
		max_frames = 1;
	f->st.walks++;
	rip = s->regs[NATIVE_REG_RIP];
	rbp = s->regs[NATIVE_REG_RBP];
	if (c->n && c->rec[0].fp == rbp && kind_at(f, w.dwfl, w.gen, rip) == FP_FRAMED) {
		out->frames[0] = (struct native_frame){
			.pc = rip,
			.lookup = rip,
			.sp = s->regs[NATIVE_REG_RSP],
		};
		out->n = 1;
		w.k = 0;
		follow(&w, max_frames, out);
		while (out->end == NATIVE_END_NO_FP && resume(&w, u, s, max_frames, out))
			follow(&w, max_frames, out);
		return 0;
	}
	/* Rule 3: DWARF for the top frames, over the copy. */
	f->st.dwarf_top++;
	err = native_unwind__walk_until(u, s, max_frames, stop_at_record, &w, out);
	out->fp_dwarf_top = 1;
	if (err || !w.found)
		return err;
	follow(&w, max_frames, out);
	while (out->end == NATIVE_END_NO_FP && resume(&w, u, s, max_frames, out))
		follow(&w, max_frames, out);
	return 0;
}
