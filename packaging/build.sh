#!/usr/bin/env bash
# Build dpdesk's Linux artefacts from this checkout into packaging/out/:
#   wheel/dpdesk-VERSION-py3-none-any.whl   the wheel (built from a clean copy of the tree)
#   dist/dpdesk/                            the PyInstaller one-folder bundle (dpdesk, _internal/)
#   dpdesk_VERSION_ARCH.deb                 the Debian package (/opt/dpdesk, /usr/bin/dpdesk, menu entry, icons)
#
# Usage: packaging/build.sh [all|wheel|bundle|deb|maintainer]     (default: all; `make package` runs all)
#
# The .deb's Maintainer is whoever builds and ships it, named as Debian's own tools name a packager:
# DEBFULLNAME and DEBEMAIL, else the builder's `git config user.name` / `user.email`. A placeholder
# address (example.org, *.example, *.invalid, *.test) is refused. `build.sh maintainer` prints it.
#
# The bundle is built in a build venv (packaging/out/build-venv, created on first use and reused; set
# DPDESK_BUILD_VENV to use another) where dpdesk is installed NON-editable from the wheel, so the bundle
# holds exactly what a wheel user gets. Needs python3 (>= 3.11) with venv, and dpkg-deb for the .deb.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PKG="$REPO/packaging"
OUT="$PKG/out"
VENV="${DPDESK_BUILD_VENV:-$OUT/build-venv}"
PY="${PYTHON:-python3}"
what="${1:-all}"
export PIP_DISABLE_PIP_VERSION_CHECK=1

log() { printf '[build %5ss] %s\n' "$SECONDS" "$*"; }

# The version setuptools-scm reads from this checkout's git tags (pyproject.toml), asked once: the wheel is
# built from a copy without .git, so it is handed over as SETUPTOOLS_SCM_PRETEND_VERSION.
scm_version() {
  local py
  for py in "$PY" "$REPO/.venv/bin/python"; do
    if [ -x "$(command -v "$py")" ] && "$py" -c 'import setuptools_scm' 2>/dev/null; then
      (cd "$REPO" && "$py" -m setuptools_scm) && return
    fi
  done
  echo "build.sh: the version comes from git through setuptools-scm: pip install setuptools-scm (make venv does)" >&2
  return 1
}
# The version of the wheel built (its file name), for the .deb.
version() { basename "$(ls "$OUT"/wheel/dpdesk-*.whl)" | sed -n 's/^dpdesk-\([^-]*\)-.*/\1/p'; }

maintainer() {
  local name="${DEBFULLNAME:-$(git -C "$REPO" config user.name 2>/dev/null || true)}"
  local mail="${DEBEMAIL:-$(git -C "$REPO" config user.email 2>/dev/null || true)}"
  local domain="${mail##*@}"
  if [ -z "$name" ] || [[ "$mail" != ?*@?* ]] || [[ "$name$mail" == *[\<\>\|]* ]]; then
    echo "build.sh: the .deb needs a maintainer: set DEBFULLNAME and DEBEMAIL (or git config user.name and user.email)" >&2
    exit 2
  fi
  case "$domain" in
    example|example.*|*.example|invalid|*.invalid|test|*.test)
      echo "build.sh: the maintainer address $mail is a placeholder (RFC 2606); set DEBEMAIL to where users reach the packager" >&2
      exit 2 ;;
  esac
  printf '%s <%s>\n' "$name" "$mail"
}

build_wheel() {
  # Build from a clean copy of the tree (tracked and new files, nothing ignored): an in-tree build
  # would reuse a stale build/lib and could ship files deleted since.
  local src
  src="$(mktemp -d)"
  (cd "$REPO" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$src" 2>/dev/null) \
    || (cd "$REPO" && tar --exclude=.git --exclude=.venv --exclude=packaging/out --exclude=build -cf - . | tar -xf - -C "$src")
  rm -rf "$OUT/wheel"
  mkdir -p "$OUT/wheel"
  log "wheel: building from a clean copy of $REPO"
  local ver
  ver="$(scm_version)"
  SETUPTOOLS_SCM_PRETEND_VERSION="$ver" "$PY" -m pip wheel -q --no-deps -w "$OUT/wheel" "$src" >"$OUT/wheel.log" 2>&1 || { cat "$OUT/wheel.log" >&2; rm -rf "$src"; exit 1; }
  rm -rf "$src"
  ls "$OUT/wheel"/dpdesk-*.whl >/dev/null
  log "wheel: $(basename "$OUT"/wheel/dpdesk-*.whl)"
}

build_venv() {
  if [ ! -x "$VENV/bin/python" ]; then
    log "venv: creating $VENV"
    "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
  fi
  local whl
  whl="$(ls "$OUT"/wheel/dpdesk-*.whl)"
  log "venv: installing $(basename "$whl")[postgresql,excel] and PyInstaller (non-editable)"
  "$VENV/bin/python" -m pip install -q --force-reinstall --no-deps "$whl"
  "$VENV/bin/python" -m pip install -q "$whl[postgresql,excel,package]" >"$OUT/venv.log" 2>&1 || { cat "$OUT/venv.log" >&2; exit 1; }
  # The bundle must be built from the installed package, never from the source tree.
  (cd / && "$VENV/bin/python" -c 'import dpdesk, sys; p = dpdesk.__file__; sys.exit(0 if "site-packages" in p else f"dpdesk imported from {p}")')
}

build_bundle() {
  [ -f "$OUT"/wheel/dpdesk-*.whl ] 2>/dev/null || build_wheel
  build_venv
  log "bundle: running PyInstaller"
  rm -rf "$OUT/dist" "$OUT/pyi-work"
  # Run from an empty directory so the source tree's dpdesk/ cannot shadow the installed one.
  mkdir -p "$OUT/pyi-work"
  (cd "$OUT/pyi-work" && "$VENV/bin/pyinstaller" --noconfirm --log-level WARN \
      --distpath "$OUT/dist" --workpath "$OUT/pyi-work" "$PKG/dpdesk.spec")
  test -x "$OUT/dist/dpdesk/dpdesk"
  log "bundle: $OUT/dist/dpdesk ($(du -sh "$OUT/dist/dpdesk" | cut -f1))"
}

build_deb() {
  # DPDESK_DEB_COMPRESS=TYPE:LEVEL (default zstd:3, what dpkg-deb -Zzstd uses): a release build may
  # take xz:9 or zstd:19 for a smaller download (docs/install.md measures each; the installed files
  # are the same, so neither changes the installed size or the start-up)
  local compress="${DPDESK_DEB_COMPRESS:-zstd:3}"
  case "$compress" in
    zstd:[0-9]|zstd:1[0-9]|xz:[0-9]|gzip:[0-9]) ;;
    *) echo "build.sh: DPDESK_DEB_COMPRESS=$compress: expected zstd:0-19, xz:0-9 or gzip:0-9" >&2; exit 2 ;;
  esac
  local who
  who="$(maintainer)"
  test -x "$OUT/dist/dpdesk/dpdesk" || build_bundle
  command -v dpkg-deb >/dev/null || { echo "build.sh: dpkg-deb not found (Debian's dpkg package)" >&2; exit 1; }
  local ver arch root deb icon icons date
  ver="$(version)"
  arch="$(dpkg --print-architecture)"
  root="$OUT/debroot"
  deb="$OUT/dpdesk_${ver}_${arch}.deb"
  log "deb: staging $root"
  rm -rf "$root" "$OUT"/dpdesk_*.deb
  mkdir -p "$root/DEBIAN" "$root/opt" "$root/usr/bin" "$root/usr/share/applications" \
           "$root/usr/share/icons/hicolor/256x256/apps" "$root/usr/share/doc/dpdesk" \
           "$root/usr/share/mime/packages" "$root/usr/share/metainfo"
  cp -a "$OUT/dist/dpdesk" "$root/opt/dpdesk"
  ln -s /opt/dpdesk/dpdesk "$root/usr/bin/dpdesk"
  ln -s /opt/dpdesk/dpdesk "$root/usr/bin/dpdesk-cli"  # one executable: on Linux "windowed" changes nothing
  install -m 0644 "$PKG/deb/dpdesk.desktop" "$root/usr/share/applications/dpdesk.desktop"
  icons="$root/opt/dpdesk/_internal/dpdesk/resources/icons"
  icon="$root/usr/share/icons/hicolor/256x256/apps/dpdesk.png"
  # The icons as installed in the bundle, scaled to the 256x256 the hicolor folder promises.
  "$VENV/bin/python" "$PKG/deb/icon256.py" "$icons" "$icon"
  install -D -m 0644 "$icons/dpdesk.svg" "$root/usr/share/icons/hicolor/scalable/apps/dpdesk.svg"
  # The project file type: shared-mime-info XML, and the document icon under the name it gives.
  install -m 0644 "$PKG/deb/dpdesk-mime.xml" "$root/usr/share/mime/packages/dpdesk.xml"
  "$VENV/bin/python" "$PKG/deb/icon256.py" "$icons" \
    "$root/usr/share/icons/hicolor/256x256/mimetypes/application-x-dpdesk-project.png" dpdesk-project
  install -D -m 0644 "$icons/dpdesk-project.svg" \
    "$root/usr/share/icons/hicolor/scalable/mimetypes/application-x-dpdesk-project.svg"
  # AppStream: the release is this version, dated by the commit it is built from.
  date="$(cd "$REPO" && git log -1 --format=%cs 2>/dev/null || date -u +%F)"
  sed -e "s/@VERSION@/$ver/" -e "s/@DATE@/$date/" "$PKG/deb/org.dpdesk.dpdesk.metainfo.xml" \
    > "$root/usr/share/metainfo/org.dpdesk.dpdesk.metainfo.xml"
  chmod 0644 "$root/usr/share/metainfo/org.dpdesk.dpdesk.metainfo.xml"
  install -m 0644 "$PKG/deb/copyright" "$root/usr/share/doc/dpdesk/copyright"
  install -m 0755 "$PKG/deb/postinst" "$root/DEBIAN/postinst"
  install -m 0755 "$PKG/deb/postrm" "$root/DEBIAN/postrm"
  sed -e "s/@VERSION@/$ver/" -e "s/@ARCH@/$arch/" -e "s|@MAINTAINER@|$who|" \
      -e "s/@SIZE@/$(du -sk --exclude=DEBIAN "$root" | cut -f1)/" "$PKG/deb/control.in" > "$root/DEBIAN/control"
  # Files root-owned, directories 0755, nothing group/world-writable.
  chmod -R u+rwX,go+rX,go-w "$root"
  log "deb: dpkg-deb --build (${compress%%:*} level ${compress##*:})"
  dpkg-deb --root-owner-group "-Z${compress%%:*}" "-z${compress##*:}" --build "$root" "$deb" >/dev/null
  log "deb: $deb ($(du -h "$deb" | cut -f1))"
  rm -rf "$root"
}

mkdir -p "$OUT"
case "$what" in
  wheel) build_wheel ;;
  bundle) build_wheel; build_bundle ;;
  deb) build_deb ;;
  all) maintainer >/dev/null; build_wheel; build_bundle; build_deb ;;
  maintainer) maintainer; exit 0 ;;
  *) echo "usage: $0 [all|wheel|bundle|deb|maintainer]" >&2; exit 2 ;;
esac
log "done"
