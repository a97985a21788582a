// SPDX-License-Identifier: GPL-2.0-only
/* Run statistics writers; see stats.h. */
#include <errno.h>
#include <stdio.h>
#include <sys/wait.h>

#include "decode_gap.h"
#include "stats.h"

static double ratio(double num, double den)
{
	return den > 0 ? num / den : 0;
}

int stats__write_json(FILE *f, const struct run_stats *s)
{
	fprintf(f, "{\n");
	fprintf(f, "  \"python_version\": \"%s\",\n", s->python_version);
	fprintf(f, "  \"mode\": \"%s\",\n", s->mode);
	fprintf(f, "  \"pid\": %u,\n", s->pid);
	fprintf(f, "  \"processes\": %llu,\n", (unsigned long long)s->processes);
	fprintf(f, "  \"processes_skipped\": %llu,\n", (unsigned long long)s->processes_skipped);
	fprintf(f, "  \"process_event_drops\": %llu,\n", (unsigned long long)s->bpf[PBP_C_EVENT_DROPS]);
	fprintf(f, "  \"process_looks\": %llu,\n", (unsigned long long)s->process_looks);
	fprintf(f, "  \"process_looks_deferred\": %llu,\n",
		(unsigned long long)s->process_looks_deferred);
	fprintf(f, "  \"rate_hz\": %u,\n", s->rate_hz);
	fprintf(f, "  \"duration_s\": %.3f,\n", s->duration_s);
	fprintf(f, "  \"samples_expected\": %llu,\n", (unsigned long long)s->samples_expected);
	fprintf(f, "  \"samples_delivered\": %llu,\n", (unsigned long long)s->samples_delivered);
	fprintf(f, "  \"samples_filtered\": %llu,\n", (unsigned long long)s->samples_filtered);
	fprintf(f, "  \"samples_decoded\": %llu,\n", (unsigned long long)s->samples_decoded);
	fprintf(f, "  \"samples_incomplete\": %llu,\n", (unsigned long long)s->samples_incomplete);
	fprintf(f, "  \"ringbuf_drops\": %llu,\n", (unsigned long long)s->bpf[PBP_C_RINGBUF_DROPS]);
	fprintf(f, "  \"bpf_ns_per_sample\": %.1f,\n",
		ratio(s->bpf_run_ns, s->bpf_run_cnt));
	/* run_cnt counts every tick on every CPU, most of which return at the PID check;
	 * per target tick is the cost a sampled thread pays (an upper bound). */
	fprintf(f, "  \"bpf_ns_per_target_sample\": %.1f,\n",
		ratio(s->bpf_run_ns, s->bpf[PBP_C_TARGET_EVENTS]));
	fprintf(f, "  \"bpf_run_time_ns\": %llu,\n", (unsigned long long)s->bpf_run_ns);
	fprintf(f, "  \"bpf_run_cnt\": %llu,\n", (unsigned long long)s->bpf_run_cnt);
	fprintf(f, "  \"bpf_bytes_copied_per_sample\": %.1f,\n",
		ratio(s->bpf_bytes_copied, s->samples_delivered));
	fprintf(f, "  \"bpf_target_events\": %llu,\n",
		(unsigned long long)s->bpf[PBP_C_TARGET_EVENTS]);
	fprintf(f, "  \"bpf_no_thread_state\": %llu,\n", (unsigned long long)s->bpf[PBP_C_NO_TSTATE]);
	fprintf(f, "  \"bpf_no_frame\": %llu,\n", (unsigned long long)s->bpf[PBP_C_NO_FRAME]);
	fprintf(f, "  \"bpf_thread_walks\": %llu,\n", (unsigned long long)s->bpf[PBP_C_THREAD_WALKS]);
	fprintf(f, "  \"bpf_tstate_faults\": %llu,\n", (unsigned long long)s->bpf[PBP_C_TSTATE_FAULTS]);
	fprintf(f, "  \"bpf_stack_faults\": %llu,\n", (unsigned long long)s->bpf[PBP_C_STACK_FAULTS]);
	fprintf(f, "  \"decode_ns_per_sample\": %.1f,\n",
		ratio(s->decode.ns, s->decode.samples));
	fprintf(f, "  \"live_reads_per_sample\": %.3f,\n",
		ratio(s->mem.reads, s->decode.samples));
	fprintf(f, "  \"memory_reads\": %llu,\n", (unsigned long long)s->mem.reads);
	fprintf(f, "  \"memory_bytes_read\": %llu,\n", (unsigned long long)s->mem.bytes);
	fprintf(f, "  \"frames_from_snapshot\": %llu,\n",
		(unsigned long long)s->decode.frames_from_snapshot);
	fprintf(f, "  \"frames_read_live\": %llu,\n", (unsigned long long)s->decode.frames_read_live);
	fprintf(f, "  \"frames_from_cache\": %llu,\n",
		(unsigned long long)s->decode.frames_from_cache);
	fprintf(f, "  \"frame_cache_hits\": %llu,\n", (unsigned long long)s->fcache.hits);
	fprintf(f, "  \"frame_cache_partial_hits\": %llu,\n",
		(unsigned long long)s->fcache.partial_hits);
	fprintf(f, "  \"frame_cache_misses\": %llu,\n", (unsigned long long)s->fcache.misses);
	fprintf(f, "  \"frame_cache_anchor_writes\": %llu,\n",
		(unsigned long long)s->fcache.anchor_writes);
	/* Writes not made: the record was too old to decide one, or the thread state
	 * was no longer the sampled thread's, linked in its interpreter. */
	fprintf(f, "  \"frame_cache_anchor_writes_stale\": %llu,\n",
		(unsigned long long)s->fcache.anchor_writes_stale);
	fprintf(f, "  \"frame_cache_anchor_writes_refused\": %llu,\n",
		(unsigned long long)s->fcache.anchor_writes_refused);
	fprintf(f, "  \"frame_cache_anchors_established\": %llu,\n",
		(unsigned long long)s->fcache.anchors_established);
	fprintf(f, "  \"code_cache_hits\": %llu,\n", (unsigned long long)s->codes.hits);
	fprintf(f, "  \"code_cache_misses\": %llu,\n", (unsigned long long)s->codes.misses);
	fprintf(f, "  \"code_cache_evictions\": %llu,\n", (unsigned long long)s->codes.evictions);
	fprintf(f, "  \"code_cache_bytes\": %llu,\n", (unsigned long long)s->code_cache_bytes);
	fprintf(f, "  \"code_cache_entries\": %llu,\n", (unsigned long long)s->code_cache_entries);
	fprintf(f, "  \"frame_cache_bytes\": %llu,\n", (unsigned long long)s->frame_cache_bytes);
	fprintf(f, "  \"strings\": %llu,\n", (unsigned long long)s->strings);
	fprintf(f, "  \"string_bytes\": %llu,\n", (unsigned long long)s->string_bytes);
	fprintf(f, "  \"string_rebuilds\": %llu,\n", (unsigned long long)s->string_rebuilds);
	/* Cached facts found no longer true: code objects freed and reused, and frame
	 * cache entries whose anchor left the cached path. */
	fprintf(f, "  \"stale_invalidations\": %llu,\n",
		(unsigned long long)(s->codes.stale + s->fcache.invalidations));
	fprintf(f, "  \"live_ticks\": %llu,\n", (unsigned long long)s->live.ticks);
	fprintf(f, "  \"live_ticks_missed\": %llu,\n", (unsigned long long)s->live.ticks_missed);
	fprintf(f, "  \"live_idle_skipped\": %llu,\n",
		(unsigned long long)s->live.threads_idle_skipped);
	fprintf(f, "  \"live_torn_retries\": %llu,\n", (unsigned long long)s->live.torn_retries);
	fprintf(f, "  \"incomplete_reasons\": {");
	for (int g = 1; g < GAP_MAX; g++)
		fprintf(f, "%s\"%s\": %llu", g > 1 ? ", " : "", decode_gap__key(g),
			(unsigned long long)s->decode.gaps[g]);
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

void stats__summary(FILE *f, const struct run_stats *s)
{
	if (s->live.ticks) {
		fprintf(f,
			"pybpfprof: %llu samples in %.1f s from pid %u (Python %s), read from "
			"user space: %llu complete, %llu incomplete, %llu of ~%llu ticks taken, "
			"decode %.0f ns/sample\n",
			(unsigned long long)s->samples_delivered, s->duration_s, s->pid,
			s->python_version, (unsigned long long)s->samples_decoded,
			(unsigned long long)s->samples_incomplete,
			(unsigned long long)s->live.ticks, (unsigned long long)s->samples_expected,
			ratio(s->decode.ns, s->decode.samples));
		return;
	}
	if (!s->pid) {
		fprintf(f,
			"pybpfprof: %llu samples in %.1f s from %llu processes (Python %s): "
			"%llu complete, %llu incomplete, %llu dropped; BPF %.0f ns/run, decode "
			"%.0f ns/sample\n",
			(unsigned long long)s->samples_delivered, s->duration_s,
			(unsigned long long)s->processes, s->python_version[0] ? s->python_version : "none",
			(unsigned long long)s->samples_decoded,
			(unsigned long long)s->samples_incomplete,
			(unsigned long long)s->bpf[PBP_C_RINGBUF_DROPS],
			ratio(s->bpf_run_ns, s->bpf_run_cnt), ratio(s->decode.ns, s->decode.samples));
		return;
	}
	fprintf(f,
		"pybpfprof: %llu samples in %.1f s from pid %u (Python %s): %llu complete, "
		"%llu incomplete, %llu of ~%llu expected delivered, %llu dropped; "
		"BPF %.0f ns/run, decode %.0f ns/sample\n",
		(unsigned long long)s->samples_delivered, s->duration_s, s->pid,
		s->python_version, (unsigned long long)s->samples_decoded,
		(unsigned long long)s->samples_incomplete,
		(unsigned long long)s->samples_delivered, (unsigned long long)s->samples_expected,
		(unsigned long long)s->bpf[PBP_C_RINGBUF_DROPS],
		ratio(s->bpf_run_ns, s->bpf_run_cnt), ratio(s->decode.ns, s->decode.samples));
}
