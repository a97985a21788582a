/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The -o FILE (and -f FORMAT) of record and convert: each file's format, a temporary
 * beside each (outfile.h) opened before any work, and all of them written from one
 * profile and put in place at the end, so that every format of one run holds the same
 * samples.
 */
#ifndef PBP_OUTPUTS_H
#define PBP_OUTPUTS_H

#include <stdio.h>

#include "base/outfile.h"
#include "output/writers.h"

#define OUTPUTS_MAX 8

struct output {
	const char *path;	/* "-": standard output; NULL: a name given later */
	const struct writer *writer;
	struct outfile file;
	FILE *f;
	int written;		/* in place under its final name */
};

struct outputs {
	struct output v[OUTPUTS_MAX];
	size_t n;
};

/* -o @path once more. 0, or EXIT_USAGE after a message naming @cmd's help. */
int outputs__add(struct outputs *o, const char *cmd, const char *path);
/*
 * Each output's writer: with one output (or none, which then gets a name later) -f
 * @format, else the file's suffix, else collapsed text; with several, each suffix, and
 * -f is refused. A suffix that names no format is refused too: writing collapsed text
 * under profile.json would give the user what they did not ask for. With no -o and
 * @need_one, a usage error. 0, or EXIT_USAGE after a message.
 */
int outputs__choose(struct outputs *o, const char *cmd, const char *format, int need_one);
/* Whether a writer of @o needs the profile's timeline. */
int outputs__timeline(const struct outputs *o);
/* Whether a writer of @o shows or keeps the sources. */
int outputs__sources(const struct outputs *o);
/* Opens every temporary. 0, or a negative errno after a one-line message. */
int outputs__open(struct outputs *o);
/* Whether one output is standard output. */
int outputs__to_stdout(const struct outputs *o);
/* Names the output that had none (0 if none lacks one), or a negative errno. */
int outputs__name(struct outputs *o, const char *name);
/* Writes @p with each writer and puts each file in place: 0, or a negative errno
 * after a message naming the file. */
int outputs__write(struct outputs *o, const struct profile *p);
/* "wrote FILE" for each file put in place. */
void outputs__say_written(const struct outputs *o);
/* Drops what was not put in place; the final names keep what they held. */
void outputs__abort(struct outputs *o);

#endif
