# Shipped with the Phynexus package for plugin authors who build out of tree:
#
#   find_package(Phynexus 0.1 REQUIRED)
#   phynexus_add_plugin(<name> SOURCES <files>... [DESTINATION <dir>] [NO_INSTALL])
#
# builds the target phx_plugin_<name>: a loadable module named phx_<name>.so that
# - compiles against the Phynexus headers and does not link libphynexus (the host hands
#   the plugin its services at run time, through phx_plugin_entry);
# - exports phx_plugin_entry and nothing else (hidden visibility and a version script),
#   so that two plugins never clash over a symbol;
# - fails to link if a symbol is left undefined, instead of failing at dlopen.
# It installs the module into DESTINATION: by default Phynexus_PLUGIN_DIR, the plugin
# folder of the Phynexus package it was built against, where the loader finds it with
# no environment variable. Give a relative DESTINATION (e.g.
# ${CMAKE_INSTALL_LIBDIR}/phynexus/plugins) to install under your own prefix instead,
# and point PHX_ADD_PLUGIN_PATH there.

function(phynexus_add_plugin name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "NO_INSTALL" "DESTINATION" "SOURCES")
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "phynexus_add_plugin(${name}): no SOURCES")
  endif()
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "phynexus_add_plugin(${name}): unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()

  if(NOT TARGET Phynexus::headers)
    message(FATAL_ERROR "phynexus_add_plugin(${name}): call find_package(Phynexus) in this "
                        "directory or a parent first")
  endif()

  set(target phx_plugin_${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES
    PREFIX "" OUTPUT_NAME "phx_${name}" SUFFIX ".so"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LINK_DEPENDS ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/plugin.map)
  target_link_libraries(${target} PRIVATE Phynexus::headers)
  target_link_options(${target} PRIVATE
    "LINKER:--version-script=${CMAKE_CURRENT_FUNCTION_LIST_DIR}/plugin.map"
    "LINKER:--no-undefined")

  if(NOT ARG_NO_INSTALL)
    if(NOT ARG_DESTINATION)
      set(ARG_DESTINATION ${Phynexus_PLUGIN_DIR})
    endif()
    install(TARGETS ${target} LIBRARY DESTINATION ${ARG_DESTINATION})
  endif()
endfunction()
