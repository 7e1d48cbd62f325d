# SPDX-License-Identifier: GPL-3.0-or-later
# The Debian package's test (tests/cli/test_deb.sh) builds pfi once more,
# through dpkg-buildpackage, and runs a small campaign with the package's
# pfi: minutes on two cores. It skips where debhelper is missing.
if(PFI_TESTS AND TEST cli.test_deb)
  set_tests_properties(cli.test_deb PROPERTIES
    SKIP_RETURN_CODE 77 TIMEOUT 600)
endif()
