/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `dump --native`: each Python thread's C stack interleaved with its Python frames.
 * A core is still by nature. A live process's threads are held (thread_freeze.h)
 * while every thread's registers,
 * C stack bytes and Python frames are read, so that the two halves of a stack are of
 * one instant; the unwinding, naming and merging happen after they are let go, from
 * the copies alone, in the same confined parsing worker and with the same merge as
 * record --native.
 */
#ifndef PBP_DUMP_NATIVE_H
#define PBP_DUMP_NATIVE_H

#include <stdint.h>
#include <sys/types.h>

#include "decode/decoder.h"
#include "mem/mem_core.h"
#include "mem/mem_live.h"
#include "native/native_unwind.h"
#include "output/out_traceback.h"

/* How much of a thread's C stack is copied: the eval loop does not recurse for
 * Python-to-Python calls, so even deep Python stacks keep their C stack small. All
 * threads' copies together are held to DUMP_NATIVE_STACKS: a process (or a core) of
 * thousands of threads gets shorter copies for the last ones, not gigabytes. */
#define DUMP_NATIVE_STACK (1u << 20)
#define DUMP_NATIVE_STACKS (64u << 20)

struct dump_native;

/* One held thread's registers and stack copy, and its Python stack decoded then. */
struct dump_native_capture {
	uint64_t regs[NATIVE_NREGS];
	uint32_t regs_mask;	/* 0: the thread was not held */
	uint8_t *stack;		/* stack_len bytes from regs[RSP] up */
	size_t stack_len;
	int python;		/* a Python stack was kept: the fields below hold it */
	enum decode_gap gap;
	uint32_t depth, nruns;
	struct decoded_frame *frames;
	struct py_run *runs;
};

/* Of process @pid live, or of @core if not NULL (its maps from its notes). @all: keep
 * the interpreter's own frames too (--native-all). */
int dump_native__new(pid_t pid, struct mem_core *core, int all, struct dump_native **out);
void dump_native__free(struct dump_native *d);

/*
 * Holds every thread of the process. 0; else -errno with a one-line reason already
 * written (-EBUSY: traced by another process, -EPERM/-EACCES: ptrace not allowed).
 */
int dump_native__hold(struct dump_native *d);
/* Lets the threads go; one still in an uninterruptible wait once it stops (called
 * again, or by dump_native__frames and __free, from this thread). */
void dump_native__release(struct dump_native *d);

/* The registers and stack of held thread @tid (its id here) into @cap (freed with
 * dump_native__capture_free). 0, -ESRCH if it is not held, -ENOMEM. */
int dump_native__capture(struct dump_native *d, struct mem_live *mem, pid_t tid,
			 struct dump_native_capture *cap);
/* The same from a core: thread @tid's registers from its NT_PRSTATUS note and its stack
 * as far as the core holds it. -ESRCH if the core has no registers of @tid. */
int dump_native__capture_core(struct dump_native *d, pid_t tid,
			      struct dump_native_capture *cap);
void dump_native__capture_free(struct dump_native_capture *cap);
/* Keeps a copy of @st (NULL: none) in @cap, for after the threads run again. 0 or
 * -ENOMEM. */
int dump_native__keep_stack(struct dump_native_capture *cap, const struct stack *st);
/* The stack kept in @cap, copied into @into; NULL if none was. */
const struct stack *dump_native__kept_stack(const struct dump_native_capture *cap,
					    struct stack *into);

/*
 * The thread's frames, innermost first, as traceback items: native frames named, and
 * the Python frames of @st where their eval-loop activations are. tb->items/nitems
 * and tb->native_note are set; they stay valid until the next call. 0 or -ENOMEM;
 * a stack that cannot be walked or merged is given with its Python frames and a note
 * that says why.
 */
int dump_native__frames(struct dump_native *d, const struct dump_native_capture *cap,
			const struct stack *st, struct tb_thread *tb);

#endif
