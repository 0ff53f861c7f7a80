#!/usr/bin/env bash
# Idempotent install of the Debian packages the flexway tests and benchmarks need.
# Checks each package with dpkg first; runs apt-get update + install only when
# something is missing. Non-interactive. Exits non-zero on failure.
set -euo pipefail

PKGS=(kcat python3-confluent-kafka python3-kafka python3-crc32c redis-server gnuplot-nox
      python3-venv openssl prometheus)   # python3-venv: scripts/install-rdkafka.sh; openssl: configs/examples/make-demo-certs.sh; prometheus: promtool (configs/prometheus, engine's PromQL test)
# python3-crc32c: kafka-python's own advice (its install guide: computing CRC-32C in pure Python "is
# quite slow"): without it the client builds some 4 MiB/s a core, and under make test's load its
# producer could not reach the 1 MiB/s quota its test measures (the client's CPU, not the gateway).
# Java 17 and Maven are needed by install-kafka.sh / kafka-start.sh / kafka-tool.sh.
command -v javac >/dev/null 2>&1 || PKGS+=(openjdk-17-jdk-headless)
command -v mvn  >/dev/null 2>&1 || PKGS+=(maven)
# make test-package (scripts/test-package.sh): dpkg -x of the .deb, systemd-analyze verify of
# its unit (nfpm itself is pinned and built by mk/package.mk with the Go toolchain).
PKGS+=(dpkg)
command -v systemd-analyze >/dev/null 2>&1 || PKGS+=(systemd)

missing=()
for p in "${PKGS[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    echo "install-deps: $p already installed"
  else
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: nothing to do"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-deps: installing: ${missing[*]}"
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/tmp/flexway-install-deps.log 2>&1 || {
  echo "install-deps: apt-get install failed, log tail:" >&2
  tail -n 30 /tmp/flexway-install-deps.log >&2
  exit 1
}

# Debian's redis-server package starts a system redis on 6379 via its init
# script in some environments; flexway tests use their own on 6390
# (scripts/redis-start.sh), so that one is left alone.
for p in "${missing[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || {
    echo "install-deps: $p still not installed" >&2; exit 1; }
  echo "install-deps: installed $p"
done
