# SPDX-License-Identifier: GPL-3.0-or-later
# Allocation-failure test (tests/unit/test_oom.c): the program is linked with
# --wrap for the C allocators and the GSL allocators the library calls, so
# that every call from libpfi's static objects goes through the test's
# __wrap_* functions, which fail the Nth call when armed. --wrap rewrites
# only references resolved at this link (the test and the static library),
# not calls inside shared libraries or the sanitizer runtime, so it works the
# same in the AddressSanitizer build: __real_malloc is then ASan's malloc.
if(PFI_TESTS AND TARGET test_oom)
  set(PFI_OOM_WRAPPED malloc calloc realloc strdup strndup
      gsl_matrix_alloc gsl_vector_alloc gsl_rng_alloc
      gsl_multifit_linear_alloc)
  foreach(sym ${PFI_OOM_WRAPPED})
    target_link_options(test_oom PRIVATE "LINKER:--wrap=${sym}")
  endforeach()
  target_compile_definitions(test_oom PRIVATE PFI_OOM_WRAP=1)
  target_link_libraries(test_oom PRIVATE PkgConfig::JANSSON PkgConfig::GSL)
endif()
