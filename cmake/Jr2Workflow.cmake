# jr2_add_workflow(<target> SOURCES a.jr2 … [HOST host.cpp …] [IMPORT_DIRS dir …] [FLAGS flag …]
#                  [NO_RUNNERS] [NO_PRECOMPILED_HEADER])
#
# In the shape of protobuf_generate: one custom command per `.jr2` source, with exact OUTPUTs
# (`<name>.jr2.h` and `<name>.jr2.cpp` under ${CMAKE_CURRENT_BINARY_DIR}/jr2gen/<target>) and a
# DEPFILE that jr2c writes, so a change to a file a source imports rebuilds it. It makes:
#   - <target>: a static library of the generated code and the HOST sources (your `extern`
#     functions), linked to the jr2 runtime;
#   - one runner executable per `workflow` the sources declare, named after the workflow.
# The files the sources import (and what those import) are found at configure time and compiled
# too, once each, whether or not SOURCES lists them: their generated headers are what the
# importers' code includes.
# FLAGS go to `jr2c compile` (for example --Werror). IMPORT_DIRS are added to the dependencies
# scanned at configure time. NO_RUNNERS makes the library only (for a second use of the same
# sources, whose runners would clash).
# The generated sources of <target> share a precompiled header of jr2/runtime.h and the standard
# headers the generated code includes (target_precompile_headers): a third of a generated
# source's build is those headers, paid once per <target> instead of once per source, so a
# changed .jr2 rebuilds in two thirds of the time. Making the header costs about as much as
# three sources' headers, once per <target> and build tree (docs/architecture.md). The HOST
# sources are built as written, without it. NO_PRECOMPILED_HEADER, or JR2_PRECOMPILED_HEADER
# set OFF for the whole project (for a compiler cache that does not take precompiled headers),
# builds every source on its own.
#
# Needs: JR2C_EXECUTABLE (the jr2c to run) and the target jr2c::runtime; the package config and
# the source tree both set them.

# Where Jr2Pictures.cmake is (beside this file, in the source tree and where it is installed), and
# Graphviz's `dot`, which lays out the web console's pictures: without it a runner still builds,
# and its console says it has no picture.
set(_JR2_PICTURES_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/Jr2Pictures.cmake)
set(_JR2_BYTES_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/Jr2Bytes.cmake)
find_program(JR2_DOT_EXECUTABLE dot)
option(JR2_PRECOMPILED_HEADER "jr2_add_workflow: build each target's generated sources with a precompiled header of the jr2 runtime" ON)
if(NOT JR2_DOT_EXECUTABLE)
  message(STATUS "jr2c: Graphviz's `dot` was not found: runners are built without the web console's pictures (apt install graphviz)")
endif()

# The absolute paths of `files` and of every file they import, transitively, in first-seen order.
# An import is `import "PATH"` at the start of a line, PATH relative to the importing file (as
# jr2c resolves it). A file that does not exist is left for jr2c to report (E0102).
function(_jr2_with_imports out_var)
  set(result)
  set(queue ${ARGN})
  while(queue)
    list(POP_FRONT queue file)
    if(file IN_LIST result)
      continue()
    endif()
    list(APPEND result ${file})
    if(NOT EXISTS ${file})
      continue()
    endif()
    get_filename_component(dir ${file} DIRECTORY)
    file(STRINGS ${file} lines REGEX "^[ \t]*import[ \t]+\"[^\"]+\"")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[ \t]*import[ \t]+\"([^\"]+)\".*" "\\1" imported "${line}")
      get_filename_component(imported ${imported} ABSOLUTE BASE_DIR ${dir})
      list(APPEND queue ${imported})
    endforeach()
  endwhile()
  set(${out_var} ${result} PARENT_SCOPE)
endfunction()

function(jr2_add_workflow target)
  cmake_parse_arguments(ARG "NO_RUNNERS;NO_PRECOMPILED_HEADER" "" "SOURCES;HOST;IMPORT_DIRS;FLAGS" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "jr2_add_workflow(${target}): give at least one .jr2 file in SOURCES")
  endif()
  if(NOT JR2C_EXECUTABLE)
    message(FATAL_ERROR "jr2_add_workflow(${target}): JR2C_EXECUTABLE is not set; use find_package(jr2c)")
  endif()
  set(listed)
  foreach(src IN LISTS ARG_SOURCES)
    get_filename_component(abs ${src} ABSOLUTE)
    list(APPEND listed ${abs})
  endforeach()
  _jr2_with_imports(all_sources ${listed})
  # Generated files are named after the source's file name: two of one name would overwrite.
  set(seen_names)
  foreach(abs IN LISTS all_sources)
    get_filename_component(name ${abs} NAME)
    if(name IN_LIST seen_names)
      message(FATAL_ERROR "jr2_add_workflow(${target}): two sources are named `${name}` (${abs} and another); their generated ${name}.h would clash: rename one")
    endif()
    list(APPEND seen_names ${name})
  endforeach()
  set(ARG_SOURCES ${all_sources})
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/jr2gen/${target})
  file(MAKE_DIRECTORY ${out_dir})
  set(generated)
  set(workflows)
  set(stems)
  foreach(src IN LISTS ARG_SOURCES)
    get_filename_component(abs ${src} ABSOLUTE)
    get_filename_component(name ${src} NAME)
    get_filename_component(stem ${src} NAME_WE)
    set(header ${out_dir}/${name}.h)
    set(source ${out_dir}/${name}.cpp)
    set(depfile ${out_dir}/${name}.d)
    set(tool_dep)
    if(TARGET jr2c)
      set(tool_dep jr2c)
    endif()
    add_custom_command(
      OUTPUT ${header} ${source}
      COMMAND ${JR2C_EXECUTABLE} compile ${abs} -o ${out_dir} --depfile ${depfile} ${ARG_FLAGS}
      DEPENDS ${abs} ${tool_dep}
      DEPFILE ${depfile}
      COMMENT "jr2c: compiling ${name}"
      VERBATIM)
    # The pictures of its workflows (Jr2Pictures.cmake), laid out by Graphviz now, so that the
    # runner carries them: drawn again when the file or one it imports changes, not when
    # another source of the target does.
    set(pictures ${out_dir}/${name}.pictures.cpp)
    _jr2_with_imports(drawn_from ${abs})
    add_custom_command(
      OUTPUT ${pictures}
      COMMAND ${CMAKE_COMMAND} -DJR2C=${JR2C_EXECUTABLE} -DDOT=${JR2_DOT_EXECUTABLE}
              -DSRC=${abs} -DDIR=${out_dir}/${name}.pictures -DOUT=${pictures} -DSTEM=${stem}
              -P ${_JR2_PICTURES_SCRIPT}
      DEPENDS ${drawn_from} ${tool_dep} ${_JR2_PICTURES_SCRIPT} ${_JR2_BYTES_SCRIPT}
      COMMENT "jr2c: drawing the workflows of ${name}"
      VERBATIM)
    list(APPEND generated ${source} ${header} ${pictures})
    list(APPEND stems ${stem})
    # The workflows a file declares, read at configure time (jr2c may not be built yet). A
    # change to the file reconfigures, so a new workflow gets its runner.
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${abs})
    file(STRINGS ${abs} lines REGEX "^[ \t]*workflow[ \t]+[A-Za-z_][A-Za-z0-9_]*")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[ \t]*workflow[ \t]+([A-Za-z_][A-Za-z0-9_]*).*" "\\1" wf "${line}")
      list(APPEND workflows "${wf}|${stem}|${name}")
    endforeach()
  endforeach()

  add_library(${target} STATIC ${generated} ${ARG_HOST})
  target_include_directories(${target} PUBLIC ${out_dir})
  target_link_libraries(${target} PUBLIC jr2c::runtime)
  target_compile_features(${target} PUBLIC cxx_std_17)
  # Generated code is held to the same bar as ours.
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror)
  if(JR2_PRECOMPILED_HEADER AND NOT ARG_NO_PRECOMPILED_HEADER)
    # What every generated .jr2.cpp includes first (its header's includes); the pictures'
    # sources include less and load the same header, which costs them a tenth of what it saves
    # the others. Not the HOST sources: a user's file is built as its author wrote it.
    target_precompile_headers(${target} PRIVATE
      <cstdint> <map> <memory> <optional> <string> <string_view> <vector> <jr2/runtime.h>)
    if(ARG_HOST)
      set_source_files_properties(${ARG_HOST} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endif()

  if(ARG_NO_RUNNERS)
    set(workflows)
  elseif(NOT workflows)
    message(WARNING "jr2_add_workflow(${target}): no source declares a `workflow`, so only the library `${target}` is built and no runner; add `workflow NAME = MACHINE` to run one, or pass NO_RUNNERS to say a library is what you want")
  endif()
  foreach(entry IN LISTS workflows)
    string(REPLACE "|" ";" parts "${entry}")
    list(GET parts 0 wf)
    list(GET parts 1 stem)
    list(GET parts 2 name)
    set(main ${out_dir}/runner_${wf}.cpp)
    # main() declares each generated file's RegisterWorkflows itself and includes only
    # jr2/runner_main.h: no generated header, no JSON, so that it compiles in a moment.
    set(declares "")
    set(registers "")
    foreach(s IN LISTS stems)
      string(APPEND declares "namespace jr2gen::${s} {\nvoid RegisterWorkflows(::jr2rt::Registry& registry);\nvoid RegisterPictures(::jr2rt::Registry& registry);\n}\n")
      string(APPEND registers "      &jr2gen::${s}::RegisterWorkflows,\n      &jr2gen::${s}::RegisterPictures,\n")
    endforeach()
    list(LENGTH stems count)
    math(EXPR count "${count} * 2")
    file(CONFIGURE OUTPUT ${main} CONTENT
"// Generated by jr2_add_workflow for the workflow `${wf}` of ${name}. DO NOT EDIT.
#include \"jr2/runner_main.h\"

${declares}
int main(int argc, char** argv) {
  const ::jr2rt::RegisterWorkflowsFn registers[] = {
${registers}  };
  return ::jr2rt::RunnerMainOf(registers, ${count}, \"${wf}\", argc, argv);
}
" @ONLY)
    if(TARGET ${wf})
      message(FATAL_ERROR "jr2_add_workflow(${target}): the runner `${wf}` clashes with an existing target; rename the workflow")
    endif()
    add_executable(${wf} ${main})
    target_link_libraries(${wf} PRIVATE ${target} jr2c::runner)
    target_compile_options(${wf} PRIVATE -Wall -Wextra -Werror)
  endforeach()
endfunction()
