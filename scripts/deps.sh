#!/usr/bin/env bash
# Installs everything pppfwd's tests, lints and labs need on a fresh Debian
# machine that has only Go and gcc: network tools for the namespace tests,
# Prometheus (the lab's metrics test), the qemu lab's packages
# (scripts/vmlab-deps.sh) and staticcheck.
# Idempotent; package installs need root (skipped with a note otherwise).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
here=$(cd "$(dirname "$0")" && pwd)

need=()
command -v ip >/dev/null || need+=(iproute2)
command -v nft >/dev/null || need+=(nftables)
command -v ethtool >/dev/null || need+=(ethtool)
command -v ping >/dev/null || need+=(iputils-ping)
# strace counts an idle router's system calls (pppfwd bench idle).
command -v strace >/dev/null || need+=(strace)
# iperf3: the TCP step of pppfwd bench ab (bench/abvm).
command -v iperf3 >/dev/null || need+=(iperf3)
# Prometheus and promtool: the lab scrapes a running router (bench/lab).
command -v prometheus >/dev/null && command -v promtool >/dev/null || need+=(prometheus)
if [ "${#need[@]}" -gt 0 ]; then
	if [ "$(id -u)" = 0 ]; then
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends "${need[@]}"
	else
		echo "deps: not root, not installing ${need[*]} (privileged tests will skip)" >&2
	fi
fi
if [ "$(id -u)" = 0 ]; then
	bash "$here/vmlab-deps.sh"
fi

STATICCHECK_VERSION=${STATICCHECK_VERSION:-v0.8.2}
gobin=$(go env GOPATH)/bin
if ! "$gobin/staticcheck" -version 2>/dev/null | grep -q "${STATICCHECK_VERSION#v}"; then
	go install "honnef.co/go/tools/cmd/staticcheck@${STATICCHECK_VERSION}"
fi
