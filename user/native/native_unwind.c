// SPDX-License-Identifier: GPL-2.0-only
/*
 * Native unwinding from a sample's snapshot, the way `perf record --call-graph dwarf`
 * does it: BPF copies the registers and the top of the user stack while the thread is
 * stopped; here the DWARF call-frame information (.eh_frame, else .debug_frame) of each
 * mapped object turns them into the chain of return addresses.
 *
 * Why libdw (libdwfl's frame API): it sits beside the libelf we already link, is what
 * perf and eu-stack use, and interprets CFI (CFA rules, register rules, DWARF
 * expressions, signal frames, the x86-64 frame-pointer fallback where an object has no
 * CFI for a PC) so that we write no DWARF unwinder of our own. It is driven entirely
 * through callbacks, which is what lets it work on a snapshot: dwfl_attach_state()
 * takes Dwfl_Thread_Callbacks whose memory_read serves only from the stack copy and
 * the sampled registers (note_popped(); any other address is refused, so a walk never
 * reads the live process and never blocks),
 * and whose set_initial_registers hands over the sampled registers. The ready-made
 * dwfl_linux_proc_attach() is no use here: it PTRACE_ATTACHes and stops each thread,
 * reads registers with PTRACE_GETREGS and memory from the live process, which is the
 * stop-the-world cost BPF exists to avoid (and it needs ptrace rights: CAP_SYS_PTRACE
 * or the same user under Yama's ptrace_scope). Modules are reported by us with
 * dwfl_report_elf() from native_maps (files opened as hostile, checked by inode, and
 * copied into a memfd: libdwfl maps what it is given, and a mapping of a file its owner
 * truncates faults with SIGBUS), rather than by dwfl_linux_proc_report(), which opens
 * the maps names as plain paths (wrong for a chroot or container, and open to a FIFO
 * or a swapped symlink).
 *
 * What a snapshot must hold (x86-64): RIP and RSP always; RBP, because CFI of
 * frame-pointer code computes the CFA from it and the fallback walks it; RBX and
 * R12-R15, the other callee-saved registers, because CFI may say "same value" for
 * them up the chain and an outer frame's CFA or a DW_OP expression can use them
 * (rare in practice: glibc's and CPython's CFA rules use only RSP and RBP). The
 * caller-saved ones are never needed to find a caller. The whole of pt_regs is 168
 * bytes; the 17 DWARF registers are 136.
 *
 * How much stack (measured on this machine with tests/native/test_native_unwind.py -s; the
 * walk reports the highest byte it read above RSP as stack_used):
 *   - the test program, main -> outer -> middle -> leaf: 368 bytes (no frame pointers)
 *     and 400 (with), to _start; through glibc's qsort to the comparator, 1.7 KiB;
 *   - Debian's CPython in the sid chroot, stopped at a random instruction of a busy
 *     Python loop at module level: 1552 bytes (3.13), 1856 (3.14), 1696 (3.15) to
 *     _start, 11-12 frames;
 *   - each Python -> C -> Python re-entry of the eval loop (sorted() calling a Python
 *     key) adds 5.1-5.5 KiB: one re-entry 6.6-7.3 KiB, four 21.9-23.7 KiB (35-40
 *     frames), ten 52-57 KiB (71-82 frames).
 * So the 16 KiB default reaches _start through two C re-entries; deeper
 * stacks keep their innermost frames, which matter most, and end
 * NATIVE_END_STACK_COPY (marked, never guessed). Python frames themselves cost no C
 * stack on 3.11+ (Python-to-Python calls stay in one eval loop activation).
 *
 * Cost: 2.3-2.5 us per walk of the 7-frame chain, 5.5-9 us for CPython's 11-12
 * frames, 15-30 us for 17-19; for 35-40 frames 29-37 us on 3.15 (built with frame
 * pointers, so its CFI programs are short) and 45-150 us on 3.13/3.14 (a 2-CPU VM
 * running another test suite: the spread is the load); names
 * cost 40-80 ns a frame once cached. perf over the four-re-entry walk: three quarters
 * of the time in libdw, most of it in its CFI interpreter (cfi.c runs an FDE's program
 * from the function's start up to the PC, every time: long for the eval loop's huge
 * function), a sixth in malloc/free of libdwfl's frame states. A cache of the rule
 * row per PC (CFA = reg + off, where RA/RBP are saved), taken from libdw's own
 * dwarf_cfi_addrframe() answers, would remove most of it: the next step if walks
 * must be cheaper than this.
 *
 * One Dwfl per process, rebuilt when its maps change (native_unwind__set_maps): libdwfl
 * has no way to drop one module, and a process's mappings change rarely (dlopen).
 * Memory is bounded by what it caches per module: the objects are mmapped (shared
 * with the page cache), and the CFI cache holds at most one entry per FDE and CIE of
 * an object; walks are bounded by max_frames and by libdwfl's own rule that each CFA
 * lies above the last. Measured after a CPython process's walks and names: 120-130 KiB
 * private, 2.2 MiB of file pages (eh_frame, symbol tables), shared with every other
 * mapper of the same files.
 */
#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "base/hostile_file.h"
#include "base/log.h"
#include "native/native_unwind.h"

struct native_unwind {
	Dwfl *dwfl;
	Dwfl_Callbacks cb; /* must outlive the Dwfl */
	uint64_t maps_hash;
	uint64_t generation;
	pid_t pid;
	char root[4096];	   /* the target's root as we see it (for debug files) */
	/* Where the target's files are: /proc/PID/root, in which names resolve as they do
	 * for the target; or "" for a core's (host paths, already under --sysroot): a core
	 * is never a way into a live process's files. */
	char files_root[64];
	const struct native_files *files; /* how they are opened; NULL: directly */
	native_unwind_watch_fn watch;	  /* told each PC a walk unwinds from */
	void *watch_arg;
	struct native_unwind_stats st;

	/* The walk under way: what the thread callbacks see. */
	const struct native_snapshot *snap;
	uint64_t max_read_end; /* highest stack byte read + 1 */
	uint64_t refused_addr;
	int refused;
	/* Slots below RSP whose registers the sampled epilogue has popped. */
	struct popped {
		uint64_t addr, value;
	} popped[6];
	unsigned int npopped;
};

static const char *const end_names[] = {
	[NATIVE_END_OUTERMOST] = "outermost", [NATIVE_END_STACK_COPY] = "stack copy exhausted",
	[NATIVE_END_NO_CFI] = "no CFI",	      [NATIVE_END_BOUND] = "frame limit",
	[NATIVE_END_BAD_FRAME] = "bad frame", [NATIVE_END_NO_FP] = "no frame pointer",
};

const char *native_end__name(enum native_end end)
{
	return (unsigned int)end < NATIVE_END_MAX ? end_names[end] : "?";
}

/* ---- The thread callbacks: the snapshot is the whole world. ---- */

static pid_t cb_next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp)
{
	(void)dwfl;
	(void)dwfl_arg;
	(void)thread_argp;
	return 0; /* threads are named by the caller, one snapshot at a time */
}

static bool cb_get_thread(Dwfl *dwfl, pid_t tid, void *dwfl_arg, void **thread_argp)
{
	struct native_unwind *u = dwfl_arg;

	(void)dwfl;
	(void)tid;
	*thread_argp = (void *)u->snap;
	return u->snap != NULL;
}

static bool cb_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *dwfl_arg)
{
	struct native_unwind *u = dwfl_arg;
	const struct native_snapshot *s = u->snap;
	uint64_t sp = s->regs[NATIVE_REG_RSP];

	(void)dwfl;
	for (unsigned int i = 0; i < u->npopped && addr < sp; i++)
		if (u->popped[i].addr == addr) {
			*result = u->popped[i].value;
			return true;
		}
	/* Overflow-safe: addr - sp is taken only once addr >= sp. */
	if (addr < sp || addr - sp > s->stack_len || s->stack_len - (addr - sp) < sizeof(*result)) {
		u->refused = 1;
		u->refused_addr = addr;
		return false;
	}
	memcpy(result, s->stack + (addr - sp), sizeof(*result));
	if (addr + sizeof(*result) > u->max_read_end)
		u->max_read_end = addr + sizeof(*result);
	return true;
}

static bool cb_set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	const struct native_snapshot *s = thread_arg;
	int i = 0;

	/* Known registers in runs, as dwfl_thread_state_registers() takes them; the
	 * others stay unset, which libdwfl treats as unknown rather than zero. RIP is
	 * register 16 as well as the PC: the linker's CFI for a PLT stub computes the CFA
	 * from it (DW_OP_breg16), and a PLT stub is where a shared libpython's internal
	 * calls pass. */
	while (i < NATIVE_NREGS) {
		int j = i;

		if (!(s->regs_mask >> i & 1)) {
			i++;
			continue;
		}
		while (j < NATIVE_NREGS && s->regs_mask >> j & 1)
			j++;
		if (!dwfl_thread_state_registers(thread, i, (unsigned int)(j - i), &s->regs[i]))
			return false;
		i = j;
	}
	dwfl_thread_state_register_pc(thread, s->regs[NATIVE_REG_RIP]);
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = cb_next_thread,
	.get_thread = cb_get_thread,
	.memory_read = cb_memory_read,
	.set_initial_registers = cb_set_initial_registers,
};

/* ---- Modules ---- */

/* Bytes of a debug-link candidate read for its CRC, at most. */
#define DEBUG_CRC_MAX (1ll << 30)

/* A debug file found for a module is its own only if the build-ids match or, for an
 * object without one, its CRC32 is the one .gnu_debuglink names (read whole, once per
 * module: debug files of a few hundred MB take a second, which is why build-ids come
 * first). 1 if it matches. */
static int debug_file_matches(int fd, const unsigned char *bits, int len, GElf_Word crc)
{
	uint8_t got[NATIVE_BUILD_ID_MAX], buf[16 << 10];
	uLong c = crc32(0L, Z_NULL, 0);
	struct stat st;
	off_t at = 0;
	ssize_t n = 0;

	if (len > 0)
		return native_maps__read_build_id(fd, got, sizeof(got)) == len &&
			!memcmp(got, bits, (size_t)len);
	/* A candidate may be any file the target names (one lies in its own directory):
	 * one larger than DEBUG_CRC_MAX, seconds of reading, is taken for no match. */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > DEBUG_CRC_MAX)
		return 0;
	while (at <= DEBUG_CRC_MAX && (n = pread(fd, buf, sizeof(buf), at)) > 0) {
		c = crc32(c, buf, (uInt)n);
		at += n;
	}
	return n == 0 && (GElf_Word)c == crc;
}

#define DEBUG_DIR "/usr/lib/debug"

/* Opens @path, in the target's root, as a debug file candidate for the module; a
 * descriptor or -1. */
static int try_debug_file(const struct native_unwind *u, const char *path,
			  const unsigned char *bits, int len, GElf_Word crc)
{
	int fd = native_files__debug(u->files, u->pid, !!u->files_root[0], path);

	if (fd < 0)
		return -1;
	if (!debug_file_matches(fd, bits, len, crc)) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Separate debug files: they hold the .symtab a stripped library lacks (glibc's static
 * functions) and .debug_frame. Looked for in the target's root, as gdb and libdwfl's
 * standard finder look on the host: by build-id under /usr/lib/debug/.build-id, then
 * by the .gnu_debuglink name beside the object, in its .debug/ and under
 * /usr/lib/debug/DIR. The standard finder is not used: it looks at host paths and asks
 * debuginfod when DEBUGINFOD_URLS is set (a network fetch in the middle of a profile).
 * .build-id entries are symbolic links, followed inside the target's root as the
 * target would follow them (native_files__debug()); every file found is checked to be
 * the module's (debug_file_matches) before libdwfl reads it.
 */
static int cb_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			     Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			     GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	struct native_unwind *u = *userdata;
	const unsigned char *bits = NULL;
	char path[sizeof(DEBUG_DIR) + 4096 + 256], name[sizeof(u->files_root) + sizeof(path)];
	const char *dir_end, *in_root;
	GElf_Addr vaddr;
	int fd = -1, len, n;

	(void)modname;
	(void)base;
	if (!u)
		return -1; /* the [vdso]: no file of its own */
	len = dwfl_module_build_id(mod, &bits, &vaddr);
	if (len > NATIVE_BUILD_ID_MAX)
		len = 0;
	if (len > 0) {
		n = snprintf(path, sizeof(path), DEBUG_DIR "/.build-id/%02x/", bits[0]);
		for (int i = 1; i < len && n < (int)sizeof(path) - 8; i++)
			n += snprintf(path + n, sizeof(path) - (size_t)n, "%02x", bits[i]);
		snprintf(path + n, sizeof(path) - (size_t)n, ".debug");
		fd = try_debug_file(u, path, bits, len, 0);
	}
	if (fd < 0 && debuglink_file && file_name && !strchr(debuglink_file, '/')) {
		/* file_name is the maps path as we see it: inside the target's root once
		 * the root's own path is taken off its front. */
		size_t rl = strlen(u->root);

		in_root = rl > 1 && !strncmp(file_name, u->root, rl) && file_name[rl] == '/'
			? file_name + rl
			: file_name;
		dir_end = strrchr(in_root, '/');
		n = dir_end ? (int)(dir_end - in_root) : 0;
		/* Beside the object, unless that names the object itself. */
		if (strcmp(dir_end ? dir_end + 1 : in_root, debuglink_file) &&
		    snprintf(path, sizeof(path), "%.*s/%s", n, in_root, debuglink_file) <
			    (int)sizeof(path))
			fd = try_debug_file(u, path, bits, len, debuglink_crc);
		if (fd < 0 &&
		    snprintf(path, sizeof(path), "%.*s/.debug/%s", n, in_root, debuglink_file) <
			    (int)sizeof(path))
			fd = try_debug_file(u, path, bits, len, debuglink_crc);
		if (fd < 0 &&
		    snprintf(path, sizeof(path), DEBUG_DIR "%.*s/%s", n, in_root,
			     debuglink_file) < (int)sizeof(path))
			fd = try_debug_file(u, path, bits, len, debuglink_crc);
	}
	if (fd >= 0)
		fd = hostile_file__copy(fd);	/* libdwfl maps what it is given */
	if (fd < 0)
		return -1;
	snprintf(name, sizeof(name), "%s%s", u->files_root, path);
	*debuginfo_file_name = strdup(name);
	return fd; /* libdwfl owns it now */
}

/* Objects are all reported with a descriptor; nothing is looked up by name. */
static int cb_find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		       char **file_name, Elf **elfp)
{
	(void)mod;
	(void)userdata;
	(void)modname;
	(void)base;
	(void)file_name;
	(void)elfp;
	return -1;
}

/*
 * The load bias of the file open at @fd mapped as @e: where its vaddr 0 sits. Found
 * from the PT_LOAD whose file range holds e->offset: start - offset - (p_vaddr -
 * p_offset), exact because a segment's vaddr and offset agree modulo the page size.
 */
static int map_bias(int fd, const struct native_map *e, uint64_t *bias, int *is_exec)
{
	size_t phnum;
	Elf *elf;
	int err = -ENOEXEC;

	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &phnum) || phnum > 4096)
		goto cleanup;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (e->offset < (ph.p_offset & ~0xfffull) || e->offset >= ph.p_offset + ph.p_filesz)
			continue;
		*bias = e->start - e->offset - (ph.p_vaddr - ph.p_offset);
		{
			GElf_Ehdr eh;

			*is_exec = gelf_getehdr(elf, &eh) && eh.e_type == ET_EXEC;
		}
		err = 0;
		break;
	}
cleanup:
	if (elf)
		elf_end(elf);
	return err;
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

/* Reports the object of @e to @dwfl; *@mod_end is where the module ends. */
static int report_one(struct native_unwind *u, const struct native_maps *m,
		      const struct native_map *e, uint64_t *mod_end)
{
	Dwarf_Addr start, end;
	uint64_t bias = 0;
	Dwfl_Module *mod;
	void **ud;
	int fd, is_exec = 0, err;

	fd = native_files__mapped(u->files, m, e);
	if (fd >= 0)
		fd = hostile_file__copy(fd);	/* libdwfl maps what it is given */
	if (fd < 0)
		return fd;
	err = map_bias(fd, e, &bias, &is_exec);
	if (err)
		goto cleanup;
	/* add_p_vaddr: @base is the bias (for ET_DYN; ET_EXEC ignores it). */
	mod = dwfl_report_elf(u->dwfl, base_name(e->path), e->path, fd, bias, true);
	if (!mod) {
		pr_debug("native: %s: %s\n", e->path, dwfl_errmsg(-1));
		err = -ENOEXEC;
		goto cleanup;
	}
	fd = -1; /* consumed by libdwfl */
	/* Our state for cb_find_debuginfo, which gets only the module's userdata. */
	dwfl_module_info(mod, &ud, &start, &end, NULL, NULL, NULL, NULL);
	*ud = u;
	*mod_end = end;
	err = 0;
cleanup:
	if (fd >= 0)
		close(fd);
	return err;
}

/*
 * The end of our own [vdso] mapping, which starts at @start: the image the kernel maps
 * is the whole ELF file, its section headers last, rounded up to pages. Read from the
 * image rather than from /proc/self/maps, which the parsing worker may not open.
 */
static uint64_t own_vdso_end(uint64_t start)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)(uintptr_t)start;
	uint64_t size, page = (uint64_t)sysconf(_SC_PAGESIZE);

	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return 0;
	size = eh->e_shoff + (uint64_t)eh->e_shnum * eh->e_shentsize;
	return start + (size + page - 1) / page * page;
}

/*
 * Reports the target's [vdso] (a sample in clock_gettime lands there): it has no file
 * to open, but every process on one kernel maps the same image, so ours is copied into
 * a memfd and reported at the target's address. An image of another size (a 32-bit
 * target) is not ours and is left out.
 */
static int report_vdso(struct native_unwind *u, const struct native_maps *m)
{
	uint64_t start = getauxval(AT_SYSINFO_EHDR), end, bias = 0;
	struct native_map e = { .start = m->vdso_start, .end = m->vdso_end };
	int fd, is_exec, err;
	size_t len;

	if (!start || !m->vdso_start)
		return -ENOENT;
	end = own_vdso_end(start);
	if (!end || end - start != m->vdso_end - m->vdso_start)
		return -ENOENT;
	len = (size_t)(end - start);
	fd = memfd_create("pbp-vdso", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, (const void *)(uintptr_t)start, len) != (ssize_t)len) {
		err = -EIO;
		goto cleanup;
	}
	err = map_bias(fd, &e, &bias, &is_exec);
	if (err)
		goto cleanup;
	if (!dwfl_report_elf(u->dwfl, "[vdso]", "[vdso]", fd, bias, true)) {
		err = -ENOEXEC;
		goto cleanup;
	}
	return 0; /* fd consumed by libdwfl */
cleanup:
	close(fd);
	return err;
}

int native_unwind__new(const struct native_files *files, struct native_unwind **out)
{
	struct native_unwind *u = calloc(1, sizeof(*u));

	if (!u)
		return -ENOMEM;
	u->files = files;
	u->cb.find_elf = cb_find_elf;
	u->cb.find_debuginfo = cb_find_debuginfo;
	u->cb.section_address = dwfl_offline_section_address;
	*out = u;
	return 0;
}

void native_unwind__free(struct native_unwind *u)
{
	if (!u)
		return;
	if (u->dwfl)
		dwfl_end(u->dwfl);
	free(u);
}

void native_unwind__watch(struct native_unwind *u, native_unwind_watch_fn fn, void *arg)
{
	u->watch = fn;
	u->watch_arg = arg;
}

Dwfl *native_unwind__dwfl(const struct native_unwind *u)
{
	return u->dwfl;
}

uint64_t native_unwind__generation(const struct native_unwind *u)
{
	return u->generation;
}

void native_unwind__stats(const struct native_unwind *u, struct native_unwind_stats *st)
{
	*st = u->st;
}

/*
 * Whether mapping @i shows a page of a file that another executable mapping of it
 * shows from further down: a copy the process mapped again elsewhere (libffi maps
 * its closure trampolines' page of its own text once more, at an address of the
 * kernel's choosing), not where the file was loaded: its bias disagrees with that of
 * a mapping of the file from a smaller offset, the text segment's start. Reported, it
 * would give the whole object the copy's bias and every CFI lookup in it the wrong
 * place. A copy's frames are then in no module, which is what they are.
 */
static int remapped(const struct native_maps *m, size_t i)
{
	const struct native_map *e = &m->maps[i];

	for (size_t j = 0; j < m->n; j++) {
		const struct native_map *o = &m->maps[j];

		if (j == i || o->dev != e->dev || o->ino != e->ino)
			continue;
		if (o->offset < e->offset && o->start - o->offset != e->start - e->offset)
			return 1;
	}
	return 0;
}

/* The old state stays until the new one is whole: maps read as a process ends hold
 * no file, and the walks still to come of its earlier samples need its code. */
int native_unwind__set_maps(struct native_unwind *u, const struct native_maps *m)
{
	struct native_unwind_stats was = u->st;
	Dwfl_Module *first = NULL;
	Dwfl *old = u->dwfl, *dwfl;
	uint64_t last_end = 0;
	Dwarf_Addr bias;
	Elf *elf;
	int err;

	if (u->dwfl && u->pid == m->pid && u->maps_hash == m->hash)
		return 0;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	dwfl = dwfl_begin(&u->cb);
	if (!dwfl)
		return -ENOMEM;
	u->dwfl = dwfl;		/* what report_one() and report_vdso() report into */
	u->st.modules = u->st.modules_unopened = 0;

	dwfl_report_begin(dwfl);
	for (size_t i = 0; i < m->n; i++) {
		const struct native_map *e = &m->maps[i];

		/* A file's later executable mappings (rare: a text segment split by
		 * mprotect) lie within the module its first one reported. */
		if (i && e->dev == m->maps[i - 1].dev && e->ino == m->maps[i - 1].ino &&
		    e->start < last_end)
			continue;
		if (remapped(m, i))
			continue;
		last_end = 0;
		if (report_one(u, m, e, &last_end))
			u->st.modules_unopened++;
		else
			u->st.modules++;
	}
	if (!report_vdso(u, m))
		u->st.modules++;
	if (dwfl_report_end(dwfl, NULL, NULL)) {
		err = -ENOMEM;
		goto fail;
	}
	/* libdwfl takes the architecture from an ELF file; any module's will do. */
	for (size_t i = 0; !first && i < m->n; i++)
		first = dwfl_addrmodule(dwfl, m->maps[i].start);
	elf = first ? dwfl_module_getelf(first, &bias) : NULL;
	if (!elf) {
		err = -ENOEXEC;
		goto fail;
	}
	if (!dwfl_attach_state(dwfl, elf, m->pid, &thread_callbacks, u)) {
		pr_debug("native: dwfl_attach_state: %s\n", dwfl_errmsg(-1));
		err = -ENOEXEC;
		goto fail;
	}
	if (old)
		dwfl_end(old);
	u->generation++;
	u->st.rebuilds++;
	u->pid = m->pid;
	u->maps_hash = m->hash;
	snprintf(u->root, sizeof(u->root), "%s", m->root);
	u->files_root[0] = '\0';
	if (!m->from_core)
		snprintf(u->files_root, sizeof(u->files_root), "/proc/%d/root", (int)m->pid);
	return 0;
fail:
	dwfl_end(dwfl);
	u->dwfl = old;
	u->st.modules = was.modules;
	u->st.modules_unopened = was.modules_unopened;
	return err;
}

/* ---- Walking ---- */

struct walk {
	struct native_unwind *u;
	struct native_stack *out;
	uint64_t sp0; /* the snapshot's RSP */
	unsigned int max;
	int bound;
	native_unwind_stop_fn stop;
	void *stop_arg;
};

/*
 * The stack pointer of the frame @state stands for. Past the first frame it is the
 * value libdwfl unwound into RSP: x86-64 has no CFI rule for RSP, and libdwfl's ABI
 * rules (backends/x86_64_cfi.c) make it DW_CFA_val_offset(rsp, 0), the CFA of the
 * frame below; its frame-pointer fallback sets it to RBP + 16, the same place.
 */
static uint64_t frame_sp(Dwfl_Frame *state, const struct walk *w)
{
	Dwarf_Word sp;

	if (!w->out->n)
		return w->sp0;
	return dwfl_frame_reg(state, NATIVE_REG_RSP, &sp) == 0 ? sp : 0;
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct walk *w = arg;
	struct native_frame *f = &w->out->frames[w->out->n];
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	f->pc = pc;
	f->lookup = activation ? pc : pc - 1;
	f->sp = frame_sp(state, w);
	w->out->n++;
	if (w->u->watch)
		w->u->watch(w->u->watch_arg, f->lookup);
	if (w->stop) {
		Dwarf_Word rbp = 0;
		int known = dwfl_frame_reg(state, NATIVE_REG_RBP, &rbp) == 0;

		if (w->stop(w->stop_arg, f, rbp, known)) {
			w->bound = 1;
			return DWARF_CB_ABORT;
		}
	}
	if (w->out->n >= w->max) {
		w->bound = 1;
		return DWARF_CB_ABORT;
	}
	return DWARF_CB_OK;
}

Dwarf_Frame *native_unwind__row(Dwfl *dwfl, uint64_t addr)
{
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, addr);
	Dwarf_Frame *frame = NULL;
	Dwarf_Addr bias;
	Dwarf_CFI *cfi;

	if (!mod)
		return NULL;
	cfi = dwfl_module_eh_cfi(mod, &bias);
	if (!cfi || dwarf_cfi_addrframe(cfi, addr - bias, &frame)) {
		cfi = dwfl_module_dwarf_cfi(mod, &bias);
		if (!cfi || dwarf_cfi_addrframe(cfi, addr - bias, &frame))
			return NULL;
	}
	return frame;
}

/*
 * Whether CFI covers @addr (1, else 0), and whether it says the return address there
 * is undefined (*@outermost): the one way to tell a walk that reached _start or a
 * thread's clone3 from one that stopped for lack of CFI, or on a zero read as a return
 * address, since libdwfl's error codes are not public and its "end of stack" return
 * is not reliable ("some systems return error instead of zero", libdwfl.h).
 */
static int cfi_at(Dwfl *dwfl, uint64_t addr, int *outermost)
{
	Dwarf_Frame *frame = native_unwind__row(dwfl, addr);
	Dwarf_Op ops_mem[3], *ops;
	size_t nops;

	*outermost = 0;
	if (!frame)
		return 0;
	/* An undefined rule: no operations, and ops pointing at our buffer. */
	if (!dwarf_frame_register(frame, NATIVE_REG_RIP, ops_mem, &ops, &nops) && !nops &&
	    ops == ops_mem)
		*outermost = 1;
	free(frame);
	return 1;
}

/*
 * An epilogue sampled after its pops (`leave; ret`, `pop %rbp; ret`): the CFI row there
 * still says the caller's RBP, RBX and R12-R15 are saved where the prologue pushed
 * them, now below RSP and so outside the copy, and the walk would lose RBP and end at
 * the caller (CPython's small helpers return this way: 9 % of one loaded run's samples
 * in a Python callback on 3.15 stood at the ret of _PyCompactLong_Add or _Py_Dealloc).
 * A slot below RSP has been popped into
 * its register, so the register holds what the slot does; the table lets the read of
 * that slot answer with it.
 */
static void note_popped(struct native_unwind *u, const struct native_snapshot *s)
{
	static const int saved[] = { NATIVE_REG_RBX, NATIVE_REG_RBP, NATIVE_REG_R12,
				     NATIVE_REG_R13, NATIVE_REG_R14, NATIVE_REG_R15 };
	Dwarf_Frame *frame = native_unwind__row(u->dwfl, s->regs[NATIVE_REG_RIP]);
	uint64_t sp = s->regs[NATIVE_REG_RSP], cfa;
	Dwarf_Op ops_mem[3], *ops;
	size_t nops;

	u->npopped = 0;
	if (!frame)
		return;
	/* libdw gives a register + offset CFA as one DW_OP_bregx. */
	if (dwarf_frame_cfa(frame, &ops, &nops) || nops != 1 || ops[0].atom != DW_OP_bregx ||
	    ops[0].number >= NATIVE_NREGS || !(s->regs_mask >> ops[0].number & 1))
		goto out;
	cfa = s->regs[ops[0].number] + ops[0].number2;
	for (size_t i = 0; i < sizeof(saved) / sizeof(saved[0]); i++) {
		uint64_t at;

		if (!(s->regs_mask >> saved[i] & 1) ||
		    dwarf_frame_register(frame, saved[i], ops_mem, &ops, &nops) || nops != 2 ||
		    ops[0].atom != DW_OP_call_frame_cfa || ops[1].atom != DW_OP_plus_uconst)
			continue;
		at = cfa + ops[1].number;
		/* The pops lie within the red zone's 128 bytes below RSP. */
		if (at < sp && sp - at <= 128)
			u->popped[u->npopped++] = (struct popped){ at, s->regs[saved[i]] };
	}
out:
	free(frame);
}

int native_unwind__walk(struct native_unwind *u, const struct native_snapshot *s,
			unsigned int max_frames, struct native_stack *out)
{
	return native_unwind__walk_until(u, s, max_frames, NULL, NULL, out);
}

int native_unwind__walk_until(struct native_unwind *u, const struct native_snapshot *s,
			      unsigned int max_frames, native_unwind_stop_fn stop, void *arg,
			      struct native_stack *out)
{
	const uint32_t need = 1u << NATIVE_REG_RIP | 1u << NATIVE_REG_RSP;
	struct walk w = { .u = u, .out = out, .stop = stop, .stop_arg = arg };
	uint64_t sp;

	native_unwind__clear_stack(out);
	if ((s->regs_mask & need) != need || (!s->stack && s->stack_len))
		return -EINVAL;
	if (!u->dwfl)
		return -ENOENT;
	w.max = max_frames < NATIVE_MAX_FRAMES ? max_frames : NATIVE_MAX_FRAMES;
	if (!w.max)
		w.max = 1;
	sp = s->regs[NATIVE_REG_RSP];
	w.sp0 = sp;
	u->snap = s;
	u->max_read_end = sp;
	u->refused = 0;
	if (u->watch)
		u->watch(u->watch_arg, s->regs[NATIVE_REG_RIP]);
	note_popped(u, s);
	/* The thread id only names the walk to libdwfl; cb_get_thread ignores it. */
	dwfl_getthread_frames(u->dwfl, s->tid ? (pid_t)s->tid : 1, frame_cb, &w);
	u->snap = NULL;
	u->npopped = 0;

	/* libdwfl returns 0 also when a read it needed failed (the return address left
	 * unknown reads as the end), so our refusal is looked at first. A refused read
	 * further up the same stack (within 1 GiB: no stack is larger) means the copy
	 * was short; one elsewhere, that CFI pointed off the stack. */
	if (w.bound) {
		out->end = NATIVE_END_BOUND;
	} else if (u->refused && u->refused_addr >= sp && u->refused_addr - sp >= s->stack_len &&
		   u->refused_addr - sp < (1ull << 30)) {
		out->end = NATIVE_END_STACK_COPY;
	} else if (!out->n) {
		out->end = NATIVE_END_BAD_FRAME;
	} else {
		int outermost;

		if (!cfi_at(u->dwfl, out->frames[out->n - 1].lookup, &outermost))
			out->end = NATIVE_END_NO_CFI;
		else
			out->end = outermost ? NATIVE_END_OUTERMOST : NATIVE_END_BAD_FRAME;
	}
	out->stack_used = (uint32_t)(u->max_read_end - sp);
	/* A PC in no module had no CFI: the caller above it, if any, came from libdwfl's
	 * frame-pointer fallback. (An object without CFI for a PC is the other such case;
	 * finding it would cost a second CFI lookup per frame, and x86-64 objects carry
	 * .eh_frame by ABI.) */
	for (unsigned int i = 0; i + 1 < out->n && !out->guessed_from; i++)
		if (!dwfl_addrmodule(u->dwfl, out->frames[i].lookup))
			out->guessed_from = i + 1;
	u->st.walks++;
	u->st.frames += out->n;
	u->st.ends[out->end]++;
	return 0;
}
