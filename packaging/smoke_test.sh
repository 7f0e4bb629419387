#!/usr/bin/env bash
# Install the built .deb, check it works as installed, then remove it (always, even on failure).
#
# Usage (as root, on Debian/Ubuntu): packaging/smoke_test.sh [path/to/dpdesk_*.deb]
#   default: the newest packaging/out/dpdesk_*.deb
#
# Checks, in order; the first failure stops the script with a non-zero exit:
#   1. `apt-get install ./dpdesk_*.deb` installs it and its Depends (dpkg -i alone would leave it
#      unconfigured when a dependency is missing; without apt-get: dpkg -i, then apt-get -f install)
#   2. the files land where promised: /opt/dpdesk, /usr/bin/dpdesk, the .desktop entry, the 256x256 icon
#   3. `desktop-file-validate` accepts the installed .desktop entry
#   4. the installed `/usr/bin/dpdesk --self-test --verbose` passes with QT_QPA_PLATFORM=offscreen,
#      run from an empty directory as any user would (no source tree on sys.path)
#   5. `dpdesk-cli --version` answers; `dpdesk-cli cube` reads the bundled demo Parquet (DuckDB) and
#      reaches the PostgreSQL driver (a refused connection, not an import error)
# Then the package is purged and nothing of it may remain under /opt/dpdesk or /usr/bin.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
deb="${1:-$(ls -t "$REPO"/packaging/out/dpdesk_*.deb 2>/dev/null | head -n1 || true)}"
log() { printf '[smoke %4ss] %s\n' "$SECONDS" "$*"; }
die() { printf 'smoke_test: FAILED: %s\n' "$*" >&2; exit 1; }

[ -n "$deb" ] && [ -f "$deb" ] || die "no .deb found (run packaging/build.sh first)"
[ "$(id -u)" -eq 0 ] || die "must run as root (it installs and removes a system package)"
command -v dpkg >/dev/null || die "not a Debian-family system (no dpkg)"
deb="$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")"
if dpkg-query -W -f='${Status}' dpdesk 2>/dev/null | grep -q "install ok installed"; then
  die "a dpdesk package is already installed; remove it first (apt-get remove dpdesk)"
fi

export DEBIAN_FRONTEND=noninteractive
scratch="$(mktemp -d)"
cleanup() {
  local rc=$?
  log "removing the package"
  apt-get purge -y -qq dpdesk >/dev/null 2>&1 || dpkg --purge dpdesk >/dev/null 2>&1 || true
  rm -rf "$scratch"
  if [ -e /opt/dpdesk ] || [ -L /usr/bin/dpdesk ]; then
    echo "smoke_test: FAILED: files left behind after removal" >&2
    rc=1
  fi
  exit $rc
}
trap cleanup EXIT

log "installing $(basename "$deb")"
if ! apt-get install -y -qq --no-install-recommends "$deb" >"$scratch/apt.log" 2>&1; then
  log "apt-get install failed; refreshing the package lists, then dpkg -i and apt-get -f install"
  cat "$scratch/apt.log" >&2
  apt-get update -qq >/dev/null 2>&1 || true
  dpkg -i "$deb" >"$scratch/dpkg.log" 2>&1 || true
  apt-get -f install -y -qq --no-install-recommends >>"$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log" >&2; die "could not install $deb"; }
fi
dpkg-query -W -f='${Status}' dpdesk | grep -q "install ok installed" || die "dpdesk is not fully installed"

log "checking installed files"
for f in /opt/dpdesk/dpdesk /usr/bin/dpdesk /usr/bin/dpdesk-cli; do
  [ -x "$f" ] || die "$f is missing or not executable"
done
desktop=/usr/share/applications/dpdesk.desktop
icon=/usr/share/icons/hicolor/256x256/apps/dpdesk.png
[ -f "$desktop" ] || die "$desktop is missing"
[ -f "$icon" ] || die "$icon is missing"
[ "$(head -c 8 "$icon" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || die "$icon is not a PNG"

log "desktop-file-validate $desktop"
command -v desktop-file-validate >/dev/null || die "desktop-file-validate not found (apt-get install desktop-file-utils)"
desktop-file-validate "$desktop" || die "desktop-file-validate rejected $desktop"

log "running the installed dpdesk --self-test (offscreen)"
out="$(cd "$scratch" && env -u PYTHONPATH -u PYTHONHOME -u VIRTUAL_ENV QT_QPA_PLATFORM=offscreen \
       PATH=/usr/bin:/bin timeout 300 /usr/bin/dpdesk --self-test --verbose 2>&1)" || { printf '%s\n' "$out" >&2; die "dpdesk --self-test failed"; }
printf '%s\n' "$out" | sed 's/^/    /'
printf '%s\n' "$out" | grep -q "self-test passed" || die "no 'self-test passed' line"
printf '%s\n' "$out" | grep -q "(bundle," || die "the self-test did not run from the bundle"

log "dpdesk-cli --version, and the bundled data drivers"
(cd "$scratch" && /usr/bin/dpdesk-cli --version) || die "dpdesk-cli --version failed"
demo=/opt/dpdesk/_internal/dpdesk/resources/demo
out="$(cd "$scratch" && /usr/bin/dpdesk-cli cube "$demo/adult.parquet" --schema "$demo/adult.schema.json" 2>&1)" \
  || { printf '%s\n' "$out" >&2; die "dpdesk-cli cube on the demo Parquet (DuckDB) failed"; }
printf '%s\n' "$out" | grep -q "^total:" || die "dpdesk-cli cube printed no total"
# No server listens on port 1: the driver must load and then fail to connect (not fail to import).
out="$(cd "$scratch" && /usr/bin/dpdesk-cli cube "postgresql://dpdesk@127.0.0.1:1/none" --table t \
       --schema "$demo/adult.schema.json" 2>&1 || true)"
printf '%s\n' "$out" | grep -q "cannot connect to PostgreSQL" \
  || { printf '%s\n' "$out" >&2; die "the bundled PostgreSQL driver (psycopg) did not load"; }

log "all checks passed"
