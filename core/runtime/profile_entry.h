// The record of one op that phx_profile_get reports: the one a trace draws of it
// (core/trace/op_record.h), which the runtime fills and the trace writer reads.
#pragma once

#include "op_record.h"

namespace phx {

using OperandShapes = trace::OperandShapes;
using ProfileEntry = trace::OpRecord;  // flops from op_figures.h; signature by op_rules.h

}  // namespace phx
