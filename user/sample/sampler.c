// SPDX-License-Identifier: GPL-2.0-only
/*
 * BPF lifecycle; see sampler.h. Records are submitted without wake-ups (a perf-event
 * program that wakes the consumer per record was measured to lose most samples while
 * the consumer sleeps in epoll), so the consumer polls on a short timer and the
 * program forces a wake-up only when the buffer passes a fill threshold.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/clock.h"
#include "base/fd.h"
#include "base/log.h"
#include "pbp_abi.h"
#include "sample/perf_clock.h"
#include "sample.skel.h"
#include "sample/sampler.h"
#include "sample/sampler_cgroup.h"
#include "sample/sampler_tasks.h"
#include "sample/tick_clock.h"

struct sampler {
	struct sampler_cfg cfg;
	struct sample_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link **links;	/* per-CPU clocks */
	int *pfds;
	int ncpus;
	bool every_cpu;			/* ... are on: every target is ticked */
	struct sampler_cgroup *cgroup;	/* or per-CPU clocks of the targets' cgroup */
	struct sampler_tasks *tasks;	/* or per-thread clocks (--clock thread, fallback) */
	struct bpf_link *tick;		/* or the scheduler's tick */
	uint32_t tick_hz;
	int stats_fd;
	uint64_t new_ns;		/* CLOCK_MONOTONIC as sampler__new began */
	uint64_t first_ns;		/* ... as the first sample record arrived, or 0 */
	uint64_t yield_ns;		/* when this poll hands the loop back; 0: never */
	bool yielded;			/* ... and it did, with records left */
	const uint8_t *ring_data;	/* where libbpf mapped the samples ring's data (twice
					 * over), found at the first record; NULL before */
	int ring_looked;		/* ... and whether it was looked for */
};

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && log__level() < LOG_DEBUG)
		return 0;
	if (level == LIBBPF_INFO && log__level() < LOG_INFO)
		return 0;
	/* libbpf warns about load failures that we report ourselves with a clearer
	 * message; keep its details for -v. */
	if (log__level() < LOG_INFO)
		return 0;
	fputs("pybpfprof: ", stderr);	/* libbpf starts its lines with "libbpf: " */
	return vfprintf(stderr, fmt, ap);
}

/* The first record's times, for -v: how long start-up kept the profile from
 * beginning (tools/bench part 12 reads this line). */
static void first_record(struct sampler *s, const void *data, size_t len)
{
	const struct pbp_sample *rec = data;
	struct rusage ru;
	long long cpu_ms;
	uint64_t taken;

	/* A wait's end or a CPU rest shares the buffer; only a stack counts. */
	if (len < sizeof(*rec) || rec->hdr_len != sizeof(*rec))
		return;
	taken = rec->ts_ns;
	s->first_ns = clock__mono_ns();
	/* The CPU time so far is what start-up costs on an idle host: a busy one
	 * stretches the wall time by its waits for a CPU. */
	if (getrusage(RUSAGE_SELF, &ru))
		memset(&ru, 0, sizeof(ru));
	cpu_ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000ll +
		 (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
	pr_info("first sample: taken at %llu.%06llu, received at %llu.%06llu "
		"(CLOCK_MONOTONIC), %llu ms after the sampler began to load; %lld ms of CPU "
		"since pybpfprof started\n",
		(unsigned long long)(taken / 1000000000ull),
		(unsigned long long)(taken % 1000000000ull / 1000),
		(unsigned long long)(s->first_ns / 1000000000ull),
		(unsigned long long)(s->first_ns % 1000000000ull / 1000),
		(unsigned long long)((s->first_ns - s->new_ns) / 1000000), cpu_ms);
}

/*
 * libbpf's consumer returns only once the ring is empty, which a consumer slower than
 * its producers never sees: the caller's loop (-d, new targets, the maps of native
 * targets) would wait for the target to end. A negative return stops it after this
 * record, which libbpf has already consumed.
 */
/*
 * The samples ring's data area, from the mapping that holds the record at @data:
 * libbpf maps the producer's page and the data twice over in one mapping, and gives no
 * way to ask where. Our own maps are read once; a mapping of another size is not the
 * ring's, and then nothing is found.
 */
static void find_ring(struct sampler *s, const void *data)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), at = (uint64_t)(uintptr_t)data;
	char line[512];
	FILE *f;

	s->ring_looked = 1;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;

		if (sscanf(line, "%llx-%llx", &lo, &hi) != 2 || at < lo || at >= hi)
			continue;
		if (hi - lo == page + 2ull * s->cfg.ringbuf_bytes)
			s->ring_data = (const uint8_t *)(uintptr_t)(lo + page);
		break;
	}
	fclose(f);
}

int sampler__ring(const struct sampler *s, int *fd, uint32_t *bytes, const uint8_t **data)
{
	if (!s->ring_data)
		return -EAGAIN;
	*fd = bpf_map__fd(s->skel->maps.samples);
	*bytes = s->cfg.ringbuf_bytes;
	*data = s->ring_data;
	return 0;
}

static int handle_record(void *ctx, void *data, size_t len)
{
	struct sampler *s = ctx;
	int err;

	if (!s->first_ns)
		first_record(s, data, len);
	if (!s->ring_looked)
		find_ring(s, data);
	err = s->cfg.on_sample(s->cfg.ctx, data, len);
	if (!err && s->yield_ns && clock__mono_ns() >= s->yield_ns) {
		s->yielded = true;
		return -EAGAIN;
	}
	return err;
}

static int handle_event(void *ctx, void *data, size_t len)
{
	struct sampler *s = ctx;

	if (len < sizeof(struct pbp_event))
		return 0;
	return s->cfg.on_event(s->cfg.ctx, data);
}

static int attach_clocks(struct sampler *s)
{
	int err = 0, attached = 0;

	s->ncpus = libbpf_num_possible_cpus();
	if (s->ncpus <= 0)
		return -EINVAL;
	s->links = calloc(s->ncpus, sizeof(*s->links));
	s->pfds = malloc(s->ncpus * sizeof(*s->pfds));
	if (!s->links || !s->pfds)
		return -ENOMEM;
	for (int cpu = 0; cpu < s->ncpus; cpu++)
		s->pfds[cpu] = -1;
	for (int cpu = 0; cpu < s->ncpus; cpu++) {
		s->pfds[cpu] = perf_clock__open(-1, cpu, s->cfg.rate_hz);
		if (s->pfds[cpu] < 0) {
			/* A possible CPU that is offline has no clock; skip it. */
			if (s->pfds[cpu] == -ENODEV)
				continue;
			err = s->pfds[cpu];
			pr_debug("perf_event_open on CPU %d: %s\n", cpu, strerror(-err));
			return err;
		}
		s->links[cpu] = bpf_program__attach_perf_event(s->skel->progs.pbp_sample,
							       s->pfds[cpu]);
		if (!s->links[cpu]) {
			err = -errno;
			pr_debug("attach to CPU %d: %s\n", cpu, strerror(-err));
			return err;
		}
		attached++;
	}
	s->every_cpu = attached > 0;
	return attached ? 0 : -ENODEV;
}

/* Opens and loads the program, with the tick's program when @tick. */
static int load(struct sampler *s, bool tick)
{
	const struct sampler_cfg *cfg = &s->cfg;

	s->skel = sample_bpf__open();
	if (!s->skel)
		return -errno;
	s->skel->rodata->wakeup_bytes = cfg->wake_each ? 1 : cfg->ringbuf_bytes / 4;
	s->skel->rodata->every_exec = cfg->every_exec;
	s->skel->rodata->min_block_ns = cfg->min_block_ns;
	s->skel->rodata->nr_cpus = libbpf_num_possible_cpus();
	/* On the tick, a thread switched out between ticks misses some of them: its
	 * samples carry the CPU time it used since its last, as in wall mode. */
	s->skel->rodata->cpu_timed = (cfg->off_cpu && cfg->on_cpu) || tick;
	s->skel->rodata->tick_ns = 1000000000ull / (cfg->rate_hz ? cfg->rate_hz : 1);
	s->skel->rodata->native_stacks = cfg->native_stack != 0;
	/* Only the programs this mode attaches are loaded: the verifier's walk of each
	 * is most of the start-up time. Off-CPU sampling also costs every context switch
	 * and every system call on the host a check: only when asked for. The timers'
	 * program and the tick's are one or the other. */
	bpf_program__set_autoload(s->skel->progs.pbp_sample, cfg->on_cpu && !tick);
	bpf_program__set_autoload(s->skel->progs.pbp_switch, cfg->off_cpu);
	bpf_program__set_autoload(s->skel->progs.pbp_sys_exit, cfg->off_cpu);
	bpf_program__set_autoload(s->skel->progs.pbp_open_waits, cfg->off_cpu);
	bpf_program__set_autoload(s->skel->progs.pbp_tick, tick);
	bpf_program__set_autoload(s->skel->progs.pbp_clock_probe, tick);
	bpf_program__set_autoattach(s->skel->progs.pbp_tick, false);
	bpf_program__set_autoattach(s->skel->progs.pbp_clock_probe, false);
	s->skel->rodata->self_timed = s->stats_fd < 0;
	bpf_map__set_max_entries(s->skel->maps.samples, cfg->ringbuf_bytes);
	bpf_map__set_max_entries(s->skel->maps.scratch, 2 * libbpf_num_possible_cpus());
	if (cfg->threads_max) {
		bpf_map__set_max_entries(s->skel->maps.threads, cfg->threads_max);
		bpf_map__set_max_entries(s->skel->maps.fcache, cfg->threads_max);
	}
	return sample_bpf__load(s->skel);
}

/* The scheduler's tick as the clock: 0, or why not in @why. */
static int attach_tick(struct sampler *s, char *why, size_t len)
{
	struct tick_clock_probe probe = {
		.fd = bpf_program__fd(s->skel->progs.pbp_clock_probe),
		.reading = &s->skel->bss->clock_reading,
		.learn_cpu = &s->skel->data->learn_cpu,
		.learn_period = &s->skel->bss->learn_period,
		.learn_fd = bpf_map__fd(s->skel->maps.tick_learn),
	};
	uint64_t fn = 0;
	int err;

	/* Attached first, with tick_fn 0, so that the check sees the timers pass. */
	s->tick = bpf_program__attach(s->skel->progs.pbp_tick);
	if (!s->tick) {
		err = -errno;
		snprintf(why, len, "attaching to %s failed (%s)", TICK_CLOCK_TRACEPOINT,
			 strerror(-err));
		return err;
	}
	err = tick_clock__check(&probe, s->cfg.rate_hz, &s->tick_hz, &fn, why, len);
	if (err) {
		bpf_link__destroy(s->tick);
		s->tick = NULL;
		s->tick_hz = 0;
		return err;
	}
	s->skel->bss->tick_rate = s->cfg.rate_hz;
	s->skel->bss->tick_hz = s->tick_hz;
	s->skel->bss->tick_fn = fn;
	pr_info("sampling on the scheduler's tick (%u Hz): %u of every %u ticks of each "
		"target thread\n", s->tick_hz, s->cfg.rate_hz, s->tick_hz);
	return 0;
}

/* The timers: per CPU for every target, or opened as each target comes, per thread
 * (--clock thread) or per CPU while the targets' cgroup runs. */
static int attach_timers(struct sampler *s)
{
	if (!s->cfg.per_target)
		return attach_clocks(s);
	if (s->cfg.clock == SAMPLER_CLOCK_THREAD)
		return sampler_tasks__new(s->skel->progs.pbp_sample, s->cfg.rate_hz, &s->tasks);
	return sampler_cgroup__new(s->skel->progs.pbp_sample, s->cfg.rate_hz, &s->cgroup);
}

static int attach_on_cpu(struct sampler *s)
{
	char why[160] = "";

	if (s->cfg.clock != SAMPLER_CLOCK_TICK)
		return attach_timers(s);
	if (!attach_tick(s, why, sizeof(why)))
		return 0;
	pr_warn("--clock tick: the scheduler's tick cannot be the clock: %s\n", why);
	return -ECANCELED;
}

int sampler__new(const struct sampler_cfg *cfg, struct sampler **out)
{
	struct sampler *s = calloc(1, sizeof(*s));
	bool tick;
	int err;

	if (!s)
		return -ENOMEM;
	s->cfg = *cfg;
	s->stats_fd = -1;
	s->new_ns = clock__mono_ns();
	libbpf_set_print(libbpf_log);

	/* Run-time accounting stays on while this fd is open; it costs two clock reads
	 * per program run, which the reported per-sample cost then includes. Without it
	 * the program reads the clock itself, at the same cost. It covers every
	 * program on the host: with the scheduler's programs loaded, which run far more
	 * often than ticks and time one run in PBP_OFF_TIMED_EVERY themselves, it is
	 * left off. */
	if (!cfg->off_cpu) {
		s->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (s->stats_fd < 0)
			pr_debug("bpf_enable_stats: %s; the program times itself\n",
				 strerror(errno));
	}
	tick = cfg->on_cpu && cfg->clock == SAMPLER_CLOCK_TICK;
	if (tick && !tick_clock__kernel_has()) {
		pr_warn("--clock tick: this kernel's BTF has no %s tracepoint\n",
			TICK_CLOCK_TRACEPOINT);
		err = -ECANCELED;
		goto fail;
	}
	err = load(s, tick);
	if (err && tick) {
		/* Whether it is the tick's program that the kernel refuses. */
		sample_bpf__destroy(s->skel);
		s->skel = NULL;
		if (!load(s, false)) {
			pr_warn("--clock tick: this kernel would not load the tick's program "
				"(%s)\n", strerror(-err));
			err = -ECANCELED;
			goto fail;
		}
	}
	if (err) {
		pr_debug("loading the BPF program: %s\n", strerror(-err));
		goto fail;
	}
	err = sample_bpf__attach(s->skel);	/* the tracepoints */
	if (err)
		goto fail;
	if (cfg->on_cpu)
		err = attach_on_cpu(s);
	if (err)
		goto fail;
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.samples), handle_record, s, NULL);
	if (!s->rb) {
		err = -errno;
		goto fail;
	}
	if (cfg->on_event &&
	    ring_buffer__add(s->rb, bpf_map__fd(s->skel->maps.events), handle_event, s)) {
		err = -errno;
		goto fail;
	}
	*out = s;
	return 0;
fail:
	sampler__free(s);
	return err;
}

uint32_t sampler__tick_hz(const struct sampler *s)
{
	return s->tick_hz;
}

void sampler__stop(struct sampler *s)
{
	/* Threads still held since an attach stay so until sampler__free(). */
	sampler_tasks__close(s->tasks);
	sampler_cgroup__close(s->cgroup);
	bpf_link__destroy(s->tick);
	s->tick = NULL;
	if (s->skel) {
		bpf_link__destroy(s->skel->links.pbp_switch);
		bpf_link__destroy(s->skel->links.pbp_sys_exit);
		s->skel->links.pbp_switch = s->skel->links.pbp_sys_exit = NULL;
	}
	if (s->links) {
		for (int cpu = 0; cpu < s->ncpus; cpu++) {
			bpf_link__destroy(s->links[cpu]);
			s->links[cpu] = NULL;
			if (s->pfds[cpu] >= 0)
				close(s->pfds[cpu]);
			s->pfds[cpu] = -1;
		}
	}
	/*
	 * A program that started before its link went may still be running on another
	 * CPU (or its vCPU be off the host's): it outputs its record before it counts it,
	 * so counters read now could miss what the ring buffer holds. They run as RCU
	 * readers, and a global membarrier waits for every CPU to leave one. Without it
	 * (an old kernel), the counters may lag by a record a CPU.
	 */
	syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0);
}

void sampler__free(struct sampler *s)
{
	if (!s)
		return;
	sampler__stop(s);
	sampler_tasks__free(s->tasks);
	sampler_cgroup__free(s->cgroup);
	ring_buffer__free(s->rb);
	sample_bpf__destroy(s->skel);
	if (s->stats_fd >= 0)
		close(s->stats_fd);
	free(s->links);
	free(s->pfds);
	free(s);
}

/* Per-thread clocks for @pid; where it cannot have them (another tracer holds it, too
 * many threads), every target is ticked by per-CPU clocks from now on, and the others
 * close so that no thread is sampled twice. */
static int tick_threads(struct sampler *s, pid_t pid)
{
	int err = s->tasks ? 0 : sampler_tasks__new(s->skel->progs.pbp_sample,
						     s->cfg.rate_hz, &s->tasks);

	if (!err)
		err = sampler_tasks__add(s->tasks, pid);
	if (!err || err == -ESRCH || err == -ENOMEM)
		return err;
	pr_info("process %d: no clock of its own for each thread (%s); sampling with one "
		"on every CPU\n", (int)pid, err == -EBUSY ? "another process traces it" :
		err == -E2BIG ? "too many threads" : strerror(-err));
	/* Not freed: threads of earlier targets may still be held (sampler_tasks.h). */
	sampler_tasks__close(s->tasks);
	sampler_cgroup__close(s->cgroup);
	return attach_clocks(s);
}

/* The clocks for a new target: its cgroup's, or else its threads' own. A target whose
 * cgroup cannot be named is outside the cgroups the clocks tick for, so that it is
 * never under both. */
static int tick_target(struct sampler *s, pid_t pid)
{
	int err;

	if (s->every_cpu)
		return 0;
	if (!s->cgroup)
		return tick_threads(s, pid);
	err = sampler_cgroup__add(s->cgroup, pid);
	if (!err || err == -ESRCH || err == -ENOMEM)
		return err;
	pr_info("process %d: no clocks for its cgroup (%s); a clock for each of its "
		"threads instead, which samples threads shorter than a period too "
		"little\n", (int)pid, err == -ENOENT ? "no cgroup v2 path to it" :
		strerror(-err));
	return tick_threads(s, pid);
}

static uint32_t off32(uint64_t off)
{
	return off == PBP_OFF_NONE ? PBP_OFF_ABSENT : (uint32_t)off;
}

/* What BPF needs to copy code objects user space does not hold (PBP_CODES_MAX): every
 * offset below the size it copies, pointers 8-aligned, or no copies at all. */
static void code_copies(const struct py_offsets *o, struct pbp_target *t)
{
	uint32_t shims = 0;

	if (o->owner_cstack < 32)
		shims |= 1u << o->owner_cstack;
	if (o->owner_interpreter < 32)
		shims |= 1u << o->owner_interpreter;
	if (o->co_size > PBP_CODE_HDR_MAX || o->fr_owner >= o->fr_size ||
	    o->co_qualname + 8 > o->co_size || o->co_filename + 8 > o->co_size ||
	    o->co_linetable + 8 > o->co_size || (o->co_qualname | o->co_filename |
						  o->co_linetable) & 7 ||
	    o->unicode_compact_data > PBP_STR_COPY_MAX || o->bytes_sval > PBP_STR_COPY_MAX)
		return;
	t->fr_owner = (pbp_u32)o->fr_owner;
	t->shim_owners = shims;
	t->co_copy_len = (pbp_u32)o->co_size;
	t->co_qualname = (pbp_u32)o->co_qualname;
	t->co_filename = (pbp_u32)o->co_filename;
	t->co_linetable = (pbp_u32)o->co_linetable;
	t->str_len = (pbp_u32)o->unicode_length;
	t->str_hdr = (pbp_u32)o->unicode_compact_data;
	t->bytes_len = (pbp_u32)o->bytes_size;
	t->bytes_hdr = (pbp_u32)o->bytes_sval;
}

int sampler__add_target(struct sampler *s, const struct py_interp *in, uint64_t gil,
			const struct py_asyncio *a, int native_fp)
{
	const struct py_offsets *o = &in->off;
	struct pbp_target t = {
		.runtime = in->runtime,
		.rt_interp_head = off32(o->runtime_interpreters_head),
		.interp_next = off32(o->interp_next),
		.interp_threads_head = off32(o->interp_threads_head),
		.ts_next = off32(o->ts_next),
		.ts_native_tid = off32(o->ts_native_thread_id),
		.ts_cframe = off32(o->ts_cframe),
		.cframe_current_frame = off32(o->cframe_current_frame),
		.ts_current_frame = off32(o->ts_current_frame),
		.ts_chunk = off32(o->ts_datastack_chunk),
		.ts_top = off32(o->ts_datastack_top),
		.ts_copy_len = o->ts_size < PBP_TSTATE_MAX ? (pbp_u32)o->ts_size : PBP_TSTATE_MAX,
		.chunk_previous = off32(o->chunk_previous),
		.chunk_size = off32(o->chunk_size),
		.chunk_top = off32(o->chunk_top),
		.chunk_data = off32(o->chunk_data),
		.fr_code = off32(o->fr_code),
		.fr_previous = off32(o->fr_previous),
		.fr_hdr_len = o->fr_size <= PBP_FRAME_HDR_MAX ? (pbp_u32)o->fr_size : 0,
		.code_mask = o->executable_tagged ? ~(uint64_t)7 : ~(uint64_t)0,
		.stack_cap = s->cfg.stack_cap,
		.ts_anchor = off32(o->ts_last_profiled_frame),
		.ts_anchor_seq = off32(o->ts_last_profiled_frame_seq),
		.gil = gil,
		.gil_locked = off32(o->gil_locked),
		.gil_holder = off32(o->gil_last_holder),
		.since_ns = clock__mono_ns(),
		.ts_running_task = PBP_OFF_ABSENT,
		.native_stack = native_fp && s->cfg.native_stack ? s->cfg.native_fp_stack :
								  s->cfg.native_stack,
		.native_fp = native_fp && s->cfg.native_stack ? PBP_NATIVE_FP_MAX : 0,
	};
	struct pbp_target old;
	uint32_t pid = in->pid;
	bool known;
	int err;

	if (o->co_version != PBP_OFF_NONE) {
		t.fp_mode = PBP_FP_U32_HASH;
		t.fp_off = (pbp_u32)o->co_version;	/* below OBJ_SIZE_MAX: py_offsets.c */
		t.fp_off2 = (pbp_u32)o->co_qualname;
		t.fp_off3 = (pbp_u32)o->unicode_length + 8;	/* the str's cached hash */
	} else {
		t.fp_mode = PBP_FP_PTR_U64;
		t.fp_off = (pbp_u32)o->co_name;
		t.fp_off2 = (pbp_u32)o->unicode_length + 8;	/* the str's cached hash */
		t.fp_off3 = (pbp_u32)o->co_filename;
	}
	if (!s->cfg.frame_cache)
		t.ts_anchor = t.ts_anchor_seq = PBP_OFF_ABSENT;
	code_copies(o, &t);
	/* From 3.12 on every interpreter points at its GIL, its own or the main one's:
	 * the program follows the sampled thread's interpreter to it. */
	t.ts_interp = t.interp_gil = PBP_OFF_ABSENT;
	if (o->runtime_gil == PBP_OFF_NONE && gil) {
		t.gil = 0;
		t.ts_interp = off32(o->ts_interp);
		t.interp_gil = off32(o->interp_gil_ptr);
		if (t.ts_interp == PBP_OFF_ABSENT || t.ts_interp + 8 > t.ts_copy_len)
			t.interp_gil = PBP_OFF_ABSENT;
	}
	if (t.gil_locked == PBP_OFF_ABSENT || t.gil_holder == PBP_OFF_ABSENT) {
		t.gil = 0;
		t.interp_gil = PBP_OFF_ABSENT;
	}
	if (a && a->ts_running_task < UINT32_MAX && a->task_coro < UINT32_MAX &&
	    o->gen_iframe < UINT32_MAX) {
		t.ts_running_task = (pbp_u32)a->ts_running_task;
		t.task_coro = (pbp_u32)a->task_coro;
		t.gen_iframe = (pbp_u32)o->gen_iframe;
		/* The task's fields user space reads are all in its copy, name included. */
		if (a->task_size <= PBP_TASK_COPY_MAX && a->task_name + 8 <= a->task_size &&
		    a->task_awaited_by + 8 <= a->task_size && a->task_is_task < a->task_size &&
		    a->task_awaited_by_is_set < a->task_size) {
			t.task_name = (pbp_u32)a->task_name;
			t.task_copy_len = (pbp_u32)a->task_size;
		}
	}
	/* Before 3.14, once learnt: the dict and the tasks read from it are in the copy. */
	if (a && a->route == PY_ASYNCIO_MODULE && a->current_tasks &&
	    o->dict_keys + 8 <= 64 && o->dict_values + 8 <= 64 &&
	    a->task_size <= PBP_TASK_COPY_MAX && a->task_name + 8 <= a->task_size) {
		t.current_tasks = a->current_tasks;
		t.dict_keys = (pbp_u32)o->dict_keys;
		t.dict_copy_len = (pbp_u32)(o->dict_keys > o->dict_values ? o->dict_keys : o->dict_values) + 8;
		t.task_name = (pbp_u32)a->task_name;
		t.task_copy_len = (pbp_u32)a->task_size;
		t.task_callback0 = a->task_callback0 + 8 <= a->task_size ?
				   (pbp_u32)a->task_callback0 : PBP_OFF_ABSENT;
	}
	known = !bpf_map__lookup_elem(s->skel->maps.targets, &pid, sizeof(pid), &old, sizeof(old), 0);
	if (known)
		t.since_ns = old.since_ns;	/* the same target, told more */
	/* Per-target clocks exist only when timers time on-CPU samples of record -p. They
	 * come before the target does: a clock per thread holds every thread still while
	 * it is opened (sampler_tasks.h), and that hold is not the target's to wait. */
	if (!known && (s->cgroup || s->tasks)) {
		err = tick_target(s, (pid_t)pid);
		if (err)
			return err;
		t.since_ns = clock__mono_ns();
	}
	/* The bucket counts first: a program that finds the entry also finds its
	 * bucket set. */
	if (!known)
		s->skel->bss->target_buckets[pid % PBP_TARGET_BUCKETS]++;
	if (bpf_map__update_elem(s->skel->maps.targets, &pid, sizeof(pid), &t, sizeof(t), BPF_ANY)) {
		err = -errno;
		if (!known) {
			s->skel->bss->target_buckets[pid % PBP_TARGET_BUCKETS]--;
			sampler_tasks__remove(s->tasks, (pid_t)pid);
		}
		return err;
	}
	return 0;
}

int sampler__remove_target(struct sampler *s, pid_t pid)
{
	uint32_t key = pid;

	sampler_tasks__remove(s->tasks, pid);
	if (bpf_map__delete_elem(s->skel->maps.targets, &key, sizeof(key), 0))
		return -errno;
	s->skel->bss->target_buckets[key % PBP_TARGET_BUCKETS]--;
	return 0;
}

/* @n from libbpf, 0 where handle_record() handed the loop back. */
static int yield_ok(struct sampler *s, int n)
{
	if (s->yielded) {
		s->yielded = false;
		return 0;
	}
	return n;
}

int sampler__poll(struct sampler *s, int timeout_ms)
{
	int n;

	sampler_tasks__poll(s->tasks);
	s->yield_ns = clock__mono_ns() + SAMPLER_POLL_BUDGET_NS;
	n = ring_buffer__poll(s->rb, timeout_ms);
	if (s->yielded || n < 0)
		return yield_ok(s, n);
	/* epoll only reports the forced wake-ups; records submitted without one are
	 * consumed here, on the timer. */
	return yield_ok(s, ring_buffer__consume(s->rb));
}

void sampler__late_threads(const struct sampler *s, uint32_t *late, uint32_t *held)
{
	sampler_tasks__late(s->tasks, late, held);
}

uint32_t sampler__let_go_late(struct sampler *s)
{
	uint32_t late, held;

	sampler_tasks__poll(s->tasks);
	sampler_tasks__late(s->tasks, &late, &held);
	return held;
}

int sampler__drain(struct sampler *s)
{
	s->yield_ns = 0;
	return ring_buffer__consume(s->rb);
}

static uint32_t map_count(const struct bpf_map *map)
{
	uint32_t key, next, n = 0, max = bpf_map__max_entries(map);
	int fd = bpf_map__fd(map);

	/* Every key here is a u32 pid or tid. A key deleted under the walk restarts it
	 * from the first; the bound keeps that finite. */
	for (int err = bpf_map_get_next_key(fd, NULL, &next); !err && n < max;
	     err = bpf_map_get_next_key(fd, &key, &next)) {
		key = next;
		n++;
	}
	return n;
}

int sampler__map_entries(struct sampler *s, struct sampler_maps *out)
{
	out->targets = map_count(s->skel->maps.targets);
	out->threads = map_count(s->skel->maps.threads);
	out->fcache = map_count(s->skel->maps.fcache);
	return 0;
}

void sampler__counters(struct sampler *s, uint64_t out[PBP_C_MAX])
{
	int ncpus = libbpf_num_possible_cpus();
	uint64_t *vals = calloc(ncpus > 0 ? ncpus : 1, sizeof(*vals));

	memset(out, 0, PBP_C_MAX * sizeof(*out));
	if (!vals)
		return;
	for (uint32_t k = 0; k < PBP_C_MAX; k++) {
		if (bpf_map__lookup_elem(s->skel->maps.counters, &k, sizeof(k), vals,
					 ncpus * sizeof(*vals), 0))
			continue;
		for (int c = 0; c < ncpus; c++)
			out[k] += vals[c];
	}
	free(vals);
}

int sampler__code_known(struct sampler *s, uint32_t pid, uint64_t code, uint64_t fp,
			uint32_t flags)
{
	uint32_t slot = pbp_code_slot(pid, code);
	struct pbp_code_known v = { .code = code, .fp = fp, .pid = pid, .flags = flags }, old;

	if (!(flags & PBP_CK_HELD)) {
		/* Only this object's slot: another may have taken it since. */
		if (bpf_map__lookup_elem(s->skel->maps.codes_known, &slot, sizeof(slot), &old,
					 sizeof(old), 0) ||
		    old.code != code || old.pid != pid || (fp && old.fp != fp))
			return 0;
		v = (struct pbp_code_known){ 0 };
	}
	if (bpf_map__update_elem(s->skel->maps.codes_known, &slot, sizeof(slot), &v, sizeof(v),
				 BPF_ANY))
		return -errno;
	return 0;
}

int sampler__set_anchor(struct sampler *s, uint32_t tid, const struct pbp_fcache *fc)
{
	int err;

	if (fc)
		err = bpf_map__update_elem(s->skel->maps.fcache, &tid, sizeof(tid), fc,
					   sizeof(*fc), BPF_ANY);
	else
		err = bpf_map__delete_elem(s->skel->maps.fcache, &tid, sizeof(tid), 0);
	return err && err != -ENOENT ? err : 0;
}

static int prog_run_stats(const struct bpf_program *p, uint64_t *run_ns, uint64_t *run_cnt)
{
	struct bpf_prog_info info = {};
	uint32_t len = sizeof(info);

	if (bpf_program__fd(p) < 0)
		return 0;	/* not loaded in this mode */
	if (bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len))
		return -errno;
	*run_ns += info.run_time_ns;
	*run_cnt += info.run_cnt;
	return 0;
}

/* Run time and runs of the tick program, or the counters it keeps itself when the
 * kernel does not account for it. */
int sampler__prog_stats(struct sampler *s, uint64_t *run_ns, uint64_t *run_cnt)
{
	*run_ns = *run_cnt = 0;
	if (s->stats_fd < 0) {
		uint64_t c[PBP_C_MAX];

		sampler__counters(s, c);
		*run_ns = c[PBP_C_SELF_NS];
		*run_cnt = c[PBP_C_SELF_RUNS];
		return 0;
	}
	/* On the tick, the program runs at every timer's expiry on the host. */
	return prog_run_stats(s->tick_hz ? s->skel->progs.pbp_tick : s->skel->progs.pbp_sample,
			      run_ns, run_cnt);
}

/* The scheduler's programs: their runs, and their run time estimated from the runs
 * they timed. */
int sampler__switch_stats(struct sampler *s, uint64_t *run_ns, uint64_t *run_cnt)
{
	uint64_t c[PBP_C_MAX];

	sampler__counters(s, c);
	*run_cnt = c[PBP_C_OFF_SELF_RUNS];
	*run_ns = c[PBP_C_OFF_SELF_TIMED] ?
		  (uint64_t)((double)c[PBP_C_OFF_SELF_NS] * (double)c[PBP_C_OFF_SELF_RUNS] /
			     (double)c[PBP_C_OFF_SELF_TIMED]) : 0;
	return 0;
}

/* Open waits read at once: far more than the threads of PBP_TARGETS_MAX processes. */
#define OPEN_WAITS_MAX (1u << 20)

int sampler__open_waits(struct sampler *s, struct pbp_open_wait **out, size_t *n)
{
	size_t cap = 0, bytes = 0;
	char *buf = NULL, *grown;
	int fd, err = 0;
	ssize_t got;

	*out = NULL;
	*n = 0;
	if (!s->skel->links.pbp_open_waits)
		return 0;
	fd = bpf_iter_create(bpf_link__fd(s->skel->links.pbp_open_waits));
	if (fd < 0)
		return -errno;
	for (;;) {
		if (bytes == cap) {
			if (cap == OPEN_WAITS_MAX * sizeof(**out))
				break;
			cap = cap ? 2 * cap : 64 * sizeof(**out);
			grown = realloc(buf, cap);
			if (!grown) {
				err = -ENOMEM;
				goto out;
			}
			buf = grown;
		}
		got = fd__read(fd, buf + bytes, cap - bytes);
		if (got < 0) {
			err = (int)got;
			goto out;
		}
		if (!got)
			break;
		bytes += (size_t)got;
	}
	/* The iterator writes whole records: anything else is not ours to read. */
	if (bytes % sizeof(**out)) {
		err = -EPROTO;
		goto out;
	}
	*out = (struct pbp_open_wait *)buf;
	*n = bytes / sizeof(**out);
	buf = NULL;
out:
	free(buf);
	close(fd);
	return err;
}
