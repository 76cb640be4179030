# SPDX-License-Identifier: BSD-2-Clause
# Embeds files in the library at build time: writes each file's bytes as a NUL-terminated
# `static const char <name>_source[]` (<name>: the file's name without its extension) into OUTPUT,
# which a source of the library includes. The CUDA kernel families' programs are committed once,
# as generated/cuda/<name>.cu (the code generator's output, which codegen.fresh checks), and
# generated/cuda/families.c includes their bytes from here, so the two can never differ.
#
#   cmake -DOUTPUT=<file> -DINPUTS=<file;file;...> -P cmake/CblobEmbed.cmake
if(NOT OUTPUT OR NOT INPUTS)
  message(FATAL_ERROR "usage: cmake -DOUTPUT=<file> -DINPUTS=<file;...> -P CblobEmbed.cmake")
endif()
set(text "/* Written by cmake/CblobEmbed.cmake at build time: do not edit. */\n")
foreach(input IN LISTS INPUTS)
  get_filename_component(name "${input}" NAME_WE)
  file(READ "${input}" bytes HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${bytes}")
  # Sixteen bytes a line, so that no line is as long as the file.
  string(REPEAT "0x[0-9a-f][0-9a-f]," 16 line)
  string(REGEX REPLACE "(${line})" "\\1\n    " bytes "${bytes}")
  string(APPEND text "\n/* ${input} */\nstatic const char ${name}_source[] = {\n    ${bytes}0x00\n};\n")
endforeach()
# Written only when it changes, so that an unchanged program compiles nothing again.
set(previous "")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" previous)
endif()
if(NOT previous STREQUAL text)
  file(WRITE "${OUTPUT}.tmp" "${text}")
  file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
endif()
