# Thin wrapper around CMake so the quick start is two commands:
#   make demo   install what is missing, build, profile the bundled example
#   make test   build (plain and ASan+UBSan) and run every test through ctest,
#               then the fuzz harnesses briefly (a clang build of their own),
#               then the aarch64 cross build's unit tests under qemu-user
#   make fuzz   the fuzz harnesses for FUZZ_SECONDS each (docs/fuzzing.md)
#   make install  ember, its man pages and shell completions under PREFIX
#               (default /usr/local; DESTDIR for a staging root; docs/install.md)
#   make cross-arm64  build for aarch64 with Debian's cross toolchain (build-arm64)
#   make test-arm64   its unit tests under qemu-user (docs/arm64.md)
#   make test-arm64-vm  the arm64 end-to-end checks in an emulated Debian 12
#               arm64 VM (docs/arm64.md; builds build-arm64 first)
#   make sid-root  the Debian sid root with CPython 3.14 and 3.15, built once
#               by mmdebstrap and cached in $$EMBER_SID_ROOT (default
#               ~/.cache/ember/sid-root; root, ~2 minutes; docs/sid.md)
#   make test-sid  the tests against those interpreters, run inside the root
#               and profiled from the host (ctest -L '^sid$$'; builds the root
#               and $(BUILD) first)
#   make sid-big-root  a bigger sid root: CPython 3.14 with NumPy 2, PyTorch 2
#               and OpenCV, cached in $$EMBER_SID_BIG_ROOT (default
#               ~/.cache/ember/sid-big-root; root, 2-3 minutes, 2.5 GB)
#   make test-sid-big  the tests against it (ctest -L '^sid-big$$'): neither
#               make test nor make test-sid runs them (docs/sid.md)
#   make package  the Debian package $(BUILD)/ember_VERSION_ARCH.deb (cpack;
#               docs/install.md)
#   make package-test  installs it with apt in a fresh Debian 12 root made by
#               mmdebstrap, profiles a C and a Python program there with the
#               installed ember, removes it (root; 20 s to 2.5 minutes, most of
#               it mmdebstrap; docs/install.md)
#   make package-arm64  the arm64 package, $(ARM64_BUILD)/ember_VERSION_arm64.deb
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
ARM64_BUILD ?= build-arm64
FUZZ_SECONDS ?= 600
JOBS       ?= $(shell nproc)
PREFIX     ?= /usr/local
CMAKE_FLAGS ?= -DEMBER_WERROR=ON

.PHONY: all deps deps-test deps-arm64 cross-arm64 test-arm64 build build-asan build-fuzz demo compare-demo test test-plain \
	test-asan test-fuzz fuzz bench soak clean arm64-vm-image test-arm64-vm deps-sid sid-root test-sid \
	sid-big-root test-sid-big install deps-package package package-test package-arm64

all: build

# What building and the demo need; deps-test: what the test suite needs
# besides (interpreters, NumPy/OpenCV/PyTorch, format consumers, chromium).
deps:
	@sh scripts/install-deps.sh

deps-test:
	@sh scripts/install-deps.sh test

build: deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

build-asan: deps
	cmake -S . -B $(ASAN_BUILD) $(CMAKE_FLAGS) -DEMBER_SANITIZE=ON >/dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)

# The libFuzzer harnesses (tests/fuzz): clang, everything instrumented.
build-fuzz: deps-test
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) $(CMAKE_FLAGS) -DEMBER_FUZZ=ON >/dev/null
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target ember_fuzzers

# aarch64: the cross compiler, the arm64 libraries (multiarch) and qemu-user.
deps-arm64:
	@sh scripts/install-deps.sh arm64

cross-arm64: deps-arm64
	cmake -S . -B $(ARM64_BUILD) $(CMAKE_FLAGS) -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake >/dev/null
	cmake --build $(ARM64_BUILD) -j $(JOBS)

# The unit tests that run under qemu-user (label qemu; tests/qemu_user.cmake
# says which do not, and why).
test-arm64: cross-arm64
	ctest --test-dir $(ARM64_BUILD) -L qemu --output-on-failure -j $(JOBS)

# What cmake/install.cmake installs, under $(DESTDIR)$(PREFIX).  Builds only
# what is installed (ember, the man pages, the completions), and not the
# dependencies: `make build` as yourself first, then `sudo make install`.
install:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS) --target ember ember_docs
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"

demo: build
	sh examples/demo.sh $(BUILD)

# FP32 against dynamically quantized INT8 inference (examples/python), as a
# differential flame graph and a delta table in out/.
compare-demo: build
	@sh scripts/install-deps.sh compare
	sh examples/compare.sh $(BUILD)

# (-LE sid: the sid roots' tests (labels sid, sid-big) are test-sid's and
# test-sid-big's, whether or not the roots exist.)
# (The test dependencies are installed before the build is configured: some
# tests are registered only when their tools are found.)
test-plain: deps-test
	$(MAKE) build
	ctest --test-dir $(BUILD) -LE sid --output-on-failure -j $(JOBS)

test-asan: deps-test
	$(MAKE) build-asan
	ctest --test-dir $(ASAN_BUILD) -LE sid --output-on-failure -j $(JOBS)

test-fuzz: build-fuzz
	ctest --test-dir $(FUZZ_BUILD) --output-on-failure -j $(JOBS)

test: test-plain test-asan test-fuzz test-arm64

fuzz: build-fuzz
	sh tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

bench: build
	sh bench/run.sh $(BUILD)
	sh bench/convert_bench.sh $(BUILD)
	/usr/bin/python3 bench/python_bench.py $(BUILD)
	/usr/bin/python3 bench/no_cfi_bench.py $(BUILD)

# ember record for 10 minutes at 999 Hz on a 4-thread Python target: its
# memory over time and samples lost (bench/soak.py; not part of make test).
soak: build
	/usr/bin/python3 bench/soak.py $(BUILD) --seconds 600

# The Debian 12 arm64 guest (root file system, kernel, initrd), built once by
# mmdebstrap and cached in $$EMBER_ARM64_VM_CACHE (default ~/.cache/ember/arm64-vm).
arm64-vm-image:
	sh tests/arm64-vm/build-image.sh

# Boots that guest in qemu-system-aarch64 (TCG) and runs tests/arm64-vm/
# guest-test.py there with $(ARM64_BUILD)/ember and its test targets.
test-arm64-vm: package-arm64 arm64-vm-image
	sh tests/arm64-vm/run.sh --ember $(ARM64_BUILD)/ember --targets $(ARM64_BUILD)/tests/targets \
		--deb $(ARM64_BUILD)/ember_$$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' $(ARM64_BUILD)/CMakeCache.txt)_arm64.deb

# CPython 3.14 and 3.15 (and their Py_DEBUG builds, NumPy) in a Debian sid
# root directory made by mmdebstrap (tests/sid/packages.txt), cached outside
# the checkout and rebuilt only when the package list changes.
deps-sid:
	@sh scripts/install-deps.sh sid

sid-root: deps-sid
	sh tests/sid/build-root.sh

# The tests labelled sid: the reader's unit tests, python_merge and the
# root-only program (test_sid_root.py) against those interpreters, each run
# inside the root by a wrapper that execs it in place (tests/sid/in-root.sh).
# $(BUILD) is configured after the root exists: the tests are registered only
# then.
# (-L takes a regular expression: anchored, so that sid-big stays out.)
test-sid: sid-root
	$(MAKE) build
	ctest --test-dir $(BUILD) -L '^sid$$' --no-tests=error --output-on-failure -j $(JOBS)

# The bigger sid root (tests/sid/packages-big.txt): CPython 3.14 with NumPy 2,
# PyTorch 2 and OpenCV, and the tests labelled sid-big against it (FP32 vs
# INT8 torch with ember diff, python_features, NumPy 2's dispatch).  Its own
# targets: 2.7 GB and minutes to build, not part of test, test-sid or .ci/run.
sid-big-root: deps-sid
	sh tests/sid/build-root.sh tests/sid/packages-big.txt "$${EMBER_SID_BIG_ROOT:-$$HOME/.cache/ember/sid-big-root}"

test-sid-big: sid-big-root
	$(MAKE) build
	ctest --test-dir $(BUILD) -L '^sid-big$$' --no-tests=error --output-on-failure -j $(JOBS)

# The Debian package: cpack in $(BUILD) writes $(BUILD)/ember_VERSION_ARCH.deb
# (cmake/package.cmake), its Depends computed by dpkg-shlibdeps (dpkg-dev).
deps-package:
	@sh scripts/install-deps.sh package

package: build deps-package
	cd $(BUILD) && cpack

# That package installed by apt in a Debian 12 root made afresh (never
# cached) by mmdebstrap, and used there (tests/package/run.sh).
package-test: package
	sh tests/package/run.sh $(BUILD)

# The arm64 package from the cross build: the same cpack, dpkg-shlibdeps
# reading the arm64 libraries of the multiarch tree.
package-arm64: cross-arm64 deps-package
	cd $(ARM64_BUILD) && cpack

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(ARM64_BUILD) out
