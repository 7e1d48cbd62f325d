# SPDX-License-Identifier: GPL-3.0-or-later
# The report's browser test skips (exit status 77) only where chromium is not
# installed; scripts/install-deps.sh installs it, so CI runs it.
if(PFI_TESTS AND TEST cli.test_report_browser)
  set_tests_properties(cli.test_report_browser PROPERTIES
    SKIP_RETURN_CODE 77 TIMEOUT 600)
endif()
