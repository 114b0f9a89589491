# Writes the console's assets (runtime/src/front/console/assets/) into a C++ source file, each as
# its bytes, its path under /ui/ and its media type (run with -DDIR=… -DOUT=… -DFILES="a;b").
# serve answers them from the binary: no file is read at run time, and no network is needed.
include(${CMAKE_CURRENT_LIST_DIR}/Jr2Bytes.cmake)
set(body "")
set(table "")
set(i 0)
foreach(name IN LISTS FILES)
  jr2_c_bytes("${DIR}/${name}" bytes size)
  if(name MATCHES "\\.html$")
    set(type "text/html; charset=utf-8")
  elseif(name MATCHES "\\.js$")
    set(type "text/javascript; charset=utf-8")
  elseif(name MATCHES "\\.css$")
    set(type "text/css; charset=utf-8")
  elseif(name MATCHES "\\.svg$")
    set(type "image/svg+xml")
  else()
    message(FATAL_ERROR "cmake/EmbedAssets.cmake: no media type for ${name}")
  endif()
  string(APPEND body "const unsigned char kAsset${i}[] = {\n    ${bytes}};\n")
  string(APPEND table "    {\"${name}\", \"${type}\", kAsset${i}, ${size}},\n")
  math(EXPR i "${i} + 1")
endforeach()
file(WRITE "${OUT}.tmp"
"// Generated from runtime/src/front/console/assets/ by cmake/EmbedAssets.cmake. DO NOT EDIT.\n"
"#include \"front/console/console.h\"\n\n"
"namespace jr2rt {\nnamespace {\n${body}}  // namespace\n\n"
"const ConsoleAsset kConsoleAssets[] = {\n${table}};\n"
"const size_t kConsoleAssetCount = sizeof(kConsoleAssets) / sizeof(kConsoleAssets[0]);\n\n"
"}  // namespace jr2rt\n")
file(RENAME "${OUT}.tmp" "${OUT}")
