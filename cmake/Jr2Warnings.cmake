# Our code, and the C++ that jr2c generates, builds warning-free with -Wall -Wextra -Werror.
function(jr2_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror)
endfunction()
