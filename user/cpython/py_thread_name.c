// SPDX-License-Identifier: GPL-2.0-only
/* A thread's Python name, read from its Thread object's _name attribute (py_attr.h). */
#include <errno.h>
#include <string.h>

#include "cpython/py_attr.h"
#include "cpython/py_obj.h"
#include "cpython/py_thread_name.h"

#define NAME_ATTR		"_name"

int py_thread_name__of_object(struct mem_source *m, const struct py_offsets *o,
			      uint64_t thread, char *out, size_t cap)
{
	uint64_t name;
	size_t len;
	int err;

	if (!o->inst_layout || !thread)
		return -ENOENT;
	err = py_attr__get(m, o, thread, NAME_ATTR, &name);
	if (!err)
		err = py_obj__str(m, o, name, out, cap, &len);
	if (!err && !len)
		err = -ENOENT;
	return err;
}

int py_thread_name__of_frame(struct mem_source *m, const struct py_offsets *o, uint64_t frame,
			     char *out, size_t cap)
{
	uint64_t code, qualname, self;
	char got[sizeof(PY_THREAD_NAME_FRAME) + 8];
	size_t len;
	int err;

	/* The frame must still run the code the sample named: the thread may have ended
	 * and its frame's memory gone to another. */
	err = mem__read_u64(m, frame + o->fr_code, &code);
	if (!err && o->executable_tagged)
		code &= ~(uint64_t)o->stackref_tag_bits;
	if (!err)
		err = mem__read_u64(m, code + o->co_qualname, &qualname);
	if (!err)
		err = py_obj__str(m, o, qualname, got, sizeof(got), &len);
	if (err)
		return err;
	if (len != strlen(PY_THREAD_NAME_FRAME) || memcmp(got, PY_THREAD_NAME_FRAME, len))
		return -ENOENT;
	err = mem__read_u64(m, frame + o->fr_size, &self);
	if (err)
		return err;
	if (o->executable_tagged)
		self &= ~(uint64_t)o->stackref_tag_bits;
	return py_thread_name__of_object(m, o, self, out, cap);
}
