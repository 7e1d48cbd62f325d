# SPDX-License-Identifier: GPL-3.0-or-later
# The fleet (src/fleet): the NATS transport, the node agent's core, pfid's
# core and the HTTP API are part of libpfi; its daemons pfi-agent and pfid
# are programs of the top floor (CMakeLists.txt). Needs libnats (NATS C
# client) and libmicrohttpd (loaded at run time).
pkg_check_modules(NATS REQUIRED IMPORTED_TARGET libnats)
pkg_check_modules(MHD REQUIRED IMPORTED_TARGET libmicrohttpd)
file(GLOB PFI_FLEET_SOURCES CONFIGURE_DEPENDS src/fleet/*.c)
target_sources(pfi_obj PRIVATE ${PFI_FLEET_SOURCES})
target_link_libraries(pfi_obj PUBLIC PkgConfig::NATS)
target_link_libraries(pfi_static PUBLIC PkgConfig::NATS)
target_link_libraries(pfi_shared PUBLIC PkgConfig::NATS)
# libmicrohttpd's headers only: the HTTP server loads it on first use
# (src/base/mhd_dl.c), as libcurl is, so that `pfi` starts without it.
target_include_directories(pfi_obj PRIVATE ${MHD_INCLUDE_DIRS})

install(DIRECTORY contrib/slurm/ DESTINATION ${CMAKE_INSTALL_DATADIR}/pfi/slurm
        USE_SOURCE_PERMISSIONS)
# The systemd units (contrib/systemd) are installed with the prefix in place
# of /usr/local: CMakeLists.txt.

if(PFI_TESTS)
  # The fleet tests' probe: publishes or writes keys with given
  # credentials, to show what NATS refuses (tests/fleet/probe.c).
  add_executable(pfi-fleet-probe tests/fleet/probe.c)
  target_link_libraries(pfi-fleet-probe PRIVATE pfi_static)
  file(GLOB PFI_FLEET_TESTS CONFIGURE_DEPENDS tests/fleet/test_*.sh)
  foreach(src ${PFI_FLEET_TESTS})
    get_filename_component(name ${src} NAME_WE)
    add_test(NAME fleet.${name} COMMAND bash ${src}
             WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
    set_tests_properties(fleet.${name} PROPERTIES ENVIRONMENT
      "${PFI_TEST_ENV};PFI_AGENT=$<TARGET_FILE:pfi-agent>;PFID=$<TARGET_FILE:pfid>;PFI_PROBE=$<TARGET_FILE:pfi-fleet-probe>"
      SKIP_RETURN_CODE 77 TIMEOUT 240)
  endforeach()
  # The main flows again over TLS everywhere (tests/fleet/lib.sh
  # FLEET_TLS): an event, a failover of the leader, an agent cut off.
  foreach(name test_fleet_event test_fleet_failover test_fleet_cutoff)
    add_test(NAME fleet.${name}_tls
             COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/fleet/${name}.sh
             WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
    set_tests_properties(fleet.${name}_tls PROPERTIES ENVIRONMENT
      "${PFI_TEST_ENV};FLEET_TLS=1;PFI_AGENT=$<TARGET_FILE:pfi-agent>;PFID=$<TARGET_FILE:pfid>;PFI_PROBE=$<TARGET_FILE:pfi-fleet-probe>"
      SKIP_RETURN_CODE 77 TIMEOUT 240)
  endforeach()
  # Two slurmd in their own namespaces, slurmctld, munged, NATS, pfid and
  # two agents start before the job: about 2 minutes idle, more under ASan.
  if(TEST fleet.test_fleet_slurm_multinode)
    set_tests_properties(fleet.test_fleet_slurm_multinode PROPERTIES TIMEOUT 480)
  endif()
endif()
