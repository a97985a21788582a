// SPDX-License-Identifier: GPL-2.0-only
#include "native_proc.h"

#include <errno.h>
#include <stdlib.h>

struct native_proc {
	pid_t pid;
	struct native_buildid_cache *ids;	/* the session's */
	struct native_maps *maps;
	struct native_unwind *unwind;
	uint64_t read_ns;		/* when the maps were last read; 0: never */
	int fixed;			/* maps given once (a core): never read again */
	struct native_proc_stats st;
};

int native_proc__new(pid_t pid, struct native_buildid_cache *ids, struct native_proc **out)
{
	struct native_proc *p;
	int err;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pid = pid;
	p->ids = ids;
	err = native_unwind__new(&p->unwind);
	if (err)
		goto fail;
	*out = p;
	return 0;
fail:
	free(p);
	return err;
}

int native_proc__with_maps(struct native_maps *m, struct native_proc **out)
{
	struct native_proc *p;
	int err;

	err = native_proc__new(m->pid, NULL, &p);
	if (err)
		goto fail;
	err = native_unwind__set_maps(p->unwind, m);
	if (err) {
		native_proc__free(p);
		goto fail;
	}
	p->maps = m;
	p->fixed = 1;
	p->read_ns = 1;
	*out = p;
	return 0;
fail:
	native_maps__free(m);
	return err;
}

void native_proc__free(struct native_proc *p)
{
	if (!p)
		return;
	native_unwind__free(p->unwind);
	native_maps__free(p->maps);
	free(p);
}

/* Reads the maps again and hands them to the unwinder, which rebuilds only if they
 * changed. The old maps stay if the new cannot be had. */
static int reread(struct native_proc *p, uint64_t now_ns)
{
	struct native_maps *m = NULL;
	int err;

	p->read_ns = now_ns ? now_ns : 1;
	p->st.maps_reads++;
	err = native_maps__read(p->pid, p->ids, &m);
	if (!err)
		err = native_unwind__set_maps(p->unwind, m);
	if (err) {
		p->st.maps_read_errors++;
		native_maps__free(m);
		return err;
	}
	native_maps__free(p->maps);
	p->maps = m;
	return 0;
}

/* Whether a frame of @out is code the maps do not hold: they may be out of date. */
static int met_unmapped(const struct native_maps *m, const struct native_stack *out)
{
	for (unsigned int i = 0; i < out->n; i++) {
		uint64_t pc = out->frames[i].lookup;

		if (pc >= m->vdso_start && pc < m->vdso_end)
			continue;
		if (!native_maps__find(m, pc))
			return 1;
	}
	return out->n == 0;
}

int native_proc__walk(struct native_proc *p, const struct native_snapshot *s,
		      unsigned int max_frames, uint64_t now_ns, struct native_stack *out)
{
	int err;

	if (!p->maps) {
		/* Maps that could not be read are tried again at the same pace. */
		if (p->read_ns && now_ns - p->read_ns < NATIVE_PROC_REREAD_NS)
			return -EAGAIN;
		err = reread(p, now_ns);
		if (err)
			return err;
	}
	err = native_unwind__walk(p->unwind, s, max_frames, out);
	if (err || p->fixed || !met_unmapped(p->maps, out))
		return err;
	p->st.outside++;
	if (now_ns - p->read_ns < NATIVE_PROC_REREAD_NS || reread(p, now_ns))
		return 0;
	return native_unwind__walk(p->unwind, s, max_frames, out);
}

const struct native_maps *native_proc__maps(const struct native_proc *p)
{
	return p->maps;
}

const struct native_unwind *native_proc__unwind(const struct native_proc *p)
{
	return p->unwind;
}

void native_proc__stats(const struct native_proc *p, struct native_proc_stats *st)
{
	*st = p->st;
}
