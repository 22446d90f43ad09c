#!/bin/sh
# Install the Debian packages ember needs to build and to run its whole test
# suite.  Installs only what is missing.  As root it runs apt-get; otherwise it
# prints the exact command to run and fails.
set -eu

PKGS="build-essential cmake pkg-config libunwind-dev libdw-dev libelf-dev zlib1g-dev
python3 python3-numpy libopenblas0-pthread python3-opencv python3-torch"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "ember: missing Debian packages; run as root:" >&2
	echo "  apt-get update && apt-get install -y$missing" >&2
	exit 1
fi
echo "ember: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
