/* SPDX-License-Identifier: GPL-2.0-only */
/* Run statistics: the --stats-file JSON object and the one-line summary. */
#ifndef PBP_STATS_H
#define PBP_STATS_H

#include <stdint.h>
#include <stdio.h>

#include "decode/decoder.h"
#include "decode/frame_cache.h"
#include "session/offcpu_class.h"
#include "pbp_abi.h"
#include "sample/sampler_live.h"

struct run_stats {
	char python_version[32];
	const char *mode;		/* "bpf" or "live" */
	uint32_t tick_hz;		/* BPF on the scheduler's tick: its rate; 0 on timers */
	const char *clock;		/* BPF: timer, thread or tick */
	uint32_t pid;
	uint32_t rate_hz;
	double duration_s;
	uint64_t samples_expected;	/* target CPU time x rate */
	/* Records read from the ring buffer (ticks and waits; records of processes no
	 * longer followed and those that failed the decoder's checks too), or stacks
	 * read by the live sampler. */
	uint64_t samples_delivered;
	uint64_t ticks_delivered;	/* ... BPF: of them the on-CPU ticks */
	/* Cpu mode on the tick: the periods of CPU time its samples carried, which is
	 * what stands against samples_expected (0 otherwise). */
	uint64_t samples_counted;
	/* The stacks the profile holds, by whether they reach the thread's first frame
	 * (samples_decoded + samples_incomplete == samples), and why not (by gap); of
	 * them, those off a CPU. Decoded stacks left out are samples_filtered. */
	uint64_t samples;
	uint64_t samples_decoded;
	uint64_t samples_incomplete;
	uint64_t samples_gaps[GAP_MAX];
	uint64_t samples_off_cpu;
	uint64_t samples_filtered;	/* decoded, left out by --gil or --mode */
	const char *filtered_by;	/* "--gil" or "--mode" */
	uint64_t bpf[PBP_C_MAX];	/* the program's own counters */
	uint64_t bpf_run_ns, bpf_run_cnt;
	uint64_t bpf_bytes_copied;
	struct decode_stats decode;
	struct frame_cache_stats fcache;
	struct code_cache_stats codes;
	struct mem_stats mem;
	struct sampler_live_stats live;
	int command_status;		/* wait status of the "--" command, -1 if none */
	uint64_t processes;		/* every process that was a target */
	uint64_t processes_skipped;	/* -a: not profiled, --max-processes reached */
	uint64_t process_looks;		/* new processes looked at for an interpreter */
	uint64_t process_looks_deferred;	/* ... put off for the budget of looks */
	/* Threads an attach left held (ptrace) while they were in an uninterruptible
	 * wait, each let go once it stopped; and of those, the ones still held at the end. */
	uint64_t attach_late_threads, attach_late_threads_held;
	/* Memory held now (gauges): code caches, and the string table. */
	uint64_t code_cache_bytes, code_cache_entries, frame_cache_bytes;
	uint64_t strings, string_bytes;
	uint64_t string_rebuilds;	/* times the string table was rebuilt smaller */
	/* Wall and off-CPU modes: the time in the profile, on and off the CPU. */
	const char *profile_mode;	/* "cpu", "wall", "off-cpu" */
	uint64_t on_cpu_ns;
	uint64_t off_cpu_ns[OFFCPU_MAX];
	uint64_t off_cpu_records;	/* waits: records, and those open at the end */
	uint64_t idle_ns;		/* live sampling: stacks of threads off a CPU */
	uint64_t off_cpu_open_waits;	/* waits open at a profile's end, charged up to it */
	uint64_t off_cpu_open_waits_lost;	/* ... whose thread's stack could not be read */
	uint64_t on_cpu_rest_lost_ns;	/* CPU after a thread's last tick, with no tick */
	uint64_t stolen_ns;		/* wall mode: taken by the hypervisor while on a CPU */
	uint64_t stolen_rest_lost_ns;	/* ... after a thread's last tick, with no stack */
	uint64_t async_task_samples;	/* --async: samples made a task's stack */
	uint64_t async_unplaced;	/* ... in a task that had ended or was not found */
	uint64_t async_suspended_ns;	/* wall and off-CPU modes: suspended tasks' time */
	uint64_t switch_run_ns, switch_run_cnt;	/* the scheduler programs' cost */
	/* --native: walks of the copied C stacks, how each ended (native_end order), how
	 * their frames met the Python runs (native_merge_result order), their cost */
	uint64_t native_walks, native_frames, native_failed, native_ns;
	uint64_t native_ends[6];	/* by enum native_end */
	uint64_t native_fp_walks, native_fp_dwarf_top;	/* --native-unwind fp */
	uint64_t native_fp_resumed;	/* ... that went on with DWARF past the records */
	uint64_t native_merges[3];
	uint64_t native_cut_marked;	/* stacks given "[native walk cut: ...]" */
	uint64_t native_demangle_given_up;	/* C++ names kept mangled for safety */
	/* The parsing worker (native_worker.h): started, killed past the deadline, dead in
	 * a request, files quarantined, and requests refused for a quarantined file. */
	uint64_t native_worker_starts, native_worker_timeouts, native_worker_deaths;
	uint64_t native_worker_quarantined, native_worker_refused;
	uint64_t native_stacks_from_ring;	/* walks the worker read in the ring itself */
};

/* The caller opens and closes @f (an outfile: see outfile.h). */
int stats__write_json(FILE *f, const struct run_stats *s);
void stats__summary(FILE *f, const struct run_stats *s);

#endif
