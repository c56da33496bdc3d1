# phx_add_plugin(<name> SOURCES ... [OUTPUT_DIRECTORY dir] [NO_INSTALL])
# Builds a device plugin: a shared library named phx_<name>.so that exports only its
# entry symbol, placed in the plugin folder beside libphynexus (or OUTPUT_DIRECTORY,
# for the test plugins that must stay out of the default search path).
function(phx_add_plugin name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "NO_INSTALL" "OUTPUT_DIRECTORY" "SOURCES")
  set(target phx_plugin_${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  if(NOT ARG_OUTPUT_DIRECTORY)
    set(ARG_OUTPUT_DIRECTORY ${PHX_PLUGIN_OUTPUT_DIRECTORY})
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX "" OUTPUT_NAME "phx_${name}"
    LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  target_link_libraries(${target} PRIVATE phynexus_headers)
  target_link_options(${target} PRIVATE
    "LINKER:--version-script=${PROJECT_SOURCE_DIR}/cmake/plugin.map" "LINKER:--no-undefined")
  if(NOT ARG_NO_INSTALL)
    install(TARGETS ${target} LIBRARY DESTINATION ${PHX_PLUGIN_INSTALL_DIR} COMPONENT runtime)
  endif()
endfunction()
