// SPDX-License-Identifier: GPL-2.0-only
#include "native/native_proc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "native/native_fp.h"

struct native_proc {
	pid_t pid;
	const struct native_files *files;	/* NULL: opened directly */
	struct native_buildid_cache *ids;	/* the session's */
	struct native_maps *maps;
	struct native_unwind *unwind;
	struct native_fp *fp;		/* made at the first frame-pointer walk */
	uint64_t read_ns;		/* when the maps were last read; 0: never */
	uint32_t rereads;		/* re-reads that may be made at once... */
	uint64_t earned_ns;		/* ... counting one more each REREAD_NS from here */
	int walked;			/* a walk used the maps since they were read */
	struct native_proc_stats st;
};

int native_proc__new(pid_t pid, const struct native_files *files,
		     struct native_buildid_cache *ids, struct native_proc **out)
{
	struct native_proc *p;
	int err;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pid = pid;
	p->files = files;
	p->ids = ids;
	p->rereads = NATIVE_PROC_REREAD_BURST;
	err = native_unwind__new(files, &p->unwind);
	if (err)
		goto fail;
	*out = p;
	return 0;
fail:
	free(p);
	return err;
}

void native_proc__free(struct native_proc *p)
{
	if (!p)
		return;
	native_unwind__free(p->unwind);
	native_fp__free(p->fp);
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
	p->walked = 0;
	p->st.maps_reads++;
	err = native_maps__read(p->pid, p->files, p->ids, &m);
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

/* Whether the maps may be read again now that a walk met code outside them. */
static int may_reread(struct native_proc *p, uint64_t now_ns)
{
	uint64_t earned;

	if (!p->earned_ns || now_ns < p->earned_ns)
		p->earned_ns = now_ns;
	earned = (now_ns - p->earned_ns) / NATIVE_PROC_REREAD_NS;
	if (earned) {
		p->earned_ns += earned * NATIVE_PROC_REREAD_NS;
		p->rereads = earned >= NATIVE_PROC_REREAD_BURST - p->rereads ?
				     NATIVE_PROC_REREAD_BURST : p->rereads + (uint32_t)earned;
	}
	if (!p->rereads)
		return 0;
	p->rereads--;
	return 1;
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

static int walk_once(struct native_proc *p, const struct native_snapshot *s,
		     const struct native_fp_chain *c, unsigned int max_frames,
		     struct native_stack *out)
{
	p->walked = 1;
	if (c)
		return native_fp__walk(p->fp, p->unwind, s, c, max_frames, out);
	return native_unwind__walk(p->unwind, s, max_frames, out);
}

int native_proc__walk_fp(struct native_proc *p, const struct native_snapshot *s,
			 const struct native_fp_chain *c, unsigned int max_frames,
			 uint64_t now_ns, struct native_stack *out)
{
	int err;

	if (c && !p->fp) {
		err = native_fp__new(&p->fp);
		if (err)
			return err;
	}
	if (!p->maps) {
		/* Maps that could not be read are tried again at the same pace. */
		if (p->read_ns && now_ns - p->read_ns < NATIVE_PROC_REREAD_NS)
			return -EAGAIN;
		err = reread(p, now_ns);
		if (err)
			return err;
	}
	err = walk_once(p, s, c, max_frames, out);
	if (err || !met_unmapped(p->maps, out))
		return err;
	p->st.outside++;
	if (!may_reread(p, now_ns) || reread(p, now_ns))
		return 0;
	return walk_once(p, s, c, max_frames, out);
}

int native_proc__refresh(struct native_proc *p, uint64_t now_ns)
{
	if (!p->maps || !p->walked || now_ns - p->read_ns < NATIVE_PROC_REREAD_NS)
		return 0;
	return reread(p, now_ns);
}

/* Whether maps path @mp names @path: the same, or @path inside the root it shows. */
static int names(const char *mp, const char *path)
{
	size_t a = strlen(mp), b = strlen(path);

	return a >= b && !strcmp(mp + a - b, path) && (a == b || path[0] == '/');
}

int native_proc__open_object(struct native_proc *p, const char *path)
{
	int err;

	if (!p->maps) {
		err = reread(p, clock__mono_ns());
		if (err)
			return err;
	}
	for (size_t i = 0; i < p->maps->n; i++) {
		const struct native_map *e = &p->maps->maps[i];

		if (names(e->path, path))
			return native_files__mapped(p->files, p->maps, e);
	}
	return -ENOENT;
}

const struct native_maps *native_proc__maps(const struct native_proc *p)
{
	return p->maps;
}

void native_proc__watch(struct native_proc *p, native_unwind_watch_fn fn, void *arg)
{
	native_unwind__watch(p->unwind, fn, arg);
}

const struct native_unwind *native_proc__unwind(const struct native_proc *p)
{
	return p->unwind;
}

void native_proc__stats(const struct native_proc *p, struct native_proc_stats *st)
{
	*st = p->st;
}
