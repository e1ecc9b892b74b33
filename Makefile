# The two commands: `make demo` and `make test`.  Both install what a fresh
# Debian machine lacks (scripts/bootstrap.sh), configure with CMake and
# build; everything else is CMake's.
BUILD     ?= build
SAN_BUILD ?= build-san
CLANG_BUILD ?= build-clang
FUZZ_BUILD ?= build-fuzz
TSAN_BUILD ?= build-tsan
# Seconds each fuzz harness searches: FUZZ_SECONDS in `make fuzz`,
# FUZZ_TEST_SECONDS in `make test`.
FUZZ_SECONDS ?= 600
FUZZ_TEST_SECONDS ?= 60
# clang, or the newest clang-N where only versioned names are installed.
CLANG ?= $(shell command -v clang 2>/dev/null || \
           ls /usr/bin/clang-[0-9]* 2>/dev/null | sort -V | tail -n 1)
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=

.PHONY: all build demo test test-fast test-san test-clang test-tsan \
        test-fuzz fuzz fuzz-build bootstrap clean

all: build

bootstrap:
	@scripts/bootstrap.sh

build: bootstrap
	@cmake -S . -B $(BUILD) $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@$(BUILD)/bin/lms demo

# The suites, then the same suites under the address and undefined-behaviour
# sanitizers, built by GCC and then by clang; the stress test under the
# thread sanitizer; and a bounded search by each fuzz harness.
test: test-fast test-san test-clang test-tsan test-fuzz

test-fast: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	@scripts/ctest-skips.sh $(BUILD)

test-san: bootstrap
	@cmake -S . -B $(SAN_BUILD) -DLMS_SANITIZE=address,undefined \
	  -DLMS_WITH_CUDA=OFF $(CMAKE_ARGS) >/dev/null
	@cmake --build $(SAN_BUILD) -j $(JOBS)
	@cd $(SAN_BUILD) && ctest --output-on-failure -j $(JOBS)
	@scripts/ctest-skips.sh $(SAN_BUILD)

# clang's undefined-behaviour sanitizer checks what GCC's does not, such as
# float-cast-overflow (a double outside an integer type's range converted
# to it, as a stats file's 1e30 once was).  Skipped, saying why, where no
# clang is installed.
test-clang: bootstrap
	@if [ -z "$(CLANG)" ]; then \
	  echo "test-clang: skipped: no clang found (scripts/bootstrap.sh" \
	       "installs it with apt-get where it can)"; \
	else \
	  cmake -S . -B $(CLANG_BUILD) -DCMAKE_C_COMPILER=$(CLANG) \
	    -DLMS_SANITIZE=address,undefined,float-cast-overflow \
	    -DLMS_WITH_CUDA=OFF $(CMAKE_ARGS) >/dev/null && \
	  cmake --build $(CLANG_BUILD) -j $(JOBS) && \
	  cd $(CLANG_BUILD) && ctest --output-on-failure -j $(JOBS) && \
	  cd $(CURDIR) && scripts/ctest-skips.sh $(CLANG_BUILD); \
	fi

# The stress test, 4 threads on one context, under the thread sanitizer
# (LMS_STRESS_SEED, when set, chooses its seed): a separate small build of
# the library and that test alone (Note [Stress under ThreadSanitizer] in
# tests/test_stress.c).
# Skipped, saying why, where the sanitizer cannot run a program at all:
# some kernels randomize mmap addresses more widely than older runtimes
# accept (vm.mmap_rnd_bits); then it is tried once more with address
# randomization off for the process (setarch -R).
TSAN_PROBE = $(TSAN_BUILD)/tsan-probe
test-tsan: bootstrap
	@mkdir -p $(TSAN_BUILD) && \
	printf '#include <pthread.h>\nstatic void *f(void *a) { return a; }\nint main(void) { pthread_t t; pthread_create(&t, 0, f, 0); return pthread_join(t, 0); }\n' \
	  > $(TSAN_PROBE).c && \
	if ! cc -fsanitize=thread -pthread $(TSAN_PROBE).c -o $(TSAN_PROBE) \
	     >$(TSAN_PROBE).log 2>&1; then \
	  echo "test-tsan: skipped: cc cannot build with -fsanitize=thread" \
	       "(libtsan missing?): $$(head -n 1 $(TSAN_PROBE).log)"; \
	  exit 0; \
	fi; \
	run=""; \
	if ! $(TSAN_PROBE) >$(TSAN_PROBE).log 2>&1; then \
	  if setarch "$$(uname -m)" -R $(TSAN_PROBE) >/dev/null 2>&1; then \
	    run="setarch $$(uname -m) -R"; \
	    echo "test-tsan: running with address randomization off: $$(head -n 1 $(TSAN_PROBE).log)"; \
	  else \
	    echo "test-tsan: skipped: the thread sanitizer cannot run a" \
	         "program here: $$(head -n 1 $(TSAN_PROBE).log)"; \
	    exit 0; \
	  fi; \
	fi; \
	cmake -S . -B $(TSAN_BUILD) -DLMS_SANITIZE=thread -DLMS_WITH_CUDA=OFF \
	  $(CMAKE_ARGS) >/dev/null && \
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target stress_tsan && \
	cd $(TSAN_BUILD) && $$run ctest --output-on-failure -j $(JOBS) -L tsan

# The fuzz harnesses of fuzz/ with libFuzzer (clang only): configured and
# built apart from the other builds, in $(FUZZ_BUILD).  Skipped, saying
# why, where clang or its libFuzzer is missing.
FUZZ_PROBE = $(FUZZ_BUILD)/fuzz-probe
fuzz-build: bootstrap
	@if [ -z "$(CLANG)" ]; then \
	  echo "fuzz: skipped: no clang found; the harnesses need clang's" \
	       "libFuzzer (scripts/bootstrap.sh installs clang where it can)"; \
	  exit 0; \
	fi; \
	mkdir -p $(FUZZ_BUILD) && \
	printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' \
	  > $(FUZZ_PROBE).c && \
	if ! $(CLANG) -fsanitize=fuzzer,address,undefined $(FUZZ_PROBE).c \
	     -o $(FUZZ_PROBE) >$(FUZZ_PROBE).log 2>&1; then \
	  echo "fuzz: skipped: $(CLANG) cannot link libFuzzer:" \
	       "$$(head -n 1 $(FUZZ_PROBE).log)"; \
	  exit 0; \
	fi; \
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=$(CLANG) -DLMS_FUZZ=ON \
	  -DLMS_FUZZ_SECONDS=$(FUZZ_RUN_SECONDS) -DLMS_WITH_CUDA=OFF \
	  $(CMAKE_ARGS) >/dev/null && \
	cmake --build $(FUZZ_BUILD) -j $(JOBS) \
	  --target fuzz_trace fuzz_options fuzz_statsfile fuzz_flags && \
	cd $(FUZZ_BUILD) && rm -f fuzz-work/*/summary && \
	{ ctest --output-on-failure -j $(JOBS) -L fuzz; rc=$$?; \
	  cat fuzz-work/*/summary 2>/dev/null; exit $$rc; }

# A bounded search per harness, as `make test` runs it.
test-fuzz:
	@$(MAKE) --no-print-directory fuzz-build FUZZ_RUN_SECONDS=$(FUZZ_TEST_SECONDS)

# A long search per harness (FUZZ_SECONDS each, 10 minutes by default).
# New inputs collect in $(FUZZ_BUILD)/fuzz-work/<harness>/corpus, which
# later runs start from; crashes in .../artifacts.
fuzz:
	@$(MAKE) --no-print-directory fuzz-build FUZZ_RUN_SECONDS=$(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(CLANG_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)
