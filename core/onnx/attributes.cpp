#include "attributes.h"

namespace phx::onnx_import {

const onnx::AttributeProto* find_attribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t attr_int(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  const auto* a = find_attribute(node, name);
  return a != nullptr ? a->i() : fallback;
}

float attr_float(const onnx::NodeProto& node, const std::string& name, float fallback) {
  const auto* a = find_attribute(node, name);
  return a != nullptr ? a->f() : fallback;
}

std::string attr_string(const onnx::NodeProto& node, const std::string& name,
                        const std::string& fallback) {
  const auto* a = find_attribute(node, name);
  return a != nullptr ? a->s() : fallback;
}

std::vector<int64_t> attr_ints(const onnx::NodeProto& node, const std::string& name) {
  const auto* a = find_attribute(node, name);
  return a != nullptr ? std::vector<int64_t>(a->ints().begin(), a->ints().end())
                      : std::vector<int64_t>{};
}

}  // namespace phx::onnx_import
