/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Everything that crosses the kernel/user boundary: the ring-buffer sample record, the
 * per-target configuration the BPF program reads, the per-thread cache entry and the
 * failure counters. Only fixed-width types with explicit padding, so that the BPF
 * object (clang -target bpf) and the loader (gcc) agree byte for byte.
 */
#ifndef PBP_ABI_H
#define PBP_ABI_H

#ifdef __bpf__
typedef __u8 pbp_u8;
typedef __u16 pbp_u16;
typedef __u32 pbp_u32;
typedef __u64 pbp_u64;
typedef __s32 pbp_s32;
#else
#include <stdint.h>
typedef uint8_t pbp_u8;
typedef uint16_t pbp_u16;
typedef uint32_t pbp_u32;
typedef uint64_t pbp_u64;
typedef int32_t pbp_s32;
#endif

#define PBP_ABI_VERSION 9

/* Upper bounds the verifier needs as constants. */
#define PBP_TSTATE_MAX 2048		/* bytes of PyThreadState copied, at most */
#define PBP_STACK_MAX (128 * 1024)	/* bytes of data-stack chunks copied: less than this */
#define PBP_STACK_DEFAULT (120 * 1024)
#define PBP_SEGMENTS_MAX 8		/* data-stack chunks copied per sample */
#define PBP_FP_FRAMES 8			/* innermost frames whose code is fingerprinted */
/* ... and room in a record for the fingerprints of deeper frames that BPF checked
 * (PBP_CK_CHECK), which decoding needs once their code is freed. */
#define PBP_FPS_MAX 32
#define PBP_FRAME_HDR_MAX 128		/* bytes of one frame header copied */
/*
 * The frames of the sampled thread that live outside its chunks (3.12+ entry frames on
 * the C stack at every call from C back into Python, generator and coroutine frames in
 * their objects) move on as soon as the thread does: BPF follows the whole chain and
 * copies each such frame's header, up to this many. A real program's stack holds one
 * for each C-to-Python call and each resumed generator below the sampled frame.
 */
#define PBP_FRAMES_MAX 64
/* Frames the walk follows at most: a chunk copy of PBP_STACK_MAX holds fewer (a frame
 * takes at least its 72-byte header and one slot), plus PBP_FRAMES_MAX outside. */
#define PBP_WALK_MAX 2048
/*
 * Code objects can be freed before user space reads them: a module's body right after
 * it ran (at start-up most samples are under one), exec'd code, a process that exits.
 * A code object user space does not hold yet (pbp_codes_known) has what naming it
 * needs copied with the sample: the object up to its bytecode, its qualified name,
 * file name, line table and (before 3.13) name, up to PBP_CODES_MAX of them, innermost first, within
 * PBP_CODE_BYTES_MAX bytes, each copy as a struct pbp_span.
 */
#define PBP_CODES_MAX 16
#define PBP_CODE_BYTES_MAX (32 * 1024)
#define PBP_CODE_HDR_MAX 512		/* PyCodeObject up to co_code_adaptive */
#define PBP_STR_COPY_MAX 512		/* a name's str object, header included */
#define PBP_LINETABLE_COPY_MAX (8 * 1024)	/* a line table's bytes object */
#define PBP_CODE_SPANS 5		/* copies per code object, at most */
#define PBP_CODES_KNOWN (1u << 15)	/* slots of pbp_codes_known */
#define PBP_THREADS_MAX 512		/* thread-list walk bound per interpreter */
#define PBP_TARGETS_MAX 1024		/* processes sampled at once */
/* The scheduler's programs see every switch on the host: a count of targets per
 * tgid % PBP_TARGET_BUCKETS, kept by user space, lets them pass over the threads of
 * other processes with one load instead of a hash lookup. */
#define PBP_TARGET_BUCKETS 4096
/* They time one run in this many of their own (a clock read costs as much as their
 * usual run), and the rest is counted. */
#define PBP_OFF_TIMED_EVERY 64
/* Stacks of one thread's waits taken per window before its draw threshold rises:
 * 100 per 100 ms, ten times what a busy thread's ticks take at the default 100 Hz,
 * so that a thread handing the GIL back and forth every 5 ms keeps every wait. The
 * threshold never rises past 2^30 ns (about a second). */
#define PBP_OFF_WINDOW_NS 100000000ull
#define PBP_OFF_WINDOW_BUDGET 100
#define PBP_OFF_THRESHOLD_MAX_NS (1ull << 30)
#define PBP_INTERPS_MAX 4		/* interpreters walked per process */
/* --native: bytes of the user stack copied from RSP up, at most and by default. 1.7
 * KiB reach _start from a CPython loop; each Python->C->Python re-entry adds 5-7 KiB
 * (docs/native-unwinding.md). */
#define PBP_NATIVE_STACK_MAX (64 * 1024)
#define PBP_NATIVE_STACK_DEFAULT (16 * 1024)
#define PBP_NATIVE_STACK_MIN (4 * 1024)
#define PBP_NATIVE_REGS 17		/* x86-64 DWARF registers 0-16 */
/* --native-unwind fp: frame records a walk takes at most (a CPython loop has 11-14
 * frames to _start, each Python->C->Python re-entry adds 5-7), and the stack copied
 * beside it for the top frames, which may lack frame pointers (a leaf in libc, a
 * prologue), unless --native-stack says otherwise. */
#define PBP_NATIVE_FP_MAX 128
#define PBP_NATIVE_FP_STACK_DEFAULT 1024
/* ... and at least this much for a thread in the kernel (a system call, an off-CPU
 * wait): it is in libc's wrappers (pthread_cond_timedwait and the futex calls under
 * it, without frame pointers), whose frames 1 KiB did not get through in half of the
 * GIL waits measured, and 4 KiB did in all. */
#define PBP_NATIVE_FP_STACK_ENTRY 4096

/* pbp_sample.flags */
#define PBP_SF_TSTATE_FAULT	(1u << 0)	/* thread state could not be copied */
#define PBP_SF_STACK_FAULT	(1u << 1)	/* a chunk could not be copied */
#define PBP_SF_STACK_TRUNCATED	(1u << 2)	/* the copy cap cut older frames off */
#define PBP_SF_MORE_CHUNKS	(1u << 3)	/* older chunks exist beyond the segments */
#define PBP_SF_FP_FAULT		(1u << 4)	/* some fingerprints could not be read */
#define PBP_SF_FROM_ANCHOR	(1u << 5)	/* copied only down to the cached anchor */
#define PBP_SF_STACK_MOVING	(1u << 6)	/* caught switching chunks: top not in chunk */
#define PBP_SF_OFF_CPU		(1u << 7)	/* an off-CPU interval: see off_ns */
#define PBP_SF_OFF_PENDING	(1u << 8)	/* ... whose length a pbp_off_end brings */
#define PBP_SF_CPU_TIMED	(1u << 9)	/* an on-CPU tick standing for off_ns of CPU */
#define PBP_SF_NATIVE		(1u << 10)	/* a pbp_native block at native_off */
/* How the walk of the frame chain ended, when not at its bottom or the anchor: the
 * frames below were not copied, and can only be read live. */
#define PBP_SF_FRAMES_CUT	(1u << 11)	/* more than PBP_FRAMES_MAX outside chunks */
#define PBP_SF_WALK_CUT		(1u << 12)	/* PBP_WALK_MAX frames followed */
#define PBP_SF_FRAME_FAULT	(1u << 13)	/* a frame outside the chunks unreadable */
#define PBP_SF_WALK_ENDS	(PBP_SF_FRAMES_CUT | PBP_SF_WALK_CUT | PBP_SF_FRAME_FAULT)
#define PBP_SF_CODES_CUT	(1u << 14)	/* unknown code objects left uncopied */
/* A tick of a thread that ran no Python code (no thread state or frame yet, or any
 * more): the header alone. */
#define PBP_SF_NO_PYTHON	(1u << 15)
/* --async: the running task object, and its name object's first PBP_TASK_NAME_COPY
 * bytes where they could be read, are among the spans. A handler's task may end, and
 * its memory be reused, well before user space reads the record. */
#define PBP_SF_TASK_COPIED	(1u << 16)
#define PBP_TASK_COPY_MAX	256	/* a task object's bytes copied, at most */
#define PBP_TASK_NAME_COPY	64	/* an int, or a str's header and a short name */
/* Before 3.14, the same flag says that asyncio's dict of each loop's running task is
 * among the spans instead (pbp_target.current_tasks): the dict, its keys object if it
 * holds at most PBP_LOOP_ENTRIES_MAX entries in at most 16 index bytes, and the first
 * PBP_LOOP_TASKS_MAX tasks it names, each with its name and the object of its first
 * done callback (the task_wakeup of a task that awaits it, which goes once it ends). */
#define PBP_LOOP_ENTRIES_MAX	10
#define PBP_LOOP_TASKS_MAX	4
#define PBP_CALLBACK_COPY	80	/* a builtin method's self, a function's closure */

/* pbp_sample.ts_flags: the sampled thread's state */
#define PBP_TS_ON_CPU		(1u << 0)	/* running on a CPU */
#define PBP_TS_GIL		(1u << 1)	/* holds the GIL */
#define PBP_TS_GIL_KNOWN	(1u << 2)	/* PBP_TS_GIL is meaningful */

/* One contiguous span of target memory copied into the record. */
struct pbp_segment {
	pbp_u64 addr;
	pbp_u32 len;
	pbp_u32 _pad;
};

/*
 * Identity of a frame's code object as seen while the thread was stopped on-CPU: the
 * decoder accepts a cached code object for this frame only if its fingerprint matches,
 * so a code object freed and reallocated at the same address before the record is
 * decoded cannot lend its name to the sample.
 */
struct pbp_code_fp {
	pbp_u64 frame;
	pbp_u64 code;
	pbp_u64 fp;
};

/* A copy of target memory whose length varies: this header, then len bytes, then
 * padding to the next 8-byte boundary. */
struct pbp_span {
	pbp_u64 addr;
	pbp_u32 len;
	pbp_u32 _pad;
};

_Static_assert(sizeof(struct pbp_span) == 16, "pbp_span layout");

/*
 * Ring-buffer record: this header, then tstate_len bytes of the thread state, then the
 * chunks' bytes in seg[] order, then nframes copies of frames outside the chunks, each
 * the frame's address (8 bytes) and frame_len bytes of its header, innermost first,
 * then nspans pbp_spans (code objects and what they point to), at an 8-byte boundary.
 * len is the whole record.
 */
_Static_assert(sizeof(struct pbp_segment) == 16, "pbp_segment layout");
_Static_assert(sizeof(struct pbp_code_fp) == 24, "pbp_code_fp layout");
struct pbp_sample {
	pbp_u16 abi;
	pbp_u16 hdr_len;
	pbp_u32 len;
	pbp_u32 pid;
	pbp_u32 tid;
	pbp_u64 ts_ns;
	pbp_u32 cpu;
	pbp_u32 flags;
	pbp_u64 tstate;
	pbp_u64 current_frame;
	pbp_u32 tstate_len;
	pbp_u32 nsegs;		/* chunk spans in seg[] */
	pbp_u32 nfps;
	pbp_u32 ts_flags;	/* PBP_TS_* */
	pbp_u64 anchor;		/* 3.15+: last_profiled_frame as read, else 0 */
	pbp_u64 anchor_seq;	/* 3.15+: last_profiled_frame_seq */
	pbp_u32 cache_gen;	/* with PBP_SF_FROM_ANCHOR: the pbp_fcache entry used */
	pbp_u32 cache_depth;	/* ... and which of its path[] the anchor had reached */
	/*
	 * With PBP_SF_OFF_CPU: the thread was off the CPU from ts_ns for off_real_ns, and
	 * the stack is where it blocked. off_ns is what the record stands for: the
	 * interval, or the threshold for a short interval kept with probability
	 * length / threshold. With PBP_SF_OFF_PENDING (a thread preempted, or waiting
	 * for a page outside any system call, copied as it switched out) both are 0 and
	 * the thread's next pbp_off_end brings the length. off_state is the task state
	 * it switched out in (0: preempted); off_syscall (-1: none) and off_arg the
	 * system call it was in and that call's first argument. gil is the GIL's state
	 * its interpreter uses (0: unknown), for telling a GIL wait from other futexes.
	 * With PBP_SF_CPU_TIMED (an on-CPU tick in wall mode): off_ns is the CPU time
	 * the thread used since its previous tick, as the scheduler counts it, so that
	 * its ticks add up to its CPU time exactly rather than by the count; off_real_ns
	 * is the time a hypervisor took from the thread's runs since then, which that
	 * CPU time leaves out (stolen, on a virtual machine).
	 */
	pbp_u64 off_ns;
	pbp_u64 off_real_ns;
	pbp_u64 off_arg;
	pbp_u64 gil;
	pbp_s32 off_syscall;
	pbp_u32 off_state;
	/*
	 * With --async (pbp_target.ts_running_task set): the thread's running asyncio
	 * task, 0 if none, and the fingerprint of the code of that task's coroutine (0
	 * if unreadable), which names the frame where the task's own stack begins and
	 * tells a task still alive at decoding from another at the same address.
	 */
	pbp_u64 task;
	pbp_u64 task_fp;
	/* With PBP_SF_NATIVE: where the struct pbp_native block starts (8-aligned, after
	 * the spans' bytes) and its length with the stack bytes; both 0 without. */
	pbp_u32 native_off;
	pbp_u32 native_len;
	pbp_u32 nframes;	/* frame copies after the chunks' bytes, <= PBP_FRAMES_MAX */
	pbp_u32 frame_len;	/* header bytes in each, <= PBP_FRAME_HDR_MAX */
	pbp_u32 nspans;		/* <= PBP_CODES_MAX * PBP_CODE_SPANS */
	pbp_u32 spans_off;	/* where the first starts; 0 with none */
	struct pbp_segment seg[PBP_SEGMENTS_MAX];
	struct pbp_code_fp fps[PBP_FPS_MAX];
};

/* pbp_native.flags */
#define PBP_NF_REGS_AT_ENTRY	(1u << 0)	/* the thread was in the kernel: the regs
						 * are those saved at its entry (system
						 * call, interrupt, fault) */
#define PBP_NF_STACK_FAULT	(1u << 1)	/* the copy ends where a page could not be
						 * read (most often the stack's top) */
#define PBP_NF_STACK_CAPPED	(1u << 2)	/* the copy is the whole configured size:
						 * the stack may go on above it */
#define PBP_NF_STACK_TOP	(1u << 3)	/* the copy ends at the stack's top (the
						 * main thread's first RSP, else the end
						 * of RSP's mapping): all of it is there */
#define PBP_NF_FP_WALK		(1u << 4)	/* nfp frame records at fp_off: a
						 * frame-pointer walk from regs[6] (RBP) */
/* How that walk ended, with PBP_NF_FP_WALK: exactly one of these. */
#define PBP_NF_FP_ZERO		(1u << 5)	/* a saved frame pointer or a return
						 * address of 0: the ABI's mark of the
						 * outermost frame, or a function that
						 * keeps 0 in RBP */
#define PBP_NF_FP_LIMIT		(1u << 6)	/* PBP_NATIVE_FP_MAX records: may go on */
#define PBP_NF_FP_BROKEN	(1u << 7)	/* a frame pointer misaligned, not above
						 * the last record, outside the stack, or
						 * on a page that could not be read */
#define PBP_NF_FP_ENDS		(PBP_NF_FP_ZERO | PBP_NF_FP_LIMIT | PBP_NF_FP_BROKEN)
#define PBP_NF_KNOWN		(PBP_NF_REGS_AT_ENTRY | PBP_NF_STACK_FAULT | \
				 PBP_NF_STACK_CAPPED | PBP_NF_STACK_TOP | PBP_NF_FP_WALK | \
				 PBP_NF_FP_ENDS)

/*
 * One frame record of a frame-pointer walk: the 16 bytes at fp are the caller's saved
 * RBP and ret, the return address into the caller. Nothing here says that the code
 * owning a record keeps frame pointers: user space checks that against each PC's CFI
 * (user/native/native_fp.c) before it believes a record.
 */
struct pbp_native_fp {
	pbp_u64 fp;		/* where the record was read: a frame's RBP */
	pbp_u64 ret;		/* *(fp + 8), never 0 */
};

_Static_assert(sizeof(struct pbp_native_fp) == 16, "pbp_native_fp layout");

/*
 * --native: the sampled thread's user registers and a copy of its user stack, for the
 * unwinder in user space (user/native/native_unwind.c, struct native_snapshot). The registers
 * are in DWARF order: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip. The stack bytes are
 * those from regs[7] (RSP) up, stack_len of them at stack_off from the record's start.
 * With PBP_NF_FP_WALK (--native-unwind fp, ABI 6), nfp pbp_native_fp records, innermost
 * first, at fp_off (right after this header; the stack bytes follow them), each at a
 * higher address than the last; without, nfp and fp_off are 0 and the stack bytes
 * follow the header. kstack_id and reserved are 0: kept for kernel stacks to come.
 */
struct pbp_native {
	pbp_u16 hdr_len;	/* sizeof(struct pbp_native) */
	pbp_u16 flags;		/* PBP_NF_* */
	pbp_u32 regs_mask;	/* bit i: regs[i] is known */
	pbp_u64 regs[PBP_NATIVE_REGS];
	pbp_u32 stack_len;
	pbp_u32 stack_off;	/* 8-aligned, within native_off + native_len */
	pbp_u32 nfp;		/* <= PBP_NATIVE_FP_MAX */
	pbp_u32 fp_off;		/* 8-aligned: native_off + hdr_len, or 0 */
	pbp_s32 kstack_id;
	pbp_u32 reserved;
};

_Static_assert(sizeof(struct pbp_native) == 8 + 8 * PBP_NATIVE_REGS + 24, "pbp_native layout");

/*
 * The end of a pending off-CPU interval (PBP_SF_OFF_PENDING): the thread is back on a
 * CPU. Told apart from a pbp_sample in the same ring buffer by hdr_len.
 */
struct pbp_off_end {
	pbp_u16 abi;
	pbp_u16 hdr_len;	/* sizeof(struct pbp_off_end) */
	pbp_u32 len;
	pbp_u32 pid;
	pbp_u32 tid;
	pbp_u64 off_ns;
};

_Static_assert(sizeof(struct pbp_off_end) == 24, "pbp_off_end layout");

/*
 * Wall mode: the CPU time a thread used after its last tick, and the time the
 * hypervisor took from its runs since (see PBP_SF_CPU_TIMED), sent as it exits. Both
 * count under the stack of that tick. Told apart by hdr_len, like pbp_off_end.
 */
struct pbp_cpu_rest {
	pbp_u16 abi;
	pbp_u16 hdr_len;	/* sizeof(struct pbp_cpu_rest) */
	pbp_u32 len;
	pbp_u32 pid;
	pbp_u32 tid;
	pbp_u64 cpu_ns;
	pbp_u64 stolen_ns;
};

_Static_assert(sizeof(struct pbp_cpu_rest) == 32, "pbp_cpu_rest layout");

/*
 * A target thread's wait still open when a profile ends, from the task iterator
 * (pbp_open_waits): the part since start_ns, off_ns long, is reported here and no
 * longer counts in the record the wait's end brings. Its stack is read by user space:
 * a blocked thread's does not move. In wall mode, cpu_ns is the CPU time the thread
 * used since its last tick, which the next tick will no longer count, and stolen_ns
 * the time the hypervisor took from its runs since then.
 */
struct pbp_open_wait {
	pbp_u32 pid;		/* host ids */
	pbp_u32 tid;
	pbp_u64 start_ns;
	pbp_u64 off_ns;		/* 0: not waiting */
	pbp_u64 arg;
	pbp_s32 syscall;	/* -1: not in a system call */
	pbp_u32 state;		/* the task state it waits in */
	pbp_u64 cpu_ns;
	pbp_u64 stolen_ns;
};

_Static_assert(sizeof(struct pbp_open_wait) == 56, "pbp_open_wait layout");

/*
 * How the fingerprint of a code object is read (per CPython version).
 *
 * 3.13+ number every new code object (co_version), but a constructor stores the new
 * object's names, line table and constants before its version: a successor built at
 * a freed object's address carries the old version, under its own names, until the
 * constructor gets there (interning the names comes in between, and the thread may
 * be preempted there while the decoder reads). So the version is paired with the
 * cached hash of co_qualname, which the successor sets before its version: one that
 * already bears its own name no longer matches. (Before that, every field is still
 * the freed object's.)
 */
enum pbp_fp_mode {
	PBP_FP_NONE = 0,
	/* *(u32 *)(code + fp_off), and in the upper half the low 32 bits of
	 * *(u64 *)(*(code + fp_off2) + fp_off3): 3.13+ co_version, co_qualname's hash */
	PBP_FP_U32_HASH = 1,
	/* *(u64 *)(*(code + fp_off) + fp_off2) ^ *(u64 *)(code + fp_off3): before 3.13,
	 * co_name's hash and the co_filename pointer, for every module's body has the
	 * same name */
	PBP_FP_PTR_U64 = 2,
};

/*
 * What the BPF program needs to know about one target process. Offsets are bytes into
 * the named CPython struct; user space derives them per interpreter version.
 */
struct pbp_target {
	pbp_u64 runtime;		/* address of _PyRuntime */
	pbp_u32 rt_interp_head;
	pbp_u32 interp_next;		/* PBP_OFF_ABSENT: walk the first only */
	pbp_u32 interp_threads_head;
	pbp_u32 ts_next;
	pbp_u32 ts_native_tid;
	pbp_u32 ts_cframe;		/* 0xffffffff: none (3.13+) */
	pbp_u32 cframe_current_frame;
	pbp_u32 ts_current_frame;	/* 0xffffffff: none (3.11/3.12) */
	pbp_u32 ts_chunk;
	pbp_u32 ts_top;
	pbp_u32 ts_copy_len;		/* <= PBP_TSTATE_MAX */
	pbp_u32 chunk_previous;
	pbp_u32 chunk_top;
	pbp_u32 chunk_data;
	pbp_u32 fr_code;
	pbp_u32 fr_previous;
	pbp_u32 fr_hdr_len;		/* <= PBP_FRAME_HDR_MAX */
	pbp_u32 chunk_size;
	pbp_u64 code_mask;		/* clears _PyStackRef tag bits (3.14+) */
	pbp_u32 fp_mode;
	pbp_u32 fp_off;
	pbp_u32 fp_off2;
	pbp_u32 fp_off3;
	pbp_u32 stack_cap;		/* <= PBP_STACK_MAX */
	pbp_u32 ts_anchor;		/* last_profiled_frame; PBP_OFF_ABSENT before 3.15 */
	pbp_u32 ts_anchor_seq;		/* last_profiled_frame_seq */
	pbp_u32 native_fp;		/* --native-unwind fp: records to walk; 0: none */
	/*
	 * The GIL: at a fixed address (3.11, one GIL for every interpreter), or behind
	 * the sampled thread's interpreter (3.12+, where a subinterpreter may have its
	 * own): gil is then 0 and interp_gil is the offset of the GIL pointer in
	 * PyInterpreterState, found through the tstate's interp at ts_interp.
	 */
	pbp_u64 gil;			/* address of the GIL's state, 0 if per interpreter */
	pbp_u32 gil_locked;		/* int */
	pbp_u32 gil_holder;		/* PyThreadState * */
	pbp_u32 ts_interp;		/* PyInterpreterState *; PBP_OFF_ABSENT with gil */
	pbp_u32 interp_gil;		/* struct _gil_runtime_state *; likewise */
	/* --async (PBP_OFF_ABSENT: off): the running task's pointer in the thread state
	 * (_PyThreadStateImpl, past the copied part), its coroutine in the task, and the
	 * coroutine's own frame in it. */
	pbp_u32 ts_running_task;
	pbp_u32 task_coro;
	pbp_u32 gen_iframe;
	pbp_u32 task_name;		/* ... its name in the task */
	pbp_u32 task_copy_len;		/* ... the task's bytes to copy, <= PBP_TASK_COPY_MAX */
	pbp_u32 native_stack;		/* --native: user stack bytes to copy; 0: off */
	/* When it became a target (bpf_ktime_get_ns()): a wait already under way then
	 * is counted from here. */
	pbp_u64 since_ns;
	/* Code copies (PBP_CODES_MAX); co_copy_len 0: none. */
	pbp_u32 fr_owner;		/* the frame's owner byte */
	pbp_u32 shim_owners;		/* bit o: frames of owner o run no code of their own */
	pbp_u32 co_copy_len;		/* <= PBP_CODE_HDR_MAX */
	pbp_u32 co_qualname;		/* ... the pointers within it, 8-aligned */
	pbp_u32 co_filename;
	pbp_u32 co_linetable;
	pbp_u32 str_len;		/* a str's length (characters) */
	pbp_u32 str_hdr;		/* bytes before a compact str's characters, at most */
	pbp_u32 bytes_len;		/* a bytes object's ob_size */
	pbp_u32 bytes_hdr;		/* bytes before its data */
	/* --async before 3.14, once learnt (0: not yet): asyncio's dict of each loop's
	 * running task; the dict's bytes to copy, and its keys object's pointer in them. */
	pbp_u32 dict_copy_len;
	pbp_u32 dict_keys;
	pbp_u64 current_tasks;
	pbp_u32 task_callback0;		/* ... a task's first done callback in it */
	pbp_u32 _pad2;
};

/*
 * An offset the target's CPython does not have. 0 is a real offset (interp_next on
 * 3.11/3.12, _PyStackChunk.previous, ...), never "absent".
 */
#define PBP_OFF_ABSENT 0xffffffffu

_Static_assert(sizeof(struct pbp_sample) == 168 + 16 * PBP_SEGMENTS_MAX + 24 * PBP_FPS_MAX,
	       "pbp_sample layout");

/*
 * The largest record: the header, the copied thread state, the capped chunk bytes,
 * then the frames that live outside the chunks; with --native, then the native block
 * and its stack bytes, at the next 8-byte boundary.
 */
#define PBP_PAYLOAD_OFF_MAX (sizeof(struct pbp_sample) + PBP_TSTATE_MAX)
#define PBP_FRAME_COPY_BYTES (8 + PBP_FRAME_HDR_MAX)
#define PBP_PY_RECORD_MAX (PBP_PAYLOAD_OFF_MAX + PBP_STACK_MAX + PBP_FRAMES_MAX * PBP_FRAME_COPY_BYTES)
/* Code copies share the stack's allowance: a sample with a long chunk copy has little
 * room left for them, one at start-up (shallow chunks, every code new) has plenty. */
_Static_assert(PBP_CODE_BYTES_MAX + PBP_CODES_MAX * PBP_CODE_SPANS * (sizeof(struct pbp_span) + 8) <=
	       PBP_STACK_MAX, "code copies fit the stack's allowance");
#define PBP_NATIVE_OFF_MAX ((PBP_PY_RECORD_MAX + 7) & ~(pbp_u64)7)
/* A walk's records and the stack bytes after them share PBP_NATIVE_STACK_MAX: with a
 * walk, the copy is cut to what the records leave. */
#define PBP_RECORD_MAX (PBP_NATIVE_OFF_MAX + sizeof(struct pbp_native) + PBP_NATIVE_STACK_MAX)
_Static_assert(PBP_NATIVE_FP_MAX * sizeof(struct pbp_native_fp) + PBP_NATIVE_STACK_MIN <=
	       PBP_NATIVE_STACK_MAX, "a full walk leaves room for the smallest copy");
/*
 * The verifier bounds a copy into the record by the largest offset plus the largest
 * length, not by their sum; the program copies by bands of lengths so that the two
 * together overshoot the record by at most one band (see read_span() there).
 */
#define PBP_STACK_BANDS 32
#define PBP_STACK_BAND (PBP_STACK_MAX / PBP_STACK_BANDS)
/* Scratch space per CPU, where a record is built. */
#define PBP_SCRATCH_SIZE (PBP_RECORD_MAX + PBP_STACK_BAND)

_Static_assert(PBP_STACK_BAND * PBP_STACK_BANDS == PBP_STACK_MAX, "whole bands");
_Static_assert(PBP_NATIVE_STACK_MAX <= PBP_STACK_MAX, "native copies fit read_span()'s bands");
_Static_assert(sizeof(struct pbp_native) % 8 == 0, "the native stack bytes stay 8-aligned");
_Static_assert(PBP_SCRATCH_SIZE >= PBP_RECORD_MAX + PBP_STACK_BAND, "a record fits the scratch space");
/* Allocated twice per possible CPU, with or without --native: kept near the largest
 * record (the Python part is ~139 KiB of it, the native part 64 KiB). */
_Static_assert(PBP_SCRATCH_SIZE <= 212 * 1024, "scratch space near the largest record");
_Static_assert(sizeof(struct pbp_target) == 240, "pbp_target layout");

/*
 * The code objects user space holds, by process: a direct-mapped table that user space
 * fills as it reads code objects and BPF reads at every frame. A slot holding another
 * object only costs a copy. One naming an object freed since, whose address a new one
 * took, is told apart by the fingerprint in the innermost PBP_FP_FRAMES frames, which
 * BPF reads anyway, and in every frame with PBP_CK_CHECK; elsewhere the new object is
 * read live, as before copies existed, and user space clears the slot when that fails.
 */
struct pbp_code_known {
	pbp_u64 code;
	pbp_u64 fp;
	pbp_u32 pid;
	pbp_u32 flags;		/* PBP_CK_* */
};

/* pbp_code_known.flags. A code object that runs once and is dropped (a module's or a
 * class's body, exec'd code, and what dies with it) is the one whose address the next
 * takes: its fingerprint is checked in every frame, not only in the innermost, until
 * user space has seen it live long enough. */
#define PBP_CK_HELD	(1u << 0)
#define PBP_CK_CHECK	(1u << 1)

_Static_assert(sizeof(struct pbp_code_known) == 24, "pbp_code_known layout");

static inline pbp_u32 pbp_code_slot(pbp_u32 pid, pbp_u64 code)
{
	pbp_u64 h = ((code >> 4) ^ ((pbp_u64)pid << 40)) * 0x9e3779b97f4a7c15ull;

	return (pbp_u32)(h >> 49) & (PBP_CODES_KNOWN - 1);
}

/* Thread lookup cache: tid -> PyThreadState. tstate == 0 is a negative entry that
 * expires at retry_ns, so threads without Python state cost one lookup per sample
 * and a new Python thread is found within PBP_THREAD_RETRY_NS. A tstate that runs
 * no code is looked up again after retry_ns too: the thread may have moved to its
 * state in another interpreter. */
struct pbp_thread {
	pbp_u64 tstate;
	pbp_u64 retry_ns;
};

#define PBP_THREAD_RETRY_NS (20ull * 1000 * 1000)

/*
 * The frame cache's anchor for one thread (3.15+), written by user space once it holds
 * the decoded parents of the frame at path[0], which was live when the anchor pointed
 * at it with sequence seq. The interpreter moves the anchor to a frame's parent and
 * bumps the sequence when that frame returns, so (anchor, seq) == (path[j], seq + j)
 * proves path[j] is still the activation user space decoded: the program then copies
 * only the frames above it. docs/frame-cache.md has the whole argument.
 */
#define PBP_PATH_MAX 8

struct pbp_fcache {
	pbp_u64 tstate;
	pbp_u64 seq;
	pbp_u32 gen;
	pbp_u32 npath;
	pbp_u64 path[PBP_PATH_MAX];
};

_Static_assert(sizeof(struct pbp_fcache) == 24 + 8 * PBP_PATH_MAX, "pbp_fcache layout");

/* While the tick's timer is learnt: what one timer expiring on the loader's CPU did.
 * The tick's is the one that expired every tick period, on the dot, all along. */
#define PBP_TICK_LEARN_MAX 256
struct pbp_tick_learn {
	pbp_u64 fn;		/* its function */
	pbp_u64 last;		/* its latest expiry time */
	pbp_u64 on_period;	/* expiries one tick period after the one before */
};

/* The kernel's clocks at one instant, read by BPF (pbp_clock_probe): the loader
 * measures the scheduler tick's rate from two of them. */
struct pbp_clock_reading {
	pbp_u64 jiffies;
	pbp_u64 ns;		/* CLOCK_MONOTONIC */
};

/*
 * Process events for following processes without polling /proc: a new image
 * (system-wide mode only: every exec on the host), a fork of a target, and the exit
 * of a target. They go through their own small ring buffer, so that a burst of
 * samples can never crowd out the news that a process exited.
 */
enum pbp_event_type {
	PBP_EV_EXEC = 1,
	PBP_EV_FORK = 2,	/* pid is the child, ppid the target that forked */
	PBP_EV_EXIT = 3,
};

struct pbp_event {
	pbp_u32 type;
	pbp_u32 pid;
	pbp_u32 ppid;
	pbp_u32 _pad;
	pbp_u64 ts_ns;		/* CLOCK_MONOTONIC, as user space reads it */
};

_Static_assert(sizeof(struct pbp_event) == 24, "pbp_event layout");

/* Why samples of targets were not delivered, per CPU. */
enum pbp_counter {
	PBP_C_TARGET_EVENTS,	/* perf events that hit a target thread */
	PBP_C_SUBMITTED,	/* records written to the ring buffer */
	PBP_C_RINGBUF_DROPS,	/* ring buffer full */
	PBP_C_NO_TSTATE,	/* thread has no Python thread state (yet) */
	PBP_C_THREAD_WALKS,	/* thread-list walks (cache misses) */
	PBP_C_TSTATE_FAULTS,	/* thread state unreadable */
	PBP_C_STACK_FAULTS,	/* data-stack chunk unreadable */
	PBP_C_NO_FRAME,		/* thread state has no current frame */
	PBP_C_SCRATCH_MISSING,	/* per-CPU scratch lookup failed (cannot happen) */
	PBP_C_WAKEUPS,		/* forced consumer wake-ups at the fill threshold */
	PBP_C_EVENT_DROPS,	/* process events lost: the events ring buffer was full */
	PBP_C_SELF_NS,		/* program run time, when it times itself (self_timed) */
	PBP_C_SELF_RUNS,	/* program runs, when it times itself */
	/* Off-CPU (--mode wall / off-cpu) */
	PBP_C_SWITCH_OUTS,	/* target threads switched out */
	PBP_C_OFF_INTERVALS,	/* waits measured: ended, or open at a profile's end */
	PBP_C_OFF_NS,		/* their total length */
	PBP_C_OFF_SAMPLED,	/* intervals whose stack was taken */
	PBP_C_OFF_SHORT_SKIPPED,	/* short intervals left out by the draw */
	PBP_C_OFF_NO_STORAGE,	/* a thread's switch state could not be kept or read */
	PBP_C_OFF_SELF_NS,	/* the switch programs' run time over their timed runs */
	PBP_C_OFF_SELF_RUNS,	/* their runs */
	PBP_C_OFF_SELF_TIMED,	/* their timed runs, one in PBP_OFF_TIMED_EVERY */
	/* --native */
	PBP_C_NATIVE_COPIED,	/* records that carry a native block */
	PBP_C_NATIVE_BYTES,	/* user stack bytes in them */
	PBP_C_NATIVE_CAPPED,	/* copies that filled the size asked: deeper frames cut */
	PBP_C_NATIVE_FAULTS,	/* copies that met an unreadable page (cut back, or empty) */
	PBP_C_NATIVE_FP_WALKS,	/* blocks with a frame-pointer walk */
	PBP_C_NATIVE_FP_RECORDS,	/* frame records in them */
	PBP_C_NATIVE_FP_BROKEN,	/* walks that ended PBP_NF_FP_BROKEN */
	PBP_C_MAX,
};

#endif
