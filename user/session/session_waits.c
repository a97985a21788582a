// SPDX-License-Identifier: GPL-2.0-only
/*
 * Waits still open when a profile ends (wall and off-CPU modes, BPF sampling). A
 * wait's record comes when it ends, so a thread blocked at the end of a profile, or
 * all through it, would be missing from it. BPF's task iterator reports each such
 * wait up to now and takes that part off what its end will bring; the thread's stack,
 * still where it blocked, is read here from live memory. In wall mode it also reports
 * the CPU time each thread used since its last tick, which counts under that tick's
 * stack, or under the stack read now if the thread had no tick in this profile.
 */
#include <errno.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/log.h"
#include "cpython/py_threads.h"
#include "sample/sampler.h"
#include "sample/sampler_live.h"
#include "session/session_priv.h"

struct waits_of {
	struct target *t;
	struct pbp_open_wait *w;	/* this target's, in the iterator's order */
	size_t n;
	uint64_t gil;
	size_t charged;
};

static int charge(void *arg, struct stack *st)
{
	struct waits_of *c = arg;
	int err;

	for (size_t i = 0; i < c->n; i++) {
		struct pbp_open_wait *w = &c->w[i];
		struct pbp_sample hdr;

		if (w->tid != st->tid)
			continue;
		if (w->cpu_ns) {
			err = session_sink__add_cpu(c->t, st, w->cpu_ns);
			w->cpu_ns = 0;
			if (err || !w->off_ns)
				return err;
		}
		hdr = (struct pbp_sample){
			.pid = w->pid,
			.tid = w->tid,
			.ts_ns = w->start_ns,
			.flags = PBP_SF_OFF_CPU,
			.off_ns = w->off_ns,
			.off_real_ns = w->off_ns,
			.off_arg = w->arg,
			.gil = c->gil,
			.off_syscall = w->syscall,
			.off_state = w->state,
		};
		/* The stack was read now; the wait began earlier. */
		st->ts_ns = w->start_ns;
		st->flags &= ~(uint32_t)PBP_TS_ON_CPU;
		c->charged++;
		/* Charged once, should a reading hand one thread id twice (two thread states
		 * with one id: an ended thread's, not yet freed, and the one that took it). */
		w->off_ns = 0;
		return session_sink__add_wait(c->t, &hdr, st);
	}
	return 0;
}

/*
 * @n reports of target @t (@w, which this may change): CPU time after a tick goes under
 * that tick; each thread with more to charge has its stack read once.
 */
static int charge_target(struct target *t, struct pbp_open_wait *w, size_t n)
{
	struct waits_of c = { .t = t, .w = w, .n = n };
	size_t waits = 0, left = 0;
	struct sampler_live_cfg lc = {
		.interp = &t->interp,
		.live = &t->live,
		.dec = t->dec,
		.rate_hz = t->session->opts.rate_hz,
		.stack_cap = LIVE_STACK_BYTES,
		.want_idle = 1,
		.host_tids = 1,
		.on_stack = charge,
		.ctx = &c,
	};
	struct sampler_live *ls;
	int err;

	for (size_t i = 0; i < n; i++) {
		if (w[i].cpu_ns && !session_sink__add_cpu_rest(t->session, w[i].pid, w[i].tid,
							      w[i].cpu_ns))
			w[i].cpu_ns = 0;
		session_sink__add_stolen_rest(t->session, w[i].pid, w[i].tid, w[i].stolen_ns);
		waits += !!w[i].off_ns;
		left += w[i].off_ns || w[i].cpu_ns;
	}
	if (!left)
		return 0;
	/* Without the GIL's address a GIL wait is named a lock wait. */
	if (py_threads__gil(&t->live.base, &t->interp, &c.gil))
		c.gil = 0;
	err = sampler_live__new(&lc, &ls);
	if (err)
		return err;
	err = sampler_live__sample_now(ls);
	sampler_live__free(ls);
	t->session->waits.open_waits += c.charged;
	t->session->waits.open_waits_lost += waits - c.charged;
	for (size_t i = 0; i < n; i++)
		t->session->cpu_rest_lost_ns += w[i].cpu_ns;
	/* The process ended meanwhile: its waits end with it. */
	return err == -ESRCH ? 0 : err;
}

static int by_pid(const void *a, const void *b)
{
	const struct pbp_open_wait *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

int session_waits__close(struct session *s)
{
	struct pbp_open_wait *w;
	size_t n, i, j;
	int err;

	if (!s->sampler || s->opts.mode == SESSION_CPU)
		return 0;
	s->waits.closed_ns = clock__mono_ns();
	err = sampler__open_waits(s->sampler, &w, &n);
	if (err) {
		pr_warn("reading the waits still open: %s\n", strerror(-err));
		return err;
	}
	if (n)
		qsort(w, n, sizeof(*w), by_pid);
	for (i = 0; i < n && !err; i = j) {
		struct target *t = session_targets__of(s, w[i].pid);

		for (j = i + 1; j < n && w[j].pid == w[i].pid; j++)
			;
		if (t) {
			err = charge_target(t, w + i, j - i);
			continue;
		}
		for (size_t k = i; k < j; k++) {
			s->waits.open_waits_lost += !!w[k].off_ns;
			s->cpu_rest_lost_ns += w[k].cpu_ns;
			s->stolen_rest_lost_ns += w[k].stolen_ns;
		}
	}
	free(w);
	if (err == -ENOMEM)
		return err;
	if (err)
		pr_debug("reading the stacks of waits still open: %s\n", strerror(-err));
	return 0;
}
