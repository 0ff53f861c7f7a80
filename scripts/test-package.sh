#!/usr/bin/env bash
# The package as an operator installs it (issue 10.6, SPEC P1): the .deb given
# (make test-package builds the amd64 one) is unpacked into a scratch root with
# dpkg -x (no maintainer script runs, nothing of this machine changes); the
# installed binary is static and checks the installed example configuration;
# the example's files are conffiles; postinst makes the flexway system user;
# systemd-analyze verifies the installed unit where it is available.
set -euo pipefail
deb=${1:?usage: test-package.sh flexway_VERSION_amd64.deb}
root=$(mktemp -d)
ctl=$(mktemp -d)
trap 'rm -rf "$root" "$ctl"' EXIT
fail() { echo "test-package: FAIL: $*" >&2; exit 1; }
pass=0
ok() { echo "test-package: ok: $*"; pass=$((pass + 1)); }

dpkg-deb --info "$deb" >/dev/null || fail "$deb is not a Debian package"
[ "$(dpkg-deb -f "$deb" Package)" = flexway ] || fail "package name"
[ "$(dpkg-deb -f "$deb" Architecture)" = amd64 ] || fail "architecture"
dpkg -x "$deb" "$root"
dpkg-deb -e "$deb" "$ctl"

bin=$root/usr/bin/flexway
[ -x "$bin" ] || fail "no /usr/bin/flexway"
info=$(go version -m "$bin")
grep -q 'CGO_ENABLED=0' <<<"$info" || fail "the binary is not static (CGO_ENABLED=0)"
grep -q -- '-trimpath=true' <<<"$info" || fail "the binary is not built -trimpath"
grep -q 'GOOS=linux' <<<"$info" && grep -q 'GOARCH=amd64' <<<"$info" || fail "not a linux/amd64 binary"
ok "static linux/amd64 binary, -trimpath"

out=$("$bin" -check -config "$root/etc/flexway/flexway.yaml") || fail "flexway -check on the installed example: $out"
grep -q 'configuration valid' <<<"$out" || fail "flexway -check said: $out"
ok "flexway -check -config /etc/flexway/flexway.yaml: $out"

for f in /etc/flexway/flexway.yaml /etc/flexway/asyncapi.yaml /etc/flexway/api-keys.yaml; do
  grep -qx "$f" "$ctl/conffiles" || fail "$f is not a conffile"
done
ok "the example configuration is marked as configuration files"

[ -x "$ctl/postinst" ] || fail "no postinst"
sh -n "$ctl/postinst" || fail "postinst does not parse"
grep -q 'adduser --system --group' "$ctl/postinst" && grep -q 'getent passwd flexway' "$ctl/postinst" ||
  fail "postinst does not make the flexway system user"
unit=$root/lib/systemd/system/flexway.service
[ -f "$unit" ] || fail "no unit"
grep -q '^User=flexway$' "$unit" && grep -q '^ExecStart=/usr/bin/flexway -config /etc/flexway/flexway.yaml$' "$unit" ||
  fail "the unit does not run /usr/bin/flexway as flexway"
ok "postinst makes the flexway user the unit runs as"

h=$root/usr/lib/flexway/flexway-handover
[ -x "$h" ] && sh -n "$h" || fail "no /usr/lib/flexway/flexway-handover"
grep -q '/usr/lib/flexway/flexway-handover' "$ctl/postinst" && ! grep -q 'try-restart' "$ctl/postinst" ||
  fail "postinst does not upgrade by handover"
grep -q '^NotifyAccess=all$' "$unit" || fail "the unit does not let the upgraded process become the main one"
ok "an upgrade hands the running gateway over (postinst runs flexway-handover; NotifyAccess=all)"

if command -v systemd-analyze >/dev/null 2>&1; then
  # The unit as installed, its binary found in the scratch root.
  u=$ctl/flexway.service
  sed "s|/usr/bin/flexway|$bin|g" "$unit" >"$u"
  if v=$(systemd-analyze verify --man=no "$u" 2>&1); then rc=0; else rc=$?; fi
  if grep -q 'sysinit.target not found' <<<"$v"; then
    echo "test-package: skip: systemd-analyze verify (this machine has no systemd units): $v"
  elif [ $rc -ne 0 ] || [ -n "$v" ]; then
    fail "systemd-analyze verify: $v"
  else
    ok "systemd-analyze verify flexway.service"
  fi
else
  echo "test-package: skip: systemd-analyze verify (systemd-analyze not installed)"
fi
echo "test-package: $pass passed, 0 failed"
