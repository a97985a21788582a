/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Stack -> sample count. Writers read the aggregate through this interface only and
 * never reach back into decoding.
 */
#ifndef PBP_AGGREGATE_H
#define PBP_AGGREGATE_H

#include <stddef.h>
#include <stdint.h>

enum agg_frame_kind {
	AGG_PYTHON,	/* name = co_qualname, file = co_filename, line */
	AGG_THREAD,	/* name = "thread TID", line = its slot in the thread table
			 * (profile__name() reads it by the thread's label) */
	AGG_MARKER,	/* name = a note such as "[incomplete]" */
	AGG_PROCESS,	/* name = "process PID COMMAND" */
	AGG_WAIT,	/* name = why the thread was off the CPU: "[off-CPU: sleep]" */
	AGG_TASK,	/* name = "task NAME": an asyncio task (--async) */
	/* name = the C function ("lib.so+0xSTART" in a stripped object), file = the
	 * object's base name ("libc.so.6"), line = byte offset into the function (-1:
	 * unknown, or line numbers off); --native. Where DWARF line info names the
	 * source, name = the pair "FUNCTION\0SOURCE" (strtab__second() reads SOURCE,
	 * profile__source()) and line = the source line, as for Python frames: the frame
	 * keeps its object without growing every stack key. */
	AGG_NATIVE,
};

struct agg_frame {
	uint32_t kind;
	uint32_t name;		/* strtab ids */
	uint32_t file;
	int32_t line;		/* -1: unknown */
};

/*
 * A stack is keyed by its process, its thread and its frames: writers that show
 * threads apart (speedscope, pprof labels, chrome) need them, and writers that merge
 * threads do so themselves.
 */
struct agg_stack {
	uint64_t count;
	uint32_t pid, tid;
	uint32_t depth;
	struct agg_frame *frames;	/* root first */
};

struct aggregate;

struct aggregate *aggregate__new(void);
void aggregate__free(struct aggregate *a);
/* Adds @count samples of a stack; *@index (if given) is its aggregate__stack() index,
 * which never changes. */
int aggregate__add(struct aggregate *a, uint32_t pid, uint32_t tid,
		   const struct agg_frame *frames, uint32_t depth, uint64_t count,
		   uint32_t *index);
/* Adds @count to stack @index, which aggregate__add() gave. */
void aggregate__add_to(struct aggregate *a, uint32_t index, uint64_t count);
size_t aggregate__count(const struct aggregate *a);
/* Stacks in insertion order; valid until the next aggregate__add. */
const struct agg_stack *aggregate__stack(const struct aggregate *a, size_t i);
uint64_t aggregate__total(const struct aggregate *a);

/*
 * Native objects: what pprof needs beyond a native frame's text. A frame names its
 * object by base name only, which two builds of a library share (a container's libc
 * and the host's), so the object is looked up by (pid, base name); and a frame gives
 * its offset into its function, so the function's start (func_rel, an ELF vaddr in
 * the object) is kept per (object, name): the exact address is func_rel + line. The
 * session fills both as it adds native frames; a profile without them has none, and
 * a frame without them is written without an address.
 */
struct agg_native_object {
	uint32_t file;		/* strtab id of the base name, as in the frames */
	uint32_t path;		/* strtab id of the path the process maps it from */
	uint32_t build_id;	/* strtab id of the build-id in lower-case hex, "" if none */
};

/*
 * Says that in process @pid native frames whose file is @file are of the object at
 * @path with @build_id. 0; -EEXIST if (@pid, @file) is another object already, which
 * stays (one process rarely maps two objects of one base name); -ENOMEM.
 */
int aggregate__native_object(struct aggregate *a, uint32_t pid, uint32_t file,
			     uint32_t path, uint32_t build_id);
/*
 * Says where function @name of the object (@pid, @file) starts: @func_rel, an ELF
 * vaddr. 0; -ENOENT if aggregate__native_object() has not named the object; -EEXIST
 * if the function has another start already (two static functions of one name), the
 * first staying; -ENOMEM.
 */
int aggregate__native_function(struct aggregate *a, uint32_t pid, uint32_t file,
			       uint32_t name, uint64_t func_rel);
/* Objects are numbered 0 .. aggregate__native_objects() - 1, in the order named. */
size_t aggregate__native_objects(const struct aggregate *a);
struct agg_native_object aggregate__native_object_at(const struct aggregate *a, uint32_t i);
/* The object of the native frames of @file in @pid: 0 with *@object, or -ENOENT. */
int aggregate__native_object_of(const struct aggregate *a, uint32_t pid, uint32_t file,
				uint32_t *object);
/* Where function @name of @object starts: 0 with *@func_rel, or -ENOENT. */
int aggregate__native_func_rel(const struct aggregate *a, uint32_t object, uint32_t name,
			       uint64_t *func_rel);
/*
 * The native tables entry by entry, for a profile written out and read back as it
 * was: objects by index (aggregate__native_object_at()), which process maps which
 * object under which base name, and where each function starts.
 */
struct agg_native_proc {
	uint32_t pid, file, object;
};

struct agg_native_function {
	uint32_t object, name;
	uint64_t func_rel;
};

size_t aggregate__native_procs(const struct aggregate *a);
struct agg_native_proc aggregate__native_proc_at(const struct aggregate *a, uint32_t i);
size_t aggregate__native_functions(const struct aggregate *a);
struct agg_native_function aggregate__native_function_at(const struct aggregate *a, uint32_t i);
/* Each adds the next entry: 0; -EEXIST if its key is there already, -ENOENT if it
 * names an object not yet added, -ENOMEM. */
int aggregate__put_native_object(struct aggregate *a, struct agg_native_object o);
int aggregate__put_native_proc(struct aggregate *a, struct agg_native_proc p);
int aggregate__put_native_function(struct aggregate *a, struct agg_native_function f);
/* Names in @to the objects and functions @from has for process @pid: for a copy of
 * one process's stacks. 0 or -ENOMEM. */
int aggregate__copy_natives(struct aggregate *to, const struct aggregate *from,
			    uint32_t pid);

#endif
