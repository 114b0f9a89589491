// The one header generated code includes. It does not include nlohmann/json (see
// jr2/json_value.h): a generated source builds without it.
#pragma once

#include "jr2/json_value.h"
#include "jr2/registry.h"
#include "jr2/statechart.h"

// The version of the generated-code interface this runtime implements.
#define JR2_RUNTIME_VERSION 6
