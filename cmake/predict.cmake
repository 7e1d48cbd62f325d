# SPDX-License-Identifier: GPL-3.0-or-later
# The oracle's test checks it against an independent solver, GLPK (LP for
# concave curves, MILP otherwise), through GLPK's C API.
if(PFI_TESTS AND TARGET test_oracle)
  find_library(GLPK_LIB glpk REQUIRED)
  target_link_libraries(test_oracle PRIVATE ${GLPK_LIB})
endif()
