# SPDX-License-Identifier: GPL-3.0-or-later
# The test trainer the sweep tests run as a job (tests/trainer/trainer.c):
# it reports emulated throughput for its cap through the JSONL protocol.
if(PFI_TESTS)
  add_executable(pfi-test-trainer tests/trainer/trainer.c)
  target_link_libraries(pfi-test-trainer PRIVATE pfi_static)
endif()
