// SPDX-License-Identifier: GPL-2.0-only
/*
 * The source heatmap: one HTML page, every sampled source file with each line shaded by
 * its share. A line's self counts the samples whose innermost Python frame was at it,
 * its total the samples with a frame at it anywhere (once per sample): the same counts
 * `report --by line` gives. In wall and off-CPU profiles each line's self is also split
 * into on-CPU time and each class of wait (wait_class.h), which says per line what the
 * time went to.
 *
 * The text is the profile's copy of each file (profile.sources, read when it was
 * recorded), so later edits shift no line; a file without one shows its sampled lines
 * only. Everything is inline: the page works offline, and nothing in it is code.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/hashmap.h"
#include "base/vec.h"
#include "output/out_heatmap.h"
#include "output/xml_text.h"
#include "profile/wait_class.h"

struct hline {
	uint32_t file;
	int32_t line;
	uint64_t self, total;
	uint64_t self_by_class[WAIT_CLASSES];
	size_t last_stack;	/* the stack last counted in total, + 1 */
};

struct hfile {
	uint32_t file;
	uint64_t self, total;
	size_t last_stack;
	const struct profile_source *source;
	size_t first, n;	/* its lines in the sorted array */
};

struct heatmap {
	const struct profile *p;
	struct hline *lines;
	size_t nlines, lines_cap;
	struct hashmap line_index;
	struct hfile *files;
	size_t nfiles, files_cap;
	struct hashmap file_index;
	uint64_t class_total[WAIT_CLASSES];
};

static uint64_t line_key_hash(uint32_t file, int32_t line)
{
	return hash_u64((uint64_t)file << 32 | (uint32_t)line);
}

static uint64_t line_hash(uint32_t idx, const void *ctx)
{
	const struct heatmap *h = ctx;

	return line_key_hash(h->lines[idx].file, h->lines[idx].line);
}

static bool line_equal(uint32_t idx, const void *key, const void *ctx)
{
	const struct heatmap *h = ctx;
	const struct hline *k = key;

	return h->lines[idx].file == k->file && h->lines[idx].line == k->line;
}

static uint64_t file_hash(uint32_t idx, const void *ctx)
{
	const struct heatmap *h = ctx;

	return hash_u64(h->files[idx].file);
}

static bool file_equal(uint32_t idx, const void *key, const void *ctx)
{
	const struct heatmap *h = ctx;

	return h->files[idx].file == *(const uint32_t *)key;
}

static struct hline *line_of(struct heatmap *h, uint32_t file, int32_t line)
{
	struct hline k = { .file = file, .line = line };
	size_t slot;

	if (hashmap__grow(&h->line_index, 256, line_hash, h) ||
	    vec__reserve((void **)&h->lines, &h->lines_cap, h->nlines + 1, sizeof(*h->lines), 256))
		return NULL;
	slot = hashmap__probe(&h->line_index, line_key_hash(file, line), line_equal, &k, h);
	if (hashmap__used(&h->line_index, slot))
		return &h->lines[hashmap__at(&h->line_index, slot)];
	h->lines[h->nlines] = k;
	hashmap__set(&h->line_index, slot, (uint32_t)h->nlines);
	return &h->lines[h->nlines++];
}

static struct hfile *file_of(struct heatmap *h, uint32_t file)
{
	size_t slot;

	if (hashmap__grow(&h->file_index, 64, file_hash, h) ||
	    vec__reserve((void **)&h->files, &h->files_cap, h->nfiles + 1, sizeof(*h->files), 64))
		return NULL;
	slot = hashmap__probe(&h->file_index, hash_u64(file), file_equal, &file, h);
	if (hashmap__used(&h->file_index, slot))
		return &h->files[hashmap__at(&h->file_index, slot)];
	h->files[h->nfiles] = (struct hfile){ .file = file };
	hashmap__set(&h->file_index, slot, (uint32_t)h->nfiles);
	return &h->files[h->nfiles++];
}

static int count_stack(struct heatmap *h, size_t si)
{
	const struct agg_stack *st = aggregate__stack(h->p->agg, si);
	enum wait_class c = wait_class__of(h->p, st);
	int32_t self = -1;

	h->class_total[c] += st->count;
	for (uint32_t i = st->depth; i-- > 0;)
		if (st->frames[i].kind == AGG_PYTHON) {
			self = (int32_t)i;
			break;
		}
	for (int32_t i = 0; i <= self; i++) {
		const struct agg_frame *fr = &st->frames[i];
		struct hline *line;
		struct hfile *file;

		if (fr->kind != AGG_PYTHON)
			continue;
		line = line_of(h, fr->file, fr->line);
		file = line ? file_of(h, fr->file) : NULL;
		if (!file)
			return -ENOMEM;
		if (line->last_stack != si + 1) {
			line->last_stack = si + 1;
			line->total += st->count;
		}
		if (file->last_stack != si + 1) {
			file->last_stack = si + 1;
			file->total += st->count;
		}
		if (i == self) {
			line->self += st->count;
			line->self_by_class[c] += st->count;
			file->self += st->count;
		}
	}
	return 0;
}

static int by_file_line(const void *a, const void *b)
{
	const struct hline *x = a, *y = b;

	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	return (x->line > y->line) - (x->line < y->line);
}

static int by_total(const void *a, const void *b, void *strs)
{
	const struct hfile *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return strcmp(strtab__get(strs, x->file), strtab__get(strs, y->file));
}

/* Each file's lines in order, its source, and the files hottest first. */
static void arrange(struct heatmap *h)
{
	const struct profile *p = h->p;

	if (h->nlines)
		qsort(h->lines, h->nlines, sizeof(*h->lines), by_file_line);
	for (size_t i = 0; i < h->nfiles; i++) {
		struct hfile *f = &h->files[i];

		for (size_t k = 0; k < p->nsources && !f->source; k++)
			if (p->sources[k].file == f->file)
				f->source = &p->sources[k];
	}
	for (size_t i = 0, j; i < h->nlines; i = j) {
		for (j = i; j < h->nlines && h->lines[j].file == h->lines[i].file; j++)
			;
		for (size_t k = 0; k < h->nfiles; k++)
			if (h->files[k].file == h->lines[i].file) {
				h->files[k].first = i;
				h->files[k].n = j - i;
			}
	}
	if (h->nfiles)
		qsort_r(h->files, h->nfiles, sizeof(*h->files), by_total, (void *)p->strs);
}

/* ---- the page --------------------------------------------------------------------- */

static const char style[] =
	"body{font:14px/1.4 system-ui,sans-serif;margin:1em 2em;background:#fcfcf7;color:#222}"
	"h1{font-size:18px}h2{font-size:15px;margin:1.5em 0 .2em;word-break:break-all}"
	"p.about{max-width:60em;color:#444}"
	"table{border-collapse:collapse}"
	"table.lines{font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;width:100%}"
	"td,th{padding:0 .6em;text-align:right;white-space:nowrap}"
	"th{font-weight:600;color:#555;position:sticky;top:0;background:#fcfcf7}"
	"td.src{text-align:left;white-space:pre;width:100%}"
	"td.n{color:#888}tr.hot td.n{color:#222}"
	"table.files td:last-child{text-align:left}";

static int is_time(const struct profile *p)
{
	return p->unit == PROFILE_NS;
}

static void put_count(FILE *f, const struct profile *p, uint64_t v)
{
	if (!v)
		return;
	if (is_time(p))
		fprintf(f, "%.3f", (double)v / 1e9);
	else
		fprintf(f, "%llu", (unsigned long long)v);
}

static int nclasses(const struct heatmap *h)
{
	int n = 0;

	for (int c = 0; c < WAIT_CLASSES; c++)
		n += h->class_total[c] != 0;
	return n;
}

static void put_head(FILE *f, const struct heatmap *h)
{
	const struct profile *p = h->p;
	uint64_t total = aggregate__total(p->agg);
	const char *target = p->target ? p->target : "profile";

	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<title>pybpfprof heatmap: ", f);
	xml_text__put(f, target, strlen(target), 200, 0);
	fprintf(f, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>Heatmap: ", style);
	xml_text__put(f, target, strlen(target), SIZE_MAX, 0);
	fprintf(f, "</h1>\n<p class=\"about\">%s mode, ", p->mode ? p->mode : "cpu");
	if (is_time(p))
		fprintf(f, "%.3f s of thread time", (double)total / 1e9);
	else
		fprintf(f, "%llu samples", (unsigned long long)total);
	fprintf(f, " at %u Hz over %.1f s. Each line is shaded by its <b>self</b> share: the "
		"%s whose innermost Python frame was at it. <b>Total</b> counts those with the "
		"line anywhere on the stack, once each: a call that was running.%s</p>\n",
		p->rate_hz, (double)p->duration_ns / 1e9, is_time(p) ? "time" : "samples",
		nclasses(h) > 1 ? " Self is split into time on a CPU and time in each kind of "
		"wait; counts are seconds." : "");
}

static void put_index(FILE *f, const struct heatmap *h)
{
	const struct profile *p = h->p;

	fputs("<table class=\"files\">\n<tr><th>self</th><th>total</th><th>file</th></tr>\n", f);
	for (size_t i = 0; i < h->nfiles; i++) {
		const struct hfile *hf = &h->files[i];
		const char *name = strtab__get(p->strs, hf->file);

		fputs("<tr><td>", f);
		put_count(f, p, hf->self);
		fputs("</td><td>", f);
		put_count(f, p, hf->total);
		fprintf(f, "</td><td><a href=\"#f%zu\">", i);
		xml_text__put(f, name, strlen(name), SIZE_MAX, 0);
		fputs("</a></td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

/* Each class's data attribute: what a script (or a test) reads a row's split by. */
static const char *const attr_names[WAIT_CLASSES] = {
	[WAIT_ON_CPU] = "on-cpu", [WAIT_RUNNABLE] = "runnable", [WAIT_STOLEN] = "stolen",
	[WAIT_GIL] = "gil",
	[WAIT_LOCK] = "lock", [WAIT_IO] = "io", [WAIT_SLEEP] = "sleep", [WAIT_OTHER] = "other",
};

/* The shade of a line with @self of the hottest line's @max. */
static void put_row_start(FILE *f, const struct heatmap *h, size_t fi,
			  const struct hline *l, int32_t line, uint64_t max)
{
	fprintf(f, "<tr id=\"f%zu-%d\" data-line=\"%d\"", fi, line, line);
	if (!l) {
		fputs(">", f);
		return;
	}
	fprintf(f, " data-self=\"%llu\" data-total=\"%llu\"", (unsigned long long)l->self,
		(unsigned long long)l->total);
	for (int c = 0; nclasses(h) > 1 && c < WAIT_CLASSES; c++)
		if (h->class_total[c])
			fprintf(f, " data-%s=\"%llu\"", attr_names[c],
				(unsigned long long)l->self_by_class[c]);
	if (l->self)
		fprintf(f, " class=\"hot\" style=\"background:rgba(235,90,20,%.3f)\"",
			0.08 + 0.72 * (double)l->self / (double)(max ? max : 1));
	else
		fputs(" style=\"box-shadow:inset 3px 0 rgba(235,90,20,.5)\"", f);
	fputs(">", f);
}

static void put_line(FILE *f, const struct heatmap *h, size_t fi, const struct hline *l,
		     int32_t line, uint64_t max, const char *text, size_t len)
{
	const struct profile *p = h->p;

	put_row_start(f, h, fi, l, line, max);
	fprintf(f, "<td class=\"n\">%d</td><td>", line);
	put_count(f, p, l ? l->self : 0);
	fputs("</td><td>", f);
	put_count(f, p, l ? l->total : 0);
	fputs("</td>", f);
	for (int c = 0; nclasses(h) > 1 && c < WAIT_CLASSES; c++)
		if (h->class_total[c]) {
			fputs("<td>", f);
			put_count(f, p, l ? l->self_by_class[c] : 0);
			fputs("</td>", f);
		}
	fputs("<td class=\"src\">", f);
	if (text)
		xml_text__put(f, text, len, SIZE_MAX, XML_TEXT_TABS);
	fputs("</td></tr>\n", f);
}

static void put_file(FILE *f, const struct heatmap *h, size_t fi)
{
	const struct profile *p = h->p;
	const struct hfile *hf = &h->files[fi];
	const struct hline *lines = h->lines + hf->first;
	const char *name = strtab__get(p->strs, hf->file);
	const char *text = hf->source ? hf->source->text : NULL;
	const char *end = text ? text + hf->source->len : NULL;
	uint64_t max = 0;
	size_t k = 0;
	int32_t line = 1;

	for (size_t i = 0; i < hf->n; i++)
		max = lines[i].self > max ? lines[i].self : max;
	fprintf(f, "<section class=\"file\" id=\"f%zu\">\n<h2>", fi);
	xml_text__put(f, name, strlen(name), SIZE_MAX, 0);
	fputs("</h2>\n", f);
	if (!text)
		fputs("<p>The source was not recorded (not readable as the target's user, not "
		      "a file, or not kept in this profile): its sampled lines only.</p>\n", f);
	fputs("<table class=\"lines\">\n<tr><th>line</th><th>self</th><th>total</th>", f);
	for (int c = 0; nclasses(h) > 1 && c < WAIT_CLASSES; c++)
		if (h->class_total[c])
			fprintf(f, "<th>%s</th>", wait_class__name((enum wait_class)c));
	fputs("<th></th></tr>\n", f);
	/* Lines with no number (--nolineno) and line 0 come first, without text. */
	while (k < hf->n && lines[k].line < 1) {
		put_line(f, h, fi, &lines[k], lines[k].line, max, NULL, 0);
		k++;
	}
	for (const char *at = text; at && at < end; line++) {
		const char *nl = memchr(at, '\n', (size_t)(end - at));
		size_t len = (size_t)((nl ? nl : end) - at);
		const struct hline *l = k < hf->n && lines[k].line == line ? &lines[k++] : NULL;

		if (len && at[len - 1] == '\r')
			len--;
		put_line(f, h, fi, l, line, max, at, len);
		at = nl ? nl + 1 : end;
	}
	/* Lines past the recorded text (or all, without one). */
	for (; k < hf->n; k++)
		put_line(f, h, fi, &lines[k], lines[k].line, max, NULL, 0);
	fputs("</table>\n</section>\n", f);
}

int out_heatmap__write(FILE *f, const struct profile *p)
{
	struct heatmap h = { .p = p };
	int err = 0;

	for (size_t i = 0; !err && i < aggregate__count(p->agg); i++)
		err = count_stack(&h, i);
	if (!err) {
		arrange(&h);
		put_head(f, &h);
		if (!h.nfiles)
			fputs("<p>No Python frame was sampled.</p>\n", f);
		put_index(f, &h);
		for (size_t i = 0; i < h.nfiles; i++)
			put_file(f, &h, i);
		fputs("</body>\n</html>\n", f);
		if (ferror(f))
			err = -EIO;
	}
	free(h.lines);
	free(h.files);
	hashmap__free(&h.line_index);
	hashmap__free(&h.file_index);
	return err;
}
