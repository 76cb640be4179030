#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Runs a test command as the unprivileged user nobody (uid and gid 65534, no supplementary groups,
# no capabilities), for suites that must hold for root and for an ordinary user alike. Skips (exit
# 77, with the reason) where that is not possible.
if [ "$(id -u)" != 0 ]; then
    echo "SKIPPED: the tests already run unprivileged (uid $(id -u)); this twin is for runs as root"
    exit 77
fi
if ! command -v setpriv >/dev/null 2>&1; then
    echo "SKIPPED: setpriv (util-linux) is not installed"
    exit 77
fi
as_nobody="setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --"
if ! $as_nobody test -x "$1"; then
    echo "SKIPPED: nobody cannot run $1 (a folder on its path is private)"
    exit 77
fi
if ! $as_nobody sh -c 'folder=$(mktemp -d) && rmdir "$folder"'; then
    echo "SKIPPED: nobody cannot make a folder in ${TMPDIR:-/tmp}"
    exit 77
fi
exec $as_nobody "$@"
