#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Prints the path of a Python 3 that can import jinja2 and yaml (the code generator's needs).
# The first python3 on PATH may be a pyenv shim without them, so try the system one too.
for py in "${CBLOB_PYTHON:-}" /usr/bin/python3 $(command -v -a python3 2>/dev/null); do
  [ -n "$py" ] && [ -x "$py" ] || continue
  if "$py" -c 'import jinja2, yaml' >/dev/null 2>&1; then
    echo "$py"
    exit 0
  fi
done
echo "find-python: no python3 with jinja2 and yaml; run scripts/setup.sh" >&2
exit 1
