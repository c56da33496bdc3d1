# The installed SDK, as a plugin author and an application writer meet it:
#  1. installs the build into a fresh prefix and checks the layout, the docs and the
#     example plugin in share/doc/phynexus among it;
#  2. builds the installed copy of examples/plugin against it (find_package +
#     phynexus_add_plugin), as docs/plugin-guide.md tells a plugin author to, and checks
#     that the module exports phx_plugin_entry alone;
#  3. runs the installed phx-devices --json with PHX_ADD_PLUGIN_PATH = the plugin's build
#     folder: the CPU device and the "Example device" must both be listed; and the
#     installed phx-conformance on the built plugin file, which must pass;
#  4. builds a consumer with find_package(Phynexus) and another with pkg-config, and runs
#     both: each runs ADD and RELU on the Example device and checks the results;
#  5. installs the example plugin (into the package's plugin folder, the helper's
#     default) and checks that phx-devices then finds it with no environment variable;
#  6. with the Python package built (PYTHON set): imports the installed package from the
#     prefix's site-packages folder and checks that it runs an op there and loads the
#     plugins of the prefix, not those of the build tree.
# Run by ctest as: cmake -D<variable>=... -P install_test.cmake (see CMakeLists.txt).
cmake_minimum_required(VERSION 3.25)

foreach(variable PHX_BUILD_DIR PHX_SOURCE_DIR WORK_DIR LIBDIR GENERATOR BUILD_TYPE C_COMPILER NM
                 PKG_CONFIG)
  if(NOT DEFINED ${variable} OR "${${variable}}" STREQUAL "")
    message(FATAL_ERROR "install_test: ${variable} is not set")
  endif()
endforeach()

set(prefix ${WORK_DIR}/prefix)
set(plugin_build ${WORK_DIR}/plugin-build)
set(consumer_build ${WORK_DIR}/consumer-build)
set(pkgconfig_consumer ${WORK_DIR}/consumer-pkgconfig)
set(phx_devices ${prefix}/bin/phx-devices)
set(doc_dir ${prefix}/share/doc/phynexus)

# Runs a command; stops the test with its output when it fails. The output is left in
# the variable named by OUTPUT_VARIABLE, when given.
function(run_step what)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "OUTPUT_VARIABLE" "COMMAND")
  message(STATUS "install_test: ${what}")
  execute_process(COMMAND ${ARG_COMMAND} RESULT_VARIABLE status
                  OUTPUT_VARIABLE output ERROR_VARIABLE errors)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "install_test: ${what} failed (${status}):\n"
                        "${ARG_COMMAND}\n${output}\n${errors}")
  endif()
  if(ARG_OUTPUT_VARIABLE)
    set(${ARG_OUTPUT_VARIABLE} "${output}" PARENT_SCOPE)
  endif()
endfunction()

# The names of the devices phx-devices --json lists, as "<plugin>/<type>/<name>".
function(listed_devices out_var)
  run_step("phx-devices --json" COMMAND ${phx_devices} --json OUTPUT_VARIABLE json)
  string(JSON count LENGTH "${json}" devices)
  set(devices "")
  if(count GREATER 0)
    math(EXPR last "${count} - 1")
    foreach(i RANGE ${last})
      string(JSON plugin GET "${json}" devices ${i} plugin)
      string(JSON type GET "${json}" devices ${i} type)
      string(JSON name GET "${json}" devices ${i} name)
      list(APPEND devices "${plugin}/${type}/${name}")
    endforeach()
  endif()
  set(${out_var} "${devices}" PARENT_SCOPE)
endfunction()

function(expect_devices when)
  listed_devices(devices)
  foreach(expected "cpu/cpu/" "example/cpu/Example device")
    set(found FALSE)
    foreach(device IN LISTS devices)
      string(FIND "${device}" "${expected}" at)
      if(at EQUAL 0)
        set(found TRUE)
      endif()
    endforeach()
    if(NOT found)
      message(FATAL_ERROR "install_test: ${when}: phx-devices lists no '${expected}...' "
                          "device; it lists: ${devices}")
    endif()
  endforeach()
  message(STATUS "install_test: ${when}: phx-devices lists ${devices}")
endfunction()

# The flags of the main build (the sanitizers' among them), so that what is built here
# can link and load the installed library.
set(configure_flags
  -G ${GENERATOR}
  -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
  -DCMAKE_C_COMPILER=${C_COMPILER}
  "-DCMAKE_C_FLAGS=${C_FLAGS}"
  "-DCMAKE_EXE_LINKER_FLAGS=${EXE_LINKER_FLAGS}"
  "-DCMAKE_MODULE_LINKER_FLAGS=${MODULE_LINKER_FLAGS}"
  -DCMAKE_PREFIX_PATH=${prefix})

# Nothing from the caller's environment may add or hide plugins.
unset(ENV{PHX_PLUGIN_PATH})
unset(ENV{PHX_ADD_PLUGIN_PATH})

# ---- 1. Install ----------------------------------------------------------------------
file(REMOVE_RECURSE ${WORK_DIR})
run_step("install into ${prefix}" COMMAND ${CMAKE_COMMAND} --install ${PHX_BUILD_DIR} --prefix ${prefix})
foreach(file
    bin/phx-devices
    bin/phx-conformance
    bin/phx-plot
    share/phynexus/phx-plot/phx_plot/__init__.py
    ${LIBDIR}/libphynexus.so
    ${LIBDIR}/phynexus/plugins/phx_cpu.so
    ${LIBDIR}/phynexus/plugins/phx_tpu_sim.so
    ${LIBDIR}/phynexus/plugins/phx_npu_sim.so
    include/phynexus/phynexus.h
    include/phynexus/plugin.h
    ${LIBDIR}/cmake/Phynexus/PhynexusConfig.cmake
    ${LIBDIR}/cmake/Phynexus/PhynexusConfigVersion.cmake
    ${LIBDIR}/cmake/Phynexus/PhynexusTargets.cmake
    ${LIBDIR}/cmake/Phynexus/PhynexusPluginHelpers.cmake
    ${LIBDIR}/cmake/Phynexus/plugin.map
    ${LIBDIR}/pkgconfig/phynexus.pc
    share/doc/phynexus/docs/plugin-guide.md
    share/doc/phynexus/docs/ops.md
    share/doc/phynexus/docs/images/gemm.png
    share/doc/phynexus/examples/plugin/CMakeLists.txt
    share/doc/phynexus/examples/plugin/example_plugin.c)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "install_test: the install lacks ${file}")
  endif()
endforeach()

# Every doc and every file of the example plugin, as in the source tree.
file(GLOB docs RELATIVE ${PHX_SOURCE_DIR} ${PHX_SOURCE_DIR}/docs/*.md
     ${PHX_SOURCE_DIR}/examples/plugin/*)
foreach(file IN LISTS docs)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${PHX_SOURCE_DIR}/${file}
                          ${doc_dir}/${file} RESULT_VARIABLE differs)
  if(NOT differs EQUAL 0)
    message(FATAL_ERROR "install_test: ${doc_dir}/${file} is missing or differs from the "
                        "source tree's")
  endif()
endforeach()

# ---- 2. The out-of-tree plugin, from the install alone ---------------------------------
# The installed copy, not the source tree's: what a plugin author who has only the
# package starts from (docs/plugin-guide.md, "Building out of tree").
run_step("configure the installed examples/plugin"
  COMMAND ${CMAKE_COMMAND} -S ${doc_dir}/examples/plugin -B ${plugin_build} ${configure_flags})
run_step("build the installed examples/plugin" COMMAND ${CMAKE_COMMAND} --build ${plugin_build})
run_step("list the plugin's symbols"
  COMMAND ${NM} -D --defined-only ${plugin_build}/phx_example.so OUTPUT_VARIABLE symbols)
string(REGEX MATCHALL "[^\n]+" symbol_lines "${symbols}")
foreach(line IN LISTS symbol_lines)
  # Lines are "<address> <kind> <name>"; the linker's version node ("A") is no symbol.
  if(NOT line MATCHES " A " AND NOT line MATCHES " phx_plugin_entry$")
    message(FATAL_ERROR "install_test: phx_example.so exports more than its entry: ${line}")
  endif()
endforeach()

# ---- 3. phx-devices finds both devices -----------------------------------------------
set(ENV{PHX_ADD_PLUGIN_PATH} ${plugin_build})
expect_devices("with PHX_ADD_PLUGIN_PATH")
# The guide's conformance command, from the install alone.
run_step("phx-conformance on the example plugin"
  COMMAND ${prefix}/bin/phx-conformance --plugin ${plugin_build}/phx_example.so
  OUTPUT_VARIABLE conformance)
if(NOT conformance MATCHES "\nphx-conformance: passed\n")
  message(FATAL_ERROR "install_test: phx-conformance did not pass the example plugin:\n"
                      "${conformance}")
endif()

# ---- 4. Consumers ----------------------------------------------------------------------
run_step("configure the find_package consumer"
  COMMAND ${CMAKE_COMMAND} -S ${CMAKE_CURRENT_LIST_DIR}/consumer -B ${consumer_build}
          ${configure_flags})
run_step("build the find_package consumer" COMMAND ${CMAKE_COMMAND} --build ${consumer_build})
run_step("run the find_package consumer" COMMAND ${consumer_build}/consumer)

set(ENV{PKG_CONFIG_PATH} ${prefix}/${LIBDIR}/pkgconfig)
run_step("pkg-config phynexus" COMMAND ${PKG_CONFIG} --cflags --libs phynexus
         OUTPUT_VARIABLE pkg_flags)
run_step("pkg-config plugindir" COMMAND ${PKG_CONFIG} --variable=plugindir phynexus
         OUTPUT_VARIABLE plugindir)
run_step("pkg-config libdir" COMMAND ${PKG_CONFIG} --variable=libdir phynexus
         OUTPUT_VARIABLE pkg_libdir)
string(STRIP "${plugindir}" plugindir)
string(STRIP "${pkg_libdir}" pkg_libdir)
if(NOT EXISTS ${plugindir}/phx_cpu.so)
  message(FATAL_ERROR "install_test: pkg-config's plugindir '${plugindir}' lacks phx_cpu.so")
endif()
separate_arguments(pkg_flags UNIX_COMMAND "${pkg_flags}")
separate_arguments(c_flags UNIX_COMMAND "${C_FLAGS} ${EXE_LINKER_FLAGS}")
run_step("build the pkg-config consumer"
  COMMAND ${C_COMPILER} -std=c99 -Wall -Wextra -Werror ${c_flags}
          ${CMAKE_CURRENT_LIST_DIR}/consumer/consumer.c -o ${pkgconfig_consumer}
          ${pkg_flags} -Wl,-rpath,${pkg_libdir})
run_step("run the pkg-config consumer" COMMAND ${pkgconfig_consumer})

# ---- 5. The plugin installed beside the library ---------------------------------------
run_step("install the example plugin" COMMAND ${CMAKE_COMMAND} --install ${plugin_build})
if(NOT EXISTS ${prefix}/${LIBDIR}/phynexus/plugins/phx_example.so)
  message(FATAL_ERROR "install_test: the example plugin was not installed into the "
                      "package's plugin folder")
endif()
unset(ENV{PHX_ADD_PLUGIN_PATH})
expect_devices("installed into the package")

# ---- 6. The Python package -------------------------------------------------------------
if(PYTHON)
  set(ENV{PYTHONPATH} ${prefix}/${PYTHON_INSTALL_DIR})
  run_step("import the installed phynexus package"
    COMMAND ${PYTHON} -c "import phynexus, numpy as np
assert phynexus.__file__.startswith('${prefix}/'), phynexus.__file__
paths = [p['path'] for p in phynexus.default_context().plugins() if p['state'] == 'loaded']
assert paths and all(p.startswith('${prefix}/') for p in paths), paths
x = phynexus.tensor(np.array([1.0, -2.0], np.float32))
assert phynexus.relu(x).numpy().tolist() == [1.0, 0.0]")
  unset(ENV{PYTHONPATH})
endif()

message(STATUS "install_test: passed")
