# SPDX-License-Identifier: GPL-3.0-or-later
# The report's browser test skips (exit status 77) only where chromium is not
# installed; scripts/install-deps.sh installs it, so CI runs it.
if(PFI_TESTS AND TEST cli.test_report_browser)
  set_tests_properties(cli.test_report_browser PROPERTIES
    SKIP_RETURN_CODE 77 TIMEOUT 600)
endif()

# The report's allocation-failure test links with --wrap for the allocators,
# like test_oom (cmake/oom.cmake).
if(PFI_TESTS AND TARGET test_report_oom)
  foreach(sym malloc calloc realloc strdup strndup gsl_matrix_alloc
              gsl_vector_alloc gsl_rng_alloc gsl_multifit_linear_alloc)
    target_link_options(test_report_oom PRIVATE "LINKER:--wrap=${sym}")
  endforeach()
  target_compile_definitions(test_report_oom PRIVATE PFI_OOM_WRAP=1)
  target_link_libraries(test_report_oom PRIVATE PkgConfig::JANSSON PkgConfig::GSL)
endif()
