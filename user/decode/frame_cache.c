// SPDX-License-Identifier: GPL-2.0-only
/*
 * Frame cache entries and the anchor protocol. Why no splice can mix call chains:
 *
 * An entry is established from a complete sample, taken after our last write of the
 * anchor, in which last_profiled_frame named a thread-owned frame F of that very
 * chain. At that instant F was live and the anchor pointed at it, so from then on
 * F's return moves the anchor to F's parent and bumps the sequence; nothing else
 * changes either (we never write while an entry stands: a write drops it first). A
 * thread-owned frame's parents cannot change while it is live. So when a later sample
 * reads (anchor, seq) == (F, seq0), F has not returned and its parents are the cached
 * ones; (path[j], seq0 + j) means exactly the j innermost frames of the path
 * returned, one by one. An anchor that names a frame which returned before our write
 * landed is harmless: no entry exists until a sample shows a live frame at that
 * address while the anchor names it, and that frame is then the one tracked.
 * Generator frames are never anchored: they leave by yielding, which moves no anchor.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "decode/frame_cache.h"
#include "base/vec.h"

#define WRITE_INTERVAL_NS	(10ull * 1000 * 1000)
/* Records reach the decoder up to a few tens of ms after BPF took them under some
 * entry; only the last two entries are kept, so entries are not replaced faster. */
#define ESTABLISH_INTERVAL_NS	(100ull * 1000 * 1000)
/* No write is decided from a record older than this: the thread it describes may be
 * long gone (docs/frame-cache.md, "Writing into a live process"). Records normally
 * reach the decoder within one or two 20 ms polls. */
#define WRITE_MAX_AGE_NS	(100ull * 1000 * 1000)
#define REANCHOR_FRAMES		32	/* frames above the anchor that make it worth moving */
#define REANCHOR_SAMPLES	16	/* ... in that many consecutive samples */

struct chain {
	uint32_t n, ndec, cap;
	struct raw_frame *raw;
	struct decoded_frame *dec;
};

/* One established anchor (3.15+) and the chain it was established on. */
struct anchor {
	uint32_t gen;			/* 0: none */
	uint64_t seq;
	uint32_t npath;
	uint64_t path[PBP_PATH_MAX];
	uint32_t path_idx[PBP_PATH_MAX];	/* index of path[i] in chain.raw */
	struct chain chain;
};

struct fc_entry {
	uint32_t tid;
	uint32_t ns_tid;		/* the thread state's native_thread_id */
	uint64_t tstate;
	uint64_t seen_ns;
	struct chain last;		/* the latest complete chain: validation */
	int valid;			/* cur still holds: BPF may copy down to it */
	struct anchor cur;
	struct anchor prev;		/* the one before, for records still in flight */
	uint64_t last_write_ns;		/* 0: none yet; stale anchors are not ours */
	uint64_t established_ns;
	int unanchored;			/* its state may be freed: never written into */
	uint32_t long_hits;
};

struct frame_cache {
	const struct py_offsets *off;
	struct frame_cache_budget own, *budget;
	size_t bytes;
	int anchors;
	struct frame_cache_hooks hooks;
	struct frame_cache_stats stats;
	struct fc_entry **entries;
	uint32_t n, cap;
};

#define FRAME_BYTES (sizeof(struct raw_frame) + sizeof(struct decoded_frame))

static void count_bytes(struct frame_cache *fc, size_t add, size_t sub)
{
	fc->bytes += add - sub;
	fc->budget->bytes += add - sub;
}

/* Whether @more bytes fit under both limits. */
static int fits(const struct frame_cache *fc, size_t more)
{
	const struct frame_cache_budget *b = fc->budget;

	return (!b->per_cache || fc->bytes + more <= b->per_cache) &&
	       (!b->total || b->bytes + more <= b->total);
}

int frame_cache__new(const struct py_offsets *off, int anchors,
		     const struct frame_cache_hooks *hooks, struct frame_cache_budget *budget,
		     struct frame_cache **out)
{
	struct frame_cache *fc = calloc(1, sizeof(*fc));

	if (!fc)
		return -ENOMEM;
	fc->own = (struct frame_cache_budget){ .per_cache = FRAME_CACHE_BYTES_DEFAULT,
					       .total = FRAME_CACHE_TOTAL_DEFAULT };
	fc->budget = budget ? budget : &fc->own;
	fc->off = off;
	fc->anchors = anchors && hooks && hooks->write_anchor;
	if (hooks)
		fc->hooks = *hooks;
	*out = fc;
	return 0;
}

static void chain_free(struct frame_cache *fc, struct chain *c)
{
	count_bytes(fc, 0, c->cap * FRAME_BYTES);
	free(c->raw);
	free(c->dec);
	memset(c, 0, sizeof(*c));
}

static void entry_free(struct frame_cache *fc, struct fc_entry *e)
{
	chain_free(fc, &e->last);
	chain_free(fc, &e->cur.chain);
	chain_free(fc, &e->prev.chain);
	count_bytes(fc, 0, sizeof(*e));
	free(e);
}

void frame_cache__free(struct frame_cache *fc)
{
	if (!fc)
		return;
	for (uint32_t i = 0; i < fc->n; i++)
		entry_free(fc, fc->entries[i]);
	count_bytes(fc, 0, fc->bytes);
	free(fc->entries);
	free(fc);
}

/* Threads are few per process; a scan beats a hash table's upkeep here. */
static struct fc_entry *find(struct frame_cache *fc, uint32_t tid, uint64_t tstate)
{
	for (uint32_t i = 0; i < fc->n; i++) {
		struct fc_entry *e = fc->entries[i];

		if (e->tid == tid)
			return e->tstate == tstate ? e : NULL;
	}
	return NULL;
}

static void publish(struct frame_cache *fc, struct fc_entry *e, const struct pbp_fcache *v)
{
	if (fc->hooks.publish)
		fc->hooks.publish(fc->hooks.ctx, e->tid, v);
}

/* A new thread state under a known tid (a thread that ended and a new one) starts
 * afresh. */
static struct fc_entry *get(struct frame_cache *fc, uint32_t tid, uint64_t tstate)
{
	struct fc_entry *e;

	for (uint32_t i = 0; i < fc->n; i++) {
		e = fc->entries[i];
		if (e->tid != tid)
			continue;
		if (e->tstate != tstate) {
			if (e->valid)
				publish(fc, e, NULL);
			chain_free(fc, &e->last);
			chain_free(fc, &e->cur.chain);
			chain_free(fc, &e->prev.chain);
			memset(e, 0, sizeof(*e));
			e->tid = tid;
			e->tstate = tstate;
		}
		return e;
	}
	if (!fits(fc, sizeof(*e) + (fc->n == fc->cap ? fc->cap * sizeof(*fc->entries) : 0)))
		return NULL;
	if (fc->n == fc->cap) {
		size_t cap = fc->cap;

		if (vec__reserve((void **)&fc->entries, &cap, fc->n + 1, sizeof(*fc->entries), 16))
			return NULL;
		count_bytes(fc, (cap - fc->cap) * sizeof(*fc->entries), 0);
		fc->cap = (uint32_t)cap;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	count_bytes(fc, sizeof(*e), 0);
	e->tid = tid;
	e->tstate = tstate;
	fc->entries[fc->n++] = e;
	return e;
}

static int chain_set(struct frame_cache *fc, struct chain *c, const struct raw_frame *raw,
		     uint32_t n, const struct decoded_frame *dec, uint32_t ndec)
{
	if (n > c->cap) {
		struct raw_frame *r;
		struct decoded_frame *d;

		if (!fits(fc, (n - c->cap) * FRAME_BYTES))
			return -ENOSPC;
		r = realloc(c->raw, n * sizeof(*r));
		if (!r)
			return -ENOMEM;
		c->raw = r;
		d = realloc(c->dec, n * sizeof(*d));
		if (!d)
			return -ENOMEM;
		c->dec = d;
		count_bytes(fc, (n - c->cap) * FRAME_BYTES, 0);
		c->cap = n;
	}
	memcpy(c->raw, raw, n * sizeof(*raw));
	memcpy(c->dec, dec, ndec * sizeof(*dec));
	c->n = n;
	c->ndec = ndec;
	return 0;
}

static int same_frame(const struct raw_frame *a, const struct raw_frame *b)
{
	return a->addr == b->addr && a->code == b->code && a->instr == b->instr &&
	       a->previous == b->previous && a->owner == b->owner;
}

static void invalidate(struct frame_cache *fc, struct fc_entry *e)
{
	if (!e->valid)
		return;
	e->valid = 0;
	fc->stats.invalidations++;
	publish(fc, e, NULL);
}

/* Which path element (@anchor, @seq) names, if any. */
static int path_hit(const struct fc_entry *e, uint64_t anchor, uint64_t seq, uint32_t *j)
{
	if (!e->valid || !anchor || seq < e->cur.seq || seq - e->cur.seq >= e->cur.npath)
		return 0;
	*j = (uint32_t)(seq - e->cur.seq);
	return e->cur.path[*j] == anchor;
}

/*
 * The anchor a record copied down to was taken under, and the path element it names,
 * or NULL. BPF checked the anchor when it took the record; an entry dropped or
 * replaced since then still describes that moment.
 */
static const struct anchor *anchor_of(struct fc_entry *e, const struct thread_sample *t)
{
	const struct anchor *a;
	uint32_t j = t->cache_depth;

	if (!e || !t->cache_gen)
		return NULL;
	a = t->cache_gen == e->cur.gen ? &e->cur : t->cache_gen == e->prev.gen ? &e->prev : NULL;
	if (!a || j >= a->npath || a->path[j] != t->anchor || t->anchor_seq != a->seq + j)
		return NULL;
	return a;
}

uint64_t frame_cache__stop(struct frame_cache *fc, const struct thread_sample *t)
{
	return anchor_of(find(fc, t->tid, t->tstate), t) ? t->anchor : 0;
}

int frame_cache__splice(struct frame_cache *fc, const struct thread_sample *t, uint64_t stop,
			struct raw_frame *raw, uint32_t nraw_room, uint32_t *nraw,
			struct decoded_frame *dec, uint32_t ndec_room, uint32_t *ndec)
{
	struct fc_entry *e = find(fc, t->tid, t->tstate);
	const struct anchor *a = anchor_of(e, t);
	const struct chain *c;
	uint32_t k, py = 0;

	*nraw = *ndec = 0;
	if (!a)
		return -ENOENT;
	c = &a->chain;
	k = a->path_idx[t->cache_depth];
	if (k >= c->n || c->raw[k].addr != stop)
		return -ENOENT;
	for (uint32_t i = 0; i <= k; i++)
		py += c->raw[i].code != 0;
	if (c->n - k - 1 > nraw_room || c->ndec - py > ndec_room)
		return -ENOSPC;
	*nraw = c->n - k - 1;
	*ndec = c->ndec - py;
	memcpy(raw, c->raw + k + 1, *nraw * sizeof(*raw));
	memcpy(dec, c->dec + py, *ndec * sizeof(*dec));
	e->seen_ns = clock__mono_ns();
	if (t->cache_depth)
		fc->stats.partial_hits++;
	else
		fc->stats.hits++;
	return 0;
}

/* The fingerprint BPF read for the frame at @addr, 0 if none. */
static uint64_t sampled_fp(const struct thread_sample *t, uint64_t addr)
{
	for (uint32_t i = 0; i < t->nfps; i++)
		if (t->fps[i].frame == addr)
			return t->fps[i].fp;
	return 0;
}

uint32_t frame_cache__reuse(struct frame_cache *fc, const struct thread_sample *t,
			    const struct raw_frame *raw, uint32_t n, struct decoded_frame *dec,
			    uint32_t *ndec)
{
	struct fc_entry *e = find(fc, t->tid, t->tstate);
	const struct chain *c;
	uint32_t m = 0, py = 0;

	*ndec = 0;
	if (!e || !e->last.n) {
		fc->stats.misses++;
		return 0;
	}
	c = &e->last;
	while (m < n && m < c->n) {
		const struct raw_frame *a = &raw[n - 1 - m], *b = &c->raw[c->n - 1 - m];
		uint64_t fp;

		if (!same_frame(a, b))
			break;
		if (a->code) {
			/* A code object freed and rebuilt at the same address gets a new
			 * fingerprint; where BPF read one, it must match. */
			fp = sampled_fp(t, a->addr);
			if (fp && fp != c->dec[c->ndec - 1 - py].code_fp)
				break;
			py++;
		}
		m++;
	}
	if (!py) {
		fc->stats.misses++;
		return 0;
	}
	memcpy(dec, c->dec + c->ndec - py, py * sizeof(*dec));
	*ndec = py;
	if (m + 1 >= n)
		fc->stats.hits++;
	else
		fc->stats.partial_hits++;
	return m;
}

static void establish(struct frame_cache *fc, struct fc_entry *e, const struct thread_sample *t,
		      const struct raw_frame *raw, uint32_t n, const struct decoded_frame *dec,
		      uint32_t ndec, uint32_t k)
{
	const struct py_offsets *o = fc->off;
	struct pbp_fcache v = { .tstate = e->tstate };
	struct anchor swap;

	/* The old anchor stays for records BPF took under it. */
	swap = e->prev;
	e->prev = e->cur;
	e->cur.chain = swap.chain;
	e->valid = 0;
	if (chain_set(fc, &e->cur.chain, raw, n, dec, ndec))
		return;
	e->cur.gen = e->prev.gen + 1;
	e->cur.seq = t->anchor_seq;
	e->cur.npath = 0;
	for (uint32_t i = k; i < n && e->cur.npath < PBP_PATH_MAX; i++) {
		if (raw[i].owner != o->owner_thread || (i > k && raw[i - 1].previous != raw[i].addr))
			break;
		e->cur.path_idx[e->cur.npath] = i;
		e->cur.path[e->cur.npath++] = raw[i].addr;
	}
	e->valid = 1;
	e->long_hits = 0;
	e->established_ns = clock__mono_ns();
	fc->stats.anchors_established++;
	v.seq = e->cur.seq;
	v.gen = e->cur.gen;
	v.npath = e->cur.npath;
	memcpy(v.path, e->cur.path, sizeof(v.path));
	publish(fc, e, &v);
}

/* Whether @t is too old to decide a write into the target on. */
static int too_old(struct frame_cache *fc, const struct thread_sample *t)
{
	uint64_t now = clock__mono_ns();

	if (now <= t->ts_ns || now - t->ts_ns <= WRITE_MAX_AGE_NS)
		return 0;
	fc->stats.anchor_writes_stale++;
	return 1;
}

static void write_anchor(struct frame_cache *fc, struct fc_entry *e, uint64_t frame)
{
	int err;

	invalidate(fc, e);
	err = fc->hooks.write_anchor(fc->hooks.ctx, e->ns_tid, e->tstate, frame);
	if (err == -EPERM) {
		e->unanchored = 1;
		fc->stats.threads_unanchored++;
	}
	if (err) {
		if (err == -ESRCH)
			fc->stats.anchor_writes_refused++;
		return;
	}
	e->last_write_ns = clock__mono_ns();
	fc->stats.anchor_writes++;
}

/* The innermost thread-owned frame: the anchor to ask the interpreter to track. */
static int innermost_owned(const struct py_offsets *o, const struct raw_frame *raw, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (raw[i].owner == o->owner_thread && raw[i].code)
			return (int)i;
	return -1;
}

static void move_anchor(struct frame_cache *fc, struct fc_entry *e, const struct thread_sample *t,
			const struct raw_frame *raw, uint32_t n, const struct decoded_frame *dec,
			uint32_t ndec)
{
	const struct py_offsets *o = fc->off;
	uint32_t j;
	int f;

	if (path_hit(e, t->anchor, t->anchor_seq, &j))
		return;		/* still true; BPF had not seen the entry yet */
	invalidate(fc, e);
	if (clock__mono_ns() - e->established_ns < ESTABLISH_INTERVAL_NS)
		return;
	if (t->anchor && e->last_write_ns && t->ts_ns > e->last_write_ns) {
		for (uint32_t k = 0; k < n; k++) {
			if (raw[k].addr != t->anchor)
				continue;
			if (raw[k].owner == o->owner_thread)
				establish(fc, e, t, raw, n, dec, ndec, k);
			return;
		}
	}
	f = innermost_owned(o, raw, n);
	if (f < 0 || raw[f].addr == t->anchor || clock__mono_ns() - e->last_write_ns < WRITE_INTERVAL_NS ||
	    too_old(fc, t))
		return;
	write_anchor(fc, e, raw[f].addr);
}

void frame_cache__store(struct frame_cache *fc, const struct thread_sample *t,
			const struct raw_frame *raw, uint32_t n,
			const struct decoded_frame *dec, uint32_t ndec)
{
	struct fc_entry *e = get(fc, t->tid, t->tstate);

	if (!e)
		return;
	e->seen_ns = clock__mono_ns();
	e->ns_tid = t->ns_tid ? t->ns_tid : t->tid;
	if (chain_set(fc, &e->last, raw, n, dec, ndec))
		e->last.n = 0;
	if (fc->anchors && !e->unanchored)
		move_anchor(fc, e, t, raw, n, dec, ndec);
}

void frame_cache__after_hit(struct frame_cache *fc, const struct thread_sample *t,
			    const struct raw_frame *raw, uint32_t walked)
{
	struct fc_entry *e = find(fc, t->tid, t->tstate);
	int f;

	if (!e || !fc->anchors || e->unanchored)
		return;
	if (walked < REANCHOR_FRAMES) {
		e->long_hits = 0;
		return;
	}
	/* The stack has grown well above the anchor and stays there: track a frame
	 * nearer the top, at the price of some full copies until it is established. */
	if (++e->long_hits < REANCHOR_SAMPLES || clock__mono_ns() - e->last_write_ns < WRITE_INTERVAL_NS ||
	    too_old(fc, t))
		return;
	f = innermost_owned(fc->off, raw, walked);
	if (f >= 0)
		write_anchor(fc, e, raw[f].addr);
	e->long_hits = 0;
}

int frame_cache__anchor_hit(struct frame_cache *fc, uint32_t tid, uint64_t tstate,
			    uint64_t anchor, uint64_t seq, uint32_t *gen, uint32_t *depth)
{
	struct fc_entry *e = find(fc, tid, tstate);

	if (!e || !path_hit(e, anchor, seq, depth))
		return 0;
	*gen = e->cur.gen;
	return 1;
}

void frame_cache__expire(struct frame_cache *fc, uint64_t before_ns)
{
	uint32_t w = 0;

	for (uint32_t i = 0; i < fc->n; i++) {
		struct fc_entry *e = fc->entries[i];

		if (e->seen_ns >= before_ns) {
			fc->entries[w++] = e;
			continue;
		}
		if (e->valid)
			publish(fc, e, NULL);
		entry_free(fc, e);
	}
	fc->n = w;
}

const struct frame_cache_stats *frame_cache__stats(const struct frame_cache *fc)
{
	return &fc->stats;
}

static void chain_remap(struct chain *c, struct strtab_remap *map)
{
	for (uint32_t i = 0; i < c->ndec; i++) {
		strtab_remap__id(map, &c->dec[i].qualname);
		strtab_remap__id(map, &c->dec[i].filename);
	}
}

void frame_cache__remap_strings(struct frame_cache *fc, struct strtab_remap *map)
{
	for (uint32_t i = 0; i < fc->n; i++) {
		chain_remap(&fc->entries[i]->last, map);
		chain_remap(&fc->entries[i]->cur.chain, map);
		chain_remap(&fc->entries[i]->prev.chain, map);
	}
}
