# SPDX-License-Identifier: BSD-2-Clause
# Runs the code generator at configure time. Ninja re-runs the configure step whenever a
# template or description changes (CMAKE_CONFIGURE_DEPENDS), before it compiles anything, so
# the generated sources are always current in the same build. The generator rewrites a file
# only when its content changes, so unchanged outputs are not recompiled.
# A wheel build (scikit-build-core under pip) runs in pip's isolated build environment, whose
# sitecustomize hides the system's site-packages from every Python started with its PYTHONPATH,
# /usr/bin/python3 included: the build's own Python, which has jinja2 and PyYAML from
# bindings/python/pyproject.toml's build requirements, is tried first.
if(DEFINED SKBUILD AND DEFINED Python_EXECUTABLE AND NOT DEFINED ENV{CBLOB_PYTHON})
  set(ENV{CBLOB_PYTHON} "${Python_EXECUTABLE}")
endif()
execute_process(
  COMMAND ${CMAKE_SOURCE_DIR}/scripts/find-python.sh
  OUTPUT_VARIABLE CBLOB_PYTHON OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE find_python_result)
if(NOT find_python_result EQUAL 0)
  message(FATAL_ERROR "No python3 with jinja2 and yaml: run scripts/setup.sh")
endif()

file(GLOB_RECURSE CBLOB_CODEGEN_INPUTS CONFIGURE_DEPENDS
  ${CMAKE_SOURCE_DIR}/codegen/*.py ${CMAKE_SOURCE_DIR}/codegen/*.yaml ${CMAKE_SOURCE_DIR}/templates/*
  ${CMAKE_SOURCE_DIR}/docs/cblob.1.md)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CBLOB_CODEGEN_INPUTS})

execute_process(
  COMMAND ${CBLOB_PYTHON} ${CMAKE_SOURCE_DIR}/codegen/generate.py
  RESULT_VARIABLE codegen_result)
if(NOT codegen_result EQUAL 0)
  message(FATAL_ERROR "codegen/generate.py failed")
endif()

set(CBLOB_GENERATED_DIR ${CMAKE_SOURCE_DIR}/generated)

# How every copy of the generated kernels compiles: the library's (src/) and the CUDA driver
# double's, which runs them for its launches (tests/fake_cuda/). The kernels are the hot loops:
# -O3 lets GCC vectorise their reductions. Loops start on 32-byte boundaries: a one-vector loop
# that happened to straddle one ran at half speed on Zen 3 (scale of 1000 floats, 89 ns against
# 55 ns aligned). No fused multiply-adds the source does not write (-ffp-contract=off, GCC's
# default under -std=c11 but not clang's): a clone or variant with FMA would round differently
# from one without, and the sums must give the same bits on every CPU and compiler
# (templates/cpu/ops/_sum.c.j2; the clang sanitizer build's sumsq differed).
set(CBLOB_KERNEL_COMPILE_OPTIONS -O3 -mprefer-vector-width=512 -falign-loops=32 -ffp-contract=off)
