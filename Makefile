# The two commands: `make demo` and `make test`.  Both install what a fresh
# Debian machine lacks (scripts/bootstrap.sh), configure with CMake and
# build; everything else is CMake's.
BUILD     ?= build
SAN_BUILD ?= build-san
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=

.PHONY: all build demo test test-fast test-san bootstrap clean

all: build

bootstrap:
	@scripts/bootstrap.sh

build: bootstrap
	@cmake -S . -B $(BUILD) $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@$(BUILD)/bin/lms demo

# The suites, then the same suites under the address and undefined-behaviour
# sanitizers.
test: test-fast test-san

test-fast: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-san: bootstrap
	@cmake -S . -B $(SAN_BUILD) -DLMS_SANITIZE=address,undefined \
	  -DLMS_WITH_CUDA=OFF $(CMAKE_ARGS) >/dev/null
	@cmake --build $(SAN_BUILD) -j $(JOBS)
	@cd $(SAN_BUILD) && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD) $(SAN_BUILD)
