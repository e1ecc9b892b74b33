# The two commands: `make demo` and `make test`.  Both install what a fresh
# Debian machine lacks (scripts/bootstrap.sh), configure with CMake and
# build; everything else is CMake's.
BUILD     ?= build
SAN_BUILD ?= build-san
CLANG_BUILD ?= build-clang
# clang, or the newest clang-N where only versioned names are installed.
CLANG ?= $(shell command -v clang 2>/dev/null || \
           ls /usr/bin/clang-[0-9]* 2>/dev/null | sort -V | tail -n 1)
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=

.PHONY: all build demo test test-fast test-san test-clang bootstrap clean

all: build

bootstrap:
	@scripts/bootstrap.sh

build: bootstrap
	@cmake -S . -B $(BUILD) $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@$(BUILD)/bin/lms demo

# The suites, then the same suites under the address and undefined-behaviour
# sanitizers, built by GCC and then by clang.
test: test-fast test-san test-clang

test-fast: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-san: bootstrap
	@cmake -S . -B $(SAN_BUILD) -DLMS_SANITIZE=address,undefined \
	  -DLMS_WITH_CUDA=OFF $(CMAKE_ARGS) >/dev/null
	@cmake --build $(SAN_BUILD) -j $(JOBS)
	@cd $(SAN_BUILD) && ctest --output-on-failure -j $(JOBS)

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
	  echo "test-clang: the preload tests and python_lms_torch are left" \
	       "to test-san: they preload the sanitizer runtime by GCC's name" && \
	  cd $(CLANG_BUILD) && ctest --output-on-failure -j $(JOBS) \
	    -E '^(preload_.*|python_lms_torch)$$'; \
	fi

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(CLANG_BUILD)
