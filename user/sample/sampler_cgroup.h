/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Clocks for record -p and record -- CMD: one per CPU, armed only while a task of the
 * targets' cgroup runs there (perf_clock__open_cgroup).
 *
 * A clock per thread (sampler_tasks.h) starts every new thread at the beginning of a
 * period and loses what is left of one when the thread ends, so a thread shorter than
 * a period is never sampled, and every thread loses half a period on average: a server
 * that starts a thread per request lost most of its handlers' samples. A clock per CPU
 * has a phase no thread's start or end moves, so each thread is sampled in proportion
 * to its CPU time; scoped to the cgroup, it costs nothing on CPUs where nothing of the
 * cgroup runs (an interrupt of an idle CPU in a VM is a VM exit). Tasks of the cgroup
 * that are not targets tick too, and the program returns at once for them.
 *
 * No thread of the target is held or even looked at, so threads it starts, at any
 * moment, are sampled from their first instruction. The scope is one cgroup for all
 * targets: a target outside it widens it to the nearest cgroup that holds both, so
 * that no thread is ever under two clocks.
 */
#ifndef PBP_SAMPLER_CGROUP_H
#define PBP_SAMPLER_CGROUP_H

#include <stdint.h>
#include <sys/types.h>

struct bpf_program;
struct sampler_cgroup;

int sampler_cgroup__new(struct bpf_program *prog, uint32_t rate_hz,
			struct sampler_cgroup **out);
void sampler_cgroup__free(struct sampler_cgroup *c);

/*
 * Brings @pid's threads under the clocks, widening their scope if it must. 0; -ENOENT
 * when @pid's cgroup cannot be named or opened (no cgroup v2, another cgroup
 * namespace); -ESRCH; or what perf_event_open said. On failure the clocks are as they
 * were.
 */
int sampler_cgroup__add(struct sampler_cgroup *c, pid_t pid);
/* The cgroup the clocks tick for; "" before the first target. */
const char *sampler_cgroup__scope(const struct sampler_cgroup *c);
/* Clocks open now (two per online CPU once there is a target). */
uint32_t sampler_cgroup__count(const struct sampler_cgroup *c);
/* Closes every clock. */
void sampler_cgroup__close(struct sampler_cgroup *c);

#endif
