#!/usr/bin/env bash
# Puts crashcells on PATH, compiling it only when no job before this one
# did: the binary is kept in a cache folder under a key made of crashcells'
# version, the machine, the hash of Cargo.lock and the hash of the sources
# it is built from (a changed source is never run as an old binary). Run in
# a checkout of crashcells (the release mode needs only its Cargo.toml).
#
#   install.sh key   prints the key (to $GITHUB_OUTPUT as `key=...` when set)
#   install.sh       installs into $CRASHCELLS_CACHE/<key> on a miss, puts
#                    its bin/ on PATH ($GITHUB_PATH when set) and prints it
#
# CRASHCELLS_CACHE   the cache folder (default ~/.cache/crashcells); on
#                    GitHub the path actions/cache restores and saves
# CRASHCELLS_RELEASE a release's download URL: its binary for this machine
#                    is downloaded and its sha256 checked instead of compiled
set -euo pipefail
cache=${CRASHCELLS_CACHE:-$HOME/.cache/crashcells}
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
target=$(uname -m)-linux
hash() { sha256sum | cut -c 1-16; }

if [ -n "${CRASHCELLS_RELEASE:-}" ]; then
    # A release is its version: nothing else to key on.
    key=crashcells-$version-$target-release
else
    lock=$(hash < Cargo.lock)
    sources=$(find Cargo.toml build.rs src child-bin/Cargo.toml child-bin/src \
        protocol/Cargo.toml protocol/src cells matrices -type f | LC_ALL=C sort | xargs cat | hash)
    key=crashcells-$version-$target-lock-$lock-src-$sources
fi
if [ "${1:-}" = key ]; then
    if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "key=$key" >> "$GITHUB_OUTPUT"; fi
    echo "$key"
    exit 0
fi

root=$cache/$key
if [ -x "$root/bin/crashcells" ]; then
    echo "crashcells $version: cached ($key)" >&2
elif [ -n "${CRASHCELLS_RELEASE:-}" ]; then
    name=crashcells-$version-$target.tar.gz
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    curl -fsSL -o "$tmp/$name" "$CRASHCELLS_RELEASE/$name"
    curl -fsSL -o "$tmp/$name.sha256" "$CRASHCELLS_RELEASE/$name.sha256"
    (cd "$tmp" && sha256sum -c "$name.sha256" >&2)
    rm -rf "$root" && mkdir -p "$root/bin.tmp"
    tar -xzf "$tmp/$name" -C "$root/bin.tmp"
    mv "$root/bin.tmp" "$root/bin"
else
    # Into a folder of its own, renamed when whole: an interrupted install
    # leaves nothing a later job would take for a cached binary.
    rm -rf "$root" "$root.tmp"
    cargo install --locked --path . --root "$root.tmp" >&2
    mv "$root.tmp" "$root"
fi
if [ -n "${GITHUB_PATH:-}" ]; then echo "$root/bin" >> "$GITHUB_PATH"; fi
echo "$root/bin"
