// SPDX-License-Identifier: GPL-2.0-only
/*
 * The dump session: find the interpreter (live process or core), list its Python
 * threads, decode each one's stack through the same decoder the profiler uses, and
 * write them as tracebacks. A live target keeps running: every frame is read twice
 * and a stack that changed in between is read again, so a dump never shows a stack
 * torn between two moments. --native and --async hold it still instead (ptrace) while
 * it is read: C stacks, and a task tree that must describe the moment of the stacks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/asyncio_loop.h"
#include "base/clock.h"
#include "decode/decoder.h"
#include "dump/dump.h"
#include "dump/dump_native.h"
#include "dump/dump_tasks.h"
#include "base/exitcodes.h"
#include "cpython/py_interp.h"
#include "base/log.h"
#include "mem/mem_core.h"
#include "mem/mem_live.h"
#include "output/out_traceback.h"
#include "base/privs.h"
#include "base/proc.h"
#include "cpython/py_thread_name.h"
#include "cpython/py_threads.h"
#include "base/strtab.h"
#include "session/target_error.h"
#include "sample/thread_freeze.h"
#include "decode/tid_map.h"

#define DUMP_MAX_THREADS (PBP_INTERPS_MAX * PBP_THREADS_MAX)
#define TORN_RETRIES 3

struct dump_ctx {
	const struct dump_opts *opts;
	struct py_interp interp;
	struct mem_live live;
	struct mem_core *core;
	struct mem_source *mem;
	struct strtab *strs;
	struct decoder *dec;
	struct stack *stack;
	struct py_thread *threads;
	unsigned int nthreads;
	/* --async: each thread's event-loop frame as last decoded (0: none), where
	 * 3.11-3.13 find the tasks */
	uint64_t *loop_frames;
	struct tid_map tids;	/* live: the target's thread ids as /proc names them */
	struct dump_native *native;	/* --native */
};

/* --native: what was read of a thread while the process was held, for writing after
 * it runs again. */
struct dump_held {
	enum tb_cpu cpu;
	struct dump_native_capture cap;
	const char *name;	/* name_buf or NULL */
	char name_buf[PY_THREAD_NAME_MAX];
};

static int core_open_error(const char *path, int err)
{
	switch (err) {
	case -ENOEXEC:
		pr_warn("%s is not an ELF core file of this machine\n", path);
		break;
	case -EIO:
		pr_warn("core %s is truncated (its headers name data past its end)\n", path);
		break;
	case -EINVAL:
		pr_warn("core %s is malformed (unreadable notes, or no thread in it)\n", path);
		break;
	default:
		pr_warn("cannot open core %s: %s\n", path, strerror(-err));
		return err == -ENOMEM ? EXIT_RUNTIME : EXIT_BAD_CORE;
	}
	return EXIT_BAD_CORE;
}

static int core_interp_error(const char *path, int err, const struct py_interp *in,
			     const char *missing, const char *exe)
{
	char ver[32];

	switch (err) {
	case -ENOENT:
		if (!missing[0]) {
			pr_warn("core %s is not of a CPython process (no _PyRuntime symbol in %s "
				"or a libpython)\n", path, exe[0] ? exe : "its executable");
			return EXIT_NOT_PYTHON;
		}
		pr_warn("binary not found: %s (give --exe, or --sysroot for a core from a "
			"container or chroot)\n", missing);
		return EXIT_NO_BINARY;
	case -ESTALE:
		pr_warn("binary %s is not the one the process in core %s ran (give --exe)\n",
			missing, path);
		return EXIT_NO_BINARY;
	case -ENOTSUP:
		py_interp__version_str(in->version_hex, ver, sizeof(ver));
		pr_warn("core %s is of CPython %s%s, which is not supported; supported: "
			PBP_SUPPORTED_VERSIONS "\n", path, in->version_hex ? ver : "older than 3.11",
			in->off.free_threaded ? " (free-threaded)" : "");
		return EXIT_UNSUPPORTED;
	case -EIO:
		pr_warn("core %s lacks the interpreter's memory (truncated, or dumped without "
			"it)\n", path);
		return EXIT_BAD_CORE;
	case -EACCES:
	case -EPERM:
		pr_warn("cannot read the binaries core %s names: permission denied\n", path);
		return EXIT_PRIVILEGES;
	default:
		pr_warn("cannot inspect core %s: %s\n", path, strerror(-err));
		return EXIT_RUNTIME;
	}
}

static int open_live(struct dump_ctx *c)
{
	pid_t pid = c->opts->pid;
	int err;

	mem_live__init(&c->live, pid);
	c->mem = &c->live.base;
	err = py_interp__find(pid, c->mem, &c->interp);
	return err ? target_error__report(pid, err, &c->interp, NULL) : 0;
}

static int open_core(struct dump_ctx *c)
{
	const struct dump_opts *o = c->opts;
	struct mem_core_opts co = { .sysroot = o->sysroot, .exe = o->exe };
	char missing[PATH_MAX];
	uid_t uid;
	gid_t gid;
	int err;

	err = mem_core__open(o->core, &co, &c->core);
	if (err)
		return core_open_error(o->core, err);
	/* The paths a core names are its owner's to choose: they are opened with its
	 * owner's rights, so that a core cannot show root a file its owner may not read. */
	mem_core__owner(c->core, &uid, &gid);
	err = privs__become(uid, gid);
	if (err) {
		pr_warn("%s: cannot take on the rights of its owner (uid %u): %s\n", o->core,
			(unsigned int)uid, strerror(-err));
		return EXIT_PRIVILEGES;
	}
	c->mem = mem_core__mem(c->core);
	err = py_interp__find_core(c->core, &c->interp, missing, sizeof(missing));
	if (err)
		return core_interp_error(o->core, err, &c->interp, missing,
					 mem_core__exe(c->core));
	return 0;
}

static int collect_thread(const struct py_thread *t, void *arg)
{
	struct dump_ctx *c = arg;
	struct py_thread *dst;

	if (c->nthreads == DUMP_MAX_THREADS)
		return 1;
	dst = &c->threads[c->nthreads++];
	*dst = *t;
	dst->ts_bytes = NULL;	/* valid only during the callback */
	dst->ts_len = 0;
	return 0;
}

struct refresh {
	struct py_thread *t;
	int found;
};

static int refresh_thread(const struct py_thread *t, void *arg)
{
	struct refresh *r = arg;

	if (t->tstate != r->t->tstate)
		return 0;
	r->t->current_frame = t->current_frame;
	r->t->anchor = t->anchor;
	r->t->anchor_seq = t->anchor_seq;
	r->found = 1;
	return 1;
}

/* The address of the event loop's frame on @st, which the dump's decoder decoded
 * last; 0 if it has none. */
static uint64_t loop_frame(const struct dump_ctx *c, const struct stack *st)
{
	int32_t i = asyncio_loop__frame(c->strs, st);
	uint64_t addr;
	uint8_t owner;

	if (i < 0 || decoder__frame_addrs(c->dec, (uint32_t)i, 1, &addr, &owner) != 1)
		return 0;
	return addr;
}

/* Decodes @t into c->stack; NULL if the thread runs no Python code or is gone. @cap,
 * if not NULL, is its C stack as read at the same time (3.11 finds its eval-loop
 * activations there). */
static const struct stack *decode_one(struct dump_ctx *c, struct py_thread *t,
				      const struct dump_native_capture *cap)
{
	struct thread_sample s = {
		.pid = (uint32_t)c->interp.pid,
		.tid = t->tid,
		.tstate = t->tstate,
		.mem = c->mem,
		/* A core does not change: one reading is the truth. */
		.verify = c->core ? NULL : c->mem,
	};

	if (cap && cap->stack_len) {
		s.cstack = cap->stack;
		s.cstack_addr = cap->regs[NATIVE_REG_RSP];
		s.cstack_len = cap->stack_len;
	}

	for (int i = 0; i <= TORN_RETRIES; i++) {
		if (i) {
			struct refresh r = { .t = t };

			/* The thread moved on: start again from its current frame. */
			py_threads__walk(c->mem, &c->interp, refresh_thread, &r);
			if (!r.found)
				return NULL;
		}
		if (!t->current_frame)
			return NULL;
		s.current_frame = t->current_frame;
		/* dump walks live memory page by page; the frame headers it used are
		 * read twice and compared (decoder.c: verify). */
		s.anchor = t->anchor;
		s.anchor_seq = t->anchor_seq;
		s.ts_ns = c->core ? 0 : clock__mono_ns();
		decoder__decode_thread(c->dec, &s, c->stack);
		if (c->stack->gap != GAP_TORN)
			break;
	}
	if (c->loop_frames)
		c->loop_frames[t - c->threads] = loop_frame(c, c->stack);
	return c->stack;
}

/*
 * Python's name for thread @t, whose stack @st the dump's decoder decoded last, in
 * @buf; the main thread's is threading's. NULL when neither applies.
 */
static const char *thread_name(struct dump_ctx *c, struct py_thread *t, const struct stack *st,
			       char *buf, size_t len)
{
	pid_t host = (pid_t)t->tid;

	if (st && st->gap == GAP_NONE && !decoder__thread_name(c->dec, st, buf, len))
		return buf;
	if (!c->core && tid_map__host(&c->tids, t->tid, &host))
		return NULL;
	if (host != c->interp.pid)
		return NULL;
	snprintf(buf, len, "%s", PY_THREAD_NAME_MAIN);
	return buf;
}

/* read_held's walk of the thread list once the threads are held. */
static int rehold_thread(const struct py_thread *t, void *arg)
{
	struct dump_ctx *c = arg;

	for (unsigned int i = 0; i < c->nthreads; i++) {
		struct refresh r = { .t = &c->threads[i] };

		if (refresh_thread(t, &r))
			return 0;
	}
	return 0;
}

/*
 * The current frames the thread list gave are from before a hold: one may have
 * returned since, its slot reused or half rewritten. Read them again, held; a thread
 * no longer in the list has none.
 */
static void reread_frames(struct dump_ctx *c)
{
	for (unsigned int i = 0; i < c->nthreads; i++)
		c->threads[i].current_frame = 0;
	py_threads__walk(c->mem, &c->interp, rehold_thread, c);
}

static enum tb_cpu cpu_state(struct dump_ctx *c, uint32_t tid)
{
	char state;
	pid_t host;

	if (c->core || tid_map__host(&c->tids, tid, &host) ||
	    proc__thread_state(c->interp.pid, host, &state))
		return TB_CPU_UNKNOWN;
	return state == 'R' ? TB_CPU_ON : TB_CPU_IDLE;
}

static void held_free(struct dump_held *held, unsigned int n)
{
	for (unsigned int i = 0; held && i < n; i++)
		dump_native__capture_free(&held[i].cap);
	free(held);
}

/*
 * --native: with the process held, each thread's registers, C stack and Python
 * frames; the states /proc shows are read before (a held thread shows as traced).
 */
static int write_tasks(struct dump_ctx *c, FILE *f);

/* @tasks, if not NULL, gets the task tree (--async) as read while held, and *@tasks_code
 * its exit status. */
static int read_held(struct dump_ctx *c, struct dump_held *held, FILE *tasks, int *tasks_code)
{
	uint64_t t0;
	int err = 0;

	for (unsigned int i = 0; i < c->nthreads; i++)
		held[i].cpu = cpu_state(c, c->threads[i].tid);
	t0 = clock__mono_ns();
	err = c->core ? 0 : dump_native__hold(c->native);
	if (err)
		return err;
	if (!c->core)
		reread_frames(c);
	for (unsigned int i = 0; i < c->nthreads && !err; i++) {
		struct dump_held *h = &held[i];
		pid_t host;

		if (c->core)
			err = dump_native__capture_core(c->native, (pid_t)c->threads[i].tid,
							&h->cap);
		else if (!tid_map__host(&c->tids, c->threads[i].tid, &host))
			err = dump_native__capture(c->native, &c->live, host, &h->cap);
		if (err == -ESRCH)
			err = 0;	/* not held, or not in the core: Python frames only */
		if (!err) {
			const struct stack *st = decode_one(c, &c->threads[i], &h->cap);

			h->name = thread_name(c, &c->threads[i], st, h->name_buf,
					      sizeof(h->name_buf));
			err = dump_native__keep_stack(&h->cap, st);
		}
	}
	if (c->core)
		return err;
	if (!err && tasks)
		*tasks_code = write_tasks(c, tasks);
	dump_native__release(c->native);
	pr_info("process %d was held for %.1f ms\n", (int)c->interp.pid,
		(double)(clock__mono_ns() - t0) / 1e6);
	return err;
}

static int hold_error(int err)
{
	switch (err) {
	case -EBUSY:
	case -EPERM:
	case -EACCES:
		return EXIT_PRIVILEGES;
	case -ESRCH:
		return EXIT_NO_PROCESS;
	case -ENOMEM:
		pr_warn("out of memory\n");
		return EXIT_RUNTIME;
	default:
		return EXIT_RUNTIME;
	}
}

static void write_header(const struct dump_ctx *c, FILE *f)
{
	char ver[32];

	py_interp__version_str(c->interp.version_hex, ver, sizeof(ver));
	if (c->core) {
		const pid_t *tids;
		unsigned int n = mem_core__threads(c->core, &tids);

		fprintf(f, "Core %s of process %d: CPython %s (%s), %u Python thread%s of %u; "
			"a core does not record which threads were on a CPU\n", c->opts->core,
			(int)c->interp.pid, ver, c->interp.path, c->nthreads,
			c->nthreads == 1 ? "" : "s", n);
	} else {
		fprintf(f, "Process %d: CPython %s (%s), %u Python thread%s\n", (int)c->interp.pid,
			ver, c->interp.path, c->nthreads, c->nthreads == 1 ? "" : "s");
	}
	fputs("Stacks are most recent call first.\n", f);
}

/* @cpu: the threads' states as read before they were held, or NULL to read them now. */
static int write_dump(struct dump_ctx *c, FILE *f, const enum tb_cpu *cpu)
{
	int err = 0;

	write_header(c, f);
	for (unsigned int i = 0; i < c->nthreads && !err; i++) {
		struct py_thread *t = &c->threads[i];
		struct tb_thread tb = { .tid = t->tid, .gil = t->gil };
		char name[PY_THREAD_NAME_MAX];

		tb.cpu = cpu ? cpu[i] : cpu_state(c, t->tid);
		tb.st = decode_one(c, t, NULL);
		tb.name = thread_name(c, t, tb.st, name, sizeof(name));
		fputc('\n', f);
		err = out_traceback__thread(f, c->strs, &tb);
	}
	if (!err && fflush(f))
		err = -errno;
	return err;
}

/*
 * Closes memory stream @mem (NULL: none), then copies what it held (*@buf, *@len, as
 * open_memstream sets them) to @out and flushes @out. @err is the failure before, kept
 * if there was one; the new one otherwise.
 */
static int copy_out(FILE *mem, char **buf, size_t *len, FILE *out, int err)
{
	if (mem && fclose(mem) && !err)
		err = -ENOMEM;
	if (!err && *buf && *len && fwrite(*buf, 1, *len, out) != *len)
		err = -errno;
	if (!err && fflush(out))
		err = -errno;
	return err;
}

static int write_tasks(struct dump_ctx *c, FILE *f)
{
	const struct dump_tasks_in in = {
		.mem = c->mem, .interp = &c->interp, .dec = c->dec, .strs = c->strs,
		.threads = c->threads, .nthreads = c->nthreads, .loop_frames = c->loop_frames,
	};

	return dump_tasks__run(&in, f);
}

/*
 * dump --async of a live process: the threads' stacks and the task tree describe one
 * moment only if the process holds still while both are read, as for --native. Both
 * are written into memory while it is held and copied out once it runs again, so that
 * a slow reader of the output cannot stretch the hold. A process that cannot be held
 * (another tracer has it, or ptrace is not allowed) is read as it runs, and the dump
 * says that its parts may describe different moments. An exit status.
 */
static int write_async_dump(struct dump_ctx *c)
{
	enum tb_cpu *cpu = calloc(c->nthreads ? c->nthreads : 1, sizeof(*cpu));
	struct thread_freeze *held = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = NULL;
	pid_t tracer = 0;
	uint64_t t0;
	int err, holding, code = EXIT_RUNTIME;

	if (!cpu || !(f = open_memstream(&buf, &len)))
		goto oom;
	/* A held thread shows as traced: the states come first. */
	for (unsigned int i = 0; i < c->nthreads; i++)
		cpu[i] = cpu_state(c, c->threads[i].tid);
	t0 = clock__mono_ns();
	err = thread_freeze__all(c->interp.pid, THREAD_FREEZE_SKIP_D, &held, &tracer);
	if (err == -ESRCH) {
		pr_warn("no such process: %d\n", (int)c->interp.pid);
		code = EXIT_NO_PROCESS;
		goto out;
	}
	if (err == -ENOMEM)
		goto oom;
	holding = !err;
	if (err) {
		char why[64] = "ptrace is not allowed";

		if (err == -EBUSY && tracer)
			snprintf(why, sizeof(why), "process %d traces it", (int)tracer);
		else if (err == -EBUSY)
			snprintf(why, sizeof(why), "another process traces it");
		pr_warn("cannot hold process %d (%s): its stacks and its task tree are read "
			"while it runs, and may describe different moments\n", (int)c->interp.pid,
			why);
	} else {
		reread_frames(c);
	}
	err = write_dump(c, f, cpu);
	code = err ? EXIT_RUNTIME : write_tasks(c, f);
	/* A thread in an uninterruptible wait stays seized until this process exits,
	 * which lets it go without its ever stopping. */
	if (held)
		thread_freeze__let_go(held);
	if (holding)
		pr_info("process %d was held for %.1f ms\n", (int)c->interp.pid,
			(double)(clock__mono_ns() - t0) / 1e6);
	err = copy_out(f, &buf, &len, stdout, err);
	f = NULL;
	if (err) {
		pr_warn("cannot write the dump: %s\n", strerror(-err));
		code = EXIT_RUNTIME;
	}
	goto out;
oom:
	pr_warn("out of memory\n");
out:
	if (f)
		fclose(f);
	thread_freeze__free(held);
	free(buf);
	free(cpu);
	return code;
}

/*
 * dump --native: read everything with the process held, then write; with --async the
 * task tree too, read held into memory. An exit status.
 */
static int write_native_dump(struct dump_ctx *c, FILE *f)
{
	struct dump_held *held = calloc(c->nthreads ? c->nthreads : 1, sizeof(*held));
	int want_tasks = c->opts->async_tasks && !c->core, code = EXIT_OK, err;
	char *buf = NULL;
	size_t len = 0;
	FILE *tasks = want_tasks ? open_memstream(&buf, &len) : NULL;

	if (!held || (want_tasks && !tasks)) {
		pr_warn("out of memory\n");
		code = EXIT_RUNTIME;
		goto out;
	}
	err = read_held(c, held, tasks, &code);
	if (err) {
		code = hold_error(err);
		goto out;
	}
	write_header(c, f);
	for (unsigned int i = 0; i < c->nthreads && !err; i++) {
		struct py_thread *t = &c->threads[i];
		struct tb_thread tb = { .tid = t->tid, .gil = t->gil, .cpu = held[i].cpu,
					.name = held[i].name };

		tb.st = dump_native__kept_stack(&held[i].cap, c->stack);
		err = dump_native__frames(c->native, &held[i].cap, tb.st, &tb);
		if (!err) {
			fputc('\n', f);
			err = out_traceback__thread(f, c->strs, &tb);
		}
	}
	err = copy_out(tasks, &buf, &len, f, err);
	tasks = NULL;
	if (err) {
		pr_warn("cannot write the dump: %s\n", strerror(-err));
		code = EXIT_RUNTIME;
	}
out:
	if (tasks)
		fclose(tasks);
	free(buf);
	held_free(held, c->nthreads);
	return code;
}

static int run(struct dump_ctx *c)
{
	struct decoder_cfg dc = { .interp = &c->interp, .strs = NULL };
	const char *what = c->core ? c->opts->core : NULL;
	int err;

	c->strs = strtab__new();
	c->stack = malloc(sizeof(*c->stack));
	c->threads = calloc(DUMP_MAX_THREADS, sizeof(*c->threads));
	if (c->opts->async_tasks)
		c->loop_frames = calloc(DUMP_MAX_THREADS, sizeof(*c->loop_frames));
	if (!c->strs || !c->stack || !c->threads ||
	    (c->opts->async_tasks && !c->loop_frames)) {
		pr_warn("out of memory\n");
		return EXIT_RUNTIME;
	}
	dc.live = c->mem;
	dc.strs = c->strs;
	if (!c->core)
		tid_map__init(&c->tids, c->interp.pid);
	err = decoder__new(&dc, &c->dec);
	if (err) {
		pr_warn("cannot set up the decoder: %s\n", strerror(-err));
		return EXIT_RUNTIME;
	}
	err = py_threads__walk(c->mem, &c->interp, collect_thread, c);
	if (err < 0) {
		if (what) {
			pr_warn("core %s lacks the interpreter's thread list\n", what);
			return EXIT_BAD_CORE;
		}
		if (proc__alive(c->interp.pid)) {
			pr_warn("no such process: %d\n", (int)c->interp.pid);
			return EXIT_NO_PROCESS;
		}
		pr_warn("cannot read the thread list of process %d\n", (int)c->interp.pid);
		return EXIT_RUNTIME;
	}
	if (c->opts->native) {
		err = dump_native__new(c->interp.pid, c->core, c->opts->native_all, &c->native);
		if (err == -ENOENT && c->core) {
			pr_warn("core %s maps no executable file: no native stacks\n", what);
			return EXIT_BAD_CORE;
		}
		if (err) {
			pr_warn("cannot set up native unwinding: %s\n", strerror(-err));
			return EXIT_RUNTIME;
		}
		return write_native_dump(c, stdout);
	}
	if (c->opts->async_tasks)
		return write_async_dump(c);
	err = write_dump(c, stdout, NULL);
	if (err) {
		pr_warn("cannot write the dump: %s\n", strerror(-err));
		return EXIT_RUNTIME;
	}
	return EXIT_OK;
}

int dump__run(const struct dump_opts *o)
{
	struct dump_ctx c = { .opts = o };
	int code;

	code = o->core ? open_core(&c) : open_live(&c);
	if (code == EXIT_OK)
		code = run(&c);
	dump_native__free(c.native);
	decoder__free(c.dec);
	strtab__free(c.strs);
	free(c.stack);
	free(c.threads);
	free(c.loop_frames);
	mem_core__close(c.core);
	return code;
}
