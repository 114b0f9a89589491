# jr2_c_bytes(FILE BYTES SIZE): FILE's bytes as the body of a C array initializer ("0x3c,0x73,…",
# 24 a line) in BYTES, and how many in SIZE. Shared by the scripts that compile files into a
# binary: EmbedAssets.cmake (the console) and Jr2Pictures.cmake (the workflows' pictures).
function(jr2_c_bytes file bytes_var size_var)
  file(READ "${file}" hex HEX)
  string(LENGTH "${hex}" n)
  math(EXPR size "${n} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  # 24 bytes a line: a long line is no trouble for the compiler, but the file stays readable.
  string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){24})" "\\1\n    " bytes "${bytes}")
  set(${bytes_var} "${bytes}" PARENT_SCOPE)
  set(${size_var} "${size}" PARENT_SCOPE)
endfunction()
