# The pictures of a `.jr2` file's workflows for the web console (docs/console.md): run at build
# time by jr2_add_workflow with -DJR2C=… -DDOT=… -DSRC=… -DDIR=… -DOUT=… -DSTEM=…. `jr2c graph
# SRC -o DIR` writes DIR/W.dot for each workflow W the file declares; Graphviz's `dot` lays each
# out as SVG; OUT (C++) gets their bytes and jr2gen::STEM::RegisterPictures, which the runner's
# main calls beside RegisterWorkflows. With DOT empty (no Graphviz where the runner was built),
# RegisterPictures registers none and the console says why.
include(${CMAKE_CURRENT_LIST_DIR}/Jr2Bytes.cmake)
set(body "")
set(adds "")
if(DOT)
  file(REMOVE_RECURSE "${DIR}")
  execute_process(COMMAND "${JR2C}" graph "${SRC}" -o "${DIR}"
                  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "jr2c graph ${SRC}: ${err}")
  endif()
  file(GLOB dots "${DIR}/*.dot")
  list(SORT dots)
  set(i 0)
  foreach(dot IN LISTS dots)
    get_filename_component(wf "${dot}" NAME_WLE)  # W, or W.worker
    execute_process(COMMAND "${DOT}" -Tsvg "${dot}" -o "${DIR}/${wf}.svg"
                    RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "dot -Tsvg ${dot}: ${err}")
    endif()
    jr2_c_bytes("${DIR}/${wf}.svg" bytes size)
    string(APPEND body "const unsigned char kPicture${i}[] = {\n    ${bytes}};\n")
    string(APPEND adds "  registry.addPicture(\"${wf}\", kPicture${i}, ${size});\n")
    math(EXPR i "${i} + 1")
  endforeach()
endif()
if(body STREQUAL "")
  set(body "// No picture: Graphviz's `dot` was not found where this runner was built.\n")
endif()
file(WRITE "${OUT}.tmp"
"// The pictures of ${SRC}'s workflows, by cmake/Jr2Pictures.cmake. DO NOT EDIT.\n"
"#include <cstddef>\n\n#include \"jr2/registry.h\"\n\n"
"namespace jr2gen::${STEM} {\nnamespace {\n${body}}  // namespace\n\n"
"void RegisterPictures(::jr2rt::Registry& registry) {\n  (void)registry;\n${adds}}\n\n"
"}  // namespace jr2gen::${STEM}\n")
file(RENAME "${OUT}.tmp" "${OUT}")
