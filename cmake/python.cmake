# SPDX-License-Identifier: GPL-3.0-or-later
# The training job's Python package (python/pfi_trainer, standard library
# only; docs/python.md): installed with the rest into the prefix's
# site-packages, as the system's python3 names it there
# (lib/python3.X/dist-packages on Debian, lib/python3.X/site-packages
# elsewhere; PFI_PYTHON_SITEDIR overrides it), and tested with the system's
# python3 (PFI_PYTHON; Debian's python3-torch for the end-to-end tests).
if(EXISTS /usr/bin/python3)
  set(PFI_PYTHON_DEFAULT /usr/bin/python3)
else()
  find_program(PFI_PYTHON_DEFAULT NAMES python3)
endif()
set(PFI_PYTHON "${PFI_PYTHON_DEFAULT}" CACHE FILEPATH
    "python3 that runs the pfi_trainer tests and names its site-packages")
if(PFI_PYTHON)
  execute_process(
    COMMAND ${PFI_PYTHON} -c
      "import sys, sysconfig; print('lib/python%d.%d/%s' % (sys.version_info[0], sys.version_info[1], 'dist-packages' if 'deb_system' in sysconfig.get_scheme_names() else 'site-packages'))"
    OUTPUT_VARIABLE PFI_PYTHON_SITEDIR_DEFAULT OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE pfi_py_rc)
endif()
if(NOT PFI_PYTHON OR NOT pfi_py_rc EQUAL 0)
  set(PFI_PYTHON_SITEDIR_DEFAULT lib/python3/site-packages)
endif()
set(PFI_PYTHON_SITEDIR "${PFI_PYTHON_SITEDIR_DEFAULT}" CACHE STRING
    "where make install puts pfi_trainer, relative to the prefix")
install(DIRECTORY python/pfi_trainer DESTINATION ${PFI_PYTHON_SITEDIR}
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)

if(PFI_TESTS AND PFI_PYTHON)
  # Unit tests (unittest, no torch) and the end-to-end scripts
  # (tests/python/test_*.sh: a real PyTorch loop under pfi sweep and
  # against pfi-agent and pfid; they skip, exit 77, without torch).
  add_test(NAME python.test_unit COMMAND ${PFI_PYTHON} -B tests/python/test_unit.py
           WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
  set_tests_properties(python.test_unit PROPERTIES TIMEOUT 120)
  file(GLOB PFI_PYTHON_TESTS CONFIGURE_DEPENDS tests/python/test_*.sh)
  foreach(src ${PFI_PYTHON_TESTS})
    get_filename_component(name ${src} NAME_WE)
    add_test(NAME python.${name} COMMAND bash ${src}
             WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
    set_tests_properties(python.${name} PROPERTIES ENVIRONMENT
      "${PFI_TEST_ENV};PFI_PYTHON=${PFI_PYTHON};PFI_AGENT=$<TARGET_FILE:pfi-agent>;PFID=$<TARGET_FILE:pfid>;PFI_EMU_STATE=${CMAKE_CURRENT_BINARY_DIR}/emu-state/python.${name}"
      SKIP_RETURN_CODE 77 TIMEOUT 240)
  endforeach()
endif()
