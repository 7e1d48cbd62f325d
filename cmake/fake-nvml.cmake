# SPDX-License-Identifier: GPL-3.0-or-later
# The fake libnvidia-ml.so.1 the nvml backend is tested against: NVML's entry
# points on top of the emu backend (tests/fake-nvml/fake_nvml.c). Built three
# times: fake-nvml/ with the versioned entry points (_v2, V), fake-nvml-v1/
# with only the original ones, fake-nvml-min/ without the optional ones. Only
# the nvml* and fake_nvml_* symbols are exported, so the copy of libpfi inside
# cannot interpose on the program's own.
if(PFI_TESTS)
  set(PFI_FAKE_NVML_MAP ${CMAKE_CURRENT_BINARY_DIR}/fake-nvml.map)
  file(WRITE ${PFI_FAKE_NVML_MAP}
       "{ global: nvml*; fake_nvml_*; local: *; };\n")
  foreach(variant fake_nvml fake_nvml_v1 fake_nvml_min)
    add_library(${variant} SHARED tests/fake-nvml/fake_nvml.c)
    target_link_libraries(${variant} PRIVATE pfi_static)
    target_link_options(${variant} PRIVATE
      -Wl,--version-script=${PFI_FAKE_NVML_MAP} -Wl,-Bsymbolic)
    if(variant STREQUAL "fake_nvml_v1")
      target_compile_definitions(${variant} PRIVATE FAKE_NVML_V1_ONLY)
      set(dir ${CMAKE_CURRENT_BINARY_DIR}/fake-nvml-v1)
    elseif(variant STREQUAL "fake_nvml_min")
      target_compile_definitions(${variant} PRIVATE FAKE_NVML_MINIMAL)
      set(dir ${CMAKE_CURRENT_BINARY_DIR}/fake-nvml-min)
    else()
      set(dir ${CMAKE_CURRENT_BINARY_DIR}/fake-nvml)
    endif()
    # The driver's runtime name, exactly: libnvidia-ml.so.1.
    set_target_properties(${variant} PROPERTIES
      OUTPUT_NAME nvidia-ml PREFIX lib SUFFIX .so.1 NO_SONAME ON
      LIBRARY_OUTPUT_DIRECTORY ${dir})
  endforeach()
  foreach(t test_nvml test_cap)
    if(TARGET ${t})
      add_dependencies(${t} fake_nvml fake_nvml_v1 fake_nvml_min)
    endif()
  endforeach()
  # The CLI tests run the pfi binary against the fake library.
  add_custom_target(fake_nvml_all ALL DEPENDS fake_nvml fake_nvml_v1
                    fake_nvml_min)
endif()
