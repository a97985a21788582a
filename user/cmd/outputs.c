// SPDX-License-Identifier: GPL-2.0-only
/* Several output files from one profile; see outputs.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/exitcodes.h"
#include "base/log.h"
#include "cmd/outputs.h"

int outputs__add(struct outputs *o, const char *cmd, const char *path)
{
	if (o->n == OUTPUTS_MAX) {
		fprintf(stderr, "pybpfprof: at most %d -o files (see 'pybpfprof %s --help')\n",
			OUTPUTS_MAX, cmd);
		return EXIT_USAGE;
	}
	if (!*path) {
		fprintf(stderr, "pybpfprof: -o needs a file name (see 'pybpfprof %s --help')\n",
			cmd);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < o->n; i++)
		if (!strcmp(o->v[i].path, path)) {
			fprintf(stderr, "pybpfprof: -o %s is given twice (see 'pybpfprof %s "
				"--help')\n", path, cmd);
			return EXIT_USAGE;
		}
	o->v[o->n++] = (struct output){ .path = path, .file.dirfd = -1 };
	return 0;
}

static int choose_one(struct output *out, const char *cmd, const char *format)
{
	char names[128], suffixes[128];

	writers__names(names, sizeof(names));
	out->writer = format ? writers__find(format) :
		      out->path ? writers__for_path(out->path) : NULL;
	if (format && !out->writer) {
		fprintf(stderr, "pybpfprof: unknown format '%s': one of %s (see 'pybpfprof "
			"%s --help')\n", format, names, cmd);
		return EXIT_USAGE;
	}
	if (!out->writer && out->path && writers__has_suffix(out->path)) {
		writers__suffixes(suffixes, sizeof(suffixes));
		fprintf(stderr, "pybpfprof: no format is known by the suffix of '%s': give -f "
			"FORMAT (%s) or name the file %s (see 'pybpfprof %s --help')\n",
			out->path, names, suffixes, cmd);
		return EXIT_USAGE;
	}
	if (!out->writer)
		out->writer = writers__find("collapsed");
	return 0;
}

int outputs__choose(struct outputs *o, const char *cmd, const char *format, int need_one)
{
	int code = 0;

	if (!o->n && need_one) {
		fprintf(stderr, "pybpfprof: nothing to write: give -o FILE (see 'pybpfprof %s "
			"--help')\n", cmd);
		return EXIT_USAGE;
	}
	if (o->n > 1 && format) {
		fprintf(stderr, "pybpfprof: -f names one format, and there are %zu -o files: "
			"each file's suffix says its format (see 'pybpfprof %s --help')\n", o->n,
			cmd);
		return EXIT_USAGE;
	}
	if (!o->n)
		o->v[o->n++] = (struct output){ .file.dirfd = -1 };
	for (size_t i = 0; !code && i < o->n; i++) {
		code = choose_one(&o->v[i], cmd, format);
	}
	return code;
}

int outputs__timeline(const struct outputs *o)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->v[i].writer->timeline)
			return 1;
	return 0;
}

int outputs__sources(const struct outputs *o)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->v[i].writer->sources)
			return 1;
	return 0;
}

int outputs__to_stdout(const struct outputs *o)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->v[i].path && !strcmp(o->v[i].path, "-"))
			return 1;
	return 0;
}

int outputs__open(struct outputs *o)
{
	for (size_t i = 0; i < o->n; i++) {
		struct output *out = &o->v[i];
		int err;

		if (out->path && !strcmp(out->path, "-")) {
			out->f = stdout;
			continue;
		}
		err = outfile__open(&out->file, out->path);
		if (err)
			return err;
		out->f = out->file.f;
	}
	return 0;
}

int outputs__name(struct outputs *o, const char *name)
{
	for (size_t i = 0; i < o->n; i++)
		if (!o->v[i].path && !o->v[i].file.name[0])
			return outfile__name(&o->v[i].file, name);
	return 0;
}

int outputs__write(struct outputs *o, const struct profile *p)
{
	for (size_t i = 0; i < o->n; i++) {
		struct output *out = &o->v[i];
		int err = out->writer->write(out->f, p);

		if (!err && fflush(out->f))
			err = -errno;
		if (err) {
			pr_warn("writing %s: %s\n", out->f == stdout ? "standard output" :
				out->file.path, strerror(-err));
			return err;
		}
		if (out->f != stdout) {
			err = outfile__commit(&out->file, 0);
			if (err)
				return err;
		}
		out->written = 1;
	}
	return 0;
}

void outputs__say_written(const struct outputs *o)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->v[i].written && o->v[i].f != stdout)
			pr_warn("wrote %s\n", o->v[i].file.path);
}

void outputs__abort(struct outputs *o)
{
	for (size_t i = 0; i < o->n; i++)
		outfile__abort(&o->v[i].file);
}
