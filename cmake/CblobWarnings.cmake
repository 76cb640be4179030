# SPDX-License-Identifier: BSD-2-Clause
# Warnings and flags for project code. Third-party and generated-by-others code never uses these.
set(CBLOB_WARNINGS -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
    -Wno-missing-field-initializers)
# Debug info is always kept: the ABI check (abidw/abidiff) reads it.
add_compile_options(-g)

function(cblob_project_target target)
  target_compile_options(${target} PRIVATE ${CBLOB_WARNINGS})
endfunction()
