// Filled in by the hardening work (issue 8).
#include <gtest/gtest.h>
