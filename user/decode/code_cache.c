// SPDX-License-Identifier: GPL-2.0-only
/*
 * The code-object cache; see code_cache.h for the validation rule. Entries sit in a
 * dense array indexed by a hashmap, which starts small and doubles up to a fixed
 * capacity (system-wide, most of hundreds of processes run little code); the array
 * has room for half the slots, the most the index holds. Entries are evicted by a
 * clock (second chance) over the index's slots when the table is full or a byte
 * budget is exceeded: the cache's own, or the session's over every cache, which takes
 * from the largest cache.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "decode/code_cache.h"
#include "pbp_abi.h"
#include "base/hash.h"
#include "base/hashmap.h"
#include "cpython/py_linetable.h"
#include "base/log.h"
#include "cpython/py_obj.h"
#include "base/structbuf.h"
#include "base/vec.h"

#define CO_OPTIMIZED 0x0001		/* Include/cpython/code.h */
#define CO_COROUTINE 0x0080
#define CO_NO_MONITORING_EVENTS 0x2000000	/* ... 3.13+ */

struct code_cache {
	struct code_cache_cfg cfg;
	struct code_info **ents;	/* dense: deleting moves the last one in */
	size_t ents_cap;
	struct hashmap index;	/* (addr, fp) -> entry */
	uint32_t max_slots;
	uint32_t hand;		/* the clock's: a slot of the index */
	size_t bytes;		/* entries, their array and the index */
	struct code_budget own;	/* when the config gives none */
	struct code_budget *budget;
	struct code_cache *next, **pprev;	/* in budget->caches */
	struct code_cache_stats stats;
};

#define FIRST_SLOTS 256u
#define CODE_CHECKED_SAMPLES 256
/* What malloc keeps beside each block, as glibc does on 64-bit hosts. */
#define MALLOC_OVERHEAD 16

static void count_bytes(struct code_cache *c, ssize_t delta)
{
	c->bytes += delta;
	c->budget->bytes += delta;
}

struct code_key {
	uint64_t addr, fp;
};

static uint64_t key_hash(uint64_t addr, uint64_t fp)
{
	return hash_u64(addr ^ hash_u64(fp));
}

static uint64_t entry_hash(uint32_t idx, const void *ctx)
{
	const struct code_cache *c = ctx;

	return key_hash(c->ents[idx]->addr, c->ents[idx]->fp);
}

static bool entry_equal(uint32_t idx, const void *key, const void *ctx)
{
	const struct code_cache *c = ctx;
	const struct code_key *k = key;

	return c->ents[idx]->addr == k->addr && c->ents[idx]->fp == k->fp;
}

int code_cache__new(const struct code_cache_cfg *cfg, struct code_cache **out)
{
	struct code_cache *c = calloc(1, sizeof(*c));
	uint32_t n = 64, first;

	if (!c)
		return -ENOMEM;
	c->cfg = *cfg;
	while (n < cfg->max_entries * 2)
		n *= 2;
	c->max_slots = n;
	first = n < FIRST_SLOTS ? n : FIRST_SLOTS;
	if (vec__reserve((void **)&c->ents, &c->ents_cap, first / 2, sizeof(*c->ents), first / 2) ||
	    hashmap__resize(&c->index, first, entry_hash, c)) {
		free(c->ents);
		free(c);
		return -ENOMEM;
	}
	c->own = (struct code_budget){ .per_cache = CODE_CACHE_BYTES_DEFAULT,
				       .total = CODE_CACHE_TOTAL_DEFAULT };
	c->budget = cfg->budget ? cfg->budget : &c->own;
	c->next = c->budget->caches;
	if (c->next)
		c->next->pprev = &c->next;
	c->pprev = &c->budget->caches;
	c->budget->caches = c;
	count_bytes(c, sizeof(*c) + c->ents_cap * sizeof(*c->ents) + hashmap__bytes(&c->index) +
			       MALLOC_OVERHEAD * 3);
	*out = c;
	return 0;
}

static void info_free(struct code_info *ci)
{
	if (ci) {
		free(ci->linetable);
		free(ci);
	}
}

void code_cache__free(struct code_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->index.n; i++) {
		c->budget->entries--;
		info_free(c->ents[i]);
	}
	count_bytes(c, -(ssize_t)c->bytes);
	*c->pprev = c->next;
	if (c->next)
		c->next->pprev = c->pprev;
	free(c->ents);
	hashmap__free(&c->index);
	free(c);
}

/* The fingerprint as BPF reads it (PBP_FP_U32_HASH, PBP_FP_PTR_U64 in pbp_abi.h). */
int code_cache__fp(struct code_cache *c, struct mem_source *m, uint64_t addr, uint64_t *fp)
{
	const struct py_offsets *o = c->cfg.off;
	uint32_t v32;
	uint64_t name, hash;
	int err;

	if (o->co_version == PBP_OFF_NONE) {
		uint64_t file;

		err = mem__read_u64(m, addr + o->co_name, &name);
		if (!err)
			err = mem__read_u64(m, addr + o->co_filename, &file);
		if (!err)
			err = py_obj__str_hash(m, o, name, &hash);
		if (err)
			return err;
		*fp = hash ? hash ^ file : 0;
		return 0;
	}
	err = mem__read(m, addr + o->co_version, &v32, sizeof(v32));
	if (!err)
		err = mem__read_u64(m, addr + o->co_qualname, &name);
	if (err)
		return err;
	hash = 0;
	if (name) {
		err = py_obj__str_hash(m, o, name, &hash);
		if (err)
			return err;
	}
	*fp = v32 | hash << 32;
	return 0;
}

/*
 * A freed block has its first word overwritten by the allocator's free-list link: a
 * pointer (or NULL at a list's end). A live object's reference count is far below any
 * heap address, immortal ones included; 3.14+ keep flags in the top 16 bits.
 */
static int plausible_refcnt(uint64_t refcnt)
{
	uint64_t count = refcnt & ((1ull << 48) - 1);

	return count && count < (1ull << 36);
}

static int intern_str(struct code_cache *c, struct mem_source *m, uint64_t addr, uint32_t *id)
{
	char buf[PYSTR_MAX_CHARS * 4 + 8];
	uint64_t refcnt;
	size_t len;
	int64_t r;
	int err;

	err = mem__read_u64(m, addr, &refcnt);
	if (err)
		return err;
	if (!plausible_refcnt(refcnt))
		return -ESTALE;
	err = py_obj__str(m, c->cfg.off, addr, buf, sizeof(buf), &len);
	if (err)
		return err;
	r = strtab__intern(c->cfg.strs, buf, len);
	if (r < 0)
		return (int)r;
	*id = (uint32_t)r;
	return 0;
}

/*
 * co_flags of the code object in @b, 0 if unknown. It has no debug offset; from 3.11
 * to 3.15 it is the int right after the object's header (ob_type, then ob_size) and
 * three pointers (co_consts, co_names, co_exceptiontable), and before co_firstlineno.
 */
static uint32_t code_flags(const struct py_offsets *o, const struct structbuf *b)
{
	uint64_t at = o->ob_type + 2 * 8 + 3 * 8;
	uint32_t flags;

	if (at >= o->co_firstlineno || structbuf__u32(b, at, &flags))
		return 0;
	return flags;
}

/*
 * Reads the object at @addr afresh, through @m: live memory, or a record's copies of
 * it and of what it points to, made while it was alive. The object may be freed, or a new one built in its
 * memory, while we read; the old fingerprint then lingers until the constructor
 * overwrites it. So besides the fingerprint, the header must read the same before and
 * after the strings and line table are read, and every object must look alive.
 *
 * Fields are taken out of the copy only through structbuf: the offsets came from the
 * target, and one that points past the bytes read makes the object invalid rather
 * than a read of our own stack.
 */
static int read_code(struct code_cache *c, struct mem_source *m, uint64_t addr, uint64_t fp,
		     struct code_info **out)
{
	const struct py_offsets *o = c->cfg.off;
	uint8_t hdr[PBP_CODE_COPY_MAX], again[PBP_CODE_COPY_MAX];
	size_t hlen = o->co_size < sizeof(hdr) ? o->co_size : sizeof(hdr);
	const struct structbuf b = structbuf__of(hdr, hlen);
	struct code_info *ci;
	uint64_t type, units, qualname, filename, linetable, after, refcnt;
	uint32_t first, flags;
	size_t tlen;
	int err;

	if (addr & 7)
		return -EINVAL;
	err = mem__read(m, addr, hdr, hlen);
	if (err)
		return err;
	/* PyCodeObject is a PyVarObject whose ob_size, after ob_type, counts code units. */
	if (structbuf__u64(&b, 0, &refcnt) || structbuf__u64(&b, o->ob_type, &type) ||
	    structbuf__u64(&b, o->ob_type + 8, &units) ||
	    structbuf__u32(&b, o->co_firstlineno, &first) ||
	    structbuf__u64(&b, o->co_qualname, &qualname) ||
	    structbuf__u64(&b, o->co_filename, &filename) ||
	    structbuf__u64(&b, o->co_linetable, &linetable))
		return -EINVAL;
	if (!plausible_refcnt(refcnt))
		return -ESTALE;
	if (c->cfg.code_type && type != c->cfg.code_type)
		return -EINVAL;
	if ((int64_t)units <= 0 || (int64_t)units > (1 << 24))
		return -EINVAL;
	ci = calloc(1, sizeof(*ci));
	if (!ci)
		return -ENOMEM;
	ci->addr = addr;
	ci->fp = fp;
	ci->firstlineno = (int32_t)first;
	ci->ncodeunits = (uint32_t)units;	/* at most 2^24, checked above */
	flags = code_flags(o, &b);
	/* Without CO_OPTIMIZED: a module's or a class's body, or code compiled for
	 * exec, which runs once. */
	ci->once = flags && !(flags & CO_OPTIMIZED);
	/* 3.13+ run a class's __init__ called through the class under a frame of a code
	 * object of the interpreter's own ("__init__" in file "__init__"), which
	 * tracebacks never show: it is the one code that tells monitoring nothing. */
	ci->hidden = o->version_hex >= 0x030d0000 && (flags & CO_NO_MONITORING_EVENTS);
	ci->coroutine = !!(flags & CO_COROUTINE);
	err = intern_str(c, m, qualname, &ci->qualname);
	if (err)
		goto fail;
	err = intern_str(c, m, filename, &ci->filename);
	if (err)
		goto fail;
	err = py_obj__bytes(m, o, linetable, &ci->linetable, &tlen);
	/* BPF copies a line table's first PBP_LINETABLE_COPY_MAX bytes: they give the
	 * lines of the instructions they cover, and none (-1) beyond. */
	if (err == -EFAULT && m != c->cfg.live && o->bytes_sval < PBP_LINETABLE_COPY_MAX)
		err = py_obj__bytes_upto(m, o, linetable, PBP_LINETABLE_COPY_MAX - o->bytes_sval,
					 &ci->linetable, &tlen);
	if (err)
		goto fail;
	ci->linetable_len = (uint32_t)tlen;	/* at most PYBYTES_MAX */
	err = mem__read(m, addr, again, hlen);
	if (!err)
		err = code_cache__fp(c, m, addr, &after);
	if (err)
		goto fail;
	/* The reference count moves with every call; everything else must not. */
	memcpy(&refcnt, again, 8);
	if (after != fp || !plausible_refcnt(refcnt) || memcmp(hdr + 8, again + 8, hlen - 8)) {
		err = -ESTALE;
		goto fail;
	}
	memset(ci->memo_instr, 0xff, sizeof(ci->memo_instr));
	*out = ci;
	return 0;
fail:
	info_free(ci);
	return err;
}

/* Evicts the entry in slot @i; the last entry of the array moves into its place. */
static void remove_at(struct code_cache *c, uint32_t i)
{
	uint32_t k = hashmap__at(&c->index, i), last;
	struct code_info *ci = c->ents[k];

	count_bytes(c, -(ssize_t)ci->bytes);
	if (c->cfg.known)
		c->cfg.known(c->cfg.ctx, ci->addr, ci->fp, 0);
	hashmap__delete_at(&c->index, i, entry_hash, c);
	last = (uint32_t)c->index.n;
	if (k != last) {
		hashmap__renumber(&c->index, entry_hash(last, c), last, k);
		c->ents[k] = c->ents[last];
	}
	info_free(ci);
	c->budget->entries--;
	c->stats.evictions++;
}

/* Evicts one entry not looked up since the hand last passed; 0 if there was none. */
static int evict_one(struct code_cache *c)
{
	if (!c->index.n)
		return 0;
	for (;;) {
		uint32_t i = c->hand;
		struct code_info *ci;

		c->hand = (c->hand + 1) & (c->index.nslots - 1);
		if (!hashmap__used(&c->index, i))
			continue;
		ci = c->ents[hashmap__at(&c->index, i)];
		if (ci->used) {
			ci->used = 0;
			continue;
		}
		remove_at(c, i);
		return 1;
	}
}

static struct code_cache *largest(const struct code_budget *b)
{
	struct code_cache *big = NULL;

	for (struct code_cache *c = b->caches; c; c = c->next)
		if (c->index.n && (!big || c->bytes > big->bytes))
			big = c;
	return big;
}

/* Makes room for @need more bytes in @c under both limits. */
static void make_room(struct code_cache *c, size_t need)
{
	struct code_budget *b = c->budget;
	struct code_cache *big;

	while (b->per_cache && c->bytes + need > b->per_cache && evict_one(c))
		;
	while (b->total && b->bytes + need > b->total && (big = largest(b)) && evict_one(big))
		;
}

/* Twice the slots, same entries; -ENOMEM leaves the index as it was. */
static int grow(struct code_cache *c)
{
	size_t nslots = c->index.nslots, cap = c->ents_cap;
	int err;

	err = vec__reserve((void **)&c->ents, &c->ents_cap, nslots, sizeof(*c->ents), nslots);
	if (err)
		return err;
	count_bytes(c, (c->ents_cap - cap) * sizeof(*c->ents));
	err = hashmap__resize(&c->index, nslots * 2, entry_hash, c);
	if (err)
		return err;
	count_bytes(c, nslots * sizeof(*c->index.slots));
	c->hand = 0;
	return 0;
}

/* The entry for (@addr, @fp), NULL if none. */
static struct code_info *find(const struct code_cache *c, uint64_t addr, uint64_t fp)
{
	const struct code_key key = { .addr = addr, .fp = fp };
	uint32_t k;

	if (hashmap__find(&c->index, key_hash(addr, fp), entry_equal, &key, c, &k))
		return NULL;
	return c->ents[k];
}

const struct code_info *code_cache__held(const struct code_cache *c, uint64_t addr, uint64_t fp)
{
	return find(c, addr, fp);
}

int code_cache__get(struct code_cache *c, struct mem_source *copies, uint64_t addr, uint64_t fp,
		    const struct code_info **out)
{
	struct code_info *ci = find(c, addr, fp);
	uint64_t live;
	uint32_t k;
	int err;

	if (ci) {
		c->stats.hits++;
		ci->used = 1;
		/* Code that has run in this many samples is taken to live on: BPF need no
		 * longer check its fingerprint below the innermost frames. */
		if (ci->checked && !ci->once && ++ci->seen == CODE_CHECKED_SAMPLES) {
			ci->checked = 0;
			if (c->cfg.known)
				c->cfg.known(c->cfg.ctx, addr, fp, PBP_CK_HELD);
		}
		*out = ci;
		return 0;
	}
	c->stats.misses++;
	/* All of it from the copies, or all of it live: names read live beside a copied
	 * header could be a successor's. */
	if (copies && !code_cache__fp(c, copies, addr, &live) && live == fp &&
	    !read_code(c, copies, addr, fp, &ci)) {
		c->stats.copied++;
		goto keep;
	}
	err = code_cache__fp(c, c->cfg.live, addr, &live);
	if (!err && live != fp) {
		pr_debug("code %#llx: fingerprint %#llx, sampled %#llx\n", (unsigned long long)addr,
			 (unsigned long long)live, (unsigned long long)fp);
		err = -ESTALE;
	}
	if (!err)
		err = read_code(c, c->cfg.live, addr, fp, &ci);
	if (err) {
		if (err == -EINVAL)
			c->stats.invalid++;
		else if (err == -ESTALE)
			c->stats.stale++;
		/* The sampler took the address for one held here, an object since freed
		 * and followed by another: from now on it copies what is there. */
		if (c->cfg.known)
			c->cfg.known(c->cfg.ctx, addr, 0, 0);
		return err;
	}
keep:
	/* Its strings count as its own: shared ones are counted more than once, so the
	 * string table's part is bounded by the budget too. */
	ci->bytes = (uint32_t)(sizeof(*ci) + ci->linetable_len + 2 * MALLOC_OVERHEAD +
			       strlen(strtab__get(c->cfg.strs, ci->qualname)) +
			       strlen(strtab__get(c->cfg.strs, ci->filename)) + 2);
	if (hashmap__full(&c->index) && (c->index.nslots >= c->max_slots || grow(c)))
		evict_one(c);
	make_room(c, ci->bytes);
	/* At most half the slots are used, and the array has room for that many. */
	k = (uint32_t)c->index.n;
	c->ents[k] = ci;
	hashmap__insert(&c->index, key_hash(addr, fp), k);
	c->budget->entries++;
	count_bytes(c, ci->bytes);
	/* A new code object may be a temporary (a module body's generator expressions and
	 * lambdas die with it), and the next takes its address: checked until it has
	 * run in CODE_CHECKED_SAMPLES samples, or for good if it runs once. */
	ci->checked = 1;
	if (c->cfg.known)
		c->cfg.known(c->cfg.ctx, addr, fp, PBP_CK_HELD | PBP_CK_CHECK);
	*out = ci;
	return 0;
}

int code_cache__line(const struct code_info *ci, uint32_t instr)
{
	/* The memo is a cache too, so it is updated through a const code_info. */
	struct code_info *m = (struct code_info *)ci;
	uint32_t slot = instr % CODE_LINE_SLOTS;
	int line;

	if (instr >= ci->ncodeunits)
		return -1;
	if (m->memo_instr[slot] == instr)
		return m->memo_line[slot];
	if (py_linetable__line(ci->linetable, ci->linetable_len, ci->firstlineno, instr, &line))
		line = -1;
	m->memo_instr[slot] = instr;
	m->memo_line[slot] = line;
	return line;
}

const struct code_cache_stats *code_cache__stats(const struct code_cache *c)
{
	return &c->stats;
}

void code_cache__remap_strings(struct code_cache *c, struct strtab_remap *map)
{
	for (size_t i = 0; i < c->index.n; i++) {
		strtab_remap__id(map, &c->ents[i]->qualname);
		strtab_remap__id(map, &c->ents[i]->filename);
	}
}
