// SPDX-License-Identifier: GPL-2.0-only
/* Live target memory via process_vm_readv: the target keeps running while we read. */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "base/log.h"

#include "mem/mem_live.h"

#define MEM_PAGE 4096ull
#define MEM_PREFIX_PAGES 1024	/* IOV_MAX */

int mem_live__readv(struct mem_live *m, unsigned int n, const uint64_t *addr,
		    void *const *dst, const size_t *len)
{
	struct iovec local[MEM_READV_MAX], remote[MEM_READV_MAX];
	size_t total = 0;
	ssize_t got;

	if (n > MEM_READV_MAX)
		return -EINVAL;
	for (unsigned int i = 0; i < n; i++) {
		if (len[i] && (!addr[i] || addr[i] + len[i] < addr[i]))
			return -EFAULT;
		local[i] = (struct iovec){ .iov_base = dst[i], .iov_len = len[i] };
		remote[i] = (struct iovec){ .iov_base = (void *)(uintptr_t)addr[i],
					    .iov_len = len[i] };
		total += len[i];
	}
	if (!total)
		return 0;
	m->base.stats.reads++;
	got = process_vm_readv(m->pid, local, n, remote, n, 0);
	if (got != (ssize_t)total) {
		if (!m->base.stats.failures++)
			pr_debug("reading %zu bytes at %#llx in pid %d: %s\n", total,
				 (unsigned long long)addr[0], (int)m->pid,
				 got < 0 ? strerror(errno) : "short read");
		return -EFAULT;
	}
	m->base.stats.bytes += total;
	return 0;
}

static int live_read(struct mem_source *base, uint64_t addr, void *dst, size_t len)
{
	return mem_live__readv((struct mem_live *)base, 1, &addr, &dst, &len);
}

int mem_live__write(struct mem_live *m, uint64_t addr, const void *src, size_t len)
{
	struct iovec local = { .iov_base = (void *)src, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n = process_vm_writev(m->pid, &local, 1, &remote, 1, 0);

	if (n < 0)
		return -errno;
	return n == (ssize_t)len ? 0 : -EFAULT;
}

int mem_live__read_prefix(struct mem_live *m, uint64_t addr, void *dst, size_t len,
			  size_t *got)
{
	struct iovec local, remote[MEM_PREFIX_PAGES];
	uint64_t at = addr;
	unsigned int n = 0;
	ssize_t r;

	*got = 0;
	if (!addr || addr + len < addr)
		return -EINVAL;
	/* The kernel never splits one iovec: a page per iovec lets it stop at the first
	 * page that is not there and say how far it got. */
	while (at < addr + len && n < MEM_PREFIX_PAGES) {
		uint64_t next = (at | (MEM_PAGE - 1)) + 1;

		if (next > addr + len)
			next = addr + len;
		remote[n++] = (struct iovec){ .iov_base = (void *)(uintptr_t)at,
					      .iov_len = next - at };
		at = next;
	}
	local = (struct iovec){ .iov_base = dst, .iov_len = at - addr };
	m->base.stats.reads++;
	r = process_vm_readv(m->pid, &local, 1, remote, n, 0);
	if (r <= 0) {
		m->base.stats.failures++;
		return 0;
	}
	m->base.stats.bytes += (size_t)r;
	*got = (size_t)r;
	return 0;
}

static const struct mem_ops live_ops = { .read = live_read };

void mem_live__init(struct mem_live *m, pid_t pid)
{
	*m = (struct mem_live){ .base = { .ops = &live_ops }, .pid = pid };
}
