#!/usr/bin/env bash
# Build dpdesk.app and a drag-to-Applications .dmg on macOS (cannot run on Linux: hdiutil is macOS-only).
#
# Usage, from the repository root on a Mac with Python 3.11+ (see docs/install.md):
#   packaging/macos/make_dmg.sh
# Output: packaging/out/dist/dpdesk.app and packaging/out/dpdesk-VERSION-macos-ARCH.dmg
#
# Optional signing and notarisation (needs an Apple Developer ID; skipped when unset):
#   CODESIGN_IDENTITY="Developer ID Application: NAME (TEAMID)"  NOTARY_PROFILE=<keychain profile>
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="$REPO/packaging/out"
VENV="${DPDESK_BUILD_VENV:-$OUT/build-venv}"
PY="${PYTHON:-python3}"
VERSION="$(cd / && "$VENV/bin/python" -c 'import dpdesk; print(dpdesk.__version__)')"  # the installed wheel's (from git tags)
ARCH="$(uname -m)"
DMG="$OUT/dpdesk-$VERSION-macos-$ARCH.dmg"

[ "$(uname -s)" = "Darwin" ] || { echo "make_dmg.sh: run this on macOS" >&2; exit 1; }
mkdir -p "$OUT"

# 1. A build venv with dpdesk installed non-editable, PyInstaller, and Pillow (PNG -> .icns icon).
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q "$REPO[postgresql,excel,package]" pillow

# 2. The bundle: the same spec as Linux; on macOS it also makes dpdesk.app (BUNDLE).
rm -rf "$OUT/dist" "$OUT/pyi-work"
mkdir -p "$OUT/pyi-work"
(cd "$OUT/pyi-work" && "$VENV/bin/pyinstaller" --noconfirm --distpath "$OUT/dist" --workpath "$OUT/pyi-work" \
    "$REPO/packaging/dpdesk.spec")
APP="$OUT/dist/dpdesk.app"
test -d "$APP"

# 3. Self-test the .app before shipping it.
QT_QPA_PLATFORM=offscreen "$APP/Contents/MacOS/dpdesk" --self-test --verbose

# 4. Optional: sign (hardened runtime) so Gatekeeper accepts it, then notarise after the .dmg exists.
if [ -n "${CODESIGN_IDENTITY:-}" ]; then
  codesign --force --deep --options runtime --timestamp --sign "$CODESIGN_IDENTITY" "$APP"
  codesign --verify --deep --strict "$APP"
fi

# 5. The .dmg: the .app next to a link to /Applications, compressed (UDZO).
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
cp -R "$APP" "$stage/"
ln -s /Applications "$stage/Applications"
rm -f "$DMG"
hdiutil create -volname "dpdesk $VERSION" -srcfolder "$stage" -ov -format UDZO "$DMG"

if [ -n "${CODESIGN_IDENTITY:-}" ] && [ -n "${NOTARY_PROFILE:-}" ]; then
  codesign --sign "$CODESIGN_IDENTITY" --timestamp "$DMG"
  xcrun notarytool submit "$DMG" --keychain-profile "$NOTARY_PROFILE" --wait
  xcrun stapler staple "$DMG"
fi
echo "make_dmg.sh: $DMG"
