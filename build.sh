#!/usr/bin/env bash
# self-evolve build driver.
#   ./build.sh        build the plugin, componentize it into dist/self-evolve.wasm, audit its imports
#   ./build.sh test   build + cargo fmt --check + clippy (warnings denied) + every test
#   ./build.sh demo   build + run the main job
# Installs what it needs (the wasm32-unknown-unknown target, rustfmt, clippy; for `test`, Debian's
# chromium and chromium-driver) when missing.
set -euo pipefail
cd "$(dirname "$0")"

WASM_TARGET=wasm32-unknown-unknown
CORE=target/$WASM_TARGET/wasm-release/self_evolve_plugin.wasm
OUT=dist/self-evolve.wasm
# hosts/python is tested under the oldest and the newest wasmtime-py it supports (pyproject.toml).
PYTHON_WASMTIME_VERSIONS=(44.0.0 50.0.1)

step() { printf '\n==> %s\n' "$*"; }

ensure_toolchain() {
    if ! command -v cargo >/dev/null 2>&1; then
        echo "build.sh: cargo not found. Install Rust with rustup (https://rustup.rs) and re-run." >&2
        exit 1
    fi
    if command -v rustup >/dev/null 2>&1; then
        if ! rustup target list --installed | grep -qx "$WASM_TARGET"; then
            step "installing the $WASM_TARGET target"
            rustup target add "$WASM_TARGET"
        fi
        for component in rustfmt clippy; do
            if ! rustup component list --installed | grep -q "^$component"; then
                step "installing $component"
                rustup component add "$component"
            fi
        done
    fi
}

build() {
    ensure_toolchain
    step "building the plugin ($WASM_TARGET, profile wasm-release)"
    cargo build -p self-evolve-plugin --target "$WASM_TARGET" --profile wasm-release --locked
    mkdir -p dist
    local core
    core=$(optimize "$CORE")
    step "componentizing and auditing imports"
    # Fails unless every import is self-evolve:plugin/*.
    cargo run -q -p componentize --locked -- "$core" "$OUT"
    # What a packaged `self-evolve` crate embeds (cli/build.rs); git-ignored.
    cp "$OUT" cli/self-evolve.wasm
}

# The core module after binaryen's `wasm-opt -Os` (14% smaller, and no slower: docs/benchmarks.md),
# printed as a path. wasm-opt comes from hosts/node's npm packages (binaryen, which jco depends on,
# pinned in its package-lock.json), installed here when missing. The result is kept beside the core with the
# core's sha256, so an unchanged plugin is not optimized twice (it takes ~30 s). Without node and
# npm the core is used as cargo built it (larger, the same behaviour), and a note says so.
optimize() {
    local core=$1 wasm_opt=hosts/node/node_modules/.bin/wasm-opt
    local optimized="${core%.wasm}.opt.wasm" stamp="${core%.wasm}.opt.sha256" sum
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        echo "build.sh: node and npm not found: the component is built without wasm-opt (larger, the same behaviour)" >&2
        echo "$core"
        return
    fi
    if [ ! -x "$wasm_opt" ]; then
        step "installing binaryen's wasm-opt (hosts/node: npm ci)" >&2
        (cd hosts/node && npm ci --no-audit --no-fund --loglevel=error) >&2
    fi
    sum=$(sha256sum "$core" | cut -d' ' -f1)
    if [ ! -f "$optimized" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$sum" ]; then
        step "wasm-opt -Os (binaryen $("$wasm_opt" --version | cut -d' ' -f3))" >&2
        # Exactly the features rustc enables for this target (.cargo/config.toml adds simd128).
        "$wasm_opt" -Os --enable-bulk-memory --enable-sign-ext --enable-mutable-globals \
            --enable-nontrapping-float-to-int --enable-multivalue --enable-reference-types --enable-simd \
            "$core" -o "$optimized" >&2 || { echo "build.sh: wasm-opt failed" >&2; return 1; }
        echo "$sum" >"$stamp"
    fi
    echo "$optimized"
}

run_tests() {
    step "cargo fmt --check"
    cargo fmt --all -- --check
    step "clippy (native, all targets)"
    cargo clippy --workspace --all-targets --locked -- -D warnings
    step "clippy (the plugin as wasm, including the binding adapter)"
    cargo clippy -p self-evolve-plugin -p self-evolve-scan --target "$WASM_TARGET" --locked -- -D warnings
    cross_check
    ensure_browser
    mcp_conformance_suite
    step "tests"
    cargo test --workspace --locked
    wasm_unit_tests
    python_tests
    node_tests
}

# The binary's crates type-checked and linted for macOS and Windows (README, "Platforms"), so a
# Linux-only call breaks the run here instead of a user's build there. Build scripts compile C
# (ring, zstd) for the target: with zig (PyPI's `ziglang`, in a venv under target/cross), behind
# one wrapper per target that drops the `--target=` cc-rs passes in rustc's spelling. Windows is
# checked as x86_64-pc-windows-gnu: the -msvc target's build scripts call MSVC's cl.exe.
CROSS_TARGETS=(aarch64-apple-darwin:aarch64-macos x86_64-pc-windows-gnu:x86_64-windows-gnu)
ZIG_VERSION=0.17.1
cross_check() {
    local cross=$PWD/target/cross pair triple zig_target env_triple
    if ! "$cross/zig-venv/bin/python" -m ziglang version 2>/dev/null | grep -qx "$ZIG_VERSION"; then
        step "installing zig $ZIG_VERSION (PyPI ziglang) for the macOS and Windows checks"
        mkdir -p "$cross"
        python3 -m venv "$cross/zig-venv"
        "$cross/zig-venv/bin/python" -m pip install -q --disable-pip-version-check "ziglang==$ZIG_VERSION"
    fi
    for pair in "${CROSS_TARGETS[@]}"; do
        triple=${pair%%:*}
        zig_target=${pair#*:}
        if command -v rustup >/dev/null 2>&1 && ! rustup target list --installed | grep -qx "$triple"; then
            step "installing the $triple target"
            rustup target add "$triple"
        fi
        {
            echo '#!/bin/sh'
            echo 'for a do shift; case "$a" in --target=*) ;; *) set -- "$@" "$a" ;; esac; done'
            echo "exec \"$cross/zig-venv/bin/python\" -m ziglang cc -target $zig_target \"\$@\""
        } >"$cross/cc-$triple"
        {
            echo '#!/bin/sh'
            echo "exec \"$cross/zig-venv/bin/python\" -m ziglang ar \"\$@\""
        } >"$cross/ar-$triple"
        chmod +x "$cross/cc-$triple" "$cross/ar-$triple"
        env_triple=${triple//-/_}
        step "clippy for $triple (the self-evolve binary and the host library)"
        env "CC_$env_triple=$cross/cc-$triple" "AR_$env_triple=$cross/ar-$triple" \
            cargo clippy -p self-evolve -p self-evolve-host --target "$triple" --locked -- -D warnings
    done
}

# The official MCP conformance suite (cli/tests/mcp_http.rs runs it against `self-evolve serve`),
# on Node 22 from npm's `node` package: both pinned in tests/mcp-conformance/package-lock.json,
# installed there, the system's Node untouched. npm 11 runs `node`'s install script.
mcp_conformance_suite() {
    if ! command -v npm >/dev/null 2>&1; then
        echo "build.sh: npm is needed for the MCP conformance suite (tests/mcp-conformance); install Node.js 20+ and re-run." >&2
        exit 1
    fi
    if [ ! -x tests/mcp-conformance/node_modules/node/bin/node ]; then
        step "tests/mcp-conformance: npm ci (@modelcontextprotocol/conformance, node 22)"
        (cd tests/mcp-conformance && npm ci --no-audit --no-fund --loglevel=error)
    fi
}

# The operator console's browser test (cli/tests/console_browser.rs) drives headless Chromium
# through chromedriver; it fails, never skips, without them. Debian's packages when missing.
ensure_browser() {
    local chromium=${SELF_EVOLVE_CHROMIUM:-$(command -v chromium || true)}
    local driver=${SELF_EVOLVE_CHROMEDRIVER:-$(command -v chromedriver || true)}
    if [ -n "$chromium" ] && [ -n "$driver" ]; then
        return
    fi
    step "installing Debian's chromium and chromium-driver (cli/tests/console_browser.rs drives them)"
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "build.sh: the console's browser test needs chromium and chromedriver, and there is no apt-get here;" >&2
        echo "          install them with the system's package manager (or set SELF_EVOLVE_CHROMIUM and SELF_EVOLVE_CHROMEDRIVER) and re-run." >&2
        exit 1
    fi
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        if ! command -v sudo >/dev/null 2>&1; then
            echo "build.sh: installing chromium and chromium-driver needs root or sudo; install them and re-run." >&2
            exit 1
        fi
        sudo=sudo
    fi
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium chromium-driver
    if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
        echo "build.sh: apt-get installed chromium and chromium-driver, yet chromium or chromedriver is not on PATH" >&2
        exit 1
    fi
}

# The plugin's unit tests (policy on the in-memory fake host) once more, compiled to
# wasm32-unknown-unknown and run under Node: a 32-bit, single-threaded target catches what
# native runs cannot (usize arithmetic, hashing, float formatting, stack depth).
wasm_unit_tests() {
    local version
    version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)
    if [ -z "$version" ]; then
        echo "build.sh: Cargo.lock pins no wasm-bindgen (the wasm32 dev-dependency wasm-bindgen-test brings it)" >&2
        exit 1
    fi
    if ! wasm-bindgen-test-runner --version 2>/dev/null | grep -qx "wasm-bindgen-test-runner $version"; then
        step "installing wasm-bindgen-cli $version (the test runner for wasm32)"
        # --locked first; when the registry lacks a crate its lock file pins (seen: webpki-roots
        # 1.0.11), resolve afresh at the same wasm-bindgen version.
        cargo install wasm-bindgen-cli --version "=$version" --locked || cargo install wasm-bindgen-cli --version "=$version"
    fi
    if ! command -v node >/dev/null 2>&1; then
        echo "build.sh: node is needed to run the wasm32 unit tests (Node.js 20+); install it and re-run." >&2
        exit 1
    fi
    step "unit tests on wasm32-unknown-unknown (wasm-bindgen-test-runner under Node)"
    cargo test -p self-evolve-plugin -p self-evolve-scan --lib --target "$WASM_TARGET" --locked
}

# The second host: the same dist/self-evolve.wasm in Node through jco, and the conformance suite
# (after python_tests, which makes the venv the many-writers test takes Python writers from).
node_tests() {
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        echo "build.sh: node and npm are needed for hosts/node (Node.js 20+); install them and re-run." >&2
        exit 1
    fi
    step "hosts/node: npm ci (jco from the npm registry) and npm test"
    # The many-writers test adds Python writers to its Node and Rust ones with this Python.
    local python="$PWD/hosts/python/.venv-wasmtime-${PYTHON_WASMTIME_VERSIONS[-1]}/bin/python"
    (cd hosts/node && npm ci --no-audit --no-fund --loglevel=error && SELF_EVOLVE_PYTHON="$python" npm test)
}

# The third host: the same dist/self-evolve.wasm in wasmtime-py, as a user installs it (pip
# install of hosts/python with the component packaged), once per PYTHON_WASMTIME_VERSIONS.
python_tests() {
    local python
    python=$(command -v python3 || true)
    if [ -z "$python" ] || ! "$python" -c 'import sys, venv; sys.exit(sys.version_info < (3, 9))' 2>/dev/null; then
        echo "build.sh: python3 (3.9+, with venv) is needed for hosts/python; install it and re-run." >&2
        exit 1
    fi
    mkdir -p hosts/python/src/self_evolve/data
    cp "$OUT" hosts/python/src/self_evolve/data/self-evolve.wasm
    local version
    for version in "${PYTHON_WASMTIME_VERSIONS[@]}"; do
        python_suite "$python" "$version" "hosts/python/.venv-wasmtime-$version"
    done
    # The oldest and newest CPython the package declares, where this machine has them (pyenv
    # puts them on PATH): http.client and sockets changed between them (3.9's socket.timeout,
    # 3.13 closing the socket object after a `Connection: close` head).
    local other found
    for other in python3.9:"${PYTHON_WASMTIME_VERSIONS[0]}" python3.13:"${PYTHON_WASMTIME_VERSIONS[-1]}"; do
        found=$(find_python "${other%%:*}")
        if [ -n "$found" ]; then
            python_suite "$found" "${other#*:}" "hosts/python/.venv-${other%%:*}-wasmtime-${other#*:}"
        else
            step "hosts/python: ${other%%:*} not found; its run is skipped"
        fi
    done
}

# find_python python3.X: a working interpreter of that name on PATH or installed by pyenv, or nothing.
find_python() {
    local candidate
    for candidate in "$(command -v "$1" 2>/dev/null)" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"${1#python}".*/bin/"$1"; do
        if [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" -c 'import venv' 2>/dev/null; then
            echo "$candidate"
            return
        fi
    done
}

# python_suite PYTHON WASMTIME_VERSION VENV: pytest of the pip-installed package in VENV.
python_suite() {
    local python=$1 version=$2 venv=$3
    step "hosts/python: pytest under $("$python" -V 2>&1) and wasmtime-py $version ($venv)"
    if [ ! -x "$venv/bin/python" ]; then
        "$python" -m venv "$venv"
    fi
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "wasmtime==$version" "pytest>=7,<9"
    # Not editable: the tests import the package as pip installs it, component included.
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --force-reinstall ./hosts/python
    (cd hosts/python && SELF_EVOLVE_EXPECT_PACKAGED=1 "../../$venv/bin/python" -m pytest -q -p no:cacheprovider)
}

case "${1:-build}" in
    build) build ;;
    test) build; run_tests ;;
    demo)
        build
        step "building the self-evolve CLI"
        cargo build -q -p self-evolve --bin self-evolve --locked
        CLI=target/debug/self-evolve
        HOME_DIR=$(mktemp -d "${TMPDIR:-/tmp}/self-evolve-demo.XXXXXX")
        examples/demo.sh "$PWD/$CLI" "$PWD/$OUT" "$HOME_DIR"
        printf '\nThe demo home is kept at %s\n' "$HOME_DIR"
        ;;
    *)
        echo "usage: ./build.sh [build|test|demo]" >&2
        exit 2
        ;;
esac
