// A node's attributes by name, with the defaults the ONNX operator definitions give.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace phx::onnx_import {

const onnx::AttributeProto* find_attribute(const onnx::NodeProto& node, const std::string& name);
int64_t attr_int(const onnx::NodeProto& node, const std::string& name, int64_t fallback);
float attr_float(const onnx::NodeProto& node, const std::string& name, float fallback);
std::string attr_string(const onnx::NodeProto& node, const std::string& name,
                        const std::string& fallback);
// Empty when the node lacks the attribute.
std::vector<int64_t> attr_ints(const onnx::NodeProto& node, const std::string& name);

}  // namespace phx::onnx_import
