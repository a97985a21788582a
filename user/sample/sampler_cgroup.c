// SPDX-License-Identifier: GPL-2.0-only
/* Per-CPU clocks scoped to the targets' cgroup; see sampler_cgroup.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "base/cgroup.h"
#include "base/log.h"
#include "sample/perf_clock.h"
#include "sample/sampler_cgroup.h"

/*
 * Two clocks per CPU, each at half the rate, one a little slower and one a little
 * faster: together they fire at the rate (within SAMPLER_CGROUP_SKEW squared). One
 * clock of a round period keeps a fixed phase to the scheduler's tick (at 100 Hz and
 * HZ 250, every sample falls at one of two points of the 4 ms tick), and where tasks of
 * the cgroup take turns at ticks, which runs at those points is not which runs on
 * average: beside two busy loops a target got 73-106 % of its samples, run to run.
 * Each skewed clock's phase sweeps the tick in about half a second.
 */
#define CLOCKS_PER_CPU 2
#define SAMPLER_CGROUP_SKEW 128	/* periods 2/rate * (1 -+ 1/SKEW) */

/* The clocks of every CPU, all on one cgroup. */
struct clocks {
	int *fds;
	struct bpf_link **links;
	uint32_t open;
};

struct sampler_cgroup {
	struct bpf_program *prog;
	uint32_t rate_hz;
	int ncpus;
	char scope[CGROUP_PATH_MAX];
	struct clocks now;
};

int sampler_cgroup__new(struct bpf_program *prog, uint32_t rate_hz,
			struct sampler_cgroup **out)
{
	struct sampler_cgroup *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->ncpus = libbpf_num_possible_cpus();
	if (c->ncpus <= 0) {
		free(c);
		return -EINVAL;
	}
	c->prog = prog;
	c->rate_hz = rate_hz;
	*out = c;
	return 0;
}

static int nclocks(const struct sampler_cgroup *c)
{
	return c->ncpus * CLOCKS_PER_CPU;
}

static uint64_t period_ns(const struct sampler_cgroup *c, int which)
{
	uint64_t twice = 2000000000ull / (c->rate_hz ? c->rate_hz : 1);
	uint64_t skew = twice / SAMPLER_CGROUP_SKEW;

	return which ? twice + skew : twice - skew;
}

static void clocks_close(struct clocks *k, int n)
{
	for (int i = 0; k->fds && i < n; i++) {
		bpf_link__destroy(k->links[i]);
		if (k->fds[i] >= 0)
			close(k->fds[i]);
	}
	free(k->fds);
	free(k->links);
	memset(k, 0, sizeof(*k));
}

static int clocks_open(struct sampler_cgroup *c, const char *scope, struct clocks *k)
{
	int cg = cgroup__open(scope), err = 0;

	if (cg < 0)
		return cg;
	k->fds = malloc(nclocks(c) * sizeof(*k->fds));
	k->links = calloc(nclocks(c), sizeof(*k->links));
	if (!k->fds || !k->links) {
		err = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < nclocks(c); i++)
		k->fds[i] = -1;
	for (int i = 0; i < nclocks(c); i++) {
		int cpu = i / CLOCKS_PER_CPU;

		k->fds[i] = perf_clock__open_cgroup(cg, cpu, period_ns(c, i % CLOCKS_PER_CPU));
		/* A possible CPU that is offline has no clock. */
		if (k->fds[i] == -ENODEV)
			continue;
		if (k->fds[i] < 0) {
			err = k->fds[i];
			pr_debug("perf_event_open for cgroup %s on CPU %d: %s\n", scope, cpu,
				 strerror(-err));
			goto out;
		}
		k->links[i] = bpf_program__attach_perf_event(c->prog, k->fds[i]);
		if (!k->links[i]) {
			err = -errno;
			goto out;
		}
		k->open++;
	}
	if (!k->open)
		err = -ENODEV;
out:
	close(cg);
	if (err)
		clocks_close(k, nclocks(c));
	return err;
}

int sampler_cgroup__add(struct sampler_cgroup *c, pid_t pid)
{
	char path[CGROUP_PATH_MAX], scope[CGROUP_PATH_MAX];
	struct clocks k = { 0 };
	int err = cgroup__of(pid, path, sizeof(path));

	if (err)
		return err;
	if (c->scope[0] && cgroup__within(path, c->scope))
		return 0;
	strcpy(scope, c->scope[0] ? c->scope : path);
	cgroup__widen(scope, path);
	/* The new clocks open before the old ones close, so that a failure leaves those
	 * as they were; for the few milliseconds both are open, a thread under both can
	 * be sampled twice. Widening is rare: a target's child that another cgroup took. */
	err = clocks_open(c, scope, &k);
	if (err)
		return err;
	if (c->scope[0])
		pr_info("process %d is in cgroup %s, outside %s: the clocks tick for %s now\n",
			(int)pid, path, c->scope, scope);
	else
		pr_debug("process %d: clocks on %u CPUs for cgroup %s\n", (int)pid, k.open,
			 scope);
	clocks_close(&c->now, nclocks(c));
	c->now = k;
	strcpy(c->scope, scope);
	return 0;
}

const char *sampler_cgroup__scope(const struct sampler_cgroup *c)
{
	return c ? c->scope : "";
}

uint32_t sampler_cgroup__count(const struct sampler_cgroup *c)
{
	return c ? c->now.open : 0;
}

void sampler_cgroup__close(struct sampler_cgroup *c)
{
	if (c)
		clocks_close(&c->now, nclocks(c));
}

void sampler_cgroup__free(struct sampler_cgroup *c)
{
	if (!c)
		return;
	sampler_cgroup__close(c);
	free(c);
}
