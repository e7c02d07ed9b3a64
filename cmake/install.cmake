# `cmake --install build --prefix P`: the public header include/segrank/cost_model.h, the static
# libraries the cost model needs, and a CMake package config (P/lib/cmake/segrank) so that
# find_package(segrank) + target_link_libraries(app segrank::segrank) work (docs/tune.md).
include(CMakePackageConfigHelpers)
set(SEGRANK_INSTALL_CMAKEDIR lib/cmake/segrank)
install(FILES ${PROJECT_SOURCE_DIR}/include/segrank/cost_model.h DESTINATION include/segrank)
install(TARGETS segrank_api segrank_trainer segrank_gst segrank_eval segrank_sampling
                segrank_segments segrank_hwmodel segrank_gnn segrank_data segrank_util segrank_core
        EXPORT segrankTargets ARCHIVE DESTINATION lib)
install(EXPORT segrankTargets NAMESPACE segrank:: FILE segrank-targets.cmake
        DESTINATION ${SEGRANK_INSTALL_CMAKEDIR})
# Booleans for the config template (if(ON) / if(OFF)).
set(SEGRANK_WITH_DNNL ${SEGRANK_WITH_DNNL})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/segrank-config.cmake.in
  ${PROJECT_BINARY_DIR}/segrank-config.cmake INSTALL_DESTINATION ${SEGRANK_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/segrank-config-version.cmake
  VERSION 0.1.0 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/segrank-config.cmake
              ${PROJECT_BINARY_DIR}/segrank-config-version.cmake
        DESTINATION ${SEGRANK_INSTALL_CMAKEDIR})
