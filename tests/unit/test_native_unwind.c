/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Native unwinding and symbolisation against a live process and a snapshot of one of
 * its threads (tests/unit/native_target.c writes one), and the maps parser against
 * hostile text.
 *
 *   test_native_unwind unwind PID SNAPFILE [REPEAT]
 *       prints "frame I PC LOOKUP FUNCTION|- MODULE REL FUNC_REL | NAME" per frame,
 *       innermost first (NAME as native_sym__format() writes it), each followed by
 *       "source I LINE FUNC_LINE FILE" when DWARF line info names its source,
 *       then "end", "stack_used" and, with REPEAT, "ns_per_walk" / "ns_per_sym";
 *       checks on the way that every shorter copy of the stack unwinds to a prefix of
 *       the full walk and ends "stack copy exhausted", that a frame limit ends "frame
 *       limit", and that a stack of garbage ends cleanly; then walks the snapshot's
 *       frame pointers as the BPF program does (--native-unwind fp) and checks that
 *       native_fp__walk() over those records, with every copy of the stack (from 0
 *       bytes up, for the top frames and for frames without frame pointers further
 *       up), gives a prefix of the full walk, same PCs and stack pointers, and prints
 *       "fp_frames N of M END (dwarf_top D)" for the 1 KiB copy, "fp_frames_full N of M
 *       END" for the whole one.
 *   test_native_unwind parse
 *       the maps parser over malformed, hostile and oversized text.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "native/native_ehhdr.h"
#include "native/native_fp.h"
#include "native/native_maps.h"
#include "native/native_sym.h"
#include "native/native_unwind.h"

struct snap_header {
	char magic[8];
	uint32_t tid;
	uint32_t regs_mask;
	uint64_t regs[NATIVE_NREGS];
	uint64_t stack_len;
};

static uint8_t *load_snapshot(const char *path, struct native_snapshot *s)
{
	struct snap_header h;
	uint8_t *stack;
	FILE *f = fopen(path, "rb");

	CHECK(f);
	CHECK(fread(&h, sizeof(h), 1, f) == 1);
	CHECK(!memcmp(h.magic, "PBPNSNP1", 8));
	CHECK(h.stack_len <= (1u << 20));
	stack = malloc(h.stack_len ? h.stack_len : 1);
	CHECK(stack);
	CHECK(fread(stack, 1, h.stack_len, f) == h.stack_len);
	fclose(f);
	memset(s, 0, sizeof(*s));
	s->tid = h.tid;
	s->regs_mask = h.regs_mask;
	memcpy(s->regs, h.regs, sizeof(s->regs));
	s->stack = stack;
	s->stack_len = h.stack_len;
	return stack;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Resident memory of this process, KiB, private (RssAnon) or file-backed (RssFile,
 * shared with every mapper of the same file): what the unwinder's state costs. */
static long rss_kib(const char *which)
{
	char line[256];
	long v = 0;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, which, strlen(which)))
			v = atol(line + strlen(which));
	fclose(f);
	return v;
}

static int same_prefix(const struct native_stack *a, const struct native_stack *full)
{
	if (a->n > full->n)
		return 0;
	for (unsigned int i = 0; i < a->n; i++)
		if (a->frames[i].pc != full->frames[i].pc)
			return 0;
	return 1;
}

/*
 * Each frame's stack pointer: the snapshot's RSP for the first; above it they rise,
 * and each lies just past its callee's return address (the word below it in the copy
 * is the frame's own PC, a return address). Returns how many frames were checked
 * against the copy.
 */
static unsigned int check_sp(const struct native_snapshot *s, const struct native_stack *st)
{
	uint64_t rsp = s->regs[NATIVE_REG_RSP];
	unsigned int checked = 0;

	CHECK_MSG(st->n && st->frames[0].sp == rsp, "frame 0 sp 0x%" PRIx64 ", RSP 0x%" PRIx64,
		  st->n ? st->frames[0].sp : 0, rsp);
	for (unsigned int i = 1; i < st->n; i++) {
		uint64_t sp = st->frames[i].sp, ra;

		CHECK_MSG(sp > st->frames[i - 1].sp, "frame %u sp 0x%" PRIx64 " not above 0x%" PRIx64,
			  i, sp, st->frames[i - 1].sp);
		if (sp < rsp + 8 || sp - rsp > s->stack_len)
			continue;
		memcpy(&ra, s->stack + (sp - rsp - 8), sizeof(ra));
		CHECK_MSG(ra == st->frames[i].pc, "frame %u: 0x%" PRIx64 " below its sp, pc 0x%" PRIx64,
			  i, ra, st->frames[i].pc);
		checked++;
	}
	return checked;
}

/*
 * PATH.locals, if native_target wrote it: "NAME 0xADDR" lines, a local of function
 * NAME. It must lie in that function's own stack area, [sp, the next frame's sp).
 * Returns how many did (a stripped program's frames have no names to find); -1
 * without the file.
 */
static int check_locals(const char *path, struct native_sym *sym, struct native_unwind *u,
			const struct native_stack *st)
{
	char name[64], lpath[4096];
	unsigned long long addr;
	int found = 0;
	FILE *f;

	snprintf(lpath, sizeof(lpath), "%s.locals", path);
	f = fopen(lpath, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %llx", name, &addr) == 2) {
		unsigned int i;

		for (i = 0; i + 1 < st->n; i++) {
			struct native_symbol ns;

			native_sym__lookup(sym, u, st->frames[i].lookup, &ns);
			if (ns.function && !strcmp(ns.function, name))
				break;
		}
		if (i + 1 >= st->n)
			continue;
		CHECK_MSG(addr >= st->frames[i].sp && addr < st->frames[i + 1].sp,
			  "%s's local at 0x%llx, its frame [0x%" PRIx64 ", 0x%" PRIx64 ")", name,
			  addr, st->frames[i].sp, st->frames[i + 1].sp);
		found++;
	}
	fclose(f);
	return found;
}

/* Every shorter copy of the stack: a prefix of the full walk, ended for want of bytes
 * (or complete, once the copy holds everything the walk reads). */
static void check_cuts(struct native_unwind *u, const struct native_snapshot *full_snap,
		       const struct native_stack *full)
{
	struct native_snapshot s = *full_snap;
	struct native_stack *st = malloc(sizeof(*st));
	size_t step = full->stack_used > 4096 ? 64 : 8;

	CHECK(st);
	for (size_t len = 0; len <= full->stack_used + 8 && len <= full_snap->stack_len;
	     len += step) {
		s.stack_len = len;
		CHECK(native_unwind__walk(u, &s, NATIVE_MAX_FRAMES, st) == 0);
		CHECK_MSG(same_prefix(st, full), "copy of %zu bytes: not a prefix (%u frames)",
			  len, st->n);
		if (len < full->stack_used)
			CHECK_MSG(st->end == NATIVE_END_STACK_COPY,
				  "copy of %zu bytes (walk needs %u): ended %s", len,
				  full->stack_used, native_end__name(st->end));
		CHECK_MSG(st->stack_used <= len, "read %u bytes of a %zu-byte copy",
			  st->stack_used, len);
	}
	/* At exactly the bytes the walk reported needing, it is whole again. */
	s.stack_len = full->stack_used;
	CHECK(native_unwind__walk(u, &s, NATIVE_MAX_FRAMES, st) == 0);
	CHECK_MSG(st->n == full->n && st->end == full->end,
		  "copy of stack_used=%u bytes: %u frames, %s", full->stack_used, st->n,
		  native_end__name(st->end));
	free(st);
}

/* The frame records the BPF program would take from @s (fp_step() in bpf/native.bpf.h):
 * RBP's chain while each record lies in the copy, above the last, 8-aligned, with a
 * return address. */
static uint32_t fp_records(const struct native_snapshot *s, struct pbp_native_fp *rec,
			   uint32_t *flags)
{
	uint64_t rsp = s->regs[NATIVE_REG_RSP], fp = s->regs[NATIVE_REG_RBP], lo = rsp;
	uint32_t n = 0;

	*flags = PBP_NF_FP_WALK | PBP_NF_FP_LIMIT;
	while (n < PBP_NATIVE_FP_MAX) {
		uint64_t w[2];

		if (fp % 8 || fp < lo || fp - rsp + 16 > s->stack_len) {
			*flags = PBP_NF_FP_WALK | PBP_NF_FP_BROKEN;
			break;
		}
		memcpy(w, s->stack + (fp - rsp), sizeof(w));
		if (!w[1]) {
			*flags = PBP_NF_FP_WALK | PBP_NF_FP_ZERO;
			break;
		}
		rec[n++] = (struct pbp_native_fp){ .fp = fp, .ret = w[1] };
		if (!w[0]) {
			*flags = PBP_NF_FP_WALK | PBP_NF_FP_ZERO;
			break;
		}
		lo = fp + 16;
		fp = w[0];
	}
	return n;
}

static int same_frames(const struct native_stack *a, const struct native_stack *full)
{
	if (a->n > full->n)
		return 0;
	for (unsigned int i = 0; i < a->n; i++)
		if (a->frames[i].pc != full->frames[i].pc || a->frames[i].sp != full->frames[i].sp)
			return 0;
	return 1;
}

/*
 * Stacks spoiled above their first 256 bytes with words that make chains: addresses
 * higher up the stack, words (return addresses among them) moved from elsewhere in it,
 * and noise. Whatever the bytes, the frame-pointer walk over the records BPF would take
 * from them must give no frame the DWARF walk over the same bytes does not: frame by
 * frame the same PCs and stack pointers, up to where it stops.
 */
static void check_fp_garbage(struct native_fp *f, struct native_unwind *u,
			     const struct native_snapshot *full_snap)
{
	static struct pbp_native_fp rec[PBP_NATIVE_FP_MAX];
	struct native_snapshot s = *full_snap;
	struct native_stack *fp = malloc(sizeof(*fp)), *dw = malloc(sizeof(*dw));
	struct native_fp_chain c = { .rec = rec };
	uint64_t rsp = full_snap->regs[NATIVE_REG_RSP], *w;
	size_t nw = full_snap->stack_len / 8;
	uint8_t *bytes = malloc(full_snap->stack_len + 8);
	unsigned int longest = 0;

	CHECK(fp && dw && bytes);
	srand(7);
	for (int round = 0; round < 64 && nw > 64; round++) {
		memcpy(bytes, full_snap->stack, full_snap->stack_len);
		w = (uint64_t *)bytes;
		for (size_t i = 32 + (size_t)(round % 8) * 4; i < nw; i++) {
			size_t to = i + 2 + (size_t)rand() % 64;

			switch (rand() % 4) {
			case 0:
				w[i] = rsp + 8 * (to < nw ? to : nw - 1);
				break;
			case 1:
				memcpy(&w[i], full_snap->stack + 8 * ((size_t)rand() % nw), 8);
				break;
			case 2:
				w[i] = ((uint64_t)rand() << 32) ^ (uint64_t)rand();
				break;
			default:
				break;
			}
		}
		s.stack = bytes;
		s.stack_len = full_snap->stack_len;
		c.n = fp_records(&s, rec, &c.flags);
		CHECK(native_unwind__walk(u, &s, NATIVE_MAX_FRAMES, dw) == 0);
		/* The 1 KiB copy, and the whole one, over which walks go on with DWARF
		 * from frames without frame pointers. */
		if (round % 2)
			s.stack_len = s.stack_len < 1024 ? s.stack_len : 1024;
		CHECK(native_fp__walk(f, u, &s, &c, NATIVE_MAX_FRAMES, fp) == 0);
		CHECK_MSG(same_frames(fp, dw), "spoiled stack %d: fp walk of %u frames (%s) "
			  "is not a prefix of the DWARF walk of %u", round, fp->n,
			  native_end__name(fp->end), dw->n);
		if (fp->n > longest)
			longest = fp->n;
	}
	printf("fp_garbage_longest %u\n", longest);
	free(bytes);
	free(fp);
	free(dw);
}

/* --native-unwind fp over this snapshot: never other frames than the full walk's. */
static void check_fp(struct native_unwind *u, const struct native_snapshot *full_snap,
		     const struct native_stack *full)
{
	static struct pbp_native_fp rec[PBP_NATIVE_FP_MAX];
	struct native_snapshot s = *full_snap;
	struct native_stack *st = malloc(sizeof(*st));
	struct native_fp_chain c = { .rec = rec };
	struct native_fp *f = NULL;

	CHECK(st && native_fp__new(&f) == 0);
	c.n = fp_records(full_snap, rec, &c.flags);
	for (size_t len = 0; len <= full_snap->stack_len; len += len < 2048 ? 8 : 64) {
		s.stack_len = len;
		CHECK(native_fp__walk(f, u, &s, &c, NATIVE_MAX_FRAMES, st) == 0);
		CHECK_MSG(same_frames(st, full), "fp walk, copy of %zu bytes: not a prefix "
			  "(%u frames, %s)", len, st->n, native_end__name(st->end));
		CHECK_MSG(st->end != NATIVE_END_OUTERMOST || st->n == full->n,
			  "fp walk, copy of %zu bytes: outermost after %u of %u frames", len, st->n,
			  full->n);
	}
	check_fp_garbage(f, u, full_snap);
	s.stack_len = full_snap->stack_len < 1024 ? full_snap->stack_len : 1024;
	CHECK(native_fp__walk(f, u, &s, &c, NATIVE_MAX_FRAMES, st) == 0);
	printf("fp_records %u\n", c.n);
	printf("fp_frames %u of %u %s (dwarf_top %d, first record frame %u)\n", st->n, full->n,
	       native_end__name(st->end), st->fp_dwarf_top, st->fp_first);
	CHECK(native_fp__walk(f, u, full_snap, &c, NATIVE_MAX_FRAMES, st) == 0);
	printf("fp_frames_full %u of %u %s\n", st->n, full->n, native_end__name(st->end));
	native_fp__free(f);
	free(st);
}

/* Hostile stacks: random bytes, and a stack of pointers back into itself (CFA
 * loops). Each walk must end, within the bound, without a crash. */
static void check_garbage(struct native_unwind *u, const struct native_snapshot *full_snap)
{
	struct native_snapshot s = *full_snap;
	struct native_stack *st = malloc(sizeof(*st));
	size_t len = full_snap->stack_len < 16384 ? full_snap->stack_len : 16384;
	uint8_t *junk = malloc(len + 8);
	uint64_t seed = 0x9e3779b97f4a7c15ull;

	CHECK(st && junk);
	for (int round = 0; round < 200; round++) {
		memcpy(s.regs, full_snap->regs, sizeof(s.regs));
		s.regs_mask = full_snap->regs_mask;
		for (size_t i = 0; i + 8 <= len; i += 8) {
			uint64_t v;

			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			switch (round % 3) {
			case 0:
				v = seed;
				break;
			case 1:	/* pointers into the copy itself */
				v = s.regs[NATIVE_REG_RSP] + (seed % (len ? len : 1));
				break;
			default: /* return addresses copied from the real stack, shuffled */
				v = full_snap->stack_len >= 8 ?
					    *(const uint64_t *)(full_snap->stack +
								(seed % (full_snap->stack_len / 8)) * 8) :
					    seed;
			}
			memcpy(junk + i, &v, 8);
		}
		s.stack = junk;
		s.stack_len = len;
		if (round % 2)
			s.regs[NATIVE_REG_RBP] = s.regs[NATIVE_REG_RSP] + (seed % (len ? len : 1));
		if (round % 7 == 3)
			s.regs[NATIVE_REG_RIP] = seed;		/* in no object */
		if (round % 11 == 5)
			s.regs[NATIVE_REG_RSP] = ~0ull - 4;	/* a copy that would wrap */
		if (round % 13 == 6)
			s.regs_mask = 1u << NATIVE_REG_RIP | 1u << NATIVE_REG_RSP;
		CHECK(native_unwind__walk(u, &s, NATIVE_MAX_FRAMES, st) == 0);
		CHECK(st->n <= NATIVE_MAX_FRAMES);
	}
	free(junk);
	free(st);
}

/* Maps that change rebuild the Dwfl: without libc's mappings the walk is the same up
 * to the first libc frame (whose PC is then in no module); with them back it is
 * whole again. */
static void check_rebuild(struct native_unwind *u, int pid, const struct native_snapshot *s,
			  const struct native_stack *full)
{
	struct native_stack *st = malloc(sizeof(*st));
	struct native_maps *m = NULL;
	uint64_t gen = native_unwind__generation(u);
	unsigned int first_libc = full->n;
	size_t kept = 0;

	CHECK(st && native_maps__read(pid, NULL, NULL, &m) == 0);
	for (size_t i = 0; i < m->n; i++) {
		if (strstr(m->maps[i].path, "/libc.so.6")) {
			free(m->maps[i].path);
			continue;
		}
		m->maps[kept++] = m->maps[i];
	}
	CHECK(kept < m->n);
	m->n = kept;
	m->hash = ~m->hash; /* what a change of the text would do */
	CHECK(native_unwind__set_maps(u, m) == 0);
	CHECK(native_unwind__generation(u) == gen + 1);
	for (unsigned int i = 0; i < full->n && first_libc == full->n; i++) {
		Dwfl_Module *mod = dwfl_addrmodule(native_unwind__dwfl(u), full->frames[i].lookup);

		if (!mod)
			first_libc = i;
	}
	CHECK(native_unwind__walk(u, s, NATIVE_MAX_FRAMES, st) == 0);
	/* Up to the first libc frame nothing changes. Past it, libdwfl's frame-pointer
	 * fallback may carry on where RBP happens to chain (the sid chroot's glibc
	 * start-up code); where it does not (the host's), the walk ends there, "no CFI". */
	CHECK_MSG(first_libc < full->n && st->n > first_libc, "without libc: %u frames", st->n);
	for (unsigned int i = 0; i <= first_libc && i < st->n; i++)
		CHECK(st->frames[i].pc == full->frames[i].pc);
	CHECK_MSG(st->n > first_libc + 1 || st->end == NATIVE_END_NO_CFI,
		  "without libc: %u frames (libc from %u), %s", st->n, first_libc,
		  native_end__name(st->end));
	CHECK_MSG(st->guessed_from == (st->n > first_libc + 1 ? first_libc + 1 : 0),
		  "without libc: guessed from %u", st->guessed_from);
	native_maps__free(m);
	CHECK(native_maps__read(pid, NULL, NULL, &m) == 0);
	CHECK(native_unwind__set_maps(u, m) == 0);
	CHECK(native_unwind__generation(u) == gen + 2);
	CHECK(native_unwind__walk(u, s, NATIVE_MAX_FRAMES, st) == 0);
	CHECK(st->n == full->n && st->end == full->end && !st->guessed_from);
	/* Maps with no file left in them, as a process ending shows: refused, and the
	 * walks of its earlier samples still find the code it had. */
	{
		size_t n = m->n;
		uint64_t hash = m->hash;

		m->n = 0;
		m->hash = ~hash;
		CHECK(native_unwind__set_maps(u, m) == -ENOEXEC);
		m->n = n;
		m->hash = hash;
	}
	CHECK(native_unwind__generation(u) == gen + 2);
	CHECK(native_unwind__walk(u, s, NATIVE_MAX_FRAMES, st) == 0);
	CHECK(st->n == full->n && st->end == full->end && !st->guessed_from);
	native_maps__free(m);
	free(st);
}

static int do_unwind(int pid, const char *path, int repeat)
{
	struct native_buildid_cache *bc = NULL;
	struct native_maps *maps = NULL;
	struct native_unwind *u = NULL;
	struct native_sym *sym = NULL;
	struct native_snapshot s, bad;
	struct native_stack *st = malloc(sizeof(*st));
	uint8_t *stack = load_snapshot(path, &s);
	long anon0 = rss_kib("RssAnon:"), file0 = rss_kib("RssFile:");
	int err;

	CHECK(st);
	CHECK(native_buildid_cache__new(64 << 10, &bc) == 0);
	err = native_maps__read(pid, NULL, bc, &maps);
	CHECK_MSG(err == 0, "native_maps__read: %s", strerror(-err));
	if (err)
		return 1;
	CHECK(native_unwind__new(NULL, &u) == 0);
	CHECK(native_unwind__walk(u, &s, 8, st) == -ENOENT);
	err = native_unwind__set_maps(u, maps);
	CHECK_MSG(err == 0, "native_unwind__set_maps: %s", strerror(-err));
	if (err)
		return 1;
	CHECK(native_sym__new(1 << 20, &sym) == 0);

	bad = s;
	bad.regs_mask &= ~(1u << NATIVE_REG_RSP);
	CHECK(native_unwind__walk(u, &bad, 8, st) == -EINVAL);

	CHECK(native_unwind__walk(u, &s, NATIVE_MAX_FRAMES, st) == 0);
	for (unsigned int i = 0; i < st->n; i++) {
		struct native_symbol ns;

		native_sym__lookup(sym, u, st->frames[i].lookup, &ns);
		char text[512];

		native_sym__format(&ns, text, sizeof(text));
		printf("frame %u 0x%" PRIx64 " 0x%" PRIx64 " %s %s 0x%" PRIx64 " 0x%" PRIx64
		       " | %s\n",
		       i, st->frames[i].pc, st->frames[i].lookup, ns.function ? ns.function : "-",
		       ns.module, ns.rel, ns.func_rel, text);
		if (ns.source)
			printf("source %u %d %d %s\n", i, ns.line, ns.func_line, ns.source);
	}
	printf("sp_checked %u\n", check_sp(&s, st));
	printf("locals_in_frames %d\n", check_locals(path, sym, u, st));
	printf("end %s\n", native_end__name(st->end));
	printf("guessed_from %u\n", st->guessed_from);
	printf("stack_used %u\n", st->stack_used);
	printf("stack_copied %zu\n", s.stack_len);

	/* Setting the same maps again keeps the Dwfl. */
	{
		uint64_t gen = native_unwind__generation(u);

		CHECK(native_unwind__set_maps(u, maps) == 0);
		CHECK(native_unwind__generation(u) == gen);
	}
	{
		struct native_stack *lim = malloc(sizeof(*lim));

		CHECK(lim);
		CHECK(native_unwind__walk(u, &s, 2, lim) == 0);
		CHECK(lim->n == 2 && lim->end == NATIVE_END_BOUND);
		free(lim);
	}
	/* A cache too small for the stack: emptied again and again, never wrong. */
	{
		struct native_sym *tiny;
		struct native_sym_stats ts;

		CHECK(native_sym__new(256, &tiny) == 0);
		for (int round = 0; round < 3; round++)
			for (unsigned int i = 0; i < st->n; i++) {
				struct native_symbol a, b;

				native_sym__lookup(tiny, u, st->frames[i].lookup, &a);
				native_sym__lookup(sym, u, st->frames[i].lookup, &b);
				CHECK(!strcmp(a.module, b.module) && a.rel == b.rel &&
				      a.func_rel == b.func_rel &&
				      !a.function == !b.function &&
				      (!a.function || !strcmp(a.function, b.function)) &&
				      !a.source == !b.source &&
				      (!a.source || (!strcmp(a.source, b.source) &&
						     a.line == b.line &&
						     a.func_line == b.func_line)));
			}
		native_sym__stats(tiny, &ts);
		CHECK(st->n < 4 || ts.evictions + ts.uncached > 0);
		native_sym__free(tiny);
	}
	check_cuts(u, &s, st);
	check_fp(u, &s, st);
	check_garbage(u, &s);
	check_rebuild(u, pid, &s, st);

	if (repeat > 0) {
		struct native_stack *again = malloc(sizeof(*again));
		uint64_t t0, t1, t2;

		CHECK(again);
		t0 = now_ns();
		for (int r = 0; r < repeat; r++)
			CHECK(native_unwind__walk(u, &s, NATIVE_MAX_FRAMES, again) == 0);
		t1 = now_ns();
		for (int r = 0; r < repeat; r++)
			for (unsigned int i = 0; i < again->n; i++) {
				struct native_symbol ns;

				native_sym__lookup(sym, u, again->frames[i].lookup, &ns);
			}
		t2 = now_ns();
		printf("ns_per_walk %" PRIu64 "\n", (t1 - t0) / (uint64_t)repeat);
		printf("ns_per_sym_frame %" PRIu64 "\n",
		       again->n ? (t2 - t1) / ((uint64_t)repeat * again->n) : 0);
		free(again);
	}
	{
		struct native_sym_stats ss;
		struct native_unwind_stats us;

		native_sym__stats(sym, &ss);
		native_unwind__stats(u, &us);
		printf("modules %u unopened %u\n", us.modules, us.modules_unopened);
		printf("rss_growth_kib anon %ld file %ld\n", rss_kib("RssAnon:") - anon0,
		       rss_kib("RssFile:") - file0);
		printf("sym_hits %" PRIu64 " sym_misses %" PRIu64 "\n", ss.hits, ss.misses);
	}
	native_sym__free(sym);
	native_unwind__free(u);
	native_maps__free(maps);
	native_buildid_cache__free(bc);
	free(stack);
	free(st);
	return check_failures ? 1 : 0;
}

static void parse_text(const char *text, size_t *n, uint32_t *skipped)
{
	struct native_maps *m = calloc(1, sizeof(*m));

	CHECK(m);
	CHECK(native_maps__parse(m, text, strlen(text)) == 0);
	*n = m->n;
	*skipped = m->skipped_lines;
	native_maps__free(m);
}

static int do_parse(void)
{
	struct native_maps *m = calloc(1, sizeof(*m));
	const char *good =
		"55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1234 /usr/bin/prog\n"
		"55d0c0a01000-55d0c0a02000 r-xp 00001000 08:01 1234 /usr/bin/prog\n"
		"7f0000000000-7f0000100000 r-xp 00028000 fd:00 99   /lib/with space (deleted)\n"
		"7f0000200000-7f0000300000 rwxp 00000000 00:00 0 \n"
		"7ffd00000000-7ffd00001000 r-xp 00000000 00:00 0                  [vdso]\n"
		"7ffd00002000-7ffd00003000 r-xp 00000000 08:01 77 /no/newline/at/end";
	const struct native_map *e;
	size_t n;
	uint32_t skipped;
	char *big;

	CHECK(m);
	CHECK(native_maps__parse(m, good, strlen(good)) == 0);
	CHECK(m->n == 3 && m->skipped_lines == 0);
	CHECK(m->vdso_start == 0x7ffd00000000ull && m->vdso_end == 0x7ffd00001000ull);
	CHECK(m->maps[0].start == 0x55d0c0a01000ull && m->maps[0].offset == 0x1000);
	CHECK(m->maps[0].ino == 1234 && !strcmp(m->maps[0].path, "/usr/bin/prog"));
	CHECK(!strcmp(m->maps[1].path, "/lib/with space (deleted)"));
	CHECK(!strcmp(m->maps[2].path, "/no/newline/at/end"));
	e = native_maps__find(m, 0x7f0000000010ull);
	CHECK(e && e->ino == 99);
	CHECK(!native_maps__find(m, 0x7f0000100000ull));
	native_maps__free(m);

	/* Malformed: each skipped and counted, none kept. */
	parse_text("zzzz-1000 r-xp 0 08:01 1 /a\n"
		   "1000-0800 r-xp 0 08:01 1 /a\n"		/* end before start */
		   "1000-2000 r-x\n"				/* cut short */
		   "1000-2000 r-xp 0 08:01 /a\n"		/* no inode */
		   "11112222333344445-2 r-xp 0 08:01 1 /a\n"	/* 17 hex digits */
		   "1000-2000 r-xp 0 08:01 99999999999999999999999 /a\n" /* inode overflows */
		   "1000-2000 r-xp 0 1000:01 1 /a\n"		/* no such major */
		   "\n\n",
		   &n, &skipped);
	CHECK_MSG(n == 0 && skipped == 9, "malformed: %zu kept, %u skipped", n, skipped);

	/* A NUL inside a line ends nothing: the parser works on lengths. */
	{
		const char with_nul[] = "1000-2000 r-xp 0 08:01 1 /a\0b\n3000-4000 r-xp 0 08:01 2 /c\n";
		struct native_maps *mm = calloc(1, sizeof(*mm));

		CHECK(mm && native_maps__parse(mm, with_nul, sizeof(with_nul) - 1) == 0);
		CHECK(mm->n == 2 && !strcmp(mm->maps[1].path, "/c"));
		native_maps__free(mm);
	}

	/* A line past the bound is skipped whole, and the next one still parses. */
	big = malloc(NATIVE_MAPS_MAX_LINE + 200);
	CHECK(big);
	n = (size_t)snprintf(big, 64, "1000-2000 r-xp 0 08:01 1 /");
	memset(big + n, 'a', NATIVE_MAPS_MAX_LINE + 10 - n);
	strcpy(big + NATIVE_MAPS_MAX_LINE + 10, "\n3000-4000 r-xp 0 08:01 2 /b\n");
	parse_text(big, &n, &skipped);
	CHECK(n == 1 && skipped == 1);
	free(big);

	/* More executable mappings than kept: dropped and counted, bounded memory. */
	{
		size_t count = NATIVE_MAPS_MAX_ENTRIES + 100, len = 0;
		char *text = malloc(count * 64);
		struct native_maps *mm = calloc(1, sizeof(*mm));

		CHECK(text && mm);
		for (size_t i = 0; i < count; i++)
			len += (size_t)sprintf(text + len, "%zx-%zx r-xp 0 08:01 %zu /lib%zu\n",
					       (i + 1) * 0x1000, (i + 1) * 0x1000 + 0x800, i + 1, i);
		CHECK(native_maps__parse(mm, text, len) == 0);
		CHECK(mm->n == NATIVE_MAPS_MAX_ENTRIES && mm->dropped == 100);
		native_maps__free(mm);
		free(text);
	}

	/* Random bytes: never a crash, whatever is kept is well-formed. */
	{
		uint64_t seed = 88172645463325252ull;
		char *text = malloc(1 << 16);

		CHECK(text);
		for (int round = 0; round < 200; round++) {
			struct native_maps *mm = calloc(1, sizeof(*mm));
			const char alphabet[] = "0123456789abcdef- :/\nrwxp";

			CHECK(mm);
			for (size_t i = 0; i < (1 << 16); i++) {
				seed ^= seed << 13;
				seed ^= seed >> 7;
				seed ^= seed << 17;
				text[i] = round % 2 ? (char)seed :
						      alphabet[seed % (sizeof(alphabet) - 1)];
			}
			CHECK(native_maps__parse(mm, text, 1 << 16) == 0);
			for (size_t i = 0; i < mm->n; i++)
				CHECK(mm->maps[i].end > mm->maps[i].start && mm->maps[i].path[0] == '/');
			native_maps__free(mm);
		}
		free(text);
	}

	/* .eh_frame_hdr: starts 0x1000, 0x1100, 0x1200 relative to a header at 0x2000
	 * (datarel, so -0x1000, -0xf00, -0xe00). */
	{
		uint8_t h[4 + 4 + 4 + 3 * 8] = { 1, 0x1b, 0x03, 0x3b };
		const int32_t starts[3] = { -0x1000, -0xf00, -0xe00 };
		uint64_t st = 0;
		uint32_t count = 3;

		memcpy(h + 8, &count, 4);
		for (int i = 0; i < 3; i++)
			memcpy(h + 12 + i * 8, &starts[i], 4);
		CHECK(native_ehhdr__find(h, sizeof(h), 0x2000, 0x1000, &st) == 0 && st == 0x1000);
		CHECK(native_ehhdr__find(h, sizeof(h), 0x2000, 0x10ff, &st) == 0 && st == 0x1000);
		CHECK(native_ehhdr__find(h, sizeof(h), 0x2000, 0x1100, &st) == 0 && st == 0x1100);
		CHECK(native_ehhdr__find(h, sizeof(h), 0x2000, 0x9999, &st) == 0 && st == 0x1200);
		CHECK(native_ehhdr__find(h, sizeof(h), 0x2000, 0xfff, &st) == -ENOENT);
		CHECK(native_ehhdr__find(h, sizeof(h), 0x2000, 0x90000000ull, &st) == -ENOENT);
		/* Claims more entries than its bytes hold; cut short; other encodings. */
		count = 4;
		memcpy(h + 8, &count, 4);
		CHECK(native_ehhdr__find(h, sizeof(h), 0x2000, 0x1100, &st) == -EINVAL);
		count = 0xffffffffu;
		memcpy(h + 8, &count, 4);
		CHECK(native_ehhdr__find(h, sizeof(h), 0x2000, 0x1100, &st) == -EINVAL);
		count = 3;
		memcpy(h + 8, &count, 4);
		for (size_t cut = 0; cut < sizeof(h); cut++)
			CHECK(native_ehhdr__find(h, cut, 0x2000, 0x1100, &st) == -EINVAL);
		h[3] = 0x1b;
		CHECK(native_ehhdr__find(h, sizeof(h), 0x2000, 0x1100, &st) == -EINVAL);
		h[3] = 0x3b;
		h[0] = 2;
		CHECK(native_ehhdr__find(h, sizeof(h), 0x2000, 0x1100, &st) == -EINVAL);
	}

	/* A process that is not there. */
	{
		struct native_maps *mm = NULL;

		CHECK(native_maps__read(0x7ffffff0, NULL, NULL, &mm) == -ESRCH && !mm);
	}
	if (!check_failures)
		printf("native maps parse: ok\n");
	return check_failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "parse"))
		return do_parse();
	if (argc >= 4 && !strcmp(argv[1], "unwind"))
		return do_unwind(atoi(argv[2]), argv[3], argc >= 5 ? atoi(argv[4]) : 0);
	fprintf(stderr, "usage: test_native_unwind parse | unwind PID SNAPFILE [REPEAT]\n");
	return 2;
}
