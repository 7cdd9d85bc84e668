#!/usr/bin/env bash
# Install the aligners that benchmarks/accuracy.py compares torchmsa with:
# MAFFT, Clustal Omega, Kalign 3, MUSCLE 5 (Debian/Ubuntu packages) and FAMSA (pyfamsa, pip).
#
#   benchmarks/setup_peers.sh                 install with apt-get (as root or via sudo) and pip
#   benchmarks/setup_peers.sh download [DIR]  fetch the .deb files and the pyfamsa wheels into
#                                             DIR (default .debs) on a machine with network
#   benchmarks/setup_peers.sh extract [DIR]   on a machine without network or root: unpack
#                                             DIR/*.deb into DIR/root and pip-install the wheels
#                                             found in DIR; benchmarks/peers.py looks there
#                                             (TORCHMSA_PEERS_ROOT, default .debs/root)
#
# Every form ends by printing the version of each peer (python -m benchmarks.peers).
# PYTHON selects the interpreter whose pip installs pyfamsa (default: python3).
set -euo pipefail

cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
DEBS="mafft clustalo kalign muscle"
LIBS="libargtable2-0"  # clustalo's one dependency that is not part of a base system

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        echo "error: need root (or sudo) for apt-get; use 'download' and 'extract' instead" >&2
        exit 1
    fi
}

check_muscle() {
    # Debian 12+ / Ubuntu 24.04+ package MUSCLE 5; older releases ship 3.8, whose command
    # line (-in/-out) the harness does not speak.
    local muscle
    muscle=$(command -v muscle || echo "${TORCHMSA_PEERS_ROOT:-.debs/root}/usr/bin/muscle")
    if [ -x "$muscle" ] && ! "$muscle" -version 2>&1 | grep -q "muscle 5"; then
        echo "warning: $muscle is not MUSCLE 5; install MUSCLE 5 for the 'muscle' peer" >&2
    fi
}

report() {
    check_muscle
    "$PYTHON" -m benchmarks.peers
}

mode=${1:-install}
dir=${2:-.debs}
case "$mode" in
    install)
        as_root apt-get update -qq
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $DEBS
        "$PYTHON" -m pip install -q pyfamsa
        report
        ;;
    download)
        mkdir -p "$dir"
        (cd "$dir" && apt-get download $DEBS $LIBS)
        "$PYTHON" -m pip download -q --only-binary=:all: -d "$dir" pyfamsa
        ls -l "$dir"
        ;;
    extract)
        shopt -s nullglob
        debs=("$dir"/*.deb)
        if [ ${#debs[@]} = 0 ]; then
            echo "error: no .deb files in $dir; run '$0 download $dir' where there is network" >&2
            exit 1
        fi
        mkdir -p "$dir/root"
        for deb in "${debs[@]}"; do dpkg -x "$deb" "$dir/root"; done
        wheels=("$dir"/*.whl)
        if [ ${#wheels[@]} -gt 0 ]; then
            "$PYTHON" -m pip install -q --no-index --find-links "$dir" pyfamsa
        fi
        export TORCHMSA_PEERS_ROOT
        TORCHMSA_PEERS_ROOT=$(cd "$dir/root" && pwd)
        echo "unpacked into $TORCHMSA_PEERS_ROOT"
        report
        ;;
    *)
        echo "usage: $0 [install | download [DIR] | extract [DIR]]" >&2
        exit 2
        ;;
esac
