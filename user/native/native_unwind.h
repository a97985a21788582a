/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Native (C) stack unwinding of one sampled thread from a snapshot (its registers and
 * a copy of the top of its user stack), with the DWARF CFI of the objects the process
 * maps, through elfutils' libdwfl; see the note at the top of native_unwind.c.
 */
#ifndef PBP_NATIVE_UNWIND_H
#define PBP_NATIVE_UNWIND_H

#include <elfutils/libdwfl.h>
#include <stddef.h>
#include <stdint.h>

#include "native/native_maps.h"

/* x86-64 registers by their DWARF numbers (the psABI's), which is how libdwfl takes
 * them: a snapshot's regs[] is indexed by these. */
enum native_reg {
	NATIVE_REG_RAX,
	NATIVE_REG_RDX,
	NATIVE_REG_RCX,
	NATIVE_REG_RBX,
	NATIVE_REG_RSI,
	NATIVE_REG_RDI,
	NATIVE_REG_RBP,
	NATIVE_REG_RSP,
	NATIVE_REG_R8,
	NATIVE_REG_R9,
	NATIVE_REG_R10,
	NATIVE_REG_R11,
	NATIVE_REG_R12,
	NATIVE_REG_R13,
	NATIVE_REG_R14,
	NATIVE_REG_R15,
	NATIVE_REG_RIP,
	NATIVE_NREGS
};

/* A thread as it was when sampled. RIP and RSP are required; RBP, RBX, R12-R15 (the
 * callee-saved ones, which CFI may restore from the stack or keep as they are) should
 * be there; the rest are used only by odd CFI expressions. */
struct native_snapshot {
	uint32_t tid;
	uint32_t regs_mask; /* bit i: regs[i] is known */
	uint64_t regs[NATIVE_NREGS];
	const uint8_t *stack; /* stack_len bytes copied from regs[RSP] upwards */
	size_t stack_len;
};

/* Why a walk stopped. */
enum native_end {
	NATIVE_END_OUTERMOST,  /* CFI says there is no caller (_start, clone3): complete */
	NATIVE_END_STACK_COPY, /* the next frame needs bytes beyond the copied stack */
	NATIVE_END_NO_CFI,     /* a PC in no known object, or in one without CFI for it */
	NATIVE_END_BOUND,      /* the frame limit was reached */
	NATIVE_END_BAD_FRAME,  /* CFI led nowhere sane (a CFA not above the last, a read
				 * outside the stack): a stack we must not trust further */
	NATIVE_END_NO_FP,      /* a frame-pointer walk (native_fp.h) met a function that
				 * keeps no frame pointer: its caller cannot be known */
	NATIVE_END_MAX
};

const char *native_end__name(enum native_end end);

struct native_frame {
	uint64_t pc;	 /* as unwound: a return address for every frame but the first */
	uint64_t lookup; /* the address inside the call (pc - 1 for a return address):
				 * what to symbolise and to report in pprof Locations */
	/* The frame's stack pointer: the snapshot's RSP for the first frame, and for
	 * every other one the value RSP has once the frame below returns into it (the
	 * CFA of the frame below, where its return address ends). The frame's own
	 * locals lie in [frames[i].sp, frames[i + 1].sp), which is how a C-stack address
	 * (an eval-loop activation's entry frame) is tied to a frame. 0 if unknown. */
	uint64_t sp;
};

#define NATIVE_MAX_FRAMES 256

struct native_stack {
	struct native_frame frames[NATIVE_MAX_FRAMES]; /* innermost first */
	unsigned int n;
	enum native_end end;
	uint32_t stack_used; /* bytes above RSP the walk read: what a copy must hold */
	/* The first frame found from a PC in no known object (JIT code, a library mapped
	 * since the maps were read): libdwfl walked RBP there, which is right only if
	 * that code keeps frame pointers. 0 if none. */
	unsigned int guessed_from;
	/* A frame-pointer walk's (native_fp.h): the first frame taken from a frame
	 * record (0: none), whether the top frames needed DWARF first, and how often
	 * DWARF went on from a frame without frame pointer (its rule 4). */
	unsigned int fp_first;
	int fp_dwarf_top;
	unsigned int fp_resumed;
};

/* An empty walk, ended nowhere yet; the frames' memory is left as it is. */
static inline void native_unwind__clear_stack(struct native_stack *s)
{
	s->n = 0;
	s->end = NATIVE_END_BAD_FRAME;
	s->stack_used = 0;
	s->guessed_from = 0;
	s->fp_first = 0;
	s->fp_dwarf_top = 0;
	s->fp_resumed = 0;
}

/* The unwinder of one process: its modules (rebuilt when its maps change) and their
 * CFI, and libdwfl's state for that process. Not for concurrent use. */
struct native_unwind;

struct native_unwind_stats {
	uint64_t walks, frames, rebuilds;
	uint64_t ends[NATIVE_END_MAX];
	uint32_t modules, modules_unopened; /* of the current maps */
};

/* Files are opened through @files (NULL: directly; kept, not copied). */
int native_unwind__new(const struct native_files *files, struct native_unwind **out);
void native_unwind__free(struct native_unwind *u);

/*
 * Makes the modules those of @m, rebuilding libdwfl's state only if they changed
 * (m->hash) since the last call. Objects that cannot be opened are left out (their
 * frames end walks as NATIVE_END_NO_CFI). 0, -ENOMEM, or -ENOEXEC if no module could
 * be reported at all; on an error the modules stay those of the last call.
 */
int native_unwind__set_maps(struct native_unwind *u, const struct native_maps *m);

/*
 * Unwinds @s into @out, at most @max_frames (up to NATIVE_MAX_FRAMES). Memory is read
 * only from the snapshot's stack copy (and a slot the sampled epilogue popped, from
 * the register it went into): any other address is refused, so a walk reads
 * nothing live and cannot block. 0 (see out->end for how it ended), or -EINVAL if the
 * snapshot lacks RIP or RSP, -ENOENT if no maps were set.
 */
int native_unwind__walk(struct native_unwind *u, const struct native_snapshot *s,
			unsigned int max_frames, struct native_stack *out);

/*
 * Asked at each frame a walk finds, @f being the last in the walk's output, with the
 * value RBP had in that frame (@rbp_known 0 if CFI could not say): nonzero ends the
 * walk there, @f kept. The hybrid frame-pointer walk (native_fp.h) uses it to hand over
 * to frame records at the first frame whose RBP is one of theirs.
 */
typedef int (*native_unwind_stop_fn)(void *arg, const struct native_frame *f, uint64_t rbp,
				     int rbp_known);

/* native_unwind__walk() that calls @stop (if not NULL) at each frame; a walk it ended
 * has out->end NATIVE_END_BOUND, and the caller knows from its own @arg. */
int native_unwind__walk_until(struct native_unwind *u, const struct native_snapshot *s,
			      unsigned int max_frames, native_unwind_stop_fn stop, void *arg,
			      struct native_stack *out);

/* Called with the PC a walk is about to unwind from (the snapshot's RIP, then each
 * frame's lookup address): whose call-frame information it reads next. The parsing
 * worker keeps it where the profiler can read it if the worker dies. */
typedef void (*native_unwind_watch_fn)(void *arg, uint64_t pc);
void native_unwind__watch(struct native_unwind *u, native_unwind_watch_fn fn, void *arg);

/* libdwfl's view of the process, for symbolisation (native_sym.h); NULL before maps
 * are set. Valid until the next native_unwind__set_maps() that rebuilds. */
Dwfl *native_unwind__dwfl(const struct native_unwind *u);
/* Changes each time the Dwfl is rebuilt, so that a cache of its results knows. */
uint64_t native_unwind__generation(const struct native_unwind *u);

/* The CFI row of @dwfl's modules at @addr (.eh_frame, else .debug_frame), for the
 * caller to free(); NULL where no module maps @addr or none has CFI there. */
Dwarf_Frame *native_unwind__row(Dwfl *dwfl, uint64_t addr);

void native_unwind__stats(const struct native_unwind *u, struct native_unwind_stats *st);

#endif
