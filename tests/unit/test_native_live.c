/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The whole of --native's user-space half against a live CPython: a snapshot of one of
 * its threads (registers and stack copy, tests/tools/native_snapshot.py), unwound
 * (native_unwind), its Python stack decoded from the live process with the snapshot's
 * stack copy as the native-stack view (decoder, decode_runs), and the two merged
 * (native_merge), in both modes. tests/native/test_native_merge.py runs it on CPython stopped
 * under C re-entries of the eval loop and checks what it prints against what the
 * workload knows; nothing is checked here but that each step works.
 *
 *   test_native_live PID SNAPFILE
 *       native I SP MODULE FUNC_REL NAME      per native frame, innermost first
 *       end END
 *       python I QUALNAME                      per decoded frame, innermost first
 *       gap GAP
 *       run K FIRST N C_ADDR                   per run, innermost first
 *       merged default|all RESULT ITEM...      ITEM: n:I or p:I
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "decode/decoder.h"
#include "mem/mem_live.h"
#include "native/native_maps.h"
#include "native/native_merge.h"
#include "native/native_sym.h"
#include "native/native_unwind.h"
#include "cpython/py_interp.h"
#include "cpython/py_threads.h"
#include "base/strtab.h"

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
	CHECK(!memcmp(h.magic, "PBPNSNP1", 8) && h.stack_len <= (1u << 20));
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

struct find_thread {
	uint32_t tid;
	struct py_thread found;
	int ok;
};

static int on_thread(const struct py_thread *t, void *arg)
{
	struct find_thread *ft = arg;

	if (t->tid != ft->tid)
		return 0;
	ft->found = *t;
	ft->found.ts_bytes = NULL;
	ft->ok = 1;
	return 1;
}

/* Small module ids for the merge: the position of the frame's Dwfl module among
 * those seen, from 1; 0 for a PC in none. */
static uint32_t module_id(Dwfl_Module **seen, uint32_t *nseen, Dwfl_Module *mod)
{
	if (!mod)
		return 0;
	for (uint32_t i = 0; i < *nseen; i++)
		if (seen[i] == mod)
			return i + 1;
	if (*nseen == NATIVE_MAX_FRAMES)
		return 0;
	seen[(*nseen)++] = mod;
	return *nseen;
}

static void print_merged(const char *mode, const struct native_stack *ns,
			 const struct stack *st, const struct native_merge_frame *mf, int all)
{
	static struct native_merge_item out[NATIVE_MAX_FRAMES + DECODE_MAX_DEPTH];
	const struct native_merge_in in = {
		.frames = mf, .nframes = ns->n, .complete = ns->end == NATIVE_END_OUTERMOST,
		.runs = st->runs, .nruns = st->nruns, .all = all,
	};
	enum native_merge_result r;
	uint32_t n;

	CHECK(native_merge__interleave(&in, out, sizeof(out) / sizeof(out[0]), &n, &r) == 0);
	printf("merged %s %s", mode, native_merge__result_name(r));
	for (uint32_t i = 0; i < n; i++)
		printf(" %c:%u", out[i].kind == NATIVE_MERGE_NATIVE ? 'n' : 'p', out[i].index);
	printf("\n");
}

static int run(int pid, const char *path)
{
	struct native_snapshot s;
	uint8_t *stack = load_snapshot(path, &s);
	struct native_stack *ns = malloc(sizeof(*ns));
	struct native_merge_frame *mf = calloc(NATIVE_MAX_FRAMES, sizeof(*mf));
	Dwfl_Module **seen = calloc(NATIVE_MAX_FRAMES, sizeof(*seen));
	struct stack *st = calloc(1, sizeof(*st));
	struct py_interp *in = calloc(1, sizeof(*in));
	struct native_maps *maps = NULL;
	struct native_unwind *u = NULL;
	struct native_sym *sym = NULL;
	struct strtab *strs = strtab__new();
	struct find_thread ft = { .tid = s.tid };
	struct decoder *d = NULL;
	struct mem_live live;
	uint32_t nseen = 0;
	int err;

	CHECK(ns && mf && seen && st && in && strs);
	mem_live__init(&live, pid);
	err = py_interp__find(pid, &live.base, in);
	CHECK_MSG(!err, "py_interp__find: %s", strerror(-err));
	CHECK(native_maps__read(pid, NULL, NULL, &maps) == 0);
	CHECK(native_unwind__new(NULL, &u) == 0 && native_unwind__set_maps(u, maps) == 0);
	CHECK(native_sym__new(1 << 20, &sym) == 0);
	CHECK(native_unwind__walk(u, &s, NATIVE_MAX_FRAMES, ns) == 0);
	for (unsigned int i = 0; i < ns->n; i++) {
		struct native_symbol sy;
		char text[512];

		native_sym__lookup(sym, u, ns->frames[i].lookup, &sy);
		native_sym__format(&sy, text, sizeof(text));
		mf[i].sp = ns->frames[i].sp;
		mf[i].module = module_id(seen, &nseen,
					 dwfl_addrmodule(native_unwind__dwfl(u), ns->frames[i].lookup));
		printf("native %u 0x%" PRIx64 " %s 0x%" PRIx64 " %s\n", i, ns->frames[i].sp,
		       sy.module, sy.func_rel, text);
	}
	printf("end %s\n", native_end__name(ns->end));

	CHECK(py_threads__walk(&live.base, in, on_thread, &ft) >= 0);
	CHECK_MSG(ft.ok && ft.found.current_frame, "thread %u runs no Python code", s.tid);
	{
		const struct decoder_cfg cfg = { .interp = in, .live = &live.base, .strs = strs };
		const struct thread_sample t = {
			.pid = (uint32_t)pid, .tid = s.tid, .tstate = ft.found.tstate,
			.current_frame = ft.found.current_frame, .mem = &live.base,
			.cstack = s.stack, .cstack_addr = s.regs[NATIVE_REG_RSP],
			.cstack_len = s.stack_len,
		};

		CHECK(decoder__new(&cfg, &d) == 0);
		CHECK(decoder__decode_thread(d, &t, st) == 0);
	}
	for (uint32_t i = 0; i < st->depth; i++)
		printf("python %u %s\n", i, strtab__get(strs, st->frames[i].qualname));
	printf("gap %d\n", st->gap);
	for (uint32_t k = 0; k < st->nruns; k++)
		printf("run %u %u %u 0x%" PRIx64 "\n", k, st->runs[k].first, st->runs[k].n,
		       st->runs[k].c_addr);
	print_merged("default", ns, st, mf, 0);
	print_merged("all", ns, st, mf, 1);

	decoder__free(d);
	native_sym__free(sym);
	native_unwind__free(u);
	native_maps__free(maps);
	strtab__free(strs);
	free(in);
	free(st);
	free(seen);
	free(mf);
	free(ns);
	free(stack);
	return check_failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: test_native_live PID SNAPFILE\n");
		return 2;
	}
	return run(atoi(argv[1]), argv[2]);
}
