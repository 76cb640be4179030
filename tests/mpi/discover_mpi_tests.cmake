# SPDX-License-Identifier: BSD-2-Clause
# Run after an MPI suite is built (tests/mpi/CMakeLists.txt): asks it for its test names (--list,
# which needs no MPI_Init) and writes the CTest file that registers each as <SUITE>_<N>ranks.<name>
# for every rank count N, run as LAUNCHER NUMPROC_FLAG N EXE name. Each test has a TIMEOUT, so a
# hang fails instead of stalling CI, and claims N processors from ctest -j.
execute_process(COMMAND ${EXE} --list OUTPUT_VARIABLE names RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${EXE} --list failed")
endif()
string(REPLACE "\n" ";" names "${names}")
string(REPLACE "|" ";" RANKS "${RANKS}")
string(REPLACE "|" ";" LAUNCHER "${LAUNCHER}")
string(REPLACE "|" ";" ENVIRONMENT "${ENVIRONMENT}")
set(text "")
foreach(name IN LISTS names)
  if(name STREQUAL "")
    continue()
  endif()
  foreach(ranks IN LISTS RANKS)
    set(test "${SUITE}_${ranks}ranks.${name}")
    set(command "")
    foreach(word IN LISTS LAUNCHER)
      if(NOT word STREQUAL "")
        string(APPEND command " [=[${word}]=]")
      endif()
    endforeach()
    string(APPEND text "add_test([=[${test}]=]${command} [=[${NUMPROC_FLAG}]=] ${ranks} [=[${EXE}]=] [=[${name}]=])\n")
    string(APPEND text "set_tests_properties([=[${test}]=] PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60 PROCESSORS ${ranks} "
                       "LABELS [=[mpi;${SUITE}]=] ENVIRONMENT [=[${ENVIRONMENT}]=])\n")
  endforeach()
endforeach()
file(WRITE ${OUT} "${text}")
