// SPDX-License-Identifier: GPL-2.0-only
/*
 * The source files a profile's Python frames name, read once at the end of a run so
 * that a heatmap (and a profile file) shows the lines as they were when sampled.
 *
 * The names come from the target's memory (co_filename), and the reads are root's: a
 * file is read only if a sampled frame names it by an absolute path, through the
 * target's own root (an O_PATH descriptor of /proc/PID/root taken at enrolment, which
 * still leads there after the process is gone), with no symbolic link in any
 * component, only if it is a regular file its owner's mode bits let the target's user
 * read, and within a size cap per file and in all.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fd.h"
#include "base/hash.h"
#include "base/hashmap.h"
#include "base/hostile_file.h"
#include "base/log.h"
#include "base/vec.h"
#include "session/session_priv.h"

/* A file larger than this is no source anyone reads line by line. */
#define SOURCE_MAX (4u << 20)
/* All sources of one profile. */
#define SOURCES_MAX (64u << 20)
/* Roots kept: one descriptor each, for as many processes as a run usually takes in. */
#define ROOTS_MAX 256

struct source_root {
	uint32_t pid;
	int fd;
	uid_t uid;
	gid_t gid;
};

struct session_sources {
	struct source_root roots[ROOTS_MAX];
	size_t nroots;
	struct profile_source *v;	/* text: malloc'd */
	size_t n, cap;
	struct hashmap seen;		/* (pid, file) of v and of files refused */
	struct source_key {
		uint32_t pid, file;
	} *keys;
	size_t nkeys, keys_cap;
	size_t bytes;
};

void session_sources__target(struct session *s, const struct target *t)
{
	struct session_sources *ss = s->sources;
	char path[64];
	struct stat st;
	int fd;

	if (!ss && s->opts.sources) {
		ss = s->sources = calloc(1, sizeof(*ss));
		if (!ss)
			return;	/* a heatmap without sources says so; sampling goes on */
	}
	if (!ss || ss->nroots == ROOTS_MAX)
		return;
	snprintf(path, sizeof(path), "/proc/%d", (int)t->interp.pid);
	if (stat(path, &st))
		return;
	snprintf(path, sizeof(path), "/proc/%d/root", (int)t->interp.pid);
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	ss->roots[ss->nroots++] = (struct source_root){
		.pid = (uint32_t)t->interp.pid, .fd = fd, .uid = st.st_uid, .gid = st.st_gid };
}

static const struct source_root *root_of(const struct session_sources *ss, uint32_t pid)
{
	/* The newest first: a reused pid is the later process. */
	for (size_t i = ss->nroots; i-- > 0;)
		if (ss->roots[i].pid == pid)
			return &ss->roots[i];
	return NULL;
}

static uint64_t key_hash(const struct source_key *k)
{
	return hash_bytes(k, sizeof(*k));
}

static uint64_t seen_hash(uint32_t idx, const void *ctx)
{
	const struct session_sources *ss = ctx;

	return key_hash(&ss->keys[idx]);
}

static bool seen_equal(uint32_t idx, const void *key, const void *ctx)
{
	const struct session_sources *ss = ctx;

	return !memcmp(&ss->keys[idx], key, sizeof(struct source_key));
}

/* Whether (pid, file) was looked at already; if not, it is now. -ENOMEM. */
static int first_look(struct session_sources *ss, uint32_t pid, uint32_t file)
{
	struct source_key k = { pid, file };
	size_t slot;

	if (hashmap__grow(&ss->seen, 64, seen_hash, ss) ||
	    vec__reserve((void **)&ss->keys, &ss->keys_cap, ss->nkeys + 1, sizeof(*ss->keys), 64))
		return -ENOMEM;
	slot = hashmap__probe(&ss->seen, key_hash(&k), seen_equal, &k, ss);
	if (hashmap__used(&ss->seen, slot))
		return 0;
	ss->keys[ss->nkeys] = k;
	hashmap__set(&ss->seen, slot, (uint32_t)ss->nkeys++);
	return 1;
}

/* Whether the mode bits let @uid:@gid read a file of @st (supplementary groups aside:
 * a file left out is a shade missing, a file shown is a secret told). */
static int readable_by(const struct stat *st, uid_t uid, gid_t gid)
{
	if (!uid)
		return 1;
	if (st->st_uid == uid)
		return !!(st->st_mode & S_IRUSR);
	if (st->st_gid == gid)
		return !!(st->st_mode & S_IRGRP);
	return !!(st->st_mode & S_IROTH);
}

/* @path's text through @root, or NULL (why at debug level). */
static char *read_source(const struct source_root *root, const char *path, size_t left,
			 size_t *len)
{
	struct stat st;
	char *text = NULL;
	size_t n = 0;
	int fd = hostile_file__open(root->fd, path, HOSTILE_FILE_IN_ROOT | HOSTILE_FILE_NO_LINKS,
				    NULL, &st);

	if (fd < 0) {
		pr_debug("source %s of pid %u: %s\n", path, root->pid, strerror(-fd));
		return NULL;
	}
	if (!readable_by(&st, root->uid, root->gid) || st.st_size > (off_t)SOURCE_MAX ||
	    (size_t)st.st_size > left) {
		pr_debug("source %s of pid %u: not the target's to read, or too large\n", path,
			 root->pid);
		goto out;
	}
	/* One byte more than the size said: a file that grew is read to its cap only. */
	text = malloc((size_t)st.st_size + 1);
	while (text && n <= (size_t)st.st_size) {
		ssize_t got = fd__read(fd, text + n, (size_t)st.st_size + 1 - n);

		if (got <= 0)
			break;
		n += (size_t)got;
	}
	if (text && n > (size_t)st.st_size) {
		free(text);
		text = NULL;
	}
	*len = n;
out:
	close(fd);
	return text;
}

static int read_frame(struct session *s, uint32_t pid, uint32_t file)
{
	struct session_sources *ss = s->sources;
	const char *path = strtab__get(s->strs, file);
	const struct source_root *root;
	size_t len = 0;
	char *text;
	int first;

	if (path[0] != '/')
		return 0;	/* <frozen ...>, <string>: no file to read */
	first = first_look(ss, pid, file);
	if (first <= 0)
		return first;
	root = root_of(ss, pid);
	if (!root || ss->bytes >= SOURCES_MAX)
		return 0;
	text = read_source(root, path, SOURCES_MAX - ss->bytes, &len);
	if (!text)
		return 0;
	if (vec__reserve((void **)&ss->v, &ss->cap, ss->n + 1, sizeof(*ss->v), 32)) {
		free(text);
		return -ENOMEM;
	}
	ss->v[ss->n++] = (struct profile_source){ .pid = pid, .file = file, .text = text,
						  .len = len };
	ss->bytes += len;
	return 0;
}

int session_sources__read(struct session *s)
{
	int err = 0;

	if (!s->sources)
		return 0;
	for (size_t i = 0; !err && i < aggregate__count(s->agg); i++) {
		const struct agg_stack *st = aggregate__stack(s->agg, i);

		for (uint32_t k = 0; !err && k < st->depth; k++)
			if (st->frames[k].kind == AGG_PYTHON)
				err = read_frame(s, st->pid, st->frames[k].file);
	}
	return err;
}

const struct profile_source *session_sources__all(const struct session *s, size_t *n)
{
	*n = s->sources ? s->sources->n : 0;
	return s->sources ? s->sources->v : NULL;
}

void session_sources__free(struct session *s)
{
	struct session_sources *ss = s->sources;

	if (!ss)
		return;
	for (size_t i = 0; i < ss->nroots; i++)
		close(ss->roots[i].fd);
	for (size_t i = 0; i < ss->n; i++)
		free((char *)ss->v[i].text);
	free(ss->v);
	free(ss->keys);
	hashmap__free(&ss->seen);
	free(ss);
	s->sources = NULL;
}
