#!/usr/bin/env bash
# Install the built .deb, check it works as installed, then remove it (always, even on failure).
#
# Usage (as root, on Debian/Ubuntu): packaging/smoke_test.sh [path/to/dpdesk_*.deb]
#   default: the newest packaging/out/dpdesk_*.deb
#
# Checks, in order; the first failure stops the script with a non-zero exit:
#   1. `apt-get install ./dpdesk_*.deb` installs it and its Depends (dpkg -i alone would leave it
#      unconfigured when a dependency is missing; without apt-get: dpkg -i, then apt-get -f install)
#   2. the files land where promised: /opt/dpdesk, /usr/bin/dpdesk, the .desktop entry, the 256x256 icon,
#      the project file type (shared-mime-info XML), its document icon, the AppStream metainfo
#   3. `desktop-file-validate` accepts the installed .desktop entry; `appstreamcli validate` (where
#      installed) accepts the metainfo
#   4. the installed `/usr/bin/dpdesk --self-test --verbose` passes with QT_QPA_PLATFORM=offscreen,
#      run from an empty directory as any user would (no source tree on sys.path)
#   5. `dpdesk-cli --version` answers; `dpdesk-cli project new` makes a project from the bundled demo
#      Parquet (DuckDB); `dpdesk-cli cube` reaches the PostgreSQL driver (a refused connection, not an
#      import error)
#   6. the file manager's view of that project (where xdg-utils is installed): `xdg-mime query filetype`
#      names application/x-dpdesk-project, also for a copy without the .dpdesk suffix (by content),
#      and the type's default application is dpdesk.desktop
#   7. a double-click, offscreen: the desktop entry's Exec line with %f = the project starts the window,
#      which opens that project (it lands at the top of the window's recent projects)
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
mimexml=/usr/share/mime/packages/dpdesk.xml
metainfo=/usr/share/metainfo/org.dpdesk.dpdesk.metainfo.xml
docicon=/usr/share/icons/hicolor/256x256/mimetypes/application-x-dpdesk-project.png
for f in "$mimexml" "$metainfo" "$docicon" /usr/share/icons/hicolor/scalable/mimetypes/application-x-dpdesk-project.svg; do
  [ -f "$f" ] || die "$f is missing"
done
grep -q '^MimeType=application/x-dpdesk-project;' "$desktop" || die "$desktop does not declare the project file type"

log "desktop-file-validate $desktop"
command -v desktop-file-validate >/dev/null || die "desktop-file-validate not found (apt-get install desktop-file-utils)"
desktop-file-validate "$desktop" || die "desktop-file-validate rejected $desktop"
if command -v appstreamcli >/dev/null; then
  log "appstreamcli validate $metainfo"
  appstreamcli validate --no-net "$metainfo" || die "appstreamcli rejected $metainfo"
else
  log "appstreamcli not installed: AppStream metainfo not validated (apt-get install appstream)"
fi

log "running the installed dpdesk --self-test (offscreen)"
out="$(cd "$scratch" && env -u PYTHONPATH -u PYTHONHOME -u VIRTUAL_ENV QT_QPA_PLATFORM=offscreen \
       PATH=/usr/bin:/bin timeout 300 /usr/bin/dpdesk --self-test --verbose 2>&1)" || { printf '%s\n' "$out" >&2; die "dpdesk --self-test failed"; }
printf '%s\n' "$out" | sed 's/^/    /'
printf '%s\n' "$out" | grep -q "self-test passed" || die "no 'self-test passed' line"
printf '%s\n' "$out" | grep -q "(bundle," || die "the self-test did not run from the bundle"

log "dpdesk-cli --version, and the bundled data drivers"
(cd "$scratch" && /usr/bin/dpdesk-cli --version) || die "dpdesk-cli --version failed"
demo=/opt/dpdesk/_internal/dpdesk/resources/demo
project="$scratch/x/P.dpdesk"
mkdir -p "$scratch/x"
out="$(cd "$scratch" && /usr/bin/dpdesk-cli project new "$project" --source "$demo/adult.parquet" \
       --schema "$demo/adult.schema.json" --budget 1 2>&1)" \
  || { printf '%s\n' "$out" >&2; die "dpdesk-cli project new on the demo Parquet (DuckDB) failed"; }
# The demo's 720 cells were built (the output names no row count: the project file keeps none).
printf '%s\n' "$out" | grep -q "720 cells" && printf '%s\n' "$out" | grep -q "bound to .*adult.parquet: its cube's fingerprint is keyed" \
  || { printf '%s\n' "$out" >&2; die "the demo table was not read"; }
# No server listens on port 1: the driver must load and then fail to connect (not fail to import).
out="$(cd "$scratch" && /usr/bin/dpdesk-cli cube "postgresql://dpdesk@127.0.0.1:1/none" --table t \
       --schema "$demo/adult.schema.json" 2>&1 || true)"
printf '%s\n' "$out" | grep -q "cannot connect to PostgreSQL" \
  || { printf '%s\n' "$out" >&2; die "the bundled PostgreSQL driver (psycopg) did not load"; }

if command -v xdg-mime >/dev/null; then
  log "xdg-mime: the project's file type and its default application"
  command -v mimetype >/dev/null \
    || die "xdg-mime without a desktop session asks file(1), which ignores shared-mime-info: apt-get install libfile-mimeinfo-perl"
  cp "$project" "$scratch/x/renamed-project"
  for f in "$project" "$scratch/x/renamed-project"; do
    type="$(xdg-mime query filetype "$f")"
    [ "$type" = "application/x-dpdesk-project" ] || die "xdg-mime query filetype $f: $type"
  done
  app="$(xdg-mime query default application/x-dpdesk-project)"
  [ "$app" = "dpdesk.desktop" ] || die "xdg-mime query default application/x-dpdesk-project: '$app'"
else
  log "xdg-mime not installed: the file type is not checked from the file manager's side (apt-get install xdg-utils)"
fi

log "double-click: the desktop entry's Exec line with the project, offscreen"
exec_line="$(sed -n 's/^Exec=//p' "$desktop" | head -n1)"
[ -n "$exec_line" ] && [ "${exec_line#*%f}" != "$exec_line" ] || die "$desktop: Exec has no %f ($exec_line)"
read -r -a cmd <<<"${exec_line/\%f/$project}"
home="$scratch/home"
mkdir -p "$home"
# The window remembers a project at the top of its recent list only once it has opened it.
(cd "$scratch" && exec env -u PYTHONPATH -u PYTHONHOME -u VIRTUAL_ENV HOME="$home" XDG_CONFIG_HOME="$home/.config" \
   QT_QPA_PLATFORM=offscreen PATH=/usr/bin:/bin "${cmd[@]}" >"$scratch/window.log" 2>&1) &
window=$!
conf="$home/.config/dpdesk/dpdesk.conf"
for _ in $(seq 1 240); do
  grep -q "^recent=$project" "$conf" 2>/dev/null && break
  kill -0 "$window" 2>/dev/null || break
  sleep 0.25
done
opened=0
grep -q "^recent=$project" "$conf" 2>/dev/null && opened=1
kill -0 "$window" 2>/dev/null && alive=1 || alive=0
kill "$window" 2>/dev/null || true
wait "$window" 2>/dev/null || true
[ "$opened" = 1 ] || { cat "$scratch/window.log" >&2; die "'${cmd[*]}' did not open $project within 60 s"; }
[ "$alive" = 1 ] || { cat "$scratch/window.log" >&2; die "'${cmd[*]}' exited instead of showing the project"; }

log "all checks passed"
