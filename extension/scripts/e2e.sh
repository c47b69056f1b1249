#!/usr/bin/env bash
# End-to-end test of the packaged extension in real VS Code (code-server) driven by headless
# Chromium. Sets up everything it needs on first use and caches it under extension/.e2e/.
#   extension/scripts/e2e.sh              build the .vsix, set up, run the test
#   extension/scripts/e2e.sh --no-build   use the flipflop.vsix already built
#   extension/scripts/e2e.sh --setup      only set up the cached tools
#   extension/scripts/e2e.sh --refresh-docs   also copy the last screenshot (a hover beside the
#                                             chart) to docs/images/vscode.png for the README
# Screenshots and logs go to $E2E_ARTIFACTS (default: a folder under $TMPDIR); a test run never
# writes into the repository's tracked files.
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
build=1 refresh_docs=0
for arg in "$@"; do
  case "$arg" in
    --setup) exit 0 ;;
    --no-build) build=0 ;;
    --refresh-docs) refresh_docs=1 ;;
    *) echo "e2e: unknown option $arg (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
done

if [ "$build" = 1 ] || [ ! -f "$EXT_DIR/flipflop.vsix" ]; then
  (cd "$EXT_DIR" && npm run --silent package)
fi

PYTHON="${FLIPFLOP_PYTHON:-$REPO_DIR/.venv/bin/python}"
if ! "$PYTHON" -c 'import flipflop.lsp' 2>/dev/null; then
  echo "e2e: $PYTHON cannot import flipflop.lsp; run scripts/setup.sh first" >&2
  exit 1
fi

ARTIFACTS="${E2E_ARTIFACTS:-${TMPDIR:-/tmp}/flipflop-vscode-e2e}"
rm -rf "$ARTIFACTS"
mkdir -p "$ARTIFACTS"
SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/flipflop-e2e.XXXXXX")"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$SCRATCH"
}
trap cleanup EXIT

# A private profile: nothing of the user's VS Code, code-server config or extensions leaks in.
export XDG_CONFIG_HOME="$SCRATCH/config" XDG_DATA_HOME="$SCRATCH/data" XDG_CACHE_HOME="$SCRATCH/cache"
USER_DATA="$SCRATCH/user-data"
EXTENSIONS="$SCRATCH/extensions"
WORKSPACE="$SCRATCH/workspace"
mkdir -p "$USER_DATA/User" "$EXTENSIONS"
cp -r "$EXT_DIR/test-fixtures/workspace" "$WORKSPACE"
cat > "$USER_DATA/User/settings.json" <<JSON
{
  "flipflop.interpreter": "$PYTHON",
  "flipflop.gpu": "rtx3070",
  "flipflop.trace.server": "verbose",
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.enableExperiments": false,
  "workbench.colorTheme": "Default Dark Modern",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "extensions.ignoreRecommendations": true,
  "telemetry.telemetryLevel": "off",
  "update.mode": "none",
  "editor.minimap.enabled": false,
  "editor.stickyScroll.enabled": false,
  "editor.hover.above": false,
  "chat.commandCenter.enabled": false,
  "window.commandCenter": false
}
JSON

CODE_SERVER="$CACHE/code-server-$CODE_SERVER_VERSION/node_modules/.bin/code-server"
echo "== install flipflop.vsix into a temporary profile"
"$CODE_SERVER" --user-data-dir "$USER_DATA" --extensions-dir "$EXTENSIONS" \
  --install-extension "$EXT_DIR/flipflop.vsix" > "$ARTIFACTS/install.log" 2>&1
grep -q "flipflop" <("$CODE_SERVER" --user-data-dir "$USER_DATA" --extensions-dir "$EXTENSIONS" \
  --list-extensions 2>/dev/null) || { cat "$ARTIFACTS/install.log"; echo "e2e: install failed" >&2; exit 1; }

PORT="$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
echo "== code-server on 127.0.0.1:$PORT"
"$CODE_SERVER" --auth none --bind-addr "127.0.0.1:$PORT" --disable-telemetry --disable-update-check \
  --disable-workspace-trust \
  --user-data-dir "$USER_DATA" --extensions-dir "$EXTENSIONS" "$WORKSPACE" \
  > "$ARTIFACTS/code-server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 60); do
  if curl -fsS -o /dev/null "http://127.0.0.1:$PORT/healthz" 2>/dev/null; then break; fi
  sleep 1
done

echo "== drive VS Code with headless Chromium"
status=0
node "$EXT_DIR/test/e2e/run.mjs" --url "http://127.0.0.1:$PORT" --workspace "$WORKSPACE" \
  --file suboptimal_launch.cu --artifacts "$ARTIFACTS" --chromium "$(command -v chromium)" || status=$?
# The extension's output channel and the server's messages, for whoever reads a failure.
find "$USER_DATA/logs" -name '*FlipFlop*' -exec cp {} "$ARTIFACTS/" \; 2>/dev/null || true
echo "e2e: screenshots and logs in $ARTIFACTS"
if [ "$refresh_docs" = 1 ] && [ "$status" = 0 ] && [ -f "$ARTIFACTS/05-hover-ties.png" ]; then
  mkdir -p "$REPO_DIR/docs/images"
  cp "$ARTIFACTS/05-hover-ties.png" "$REPO_DIR/docs/images/vscode.png"
fi
exit "$status"
