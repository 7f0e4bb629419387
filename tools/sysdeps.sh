#!/usr/bin/env bash
# Installs the Debian packages dpdesk's tests and app need (Qt's system libraries, PostgreSQL for the
# pushdown tests; for the installer check desktop-file-utils, appstream (the metainfo validator),
# shared-mime-info, and xdg-utils with libfile-mimeinfo-perl so that `xdg-mime query filetype` answers
# from shared-mime-info outside a desktop session; and a Java runtime for Spark, dpdesk[spark], unless a
# java is already on PATH or under JAVA_HOME: Spark 4 runs on Java 17 or 21). As root it installs what is missing;
# otherwise it names the missing packages and the command to install them.
set -euo pipefail
pkgs=(libgl1 libegl1 libxkbcommon0 libglib2.0-0 libfreetype6 libfontconfig1 libdbus-1-3 fonts-dejavu-core
      libxcb-cursor0 libxkbcommon-x11-0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0
      postgresql desktop-file-utils appstream shared-mime-info xdg-utils libfile-mimeinfo-perl)
command -v dpkg-query >/dev/null 2>&1 || { echo "sysdeps: not a Debian-family system; install Qt's libraries and PostgreSQL yourself" >&2; exit 0; }
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ! command -v java >/dev/null 2>&1 && ! [ -x "${JAVA_HOME:-/nonexistent}/bin/java" ]; then
  missing+=(default-jre-headless)
fi
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
  echo "sysdeps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "sysdeps: missing Debian packages: ${missing[*]}" >&2
  echo "sysdeps: install them with: sudo apt-get install --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
