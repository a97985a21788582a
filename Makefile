# SPDX-License-Identifier: GPL-2.0-only
# Builds the BPF object, its skeleton and the pybpfprof binary into build/.
#   make            build
#   make test       install what is missing, prepare interpreters, run every test
#   make test-real  the real programs (Django, aiohttp, the standard library's
#                   callbacks and test suite, a start-up) on every interpreter, every
#                   mode, 100 Hz and 1 kHz, longer than `make test` does (12 minutes)
#   make check      the edit-test loop: build, then the unit tests and the tests of
#                   parsers and writers that need no BPF and no interpreter (a minute)
#   make demo       install what is missing, build, profile the bundled example
#   make bench      slowdown, cost per sample, accuracy, scale, in-target and machine
#                   cost, side by side with CPython's profiler: build/bench/report.md
#                   and chart.svg, then docs/performance.md and README's verdicts
#                   from them
#                   (root; about 30 minutes)
#   make fuzz       run the libFuzzer targets for a while
#   make lint       clang-tidy and cppcheck over user/
#   make format     clang-format the C sources
#   make V=1        show full commands

.DELETE_ON_ERROR:
.SUFFIXES:

OUT       := build
CC        ?= gcc
CLANG     ?= clang
BPFTOOL   ?= $(shell command -v bpftool 2>/dev/null || echo /usr/sbin/bpftool)
ARCH      := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')

CFLAGS    ?= -O2 -g
WARNFLAGS := -Wall -Wextra -Wno-missing-field-initializers
CPPFLAGS  := -Iinclude -Iuser -I$(OUT) -D_GNU_SOURCE
# A root process that parses other users' memory and files: fortified libc calls, stack
# canaries, a position-independent executable and read-only relocations.
HARDEN    := -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE
LDHARDEN  := -pie -Wl,-z,relro,-z,now
ALL_CFLAGS = -std=gnu11 $(CFLAGS) $(HARDEN) $(WARNFLAGS) $(CPPFLAGS) -MMD -MP
LDFLAGS   += $(LDHARDEN)
LDLIBS    := -lbpf -ldw -lelf -lz -lcurl -pthread
SAN       ?=
ifneq ($(SAN),)
ALL_CFLAGS += -fsanitize=$(SAN) -fno-omit-frame-pointer
LDFLAGS   += -fsanitize=$(SAN)
endif

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

USER_SRCS := $(sort $(wildcard user/*.c))
USER_OBJS := $(USER_SRCS:user/%.c=$(OUT)/user/%.o)
LIB_OBJS  := $(filter-out $(OUT)/user/main.o,$(USER_OBJS))

.PHONY: all test test-real check demo bench soak container-load fuzz lint format clean unit-tests
all: $(OUT)/pybpfprof

$(OUT) $(OUT)/user $(OUT)/tests:
	$(Q)mkdir -p $@

$(OUT)/vmlinux.h: vmlinux/gen-vmlinux-h.sh | $(OUT)
	$(call msg,GEN,$@)
	$(Q)sh vmlinux/gen-vmlinux-h.sh $@

$(OUT)/sample.bpf.o: bpf/sample.bpf.c include/pbp_abi.h $(OUT)/vmlinux.h | $(OUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -Wall -target bpf -D__TARGET_ARCH_$(ARCH) -Iinclude -I$(OUT) \
		-MMD -MP -MF $(OUT)/sample.bpf.d -c $< -o $@

$(OUT)/sample.skel.h: $(OUT)/sample.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name sample_bpf > $@

# Objects that include the skeleton need it generated first.
$(USER_OBJS): | $(OUT)/sample.skel.h

$(OUT)/user/%.o: user/%.c | $(OUT)/user
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(OUT)/pybpfprof: $(USER_OBJS)
	$(call msg,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Unit test programs: each links the library objects it needs.
$(OUT)/tests/test_linetable: tests/unit/test_linetable.c $(OUT)/user/py_linetable.o | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS)

$(OUT)/tests/test_offsets: tests/unit/test_offsets.c $(OUT)/user/py_offsets.o | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS)

# The readers of copied structs against a fake target (tests/unit/fake_mem.h).
FIELD_BOUNDS_OBJS = $(addprefix $(OUT)/user/,py_offsets.o code_cache.o py_obj.o strtab.o hashmap.o \
		py_linetable.o decoder.o decode_runs.o frame_cache.o mem_snapshot.o mem_live.o py_threads.o \
		py_thread_name.o py_attr.o log.o)
$(OUT)/tests/test_field_bounds: tests/unit/test_field_bounds.c $(FIELD_BOUNDS_OBJS) | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS)

# The decoder's runs of frames per eval-loop activation, every layout, a fake target.
$(OUT)/tests/test_decode_runs: tests/unit/test_decode_runs.c $(FIELD_BOUNDS_OBJS) | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS)

# The decoder's check of a --no-bpf reading, on fake targets.
$(OUT)/tests/test_live_verify: tests/unit/test_live_verify.c $(FIELD_BOUNDS_OBJS) | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS)

# Every writer and what it links: the golden-file tests run each on a fixed profile.
WRITER_OBJS = $(filter $(OUT)/user/out_%.o $(OUT)/user/writers.o $(OUT)/user/aggregate.o \
		$(OUT)/user/strtab.o $(OUT)/user/hashmap.o $(OUT)/user/frame_class.o,$(USER_OBJS))
# Shared by the writers: JSON strings, protobuf encoding, threads and frame numbers.
WRITER_OBJS += $(filter $(OUT)/user/json.o $(OUT)/user/pb.o \
		$(OUT)/user/profile_index.o $(OUT)/user/text_safe.o $(OUT)/user/decode_gap.o,$(USER_OBJS))
$(OUT)/tests/test_writers: tests/unit/test_writers.c $(WRITER_OBJS) | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS) -lz

$(OUT)/tests/test_aggregate: tests/unit/test_aggregate.c $(OUT)/user/aggregate.o \
		$(OUT)/user/hashmap.o | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS)

# Reading asyncio's tasks from a target that makes their sets large, and read budgets.
$(OUT)/tests/test_asyncio_reads: tests/unit/test_asyncio_reads.c $(LIB_OBJS) | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $^ $(LDFLAGS) $(LDLIBS)

# A thread's Python name from the attributes of its Thread object, hostile ones too.
$(OUT)/tests/test_thread_name: tests/unit/test_thread_name.c $(OUT)/user/py_thread_name.o \
		$(OUT)/user/py_attr.o $(OUT)/user/py_obj.o $(OUT)/user/py_offsets.o | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $^ $(LDFLAGS)

$(OUT)/tests/test_hashmap: tests/unit/test_hashmap.c $(OUT)/user/hashmap.o | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS)

$(OUT)/tests/test_thread_hold: tests/unit/test_thread_hold.c $(OUT)/user/thread_hold.o | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS) -pthread

$(OUT)/tests/test_json: tests/unit/test_json.c $(OUT)/user/json.o | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS)

$(OUT)/tests/test_top_view: tests/unit/test_top_view.c $(OUT)/user/top_view.o \
		$(OUT)/user/text_safe.o $(OUT)/user/aggregate.o $(OUT)/user/strtab.o \
		$(OUT)/user/hashmap.o | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS)

$(OUT)/tests/test_cgroup_labels: tests/unit/test_cgroup_labels.c $(OUT)/user/cgroup_labels.o \
		$(OUT)/user/cgroup.o $(OUT)/user/proc.o $(OUT)/user/text_safe.o | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS)

$(OUT)/tests/test_cgroup: tests/unit/test_cgroup.c $(OUT)/user/cgroup.o $(OUT)/user/proc.o \
		$(OUT)/user/text_safe.o | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS)

$(OUT)/tests/test_export_queue: tests/unit/test_export_queue.c $(OUT)/user/export_queue.o \
		| $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS) -pthread

$(OUT)/tests/test_agent_config: tests/unit/test_agent_config.c $(OUT)/user/agent_config.o \
		$(OUT)/user/log.o | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS)

$(OUT)/tests/test_export_files: tests/unit/test_export_files.c $(OUT)/user/export_files.o \
		$(OUT)/user/outfile.o $(OUT)/user/export_queue.o $(OUT)/user/log.o | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS) -pthread

$(OUT)/tests/test_outfile: tests/unit/test_outfile.c $(OUT)/user/outfile.o $(OUT)/user/log.o \
		| $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS)

$(OUT)/tests/test_agent_procs: tests/unit/test_agent_procs.c $(OUT)/user/agent_procs.o \
		$(OUT)/user/cgroup_labels.o $(OUT)/user/cgroup.o $(OUT)/user/proc.o \
		$(OUT)/user/text_safe.o | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS)

$(OUT)/tests/test_descendants: tests/unit/test_descendants.c $(OUT)/user/descendants.o \
		$(OUT)/user/hashmap.o $(OUT)/user/proc.o $(OUT)/user/text_safe.o | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS)

$(OUT)/tests/test_code_cache: tests/unit/test_code_cache.c $(OUT)/user/code_cache.o \
		$(OUT)/user/strtab.o $(OUT)/user/hashmap.o $(OUT)/user/py_obj.o $(OUT)/user/py_linetable.o \
		$(OUT)/user/mem_live.o $(OUT)/user/log.o | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS)

$(OUT)/tests/test_frame_cache: tests/unit/test_frame_cache.c $(OUT)/user/frame_cache.o \
		$(OUT)/user/strtab.o $(OUT)/user/hashmap.o | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS)

# The export side against a real HTTP server that tests/test_agent_export.py runs.
EXPORT_OBJS = $(addprefix $(OUT)/user/,export.o export_pyroscope.o export_files.o \
		outfile.o export_queue.o metrics_http.o worker.o log.o)
$(OUT)/tests/test_export_http: tests/unit/test_export_http.c $(EXPORT_OBJS) | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS) -lcurl -pthread

# Native unwinding and symbolisation (--native) against a live process's snapshot.
NATIVE_OBJS = $(addprefix $(OUT)/user/,native_maps.o native_unwind.o native_fp.o native_sym.o \
		native_ehhdr.o native_line.o native_demangle.o privs.o hostile_file.o \
		proc.o text_safe.o hashmap.o strtab.o log.o)
$(OUT)/tests/test_native_unwind: tests/unit/test_native_unwind.c $(NATIVE_OBJS) | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS) -ldw -lelf -lz

# Native and Python frames in one stack: a pure function, nothing else linked.
$(OUT)/tests/test_native_merge: tests/unit/test_native_merge.c $(OUT)/user/native_merge.o \
		| $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS)

# The same against a live CPython: unwinding, decoding with the stack copy, merging.
NATIVE_LIVE_OBJS = $(sort $(NATIVE_OBJS) $(FIELD_BOUNDS_OBJS) $(addprefix $(OUT)/user/,native_merge.o \
		py_interp.o elf_syms.o mem_core.o))
$(OUT)/tests/test_native_live: tests/unit/test_native_live.c $(NATIVE_LIVE_OBJS) | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS) -ldw -lelf -lz

AGENT_UNIT_TESTS := test_cgroup_labels test_cgroup test_export_queue test_agent_config test_export_files \
	test_export_http test_agent_procs test_descendants test_code_cache test_frame_cache

unit-tests: $(OUT)/tests/test_linetable $(OUT)/tests/test_offsets $(OUT)/tests/test_field_bounds \
	$(OUT)/tests/test_decode_runs $(OUT)/tests/test_native_merge $(OUT)/tests/test_native_live \
	$(OUT)/tests/test_writers $(OUT)/tests/test_json $(OUT)/tests/test_top_view \
	$(OUT)/tests/test_outfile $(OUT)/tests/test_hashmap $(OUT)/tests/test_native_unwind \
	$(OUT)/tests/test_asyncio_reads $(OUT)/tests/test_thread_name \
	$(OUT)/tests/test_aggregate $(OUT)/tests/test_live_verify $(OUT)/tests/test_thread_hold \
	$(AGENT_UNIT_TESTS:%=$(OUT)/tests/%)

test:
	$(Q)bash tools/run-tests.sh

# tests/test_real_programs.py's full matrix; `make test` runs a shorter one.
test-real: all
	$(Q)bash tools/install-deps.sh test
	$(Q)bash tools/test-interpreters.sh >/dev/null
	$(Q)PBP_NO_BUILD=1 PBP_REAL_FULL=1 /usr/bin/python3 -m pytest -v -p no:cacheprovider \
		--durations=10 tests/test_real_programs.py

CHECK_TESTS := test_aggregate test_asyncio_reads test_thread_name_reads test_hashmap test_linetable test_live_reading test_native_merge test_offsets \
	test_top_view test_writers_formats test_writers_golden
check: all unit-tests
	$(Q)PBP_NO_BUILD=1 /usr/bin/python3 -m pytest -q -p no:cacheprovider \
		$(CHECK_TESTS:%=tests/%.py) tests/test_setup_scripts.py -k 'not demo and not apt'

demo:
	$(Q)bash tools/demo.sh

bench: all
	$(Q)/usr/bin/python3 tools/bench/run.py --out $(OUT)/bench
	$(Q)/usr/bin/python3 tools/bench/readme_perf.py $(OUT)/bench/report.md README.md

# The agent under 10 minutes of process churn: RSS must level off (tools/soak/).
soak: all
	$(Q)/usr/bin/python3 tools/soak/agent_churn.py --binary $(OUT)/pybpfprof --seconds 600 \
		--json $(OUT)/soak.json

# The agent's image with the DaemonSet's privileges following 20 busy containers for a
# minute: its CPU, memory and time to each container's first profile (tools/soak/).
container-load: all
	$(Q)/usr/bin/python3 tools/soak/container_load.py --containers 20 --seconds 60 \
		--json $(OUT)/container-load.json

# libFuzzer targets, rebuilt every time (they track no header dependencies).
FUZZ_CC = $(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined $(CPPFLAGS)
FUZZ_TARGETS := fuzz_linetable fuzz_core fuzz_decode fuzz_native_maps fuzz_native_ehhdr \
	fuzz_worker_answer
FUZZ_DECODE_SRCS := $(addprefix user/,py_offsets.c code_cache.c py_obj.c strtab.c hashmap.c py_linetable.c \
	decoder.c decode_runs.c frame_cache.c mem_snapshot.c mem_live.c py_threads.c py_thread_name.c py_attr.c log.c)

.PHONY: FORCE
$(OUT)/tests/fuzz_linetable: tests/fuzz/fuzz_linetable.c user/py_linetable.c FORCE | $(OUT)/tests
	$(call msg,FUZZ,$@)
	$(Q)$(FUZZ_CC) -o $@ $(filter %.c,$^)

$(OUT)/tests/fuzz_core: tests/fuzz/fuzz_core.c user/mem_core.c user/py_interp.c user/elf_syms.c \
		user/hostile_file.c user/proc.c user/text_safe.c user/py_offsets.c user/mem_live.c \
		user/log.c user/hashmap.c FORCE | $(OUT)/tests
	$(call msg,FUZZ,$@)
	$(Q)$(FUZZ_CC) -o $@ $(filter %.c,$^) -lelf -lz

$(OUT)/tests/fuzz_decode: tests/fuzz/fuzz_decode.c $(FUZZ_DECODE_SRCS) FORCE | $(OUT)/tests
	$(call msg,FUZZ,$@)
	$(Q)$(FUZZ_CC) -o $@ $(filter %.c,$^)

$(OUT)/tests/fuzz_native_maps: tests/fuzz/fuzz_native_maps.c user/native_maps.c user/hostile_file.c \
		user/proc.c user/text_safe.c user/hashmap.c FORCE | $(OUT)/tests
	$(call msg,FUZZ,$@)
	$(Q)$(FUZZ_CC) -o $@ $(filter %.c,$^) -ldw -lelf

$(OUT)/tests/fuzz_native_ehhdr: tests/fuzz/fuzz_native_ehhdr.c user/native_ehhdr.c FORCE | $(OUT)/tests
	$(call msg,FUZZ,$@)
	$(Q)$(FUZZ_CC) -o $@ $(filter %.c,$^)

$(OUT)/tests/fuzz_worker_answer: tests/fuzz/fuzz_worker_answer.c user/native_worker_answer.c \
		FORCE | $(OUT)/tests
	$(call msg,FUZZ,$@)
	$(Q)$(FUZZ_CC) -o $@ $(filter %.c,$^)

# FUZZ_SECONDS each (default 60).
fuzz: $(FUZZ_TARGETS:%=$(OUT)/tests/%)
	$(Q)$(OUT)/tests/fuzz_linetable -max_total_time=$${FUZZ_SECONDS:-60} -print_final_stats=1
	$(Q)$(OUT)/tests/fuzz_core -max_total_time=$${FUZZ_SECONDS:-60} -print_final_stats=1 \
		-max_len=16384
	$(Q)mkdir -p $(OUT)/fuzz-corpus/decode
	$(Q)$(OUT)/tests/fuzz_decode -max_total_time=$${FUZZ_SECONDS:-60} -print_final_stats=1 \
		-max_len=4096 $(OUT)/fuzz-corpus/decode tests/fuzz/seeds/decode
	$(Q)$(OUT)/tests/fuzz_native_maps -max_total_time=$${FUZZ_SECONDS:-60} -print_final_stats=1 \
		-max_len=16384 -dict=tests/fuzz/native_maps.dict
	$(Q)mkdir -p $(OUT)/fuzz-corpus/native_ehhdr
	$(Q)$(OUT)/tests/fuzz_native_ehhdr -max_total_time=$${FUZZ_SECONDS:-60} -print_final_stats=1 \
		-max_len=4096 $(OUT)/fuzz-corpus/native_ehhdr tests/fuzz/seeds/native_ehhdr
	$(Q)mkdir -p $(OUT)/fuzz-corpus/worker_answer
	$(Q)$(OUT)/tests/fuzz_worker_answer -max_total_time=$${FUZZ_SECONDS:-60} \
		-print_final_stats=1 -max_len=65536 $(OUT)/fuzz-corpus/worker_answer \
		tests/fuzz/seeds/worker_answer

# clang's -Wshorten-64-to-32 finds 64-bit values narrowed on the way (a capability mask
# tested through an int once hid CAP_BPF); gcc has no equivalent.
lint: $(OUT)/sample.skel.h
	$(Q)for f in $(USER_SRCS); do \
		$(CLANG) -fsyntax-only -std=gnu11 -Wall -Wextra -Wno-missing-field-initializers \
			-Wshorten-64-to-32 -Werror $(CPPFLAGS) $$f || exit 1; done
	$(Q)cppcheck --quiet --inline-suppr --error-exitcode=1 --enable=warning,performance,portability \
		--suppress=missingIncludeSystem $(CPPFLAGS) user/
	$(Q)clang-tidy --quiet \
		-checks=-clang-analyzer-security.insecureAPI.DeprecatedOrUnsafeBufferHandling \
		$(USER_SRCS) -- $(CPPFLAGS) -std=gnu11

format:
	$(Q)clang-format -i $(USER_SRCS) user/*.h include/*.h bpf/*.c

clean:
	$(Q)rm -rf $(OUT)

-include $(wildcard $(OUT)/user/*.d $(OUT)/*.d $(OUT)/tests/*.d)
