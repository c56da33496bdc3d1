# Install rules and the package files: `cmake --install <build> --prefix P` lays out
#   P/bin/phx-devices                           (installed by tools/phx-devices)
#   P/bin/phx-plot, P/share/phynexus/phx-plot/  (installed by tools/phx-plot)
#   P/lib/libphynexus.so*                       (+ P/lib/phynexus/plugins/*.so, installed
#                                                 by phx_add_plugin; libphynexus_onnx and
#                                                 libphynexus_mpi where built, installed by
#                                                 core/onnx and core/comm/mpi)
#   P/include/phynexus/*.h, CHANGELOG-*.md
#   P/lib/cmake/Phynexus/                       (find_package(Phynexus))
#   P/lib/pkgconfig/phynexus.pc                 (pkg-config phynexus)
#   P/share/doc/phynexus/docs/*.md              (the documentation, and its images/*.png)
#   P/share/doc/phynexus/examples/plugin/       (the example plugin, built from there)
# Included last by the top-level CMakeLists.txt, so every target named here exists.

include(CMakePackageConfigHelpers)

set(PHX_CMAKE_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Phynexus)
# The generated package files, apart from the rest of the build tree.
set(phx_package_build_dir ${PROJECT_BINARY_DIR}/package)

# Consumers see the targets as Phynexus::phynexus and Phynexus::headers.
set_target_properties(phynexus_headers PROPERTIES EXPORT_NAME headers)

install(TARGETS phynexus phynexus_headers
  EXPORT PhynexusTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          COMPONENT runtime
          NAMELINK_COMPONENT development)

# The plugin folder exists even before any plugin is installed into it: out-of-tree
# plugins install there (Phynexus_PLUGIN_DIR, pkg-config's plugindir).
install(DIRECTORY DESTINATION ${PHX_PLUGIN_INSTALL_DIR} COMPONENT runtime)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/phynexus
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  COMPONENT development
  FILES_MATCHING PATTERN "*.h" PATTERN "CHANGELOG-*.md")

# The installed programs (phx-devices, phx-conformance, phx-run-onnx) link libphynexus: they find it
# relative to their own file, so that the prefix can be moved and no LD_LIBRARY_PATH is
# needed.
file(RELATIVE_PATH phx_bin_to_lib ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
foreach(program phx-devices phx-conformance phx-run-onnx)
  if(TARGET ${program})
    set_target_properties(${program} PROPERTIES INSTALL_RPATH "$ORIGIN/${phx_bin_to_lib}")
  endif()
endforeach()

# ---- CMake package -----------------------------------------------------------------
install(EXPORT PhynexusTargets
  NAMESPACE Phynexus::
  DESTINATION ${PHX_CMAKE_PACKAGE_DIR}
  COMPONENT development)

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/PhynexusConfig.cmake.in
  ${phx_package_build_dir}/PhynexusConfig.cmake
  INSTALL_DESTINATION ${PHX_CMAKE_PACKAGE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR PHX_PLUGIN_INSTALL_DIR)

# SameMajorVersion: the version is the API version, and phynexus.h promises that a
# minor only appends, also while the major is 0 (the library's SONAME, libphynexus.so.0,
# makes the same promise). So 0.3 satisfies find_package(Phynexus 0.1), and 1.x does not.
write_basic_package_version_file(
  ${phx_package_build_dir}/PhynexusConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)

install(FILES
  ${phx_package_build_dir}/PhynexusConfig.cmake
  ${phx_package_build_dir}/PhynexusConfigVersion.cmake
  ${CMAKE_CURRENT_LIST_DIR}/PhynexusPluginHelpers.cmake
  # The version script of every plugin; the helpers link plugins with it.
  ${CMAKE_CURRENT_LIST_DIR}/plugin.map
  DESTINATION ${PHX_CMAKE_PACKAGE_DIR}
  COMPONENT development)

# ---- pkg-config --------------------------------------------------------------------
# The .pc file finds the prefix from its own folder (${pcfiledir}), so it stays right
# whatever --prefix the install is given and wherever the prefix is moved.
file(RELATIVE_PATH phx_pkgconfig_to_prefix
  ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
configure_file(${CMAKE_CURRENT_LIST_DIR}/phynexus.pc.in ${phx_package_build_dir}/phynexus.pc @ONLY)
install(FILES ${phx_package_build_dir}/phynexus.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
  COMPONENT development)

# ---- Documentation -----------------------------------------------------------------
# The docs and the example plugin, laid out as in the source tree so that the docs'
# references (docs/loader.md, examples/plugin/) hold from share/doc/phynexus: a plugin
# author needs nothing but the install to follow docs/plugin-guide.md.
set(PHX_DOC_INSTALL_DIR ${CMAKE_INSTALL_DATAROOTDIR}/doc/phynexus)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs
  DESTINATION ${PHX_DOC_INSTALL_DIR}
  COMPONENT development
  FILES_MATCHING PATTERN "*.md" PATTERN "*.png")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/plugin
  DESTINATION ${PHX_DOC_INSTALL_DIR}/examples
  COMPONENT development)
