# Writes the standard library's text into a C++ source file (run with -DIN=… -DOUT=…).
file(READ "${IN}" content)
string(FIND "${content}" ")jr2std\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )jr2std\"")
endif()
file(WRITE "${OUT}.tmp"
"// Generated from stdlib/std.jr2 by cmake/EmbedStdlib.cmake. DO NOT EDIT.\n"
"#include <string_view>\n"
"namespace jr2::sema {\n"
"extern const std::string_view kStdlibText;\n"
"const std::string_view kStdlibText = R\"jr2std(${content})jr2std\";\n"
"}  // namespace jr2::sema\n")
file(RENAME "${OUT}.tmp" "${OUT}")
