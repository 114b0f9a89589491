// The one header generated code includes.
#pragma once

#include "jr2/registry.h"
#include "jr2/statechart.h"
#include "jr2/value.h"

// The version of the generated-code interface this runtime implements.
#define JR2_RUNTIME_VERSION 5
