/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * --native: the thread's user registers and the top of its user stack, as a copy of its
 * bytes, a frame-pointer walk, or both, in a block after the record's Python part. A
 * part of its own because nothing in it reads Python: the block is unwound in user
 * space, in the parsing worker (docs/native-unwinding.md), and with native_stacks off
 * the verifier leaves all of it out. Called by snapshot() in bpf/sample.bpf.c; uses
 * common.bpf.h.
 */
#ifndef PBP_NATIVE_BPF_H
#define PBP_NATIVE_BPF_H

/* The halvings that find the first unreadable page among the 16 a copy can span. */
#define NATIVE_TRIES 5

/* A user stack copy being cut back to the pages that can be read. */
struct native_copy {
	struct scratch *sc;
	__u64 sp;
	__u32 at;		/* where the byte at sp goes in sc->buf */
	__u32 have;		/* bytes copied: sp's page, then whole pages */
	__u32 hi;		/* a copy of this many bytes meets an unreadable page */
};

/* One halving: copies the lower half of the pages in doubt, after those copied. A copy
 * that faults leaves nothing, and zeroes only its own part. */
static long extend_native(__u32 i, void *arg)
{
	struct native_copy *c = arg;
	__u32 pages, mid;

	if (c->hi <= c->have + PAGE_BYTES)
		return 1;
	pages = (c->hi - c->have + PAGE_BYTES - 1) / PAGE_BYTES;
	mid = c->have + pages / 2 * PAGE_BYTES;
	if (read_span(c->sc, c->at + c->have, mid - c->have, c->sp + c->have))
		c->hi = mid;
	else
		c->have = mid;
	return 0;
}

/*
 * The top of the stack that holds RSP, given the mapping @vma that does. In the main
 * thread's [stack] it is where the process started (mm->start_stack, its first RSP,
 * argc there): _start's frame is the last below it, and above lie argv, the
 * environment, and a gap of random size the kernel leaves untouched, whose pages are
 * not present and fault. Elsewhere, the end of the mapping (a thread's: its TLS and
 * TCB on top).
 */
static long stack_top(struct task_struct *task, struct vm_area_struct *vma, void *arg)
{
	struct stack_span *span = arg;
	__u64 start = vma->vm_mm->start_stack;

	span->lo = vma->vm_start;
	span->top = start >= vma->vm_start && start < vma->vm_end ? start + 8 : vma->vm_end;
	return 0;
}

/* The top of @task's stack at @sp, from its cache when @sp is in the span found last;
 * 0 if unknown. A span gone stale (a stack unmapped, another mapped there) only cuts a
 * copy short or makes it fault and be cut back. */
static __always_inline __u64 stack_top_of(struct task_struct *task, __u64 sp)
{
	struct stack_span *c, found = {};

	c = bpf_task_storage_get(&stack_spans, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (c && sp >= c->lo && sp < c->top)
		return c->top;
	if (bpf_find_vma(task, sp, stack_top, &found, 0))
		return 0;
	if (c)
		*c = found;
	return found.top;
}

/*
 * Copies @want bytes of the user stack from @sp to @at, or up to the stack's top @end
 * (0: unknown), which is often less than @want above a shallow stack's RSP (see
 * stack_top()). When
 * the top cannot be looked up (mmap_lock is taken only if free), or a page below it
 * cannot be read, the copy, which copies nothing when it faults, is cut back: RSP's
 * own page, then the pages above it by halvings up to the first that cannot be read.
 * Faults are what the lookup saves: each costs microseconds, more in a virtual
 * machine. Returns the bytes copied; sets @flags to say how the copy ended.
 */
static __always_inline __u32 copy_native_stack(__u64 end, struct scratch *sc, __u32 at, __u64 sp,
					       __u32 want, __u16 *flags)
{
	struct native_copy c = { .sc = sc, .sp = sp, .at = at };
	__u32 head = PAGE_BYTES - (sp & (PAGE_BYTES - 1));

	if (end > sp && end - sp < want) {
		want = end - sp;
		*flags |= PBP_NF_STACK_TOP;
	}
	if (!read_span(sc, at, want, sp)) {
		if (!(*flags & PBP_NF_STACK_TOP))
			*flags |= PBP_NF_STACK_CAPPED;
		return want;
	}
	*flags &= ~PBP_NF_STACK_TOP;
	*flags |= PBP_NF_STACK_FAULT;
	if (head >= want || read_span(sc, at, head, sp))
		return 0;
	c.have = head;
	c.hi = want;
	bpf_loop(NATIVE_TRIES, extend_native, &c, 0);
	return c.have;
}

/* A frame-pointer walk under way (--native-unwind fp). */
struct fp_walk {
	struct scratch *sc;
	__u64 fp;		/* the next frame record's address */
	__u64 lo;		/* ... must be at or above this: the last record's end */
	__u64 top;		/* ... and end at or below this: the stack's top */
	__u32 at;		/* where its pbp_native_fp goes in sc->buf */
	__u32 n;
	__u16 end;		/* PBP_NF_FP_* */
};

/*
 * One frame record: RBP's chain, as code built with frame pointers leaves it (push rbp;
 * mov rbp, rsp). Each record must lie above the last, inside the thread's stack, and
 * 8-aligned, or the walk stops: code that uses RBP for something else yields garbage
 * here, which these rules end quickly and user space's check against CFI refuses
 * (user/native/native_fp.c). A callback of bpf_loop(), verified once.
 */
static long fp_step(__u32 i, void *arg)
{
	struct fp_walk *w = arg;
	struct pbp_native_fp *e;
	__u64 rec[2];
	__u32 at = w->at;

	if ((w->fp & 7) || w->fp < w->lo || w->fp > w->top - 16 || w->top < 16 ||
	    at > PBP_SCRATCH_SIZE - sizeof(*e)) {
		w->end = PBP_NF_FP_BROKEN;
		return 1;
	}
	if (bpf_probe_read_user(rec, sizeof(rec), (void *)w->fp)) {
		w->end = PBP_NF_FP_BROKEN;
		return 1;
	}
	if (!rec[1]) {
		w->end = PBP_NF_FP_ZERO;
		return 1;
	}
	e = (struct pbp_native_fp *)(w->sc->buf + at);
	e->fp = w->fp;
	e->ret = rec[1];
	w->at = at + sizeof(*e);
	w->n++;
	if (!rec[0]) {
		w->end = PBP_NF_FP_ZERO;
		return 1;
	}
	w->lo = w->fp + 16;
	w->fp = rec[0];
	return 0;
}

/*
 * Walks the RBP chain from @rbp into pbp_native_fp records at @at, at most @max
 * (<= PBP_NATIVE_FP_MAX), within the stack [@sp, @top) (@top 0: unknown). Returns the
 * records written;
 * sets the walk's end in @flags. Costs one 16-byte read per frame where a copy of the
 * frames' stack costs their every byte (1.4 KiB to _start from a CPython loop, 5-7 KiB
 * more per Python->C->Python re-entry).
 */
static __always_inline __u32 walk_fp(__u64 top, struct scratch *sc, __u32 at, __u64 sp,
				     __u64 rbp, __u32 max, __u16 *flags)
{
	struct fp_walk w = { .sc = sc, .fp = rbp, .lo = sp, .at = at, .end = PBP_NF_FP_LIMIT };

	/* Unknown (the lookup's lock was busy): a read past the top faults and ends it. */
	w.top = top;
	if (!w.top)
		w.top = sp + (8 << 20);
	if (max > PBP_NATIVE_FP_MAX)
		max = PBP_NATIVE_FP_MAX;
	bpf_loop(max, fp_step, &w, 0);
	*flags |= PBP_NF_FP_WALK | w.end;
	return w.n;
}

/*
 * --native: the thread's user registers and stack into a pbp_native block at @off, an
 * 8-byte boundary after the rest of the record. The registers are those the kernel
 * saved when the thread entered it: for a tick that interrupted user code, that
 * code's; in a system call or for an off-CPU record, those of the call (@flags says
 * which). With t->native_fp, a frame-pointer walk's records come first and the stack
 * copy, for the top frames only, after them. Returns the bytes after the header, or -1
 * when no block was written.
 */
static __always_inline int native_capture(const struct pbp_target *t, struct task_struct *task,
					  struct scratch *sc, __u64 off, __u16 *flags, __u32 *nrec)
{
#if defined(__TARGET_ARCH_x86)
	struct pt_regs *r;
	struct pbp_native *n;
	__u32 want = t->native_stack, got, nfp = 0, at;
	__u64 top;

	if ((!want && !t->native_fp) || off > PBP_NATIVE_OFF_MAX || (off & 7))
		return -1;
	r = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!r)
		return -1;
	n = (struct pbp_native *)(sc->buf + off);
	__builtin_memset(n, 0, sizeof(*n));
	n->hdr_len = sizeof(*n);
	n->regs_mask = (1u << PBP_NATIVE_REGS) - 1;
	/* DWARF order; a BTF pointer, read by plain loads. */
	n->regs[0] = r->ax;
	n->regs[1] = r->dx;
	n->regs[2] = r->cx;
	n->regs[3] = r->bx;
	n->regs[4] = r->si;
	n->regs[5] = r->di;
	n->regs[6] = r->bp;
	n->regs[7] = r->sp;
	n->regs[8] = r->r8;
	n->regs[9] = r->r9;
	n->regs[10] = r->r10;
	n->regs[11] = r->r11;
	n->regs[12] = r->r12;
	n->regs[13] = r->r13;
	n->regs[14] = r->r14;
	n->regs[15] = r->r15;
	n->regs[16] = r->ip;
	at = off + sizeof(*n);
	top = stack_top_of(task, r->sp);
	if (t->native_fp) {
		nfp = walk_fp(top, sc, at, r->sp, r->bp, t->native_fp, flags);
		if (nfp > PBP_NATIVE_FP_MAX)
			return -1;	/* cannot be; for the verifier */
		n->fp_off = at;
		n->nfp = nfp;
		at += nfp * sizeof(struct pbp_native_fp);
	}
	if (t->native_fp && (*flags & PBP_NF_REGS_AT_ENTRY) && want < PBP_NATIVE_FP_STACK_ENTRY)
		want = PBP_NATIVE_FP_STACK_ENTRY;
	if (want > PBP_NATIVE_STACK_MAX - nfp * sizeof(struct pbp_native_fp))
		want = PBP_NATIVE_STACK_MAX - nfp * sizeof(struct pbp_native_fp);
	want &= ~7u;
	n->stack_off = at;
	got = want ? copy_native_stack(top, sc, at, r->sp, want, flags) : 0;
	n->stack_len = got;
	n->flags = *flags;
	*nrec = nfp;
	return nfp * sizeof(struct pbp_native_fp) + got;
#else
	return -1;
#endif
}

/* Counts a native block that went out: @got bytes after its header, @nfp of them
 * frame records, the rest stack bytes. */
static __always_inline void count_native(int got, __u16 flags, __u32 nfp)
{
	if (got < 0)
		return;
	count(PBP_C_NATIVE_COPIED);
	add(PBP_C_NATIVE_BYTES, got - nfp * sizeof(struct pbp_native_fp));
	if (flags & PBP_NF_FP_WALK) {
		count(PBP_C_NATIVE_FP_WALKS);
		add(PBP_C_NATIVE_FP_RECORDS, nfp);
		if (flags & PBP_NF_FP_BROKEN)
			count(PBP_C_NATIVE_FP_BROKEN);
	}
	if (flags & PBP_NF_STACK_CAPPED)
		count(PBP_C_NATIVE_CAPPED);
	if (flags & PBP_NF_STACK_FAULT)
		count(PBP_C_NATIVE_FAULTS);
}

#endif
