# package.cmake — the one build rule every package of this repository shares.
#
#   monorepo_package(NAME <name> [NEEDS <package>...] [EXECUTABLE <source>])
#
# builds, from the package's folder:
#   - the static library `mono_<name>` from src/<name>.cpp, public headers in include/<name>/;
#   - the test `<name>_test` from test/<name>_test.cpp, registered with ctest;
#   - with EXECUTABLE, the program `<name>` from that source, linked to the library.
#
# The packages it NEEDS are not built here: they are taken from the shared install prefix
# `<repo>/_install`, where each package installs itself (lib/, include/<name>/, bin/ and
# share/monorepo/<name>.cmake, which records what it needs). So a package configures only after
# what it needs is installed, and says so when it is not. NEEDS lists the direct dependencies,
# as packages.json does; what those need in turn is found through their share/monorepo files.
#
# Each package installs only its own files, so packages that install at the same time never
# write the same path.

include_guard(GLOBAL)

get_filename_component(MONOREPO_ROOT "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)

# `cmake --install build` goes to <repo>/_install unless CMAKE_INSTALL_PREFIX was given; the
# packages a package needs are looked up in the same prefix.
if(CMAKE_INSTALL_PREFIX_INITIALIZED_TO_DEFAULT)
  set(CMAKE_INSTALL_PREFIX "${MONOREPO_ROOT}/_install"
      CACHE PATH "Shared install prefix of the monorepo's packages" FORCE)
endif()
set(MONOREPO_PREFIX "${CMAKE_INSTALL_PREFIX}")

# At the including directory's scope: inside a function it would not enable the tests.
enable_testing()

# Looks for the installed package <dep>: sets <out> to TRUE or FALSE, and when it is found,
# MONOREPO_<dep>_LIBRARY, MONOREPO_<dep>_INCLUDE_DIR and MONOREPO_<dep>_NEEDS_FILE.
# The results are searched again at each configure, so a prefix that was wiped is noticed.
function(_monorepo_locate dep out)
  unset(MONOREPO_${dep}_LIBRARY CACHE)
  unset(MONOREPO_${dep}_INCLUDE_DIR CACHE)
  find_library(MONOREPO_${dep}_LIBRARY NAMES mono_${dep}
               PATHS "${MONOREPO_PREFIX}/lib" NO_DEFAULT_PATH)
  find_path(MONOREPO_${dep}_INCLUDE_DIR NAMES ${dep}/${dep}.h
            PATHS "${MONOREPO_PREFIX}/include" NO_DEFAULT_PATH)
  set(needs_file "${MONOREPO_PREFIX}/share/monorepo/${dep}.cmake")
  if(MONOREPO_${dep}_LIBRARY AND MONOREPO_${dep}_INCLUDE_DIR AND EXISTS "${needs_file}")
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
  set(MONOREPO_${dep}_NEEDS_FILE "${needs_file}" PARENT_SCOPE)
endfunction()

function(_monorepo_missing_message requester dep out)
  set(${out} "package `${requester}` needs `${dep}`, which is not installed in ${MONOREPO_PREFIX}: build `${dep}` first" PARENT_SCOPE)
endfunction()

# Makes the imported target mono::<dep>, and those of what it needs, which it links to: CMake
# then puts dependents before their dependencies on the link line.
function(_monorepo_import requester dep)
  if(TARGET mono::${dep})
    return()
  endif()
  _monorepo_locate(${dep} found)
  if(NOT found)
    _monorepo_missing_message(${requester} ${dep} msg)
    message(FATAL_ERROR "${msg}")
  endif()
  add_library(mono::${dep} STATIC IMPORTED)
  set_target_properties(mono::${dep} PROPERTIES
    IMPORTED_LOCATION "${MONOREPO_${dep}_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${MONOREPO_${dep}_INCLUDE_DIR}")
  set(MONOREPO_PACKAGE_NEEDS "")
  include("${MONOREPO_${dep}_NEEDS_FILE}")   # sets MONOREPO_PACKAGE_NEEDS
  set(sub_needs ${MONOREPO_PACKAGE_NEEDS})
  foreach(sub IN LISTS sub_needs)
    _monorepo_import(${dep} ${sub})
    set_property(TARGET mono::${dep} APPEND PROPERTY INTERFACE_LINK_LIBRARIES mono::${sub})
  endforeach()
endfunction()

function(monorepo_package)
  cmake_parse_arguments(PKG "" "NAME;EXECUTABLE" "NEEDS" ${ARGN})
  if(NOT PKG_NAME)
    message(FATAL_ERROR "monorepo_package: NAME is required")
  endif()
  if(PKG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "monorepo_package(${PKG_NAME}): unknown arguments ${PKG_UNPARSED_ARGUMENTS}")
  endif()
  set(name ${PKG_NAME})

  # What the package needs, all reported at once when missing.
  set(missing "")
  foreach(dep IN LISTS PKG_NEEDS)
    _monorepo_locate(${dep} found)
    if(NOT found)
      _monorepo_missing_message(${name} ${dep} msg)
      list(APPEND missing "${msg}")
    endif()
  endforeach()
  if(missing)
    string(REPLACE ";" "\n" missing "${missing}")
    message(FATAL_ERROR "${missing}")
  endif()
  set(dep_targets "")
  foreach(dep IN LISTS PKG_NEEDS)
    _monorepo_import(${name} ${dep})
    list(APPEND dep_targets mono::${dep})
  endforeach()

  set(warnings "")
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    set(warnings -Wall -Wextra)
  endif()

  add_library(mono_${name} STATIC src/${name}.cpp)
  target_include_directories(mono_${name} PUBLIC "${CMAKE_CURRENT_SOURCE_DIR}/include")
  target_link_libraries(mono_${name} PUBLIC ${dep_targets})
  set(targets mono_${name} ${name}_test)

  add_executable(${name}_test test/${name}_test.cpp)
  target_link_libraries(${name}_test PRIVATE mono_${name})
  add_test(NAME ${name}_test COMMAND ${name}_test)

  if(PKG_EXECUTABLE)
    add_executable(${name} ${PKG_EXECUTABLE})
    target_link_libraries(${name} PRIVATE mono_${name})
    list(APPEND targets ${name})
    install(TARGETS ${name} RUNTIME DESTINATION bin)
  endif()

  foreach(target IN LISTS targets)
    set_target_properties(${target} PROPERTIES
      CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
    target_compile_options(${target} PRIVATE ${warnings})
  endforeach()

  # What the package installs: its library, its headers, and the list of what it needs.
  set(needs_file "${CMAKE_CURRENT_BINARY_DIR}/monorepo/${name}.cmake")
  file(WRITE "${needs_file}" "set(MONOREPO_PACKAGE_NEEDS \"${PKG_NEEDS}\")\n")
  install(TARGETS mono_${name} ARCHIVE DESTINATION lib)
  install(DIRECTORY include/${name} DESTINATION include)
  install(FILES "${needs_file}" DESTINATION share/monorepo)
endfunction()
