# SPDX-License-Identifier: GPL-2.0-only
# Builds the BPF object, its skeleton and the pybpfprof binary into build/.
#   make            build
#   make test       install what is missing, prepare interpreters, run every test
#   make test-real  the real programs (Django, aiohttp, the standard library's
#                   callbacks and test suite, a start-up) on every interpreter, every
#                   mode, 100 Hz and 1 kHz, longer than `make test` does (12 minutes)
#   make check      the edit-test loop: build, check-layers, then every test that loads
#                   no BPF and needs no container, browser or long run (a few minutes)
#   make check-layers  no include or call in user/ goes up the layer order (USES_*)
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
LDLIBS    := -lbpf -ldw -lelf -lz -lcurl -lm -pthread
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

# user/ by layer, bottom first. USES_x names the layers x may include and call, nearest
# first: it is also the link order of x's programs. dump, agent and ui are siblings, which
# know nothing of each other. tools/check-layers.py holds the tree to it (make check-layers).
LAYERS       := base mem cpython decode native sample profile session output dump agent ui cmd
USES_base    :=
USES_mem     := base
USES_cpython := mem $(USES_mem)
USES_decode  := cpython $(USES_cpython)
USES_native  := decode $(USES_decode)
USES_sample  := native $(USES_native)
USES_profile := sample $(USES_sample)
USES_session := profile $(USES_profile)
USES_output  := session $(USES_session)
USES_dump    := output $(USES_output)
USES_agent   := output $(USES_output)
USES_ui      := output $(USES_output)
USES_cmd     := dump agent ui output $(USES_output)

# Within a layer whose files share a private header, the order they may call in, first
# the one called by the others: a file calls only those before it (make check-layers).
# native: the process's maps below both walks, the CFI walk (native_unwind) below the
# frame-pointer walk that starts with it, native_proc choosing between them per sample.
ORDER_native := native_regs native_maps native_core native_demangle native_ehhdr native_line \
	native_unwind native_fp native_fpcheck native_merge native_proc native_sym \
	native_worker_answer native_worker sandbox native_worker_serve
ORDER_session := session_frame session_sources session_targets session_native session_tasks session_sink \
	session_waits session_follow session_enrol session

USER_SRCS := $(sort $(wildcard $(LAYERS:%=user/%/*.c)))
USER_HDRS := $(sort $(wildcard $(LAYERS:%=user/%/*.h)))
USER_OBJS := $(USER_SRCS:user/%.c=$(OUT)/user/%.o)
MAIN_OBJ  := $(OUT)/user/cmd/main.o

# One static archive per layer. A program links its layer's archive and those it uses,
# top first, so that a call up the order finds no definition and fails to link.
LAYER_LIBS := $(LAYERS:%=$(OUT)/user/lib%.a)
libs_of     = $(foreach l,$(1) $(USES_$(1)),$(OUT)/user/lib$(l).a)

.PHONY: all test test-real check check-layers demo bench soak container-load fuzz lint format clean unit-tests
all: $(OUT)/pybpfprof

$(OUT) $(OUT)/tests:
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

$(OUT)/user/%.o: user/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

# Members are replaced whole, so a removed source leaves no stale object behind.
$(foreach l,$(LAYERS),$(eval $(OUT)/user/lib$(l).a: \
	$(filter-out $(MAIN_OBJ),$(filter $(OUT)/user/$(l)/%,$(USER_OBJS)))))
$(LAYER_LIBS):
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(OUT)/pybpfprof: $(MAIN_OBJ) $(call libs_of,cmd)
	$(call msg,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Unit test programs (tests/unit/NAME.c), each with the layer it tests: it links that
# layer's archive and those below it, so it cannot reach a layer above.
UNIT_LAYER_test_hashmap        := base
UNIT_LAYER_test_json           := base
UNIT_LAYER_test_outfile        := base
UNIT_LAYER_test_cgroup         := base
UNIT_LAYER_test_linetable      := cpython
UNIT_LAYER_test_offsets        := cpython
UNIT_LAYER_test_thread_name    := cpython
UNIT_LAYER_test_asyncio_reads  := cpython
UNIT_LAYER_test_field_bounds   := decode
UNIT_LAYER_test_decode_runs    := decode
UNIT_LAYER_test_live_verify    := decode
UNIT_LAYER_test_code_cache     := decode
UNIT_LAYER_test_frame_cache    := decode
UNIT_LAYER_test_native_unwind  := native
UNIT_LAYER_test_native_merge   := native
UNIT_LAYER_test_native_live    := native
UNIT_LAYER_test_thread_hold    := sample
UNIT_LAYER_test_aggregate      := profile
UNIT_LAYER_test_descendants    := session
UNIT_LAYER_test_writers        := output
UNIT_LAYER_test_top_view       := ui
UNIT_LAYER_test_cgroup_labels  := agent
UNIT_LAYER_test_agent_procs    := agent
UNIT_LAYER_test_agent_config   := agent
UNIT_LAYER_test_export_queue   := agent
UNIT_LAYER_test_export_files   := agent
UNIT_LAYER_test_export_http    := agent
UNIT_TESTS := $(patsubst UNIT_LAYER_%,%,$(filter UNIT_LAYER_%,$(.VARIABLES)))

.SECONDEXPANSION:
$(UNIT_TESTS:%=$(OUT)/tests/%): $(OUT)/tests/%: tests/unit/%.c $$(call libs_of,$$(UNIT_LAYER_$$*)) \
		| $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(filter %.a,$^) $(LDFLAGS) $(LDLIBS)

unit-tests: $(UNIT_TESTS:%=$(OUT)/tests/%)

# No object or include of a layer reaches one above it, nor a sibling; no file of a
# layer with an ORDER_ calls one after it.
check-layers: all
	$(Q)/usr/bin/python3 tools/check-layers.py --out $(OUT) \
		$(foreach l,$(LAYERS),$(if $(ORDER_$(l)),--order $(l)=$(subst $(space),$(comma),$(strip \
			$(ORDER_$(l)))))) \
		$(foreach l,$(LAYERS),$(l)=$(subst $(space),$(comma),$(strip $(USES_$(l)))))
comma := ,
space := $(subst ,, )

test:
	$(Q)bash tools/run-tests.sh

# tests/record/test_real_programs.py's full matrix; `make test` runs a shorter one.
test-real: all
	$(Q)bash tools/install-deps.sh test
	$(Q)bash tools/test-interpreters.sh >/dev/null
	$(Q)PBP_NO_BUILD=1 PBP_REAL_FULL=1 /usr/bin/python3 -m pytest -v -p no:cacheprovider \
		--durations=10 tests/record/test_real_programs.py

# The tests that load no BPF, start no container or browser and are not slow (markers in
# tests/conftest.py); as root they include the chroot's interpreters (marker root).
CHECK_MARKERS := not bpf and not containers and not browser and not slow
check: all unit-tests check-layers
	$(Q)PBP_NO_BUILD=1 /usr/bin/python3 -m pytest -q -p no:cacheprovider -m "$(CHECK_MARKERS)" tests

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
	fuzz_worker_answer fuzz_profile_file
# $(call srcs,NAME...): where each named source lives in user/.
srcs = $(foreach n,$(1),$(filter %/$(n).c,$(USER_SRCS)))
FUZZ_DECODE_SRCS := $(call srcs,py_offsets code_cache py_obj strtab hashmap py_linetable \
	decoder decode_runs frame_cache mem_snapshot mem_live py_threads py_thread_name py_attr log)

.PHONY: FORCE
$(OUT)/tests/fuzz_linetable: tests/fuzz/fuzz_linetable.c $(call srcs,py_linetable) FORCE | $(OUT)/tests
	$(call msg,FUZZ,$@)
	$(Q)$(FUZZ_CC) -o $@ $(filter %.c,$^)

$(OUT)/tests/fuzz_core: tests/fuzz/fuzz_core.c $(call srcs,mem_core py_interp elf_syms \
		hostile_file proc text_safe py_offsets mem_live log hashmap) FORCE | $(OUT)/tests
	$(call msg,FUZZ,$@)
	$(Q)$(FUZZ_CC) -o $@ $(filter %.c,$^) -lelf -lz

$(OUT)/tests/fuzz_decode: tests/fuzz/fuzz_decode.c $(FUZZ_DECODE_SRCS) FORCE | $(OUT)/tests
	$(call msg,FUZZ,$@)
	$(Q)$(FUZZ_CC) -o $@ $(filter %.c,$^)

$(OUT)/tests/fuzz_native_maps: tests/fuzz/fuzz_native_maps.c $(call srcs,native_maps hostile_file \
		proc text_safe hashmap fd) FORCE | $(OUT)/tests
	$(call msg,FUZZ,$@)
	$(Q)$(FUZZ_CC) -o $@ $(filter %.c,$^) -ldw -lelf

$(OUT)/tests/fuzz_native_ehhdr: tests/fuzz/fuzz_native_ehhdr.c $(call srcs,native_ehhdr) FORCE | $(OUT)/tests
	$(call msg,FUZZ,$@)
	$(Q)$(FUZZ_CC) -o $@ $(filter %.c,$^)

$(OUT)/tests/fuzz_worker_answer: tests/fuzz/fuzz_worker_answer.c $(call srcs,native_worker_answer) \
		FORCE | $(OUT)/tests
	$(call msg,FUZZ,$@)
	$(Q)$(FUZZ_CC) -o $@ $(filter %.c,$^)

FUZZ_PROFILE_SRCS := $(call srcs,profile_file pb_read pb gzip strtab hashmap aggregate writers \
	out_collapsed out_svg out_pprof out_speedscope out_chrome out_report profile_index \
	frame_class wait_class out_heatmap xml_text json log text_safe fd)
$(OUT)/tests/fuzz_profile_file: tests/fuzz/fuzz_profile_file.c $(FUZZ_PROFILE_SRCS) FORCE | $(OUT)/tests
	$(call msg,FUZZ,$@)
	$(Q)$(FUZZ_CC) -o $@ $(filter %.c,$^) -lz

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
	$(Q)mkdir -p $(OUT)/fuzz-corpus/profile_file
	$(Q)$(OUT)/tests/fuzz_profile_file -max_total_time=$${FUZZ_SECONDS:-60} \
		-print_final_stats=1 -max_len=65536 $(OUT)/fuzz-corpus/profile_file \
		tests/fuzz/seeds/profile_file

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
	$(Q)clang-format -i $(USER_SRCS) $(USER_HDRS) include/*.h bpf/*.c bpf/*.h

clean:
	$(Q)rm -rf $(OUT)

-include $(wildcard $(OUT)/user/*/*.d $(OUT)/*.d $(OUT)/tests/*.d)
