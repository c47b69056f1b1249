#!/usr/bin/env bash
# End-to-end test of the packaged extension in real VS Code (code-server) driven by headless
# Chromium. Sets up everything it needs on first use and caches it under extension/.e2e/.
#   extension/scripts/e2e.sh            build the .vsix, set up, run the test
#   extension/scripts/e2e.sh --setup    only set up the cached tools
set -euo pipefail
EXT_DIR="$(cd "$(dirname "$0")/.." && pwd)"
REPO_DIR="$(cd "$EXT_DIR/.." && pwd)"
CACHE="$EXT_DIR/.e2e"
CODE_SERVER_VERSION=4.100.3
# @vscode/ripgrep's postinstall downloads this archive; we seed its cache with Debian's rg so the
# install works without reaching a download host.
RIPGREP_ARCHIVE=ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz
RIPGREP_CACHE_NAME=vscode-ripgrep-cache-1.15.11

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

ensure_system_packages() {
  local missing=()
  command -v chromium >/dev/null || missing+=(chromium)
  command -v rg >/dev/null || missing+=(ripgrep)
  [ -e /usr/include/krb5.h ] || [ -e /usr/include/gssapi/gssapi.h ] || missing+=(libkrb5-dev)
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "== apt-get install ${missing[*]}"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

ensure_code_server() {
  local dir="$CACHE/code-server-$CODE_SERVER_VERSION"
  if [ -x "$dir/node_modules/.bin/code-server" ]; then return; fi
  echo "== npm install code-server@$CODE_SERVER_VERSION (slow, once)"
  local tmp="$CACHE/tmp"
  mkdir -p "$dir" "$tmp/$RIPGREP_CACHE_NAME"
  if [ ! -s "$tmp/$RIPGREP_CACHE_NAME/$RIPGREP_ARCHIVE" ]; then
    local stage; stage="$(mktemp -d)"
    cp "$(command -v rg)" "$stage/rg"
    tar -C "$stage" -czf "$tmp/$RIPGREP_CACHE_NAME/$RIPGREP_ARCHIVE" rg
    rm -rf "$stage"
  fi
  [ -f "$dir/package.json" ] || echo '{"name":"flipflop-e2e-code-server","private":true}' \
    > "$dir/package.json"
  (cd "$dir" && TMPDIR="$tmp" npm_config_nodedir=/usr npm_config_unsafe_perm=true \
     npm_config_yes=true npm install --no-audit --no-fund "code-server@$CODE_SERVER_VERSION")
}

ensure_extension_deps() {
  if [ ! -d "$EXT_DIR/node_modules" ] || \
     [ "$EXT_DIR/package-lock.json" -nt "$EXT_DIR/node_modules/.package-lock.json" ]; then
    echo "== npm ci (extension)"
    (cd "$EXT_DIR" && npm ci --no-audit --no-fund)
  fi
}

mkdir -p "$CACHE"
ensure_system_packages
ensure_code_server
ensure_extension_deps
if [ "${1:-}" = "--setup" ]; then exit 0; fi
