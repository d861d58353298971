#!/bin/sh
# Installs a Switchyard node on this server and joins it to the panel that served
# this script. Run as root:
#
#     curl -fsSL @PANEL@/install.sh | sh -s -- TOKEN
#
# TOKEN is the join token the panel shows (it starts with syj2.). This script only
# downloads the node's binary, checks its sha256 against the one the token pins,
# and puts it at /usr/local/bin/switchyard; `switchyard node install TOKEN` then
# does the rest (a system user, a state directory, a systemd unit, the join) and
# prints each step. Running it again repairs an installation and keeps the join.
set -eu

PANEL=@PANEL_QUOTED@
ARCH=@ARCH_QUOTED@
DEST=/usr/local/bin/switchyard

say() { printf 'switchyard: %s\n' "$*"; }
fail() { printf 'switchyard: %s\n' "$*" >&2; exit 1; }

[ "$#" -ge 1 ] || fail "usage: curl -fsSL $PANEL/install.sh | sh -s -- TOKEN (the join token from the panel)"
TOKEN=$1
shift

case $TOKEN in
syj2.*) ;;
*) fail "this token does not pin the panel's binary (it does not start with syj2.); copy the install command from the panel again" ;;
esac
rest=${TOKEN#syj2.}
SHA=${rest%%.*}
case $SHA in
*[!0-9a-fA-F]*) fail "the token's binary hash is damaged; copy the install command from the panel again" ;;
esac
[ "${#SHA}" -eq 64 ] || fail "the token's binary hash is damaged; copy the install command from the panel again"
SHA=$(printf '%s' "$SHA" | tr 'A-F' 'a-f')

[ "$(id -u)" -eq 0 ] || fail "run this as root (sudo sh -s -- TOKEN)"
[ "$(uname -s)" = Linux ] || fail "this is $(uname -s); Switchyard nodes run on Linux"
machine=$(uname -m)
[ "$machine" = "$ARCH" ] || fail "this server is $machine but the panel serves a $ARCH binary; build switchyard for $machine and run \`switchyard node install TOKEN\` by hand"
command -v sha256sum >/dev/null 2>&1 || fail "sha256sum is missing (Debian and Ubuntu: apt-get install coreutils)"
say "system: Linux $machine"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
url="$PANEL/install/switchyard-linux-$ARCH"
say "downloading $url"
if command -v curl >/dev/null 2>&1; then
	curl -fsSL --retry 3 -o "$tmp/switchyard" "$url" || fail "the download from $url failed"
elif command -v wget >/dev/null 2>&1; then
	wget -q -O "$tmp/switchyard" "$url" || fail "the download from $url failed"
else
	fail "neither curl nor wget is installed"
fi
got=$(sha256sum "$tmp/switchyard" | cut -d ' ' -f 1)
if [ "$got" != "$SHA" ]; then
	fail "refused: the download's sha256 is $got but the token pins $SHA (a damaged or tampered download); nothing was installed"
fi
say "sha256 $got matches the token"

chmod 0755 "$tmp/switchyard"
mkdir -p /usr/local/bin
# A rename, so a node running the old binary keeps it until it restarts.
cp "$tmp/switchyard" "$DEST.new"
mv -f "$DEST.new" "$DEST"
say "installed $DEST ($("$DEST" --version))"

exec "$DEST" node install "$TOKEN" "$@"
