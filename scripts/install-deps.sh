#!/usr/bin/env bash
# Installs the Debian packages NetResilience needs, refreshing the package lists first.
#   scripts/install-deps.sh run    what `netres watch` needs (libnl-3, pkg-config)
#   scripts/install-deps.sh test   plus what the test suites drive for real: iproute2 (namespaces,
#                                  veth, ifb, tbf), nftables (NetworkLab loss, partitions, NAT), conntrack (NAT faults),
#                                  Kamailio with presence and TLS modules, sipp, tcpdump,
#                                  openssl (test certificates), util-linux (setpriv: a second user),
#                                  baresip (the real phone of PhoneCallTests, the peer client of
#                                  `netres-bench sip-recovery` and `calls`), rtpengine's daemon and
#                                  its rtpengine-ctl (the media relay of RelayCallFaultTests; user
#                                  space only, no kernel module), linphone-cli (linphonec, the
#                                  second real phone of LinphoneCallTests)
#   scripts/install-deps.sh install  what `make install` needs: the run packages plus man-db (`man netres`)
#   scripts/install-deps.sh pjsua2   PJSIP's Python binding (PyPI pjsua2-python, a manylinux wheel for
#                                  CPython 3.11) in the virtual environment .build/pjsua2-venv, for the
#                                  PJSIP adapter's tests and `netres-bench pjsip` (python3-venv first)
# Packages already installed are left alone; nothing is fetched when everything is present.
set -euo pipefail

if [ "${1:-}" = pjsua2 ]; then
    venv="${PJSUA2_VENV:-$(cd "$(dirname "$0")/.." && pwd)/.build/pjsua2-venv}"
    if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import pjsua2' 2>/dev/null; then exit 0; fi
    "$0" venv
    rm -rf "$venv"
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check pjsua2-python==2.15.1.post1
    "$venv/bin/python" -c 'import pjsua2'
    exit 0
fi

run_packages=(libnl-3-dev libnl-route-3-dev pkg-config)
test_packages=(iproute2 kmod nftables kamailio kamailio-presence-modules kamailio-utils-modules kamailio-tls-modules
    sip-tester tcpdump procps systemd baresip-core openssl util-linux rtpengine-daemon rtpengine-utils dnsmasq-base
    conntrack linphone-cli python3-venv)

case "${1:-test}" in
    run) wanted=("${run_packages[@]}") ;;
    test) wanted=("${run_packages[@]}" "${test_packages[@]}") ;;
    install) wanted=("${run_packages[@]}" man-db) ;;
    venv) wanted=(python3-venv) ;;
    *) echo "usage: $0 run|test|install|pjsua2" >&2; exit 2 ;;
esac

missing=()
for pkg in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
# The Kamailio package would start a system-wide server; tests start their own.
if [ ! -e /usr/sbin/policy-rc.d ]; then
    echo exit 101 | "${sudo[@]}" tee /usr/sbin/policy-rc.d >/dev/null
    "${sudo[@]}" chmod +x /usr/sbin/policy-rc.d
    trap '"${sudo[@]}" rm -f /usr/sbin/policy-rc.d' EXIT
fi
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
