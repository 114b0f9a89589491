# Every dependency comes from a Debian package (scripts/setup.sh installs them) through its
# installed CMake config. Third-party headers are SYSTEM includes, so our -Werror never fires on
# code we do not own.

find_package(antlr4-runtime 4.9 REQUIRED CONFIG)
find_program(ANTLR4_TOOL NAMES antlr4 REQUIRED)
find_package(fmt REQUIRED CONFIG)
find_package(nlohmann_json 3 REQUIRED CONFIG)
find_package(LLVM 14 REQUIRED CONFIG PATHS /usr/lib/llvm-14/lib/cmake/llvm NO_DEFAULT_PATH)
find_package(SQLite3 REQUIRED)
# libpq (Debian's libpq-dev): the PostgreSQL store (runtime/src/store/postgres/, docs/scaling.md).
find_package(PostgreSQL REQUIRED)
# libcrypto: SHA-256 and HMAC-SHA256 for serve's tokens and hook signatures (jr2/auth.h); libssl:
# the HTTP client's TLS (runtime/src/effects/http.cpp: https:// for std.http_get and the model harness).
find_package(OpenSSL 3 REQUIRED COMPONENTS Crypto SSL)
find_package(Boost 1.74 REQUIRED CONFIG)
if(JR2_BUILD_TESTS)
  find_package(GTest REQUIRED CONFIG)
endif()
if(JR2_BUILD_BENCH)
  find_package(benchmark REQUIRED CONFIG)
endif()

# The ANTLR runtime: its package exports `antlr4_shared` but puts its include directory in a
# variable, so wrap both in one imported target with SYSTEM includes.
add_library(jr2_antlr4 INTERFACE)
target_include_directories(jr2_antlr4 SYSTEM INTERFACE ${ANTLR4_INCLUDE_DIR})
# What links ANTLR's runtime and fmt's compiled code, named once for every list that links them
# (here, jr2_diag's and jr2c's ordered list): an executable with the JR2_STATIC property (jr2c,
# see compiler/CMakeLists.txt) links their archives (fmt's compiled from its headers,
# jr2_fmt_static), everything else their shared libraries.
set(JR2_ANTLR4_LINK $<IF:$<BOOL:$<TARGET_PROPERTY:JR2_STATIC>>,antlr4_static,antlr4_shared>)
set(JR2_FMT_LINK $<IF:$<BOOL:$<TARGET_PROPERTY:JR2_STATIC>>,jr2_fmt_static,fmt::fmt>)
target_link_libraries(jr2_antlr4 INTERFACE ${JR2_ANTLR4_LINK})

# SQLite for jr2c (`jr2c diff --store` reads a store's waiting runs): its archive in a static
# jr2c (Debian's libsqlite3-dev ships it), its shared library otherwise.
find_library(JR2_SQLITE3_ARCHIVE NAMES libsqlite3.a)
add_library(jr2_sqlite_for_jr2c INTERFACE)
if(JR2_SQLITE3_ARCHIVE)
  target_link_libraries(jr2_sqlite_for_jr2c INTERFACE
    $<IF:$<BOOL:$<TARGET_PROPERTY:JR2_STATIC>>,${JR2_SQLITE3_ARCHIVE};${CMAKE_DL_LIBS};m,SQLite::SQLite3>
    Threads::Threads)
else()
  target_link_libraries(jr2_sqlite_for_jr2c INTERFACE SQLite::SQLite3)
endif()

# LLVM ADT and Support are used header-only (Casting, StringRef, edit distance, SmallVector).
add_library(jr2_llvm INTERFACE)
target_include_directories(jr2_llvm SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS})
# Header-only use: do not pull in LLVMSupport just for its ABI-check symbol.
target_compile_definitions(jr2_llvm INTERFACE LLVM_DISABLE_ABI_BREAKING_CHECKS_ENFORCING=1)
