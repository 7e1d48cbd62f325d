# SPDX-License-Identifier: GPL-3.0-or-later
# The grid's browser tests skip (exit status 77) only where chromium or
# nats-server is not installed; scripts/install-deps.sh installs both. The
# whole-event demo runs four emulated agents, pfid and nats-server: alone.
if(PFI_TESTS AND TEST cli.test_grid_browser)
  set_tests_properties(cli.test_grid_browser PROPERTIES SKIP_RETURN_CODE 77)
endif()
if(PFI_TESTS AND TEST cli.test_demo_grid)
  set_tests_properties(cli.test_demo_grid PROPERTIES
    SKIP_RETURN_CODE 77 TIMEOUT 600 RUN_SERIAL TRUE)
endif()
