#!/usr/bin/env bash
# Builds the two static binaries the runner hands to sandboxes, whatever their image (even
# one without a libc): gatehouse-relay (adapters/relay), which forwards loopback ports to
# the runner's Unix sockets in a sandbox without a network, and gatehouse-acp
# (adapters/acp), which drives an Agent Client Protocol agent for executor "acp". Prints
# the directory holding both as the last line of stdout:
#   deploy/sandbox/build-relay.sh        # -> target/relay/x86_64-unknown-linux-gnu/release
#   [runner] relay = "<dir>/gatehouse-relay", [runner] acp = "<dir>/gatehouse-acp"
#   (acp defaults to the gatehouse-acp beside the relay)
# The explicit --target keeps +crt-static off proc-macros and build scripts; the separate
# target dir (under CARGO_TARGET_DIR when set) keeps the workspace's own build untouched.
# Fast when up to date: Cargo rebuilds nothing.
set -euo pipefail
cd "$(dirname "$0")/../.."

target=x86_64-unknown-linux-gnu
target_dir="${CARGO_TARGET_DIR:-target}/relay"
RUSTFLAGS="-C target-feature=+crt-static" cargo build --release --locked \
    -p gatehouse-relay -p gatehouse-acp --bin gatehouse-relay --bin gatehouse-acp \
    --target "$target" --target-dir "$target_dir" >&2
dir="$target_dir/$target/release"

for name in gatehouse-relay gatehouse-acp; do
    binary="$dir/$name"
    [ -x "$binary" ] || { echo "build-relay.sh: $binary was not built" >&2; exit 1; }
    # A dynamically linked binary would fail in an image without the same libc: refuse it.
    if command -v file > /dev/null; then
        description=$(file -b "$binary")
        case "$description" in
            *"statically linked"* | *"static-pie linked"*) ;;
            *) echo "build-relay.sh: $binary is not static: $description" >&2; exit 1 ;;
        esac
    elif ldd "$binary" > /dev/null 2>&1 && ! ldd "$binary" 2>&1 | grep -q "statically linked"; then
        echo "build-relay.sh: $binary is not static:" >&2
        ldd "$binary" >&2
        exit 1
    fi
done
realpath "$dir"
