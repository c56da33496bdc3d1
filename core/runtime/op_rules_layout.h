// The rules of the layout ops (reshape, concat, slice, gather, expand, tile, pad), of
// pooling, of conv_transpose2d and of resize (docs/ops.md), beside op_rules.cpp, which calls them,
// and the helpers the two files share.
#pragma once

#include <phx/op_table.h>

#include <string>

#include "op_rules.h"

namespace phx {

Shape shape_of(const Operand& t);
std::string text(const Shape& shape);                  // "2x3", "a scalar"
std::string text(const Operand& t);                    // "f32[2x3]"
void append_text(std::string& out, const Operand& t);  // text(t), appended to out
// Throws INVALID_ARGUMENT "<op name>: <rule>".
[[noreturn]] void broken(phx_op_id op, const std::string& rule);
// NumPy broadcasting of two shapes; false if they do not broadcast.
bool broadcast(const Shape& a, const Shape& b, Shape& out);

// Concat's inputs past the first are optional, without a gap: none absent before one given.
void check_no_gaps(const OpSchema& schema, const OpVariant& variant);

// What the rules say of the parameter structs of these ops, whatever the shapes.
void check_layout_params(phx_op_id op, ParamsKind kind, const void* params);

// The output shape of one of these ops for its inputs (in may hold null for an absent
// optional input), or INVALID_ARGUMENT naming the rule broken.
Shape check_layout_shapes(phx_op_id op, const void* params, const Operand* const* in,
                          size_t in_count);

}  // namespace phx
