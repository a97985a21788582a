// SPDX-License-Identifier: GPL-2.0-only
/* Run statistics writers; see stats.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "decode/decode_gap.h"
#include "session/stats.h"

static double ratio(double num, double den)
{
	return den > 0 ? num / den : 0;
}

/* One member of the JSON object; the kind says which value and how it is printed. */
struct field {
	const char *key;
	enum { FIELD_STR, FIELD_U64, FIELD_DEC1, FIELD_DEC3 } kind;
	const char *str;
	uint64_t u;
	double d;
};

static void put_field(FILE *f, const struct field *fl)
{
	fprintf(f, "  \"%s\": ", fl->key);
	switch (fl->kind) {
	case FIELD_STR:
		fprintf(f, "\"%s\",\n", fl->str);
		break;
	case FIELD_U64:
		fprintf(f, "%llu,\n", (unsigned long long)fl->u);
		break;
	case FIELD_DEC1:
		fprintf(f, "%.1f,\n", fl->d);
		break;
	case FIELD_DEC3:
		fprintf(f, "%.3f,\n", fl->d);
		break;
	}
}

static uint64_t off_cpu_total(const struct run_stats *s)
{
	uint64_t n = 0;

	for (int k = 0; k < OFFCPU_MAX; k++)
		n += s->off_cpu_ns[k];
	return n;
}

/* Wall and off-CPU modes: where the time went, and what following the scheduler cost. */
static void put_off_cpu(FILE *f, const struct run_stats *s)
{
	const struct field fields[] = {
		{ "wall_ns", FIELD_U64, .u = s->on_cpu_ns + off_cpu_total(s) + s->stolen_ns },
		{ "on_cpu_ns", FIELD_U64, .u = s->on_cpu_ns },
		/* On a CPU, with the hypervisor running something else (steal time). */
		{ "stolen_ns", FIELD_U64, .u = s->stolen_ns },
		{ "stolen_rest_lost_ns", FIELD_U64, .u = s->stolen_rest_lost_ns },
		{ "off_cpu_ns", FIELD_U64, .u = off_cpu_total(s) },
		/* Every wait measured in BPF (ended, or open at a profile's end), whether
		 * its stack was taken. */
		{ "off_cpu_intervals", FIELD_U64, .u = s->bpf[PBP_C_OFF_INTERVALS] },
		{ "off_cpu_intervals_ns", FIELD_U64, .u = s->bpf[PBP_C_OFF_NS] },
		{ "off_cpu_sampled", FIELD_U64, .u = s->bpf[PBP_C_OFF_SAMPLED] },
		{ "off_cpu_short_skipped", FIELD_U64, .u = s->bpf[PBP_C_OFF_SHORT_SKIPPED] },
		{ "off_cpu_records", FIELD_U64, .u = s->off_cpu_records },
		{ "idle_ns", FIELD_U64, .u = s->idle_ns },
		{ "off_cpu_open_waits", FIELD_U64, .u = s->off_cpu_open_waits },
		{ "off_cpu_open_waits_lost", FIELD_U64, .u = s->off_cpu_open_waits_lost },
		{ "on_cpu_rest_lost_ns", FIELD_U64, .u = s->on_cpu_rest_lost_ns },
		{ "switch_events", FIELD_U64, .u = s->bpf[PBP_C_SWITCH_OUTS] },
		{ "switch_state_failures", FIELD_U64, .u = s->bpf[PBP_C_OFF_NO_STORAGE] },
		/* The scheduler and system-call programs run for every task on the host;
		 * per target switch is what a profiled thread's waits cost (an upper bound). */
		{ "switch_bpf_run_time_ns", FIELD_U64, .u = s->switch_run_ns },
		{ "switch_bpf_run_cnt", FIELD_U64, .u = s->switch_run_cnt },
		{ "switch_bpf_ns_per_run", FIELD_DEC1, .d = ratio(s->switch_run_ns, s->switch_run_cnt) },
		{ "switch_bpf_ns_per_target_switch", FIELD_DEC1,
		  .d = ratio(s->switch_run_ns, s->bpf[PBP_C_SWITCH_OUTS]) },
	};

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		put_field(f, &fields[i]);
	fprintf(f, "  \"off_cpu_ns_by_class\": {");
	for (int k = 0; k < OFFCPU_MAX; k++)
		fprintf(f, "%s\"%s\": %llu", k ? ", " : "", offcpu_class__key(k),
			(unsigned long long)s->off_cpu_ns[k]);
	fprintf(f, "},\n");
}

int stats__write_json(FILE *f, const struct run_stats *s)
{
	const struct field fields[] = {
		{ "python_version", FIELD_STR, .str = s->python_version },
		{ "mode", FIELD_STR, .str = s->mode },
		{ "profile_mode", FIELD_STR, .str = s->profile_mode ? s->profile_mode : "cpu" },
		{ "clock", FIELD_STR, .str = strcmp(s->mode, "bpf") ? "live" :
					     s->clock ? s->clock : "timer" },
		{ "tick_hz", FIELD_U64, .u = s->tick_hz },
		{ "pid", FIELD_U64, .u = s->pid },
		{ "processes", FIELD_U64, .u = s->processes },
		{ "processes_skipped", FIELD_U64, .u = s->processes_skipped },
		{ "process_event_drops", FIELD_U64, .u = s->bpf[PBP_C_EVENT_DROPS] },
		{ "process_looks", FIELD_U64, .u = s->process_looks },
		{ "process_looks_deferred", FIELD_U64, .u = s->process_looks_deferred },
		{ "attach_late_threads", FIELD_U64, .u = s->attach_late_threads },
		{ "attach_late_threads_held", FIELD_U64, .u = s->attach_late_threads_held },
		{ "rate_hz", FIELD_U64, .u = s->rate_hz },
		{ "duration_s", FIELD_DEC3, .d = s->duration_s },
		{ "samples_expected", FIELD_U64, .u = s->samples_expected },
		{ "samples_counted", FIELD_U64, .u = s->samples_counted },
		{ "samples_delivered", FIELD_U64, .u = s->samples_delivered },
		{ "ticks_delivered", FIELD_U64, .u = s->ticks_delivered },
		/* The profile's stacks: decoded (complete) + incomplete == samples; the
		 * incomplete_reasons add up to samples_incomplete. */
		{ "samples", FIELD_U64, .u = s->samples },
		{ "samples_decoded", FIELD_U64, .u = s->samples_decoded },
		{ "samples_incomplete", FIELD_U64, .u = s->samples_incomplete },
		{ "samples_off_cpu", FIELD_U64, .u = s->samples_off_cpu },
		{ "samples_filtered", FIELD_U64, .u = s->samples_filtered },
		/* --async: samples made a task's stack, and those in a task that had
		 * ended by decoding, or whose coroutine was not in the stack */
		{ "async_task_samples", FIELD_U64, .u = s->async_task_samples },
		{ "async_unplaced", FIELD_U64, .u = s->async_unplaced },
		{ "async_suspended_ns", FIELD_U64, .u = s->async_suspended_ns },
		{ "ringbuf_drops", FIELD_U64, .u = s->bpf[PBP_C_RINGBUF_DROPS] },
		{ "bpf_ns_per_sample", FIELD_DEC1, .d = ratio(s->bpf_run_ns, s->bpf_run_cnt) },
		/* run_cnt counts every tick on every CPU, most of which return at the PID check;
		 * per target tick is the cost a sampled thread pays (an upper bound). */
		{ "bpf_ns_per_target_sample", FIELD_DEC1,
		  .d = ratio(s->bpf_run_ns, s->bpf[PBP_C_TARGET_EVENTS]) },
		{ "bpf_run_time_ns", FIELD_U64, .u = s->bpf_run_ns },
		{ "bpf_run_cnt", FIELD_U64, .u = s->bpf_run_cnt },
		{ "bpf_bytes_copied_per_sample", FIELD_DEC1,
		  .d = ratio(s->bpf_bytes_copied, s->samples_delivered) },
		{ "bpf_target_events", FIELD_U64, .u = s->bpf[PBP_C_TARGET_EVENTS] },
		{ "bpf_no_thread_state", FIELD_U64, .u = s->bpf[PBP_C_NO_TSTATE] },
		{ "bpf_no_frame", FIELD_U64, .u = s->bpf[PBP_C_NO_FRAME] },
		{ "bpf_thread_walks", FIELD_U64, .u = s->bpf[PBP_C_THREAD_WALKS] },
		{ "bpf_tstate_faults", FIELD_U64, .u = s->bpf[PBP_C_TSTATE_FAULTS] },
		{ "bpf_stack_faults", FIELD_U64, .u = s->bpf[PBP_C_STACK_FAULTS] },
		/* --native: records with registers and a user stack copy, its bytes, copies
		 * that filled --native-stack before the stack's top (deeper frames may be
		 * cut), and copies that met a page they could not read (cut back to the
		 * pages below it; none at all if RSP's own was one) */
		{ "bpf_native_copied", FIELD_U64, .u = s->bpf[PBP_C_NATIVE_COPIED] },
		{ "bpf_native_bytes", FIELD_U64, .u = s->bpf[PBP_C_NATIVE_BYTES] },
		{ "bpf_native_capped", FIELD_U64, .u = s->bpf[PBP_C_NATIVE_CAPPED] },
		{ "bpf_native_faults", FIELD_U64, .u = s->bpf[PBP_C_NATIVE_FAULTS] },
		/* --native-unwind fp: blocks with a frame-pointer walk, their frame records
		 * (16 bytes each, beside bpf_native_bytes of stack), and walks that met a
		 * frame pointer that was no frame's (code that uses RBP for data) */
		{ "bpf_native_fp_walks", FIELD_U64, .u = s->bpf[PBP_C_NATIVE_FP_WALKS] },
		{ "bpf_native_fp_records", FIELD_U64, .u = s->bpf[PBP_C_NATIVE_FP_RECORDS] },
		{ "bpf_native_fp_broken", FIELD_U64, .u = s->bpf[PBP_C_NATIVE_FP_BROKEN] },
		/* --native blocks the decoder took, and those it refused as malformed */
		{ "native_blocks", FIELD_U64, .u = s->decode.native_blocks },
		{ "native_invalid", FIELD_U64, .u = s->decode.native_invalid },
		/* --native in user space: walks and their frames; how they ended: at the
		 * outermost frame, at the end of the copy, at code without CFI, at the
		 * frame bound, at a frame that made no sense; and how their frames met
		 * the Python ones (cut: the walk ended before an activation, whose Python
		 * frames then stand alone; unmatched: shown as [native unmatched]) */
		{ "native_walks", FIELD_U64, .u = s->native_walks },
		{ "native_frames_per_walk", FIELD_DEC1, .d = ratio(s->native_frames, s->native_walks) },
		{ "native_ns_per_walk", FIELD_DEC1, .d = ratio(s->native_ns, s->native_walks) },
		{ "native_failed", FIELD_U64, .u = s->native_failed },
		{ "native_end_outermost", FIELD_U64, .u = s->native_ends[0] },
		{ "native_end_stack_copy", FIELD_U64, .u = s->native_ends[1] },
		{ "native_end_no_cfi", FIELD_U64, .u = s->native_ends[2] },
		{ "native_end_bound", FIELD_U64, .u = s->native_ends[3] },
		{ "native_end_bad_frame", FIELD_U64, .u = s->native_ends[4] },
		{ "native_end_no_fp", FIELD_U64, .u = s->native_ends[5] },
		/* ... of them, walks over frame records: those that took the records from
		 * the first frame, and those that needed DWARF over the stack copy for the
		 * top frames first (a leaf without frame pointer, a prologue) */
		{ "native_fp_walks", FIELD_U64, .u = s->native_fp_walks },
		{ "native_fp_dwarf_top", FIELD_U64, .u = s->native_fp_dwarf_top },
		/* ... and those that went on with DWARF over the copy from a frame that keeps
		 * no frame pointer, where the copy held its stack */
		{ "native_fp_resumed", FIELD_U64, .u = s->native_fp_resumed },
		{ "native_matched", FIELD_U64, .u = s->native_merges[0] },
		{ "native_cut", FIELD_U64, .u = s->native_merges[1] },
		{ "native_unmatched", FIELD_U64, .u = s->native_merges[2] },
		/* stacks that show where a walk stopped short of frames they would hold */
		{ "native_cut_marked", FIELD_U64, .u = s->native_cut_marked },
		/* C++ names left as the object has them because demangling them was not
		 * safe: too long, too slow, too large an answer (native_demangle.h) */
		{ "native_demangle_given_up", FIELD_U64, .u = s->native_demangle_given_up },
		{ "native_worker_starts", FIELD_U64, .u = s->native_worker_starts },
		{ "native_worker_timeouts", FIELD_U64, .u = s->native_worker_timeouts },
		{ "native_worker_deaths", FIELD_U64, .u = s->native_worker_deaths },
		{ "native_worker_quarantined", FIELD_U64, .u = s->native_worker_quarantined },
		{ "native_worker_refused", FIELD_U64, .u = s->native_worker_refused },
		{ "native_stacks_from_ring", FIELD_U64, .u = s->native_stacks_from_ring },
		{ "decode_ns_per_sample", FIELD_DEC1, .d = ratio(s->decode.ns, s->decode.samples) },
		{ "live_reads_per_sample", FIELD_DEC3,
		  .d = ratio(s->mem.reads, s->decode.samples) },
		{ "memory_reads", FIELD_U64, .u = s->mem.reads },
		{ "memory_bytes_read", FIELD_U64, .u = s->mem.bytes },
		{ "frames_from_snapshot", FIELD_U64, .u = s->decode.frames_from_snapshot },
		{ "frames_read_live", FIELD_U64, .u = s->decode.frames_read_live },
		{ "frames_from_cache", FIELD_U64, .u = s->decode.frames_from_cache },
		/* BPF mode: frames outside the chunks copied with their samples, samples
		 * whose chain was not followed to its end (more such frames than a record
		 * holds), and samples that left code objects user space lacked uncopied */
		{ "frames_outside_chunks", FIELD_U64, .u = s->decode.frames_outside },
		{ "frame_walks_cut", FIELD_U64, .u = s->decode.walks_cut },
		{ "code_copies_cut", FIELD_U64, .u = s->decode.codes_cut },
		{ "frame_cache_hits", FIELD_U64, .u = s->fcache.hits },
		{ "frame_cache_partial_hits", FIELD_U64, .u = s->fcache.partial_hits },
		{ "frame_cache_misses", FIELD_U64, .u = s->fcache.misses },
		{ "frame_cache_anchor_writes", FIELD_U64, .u = s->fcache.anchor_writes },
		/* Writes not made: the record was too old to decide one, or the thread state
		 * was no longer the sampled thread's, linked in its interpreter. */
		{ "frame_cache_anchor_writes_stale", FIELD_U64,
		  .u = s->fcache.anchor_writes_stale },
		{ "frame_cache_anchor_writes_refused", FIELD_U64,
		  .u = s->fcache.anchor_writes_refused },
		{ "frame_cache_anchors_established", FIELD_U64,
		  .u = s->fcache.anchors_established },
		/* Threads whose anchor is never written: only the main interpreter's first
		 * thread state is memory CPython never frees (docs/frame-cache.md). */
		{ "frame_cache_threads_unanchored", FIELD_U64,
		  .u = s->fcache.threads_unanchored },
		{ "code_cache_hits", FIELD_U64, .u = s->codes.hits },
		{ "code_cache_misses", FIELD_U64, .u = s->codes.misses },
		/* ... of them, read from the copies BPF made with the sample */
		{ "code_cache_from_copies", FIELD_U64, .u = s->codes.copied },
		{ "code_cache_evictions", FIELD_U64, .u = s->codes.evictions },
		{ "code_cache_bytes", FIELD_U64, .u = s->code_cache_bytes },
		{ "code_cache_entries", FIELD_U64, .u = s->code_cache_entries },
		{ "frame_cache_bytes", FIELD_U64, .u = s->frame_cache_bytes },
		{ "strings", FIELD_U64, .u = s->strings },
		{ "string_bytes", FIELD_U64, .u = s->string_bytes },
		{ "string_rebuilds", FIELD_U64, .u = s->string_rebuilds },
		/* Cached facts found no longer true: code objects freed and reused, and frame
		 * cache entries whose anchor left the cached path. */
		{ "stale_invalidations", FIELD_U64, .u = s->codes.stale + s->fcache.invalidations },
		{ "live_ticks", FIELD_U64, .u = s->live.ticks },
		{ "live_ticks_missed", FIELD_U64, .u = s->live.ticks_missed },
		{ "live_idle_skipped", FIELD_U64, .u = s->live.threads_idle_skipped },
		{ "live_torn_retries", FIELD_U64, .u = s->live.torn_retries },
		{ "live_slow_readings", FIELD_U64, .u = s->live.slow_readings },
		{ "live_holds", FIELD_U64, .u = s->live.holds },
		{ "live_holds_late", FIELD_U64, .u = s->live.holds_late },
		{ "live_holds_refused", FIELD_U64, .u = s->live.holds_refused },
		{ "live_hold_ns", FIELD_U64, .u = s->live.hold_ns },
		{ "live_hold_wait_ns", FIELD_U64, .u = s->live.hold_wait_ns },
	};

	fprintf(f, "{\n");
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		put_field(f, &fields[i]);
	if (s->profile_mode && strcmp(s->profile_mode, "cpu"))
		put_off_cpu(f, s);
	fprintf(f, "  \"incomplete_reasons\": {");
	for (int g = 1; g < GAP_MAX; g++)
		fprintf(f, "%s\"%s\": %llu", g > 1 ? ", " : "", decode_gap__key(g),
			(unsigned long long)s->samples_gaps[g]);
	fprintf(f, "},\n");
	if (s->command_status >= 0 && WIFEXITED(s->command_status))
		fprintf(f, "  \"command_exit_status\": %d\n", WEXITSTATUS(s->command_status));
	else if (s->command_status >= 0)
		fprintf(f, "  \"command_exit_signal\": %d\n", WTERMSIG(s->command_status));
	else
		fprintf(f, "  \"command_exit_status\": null\n");
	fprintf(f, "}\n");
	return ferror(f) ? -EIO : 0;
}

static const char *plural(uint64_t n, const char *many)
{
	return n == 1 ? "" : many;
}

/*
 * "1.2 s on CPU, 3.4 s off CPU (sleep 2.0 s, lock 1.4 s), from 12 waits". Live
 * sampling measures no waits: a thread seen off a CPU at a tick stands for the
 * tick's period, as "idle".
 */
static void summary_wall(FILE *f, const struct run_stats *s)
{
	int first = 1;

	fprintf(f, "pybpfprof: %.3f s on CPU, %.3f s off CPU", s->on_cpu_ns / 1e9,
		(off_cpu_total(s) + s->idle_ns) / 1e9);
	for (int k = 0; k < OFFCPU_MAX; k++) {
		if (!s->off_cpu_ns[k])
			continue;
		fprintf(f, "%s%s %.3f s", first ? " (" : ", ", offcpu_class__key(k),
			s->off_cpu_ns[k] / 1e9);
		first = 0;
	}
	if (s->idle_ns)
		fprintf(f, "%sidle %.3f s", first ? " (" : ", ", s->idle_ns / 1e9);
	fputs(first && !s->idle_ns ? "" : ")", f);
	if (s->stolen_ns)
		fprintf(f, ", %.3f s stolen by the hypervisor", s->stolen_ns / 1e9);
	if (strcmp(s->mode, "live"))
		fprintf(f, ", from %llu wait%s", (unsigned long long)s->off_cpu_records,
			plural(s->off_cpu_records, "s"));
	fputc('\n', f);
}

/*
 * "120 samples (40 on CPU, 80 off CPU) in 2.0 s from pid 12 (Python 3.13.1): 118
 * complete, 2 incomplete, 5 more left out by --gil": every number a count of the
 * profile's stacks, the first their sum.
 */
static void summary_samples(FILE *f, const struct run_stats *s, const char *from)
{
	fprintf(f, "pybpfprof: %llu sample%s", (unsigned long long)s->samples,
		plural(s->samples, "s"));
	if (s->profile_mode && strcmp(s->profile_mode, "cpu"))
		fprintf(f, " (%llu on CPU, %llu off CPU)",
			(unsigned long long)(s->samples - s->samples_off_cpu),
			(unsigned long long)s->samples_off_cpu);
	fprintf(f, " in %.1f s from %s: %llu complete, %llu incomplete", s->duration_s, from,
		(unsigned long long)s->samples_decoded, (unsigned long long)s->samples_incomplete);
	if (s->samples_filtered)
		fprintf(f, ", %llu more left out by %s", (unsigned long long)s->samples_filtered,
			s->filtered_by ? s->filtered_by : "the options");
}

void stats__summary(FILE *f, const struct run_stats *s)
{
	uint64_t drops = s->bpf[PBP_C_RINGBUF_DROPS];
	char from[96];

	if (s->profile_mode && strcmp(s->profile_mode, "cpu"))
		summary_wall(f, s);
	/* Off-CPU alone has no ticks to count against what was expected. */
	if (s->profile_mode && !strcmp(s->profile_mode, "off-cpu"))
		return;
	if (s->pid)
		snprintf(from, sizeof(from), "pid %u (Python %s)", s->pid, s->python_version);
	else
		snprintf(from, sizeof(from), "%llu process%s (Python %s)",
			 (unsigned long long)s->processes, plural(s->processes, "es"),
			 s->python_version[0] ? s->python_version : "none");
	summary_samples(f, s, from);
	if (s->live.ticks) {
		fprintf(f, "; read from user space, %llu of ~%llu tick%s taken; decoding "
			"%.0f ns a stack\n", (unsigned long long)s->live.ticks,
			(unsigned long long)s->samples_expected, plural(s->samples_expected, "s"),
			ratio(s->decode.ns, s->decode.samples));
		return;
	}
	/* On the tick a sample carries its thread's CPU time since its last, so what
	 * stands against the expected count is the periods they carried, not their
	 * number. -a sets none against what was expected. */
	if (s->samples_counted)
		fprintf(f, "; %llu of ~%llu expected periods of CPU time counted",
			(unsigned long long)s->samples_counted,
			(unsigned long long)s->samples_expected);
	else if (s->pid)
		fprintf(f, "; %llu of ~%llu expected ticks delivered",
			(unsigned long long)s->ticks_delivered,
			(unsigned long long)s->samples_expected);
	fprintf(f, "%s%llu dropped (ring buffer full); BPF %.0f ns a run, decoding %.0f ns a "
		"stack\n", s->pid ? ", " : "; ", (unsigned long long)drops,
		ratio(s->bpf_run_ns, s->bpf_run_cnt), ratio(s->decode.ns, s->decode.samples));
}
