/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A process that takes a native snapshot of its own thread from a call chain it knows
 * (what BPF will copy at a sample: the registers and the top of the user stack), writes
 * it to a file, says "ready" on stdout and waits for stdin to close, so that
 * test_native_unwind can unwind the snapshot against its live mappings.
 *
 *   native_target chain SNAPFILE   main -> outer -> middle -> leaf (snapshot in leaf);
 *                                  SNAPFILE.locals says where a local of each of
 *                                  leaf, middle and outer lives ("NAME 0xADDR")
 *   native_target qsort SNAPFILE   main -> sorter -> libc qsort -> ... -> compare
 *                                  (snapshot in the first call of the comparator)
 *   native_target vdso -           main -> clock_loop -> clock_gettime for ever, most
 *                                  of the time in the [vdso]: the test stops it with
 *                                  ptrace (tests/tools/native_snapshot.py)
 *
 * tests/native/test_native_unwind.py builds it with and without -fomit-frame-pointer. The
 * functions are noipa (no inlining, cloning or tail calls across them) so that the
 * chain in the binary is the chain in the source; "LINE:NAME" marks the line each
 * frame of the chain stands at, which DWARF line info must give.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NREGS 17	/* x86-64 DWARF registers 0-15 and the return address column (RIP) */
#define STACK_MAX (256u << 10)

struct snap_header {
	char magic[8];		/* "PBPNSNP1" */
	uint32_t tid;
	uint32_t regs_mask;
	uint64_t regs[NREGS];
	uint64_t stack_len;	/* bytes that follow, copied from regs[7] (RSP) up */
};

static struct snap_header snap;
static const char *snap_path;

/* The address of one local of leaf, middle and outer, in that order: each must lie in
 * its own function's stack area of the unwound snapshot. Taken by address and stored
 * here, so the local lives in memory, in its function's frame. */
static const char *const local_names[] = { "leaf", "middle", "outer" };
static volatile uintptr_t local_at[3];

/*
 * Stores every general register in DWARF order (rax rdx rcx rbx rsi rdi rbp rsp r8-r15)
 * and then the address of the instruction right after the lea as RIP: the registers
 * are exactly those at that instruction, whose CFI is the enclosing function's.
 */
#define CAPTURE(r)                                                                      \
	__asm__ volatile("movq %%rax, 0(%0)\n\t"                                        \
			 "movq %%rdx, 8(%0)\n\t"                                        \
			 "movq %%rcx, 16(%0)\n\t"                                       \
			 "movq %%rbx, 24(%0)\n\t"                                       \
			 "movq %%rsi, 32(%0)\n\t"                                       \
			 "movq %%rdi, 40(%0)\n\t"                                       \
			 "movq %%rbp, 48(%0)\n\t"                                       \
			 "movq %%rsp, 56(%0)\n\t"                                       \
			 "movq %%r8, 64(%0)\n\t"                                        \
			 "movq %%r9, 72(%0)\n\t"                                        \
			 "movq %%r10, 80(%0)\n\t"                                       \
			 "movq %%r11, 88(%0)\n\t"                                       \
			 "movq %%r12, 96(%0)\n\t"                                       \
			 "movq %%r13, 104(%0)\n\t"                                      \
			 "movq %%r14, 112(%0)\n\t"                                      \
			 "movq %%r15, 120(%0)\n\t"                                      \
			 "leaq 0(%%rip), %%rax\n\t"                                     \
			 "movq %%rax, 128(%0)\n\t"                                      \
			 :                                                              \
			 : "r"(r)                                                       \
			 : "rax", "memory")

/* The end of the mapping holding @addr (the stack's top), from /proc/self/maps. */
static uint64_t mapping_end(uint64_t addr)
{
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "r");
	uint64_t end = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;

		if (sscanf(line, "%llx-%llx", &lo, &hi) == 2 && addr >= lo && addr < hi) {
			end = hi;
			break;
		}
	}
	fclose(f);
	return end;
}

/* SNAPFILE.locals: the locals recorded so far (none but in the chain). */
static void dump_locals(void)
{
	char path[4096];
	FILE *f;

	if (!local_at[0])
		return;
	snprintf(path, sizeof(path), "%s.locals", snap_path);
	f = fopen(path, "w");
	if (!f) {
		perror("native_target: writing the locals");
		exit(1);
	}
	for (size_t i = 0; i < sizeof(local_names) / sizeof(local_names[0]); i++)
		fprintf(f, "%s 0x%llx\n", local_names[i], (unsigned long long)local_at[i]);
	if (fclose(f)) {
		perror("native_target: writing the locals");
		exit(1);
	}
}

/* Copies the stack from the captured RSP up and writes the snapshot. Runs in a frame
 * below the capturing function's, so the bytes it copies are as they were. */
__attribute__((noipa)) static void dump(void)
{
	uint64_t sp = snap.regs[7], end = mapping_end(sp);
	FILE *f;

	if (!end) {
		fprintf(stderr, "native_target: no mapping holds the stack pointer\n");
		exit(1);
	}
	memcpy(snap.magic, "PBPNSNP1", 8);
	snap.tid = (uint32_t)getpid();
	snap.regs_mask = (1u << NREGS) - 1;
	snap.stack_len = end - sp < STACK_MAX ? end - sp : STACK_MAX;
	f = fopen(snap_path, "wb");
	if (!f || fwrite(&snap, sizeof(snap), 1, f) != 1 ||
	    fwrite((const void *)(uintptr_t)sp, 1, snap.stack_len, f) != snap.stack_len ||
	    fclose(f)) {
		perror("native_target: writing the snapshot");
		exit(1);
	}
	dump_locals();
}

/* Always inlined into leaf: the snapshot's PC is in this code, which DWARF line info
 * must count at the line of the call in leaf, not at a line of this function. */
static inline __attribute__((always_inline)) void capture_inlined(void)
{
	CAPTURE(snap.regs);
}

__attribute__((noipa)) int leaf(int x)
{
	volatile int here = x;

	local_at[0] = (uintptr_t)&here;
	capture_inlined(); /* LINE:leaf */
	dump();
	return here + 1;
}

__attribute__((noipa)) int middle(int x)
{
	volatile int here = x;

	local_at[1] = (uintptr_t)&here;
	return leaf(here * 2) + here; /* LINE:middle */
}

__attribute__((noipa)) int outer(int x)
{
	volatile int here = x;

	local_at[2] = (uintptr_t)&here;
	return middle(here + 3) + here; /* LINE:outer */
}

static int compared;

__attribute__((noipa)) int compare(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	if (!compared++) {
		CAPTURE(snap.regs);
		dump();
	}
	return (x > y) - (x < y);
}

__attribute__((noipa)) int sorter(int n)
{
	int v[64];

	for (int i = 0; i < 64; i++)
		v[i] = (i * 37 + n) % 64;
	qsort(v, 64, sizeof(v[0]), compare);
	return v[0] + v[63];
}

__attribute__((noipa)) long clock_loop(void)
{
	volatile long sink = 0;
	struct timespec ts;

	printf("ready\n");
	fflush(stdout);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sink += ts.tv_nsec;
	}
	return sink;
}

int main(int argc, char **argv)
{
	char buf[64];
	int r;

	if (argc != 3) {
		fprintf(stderr, "usage: native_target chain|qsort|vdso SNAPFILE\n");
		return 2;
	}
	snap_path = argv[2];
	if (!strcmp(argv[1], "chain"))
		r = outer(argc);
	else if (!strcmp(argv[1], "qsort"))
		r = sorter(argc);
	else if (!strcmp(argv[1], "vdso"))
		r = (int)clock_loop();
	else
		return 2;
	printf("ready %d\n", r);
	fflush(stdout);
	/* Alive, with its mappings, until the test is done with it. */
	while (read(0, buf, sizeof(buf)) > 0)
		;
	return 0;
}
