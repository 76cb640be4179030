# SPDX-License-Identifier: BSD-2-Clause
# Run by cpack once the files of a package are staged, before it is made (CPACK_PRE_BUILD_SCRIPTS).
# The program's run path ($ORIGIN/../lib, tools/CMakeLists.txt) lets an install into any prefix run
# without LD_LIBRARY_PATH; a Debian package installs into /usr, where the loader finds the library,
# and Debian's policy wants no run path there (lintian: custom-library-search-path).
if(NOT CPACK_GENERATOR STREQUAL "DEB")
  return()
endif()
file(GLOB_RECURSE staged LIST_DIRECTORIES false "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/cblob")
foreach(program IN LISTS staged)
  if(program MATCHES "/bin/cblob$")
    file(RPATH_REMOVE FILE "${program}")
  endif()
endforeach()
