// The ONNX operators the importer takes: one entry per operator type, naming the
// function that converts a node of it (convert_*.cpp). docs/onnx.md lists them.
#pragma once

#include <onnx/onnx_pb.h>

#include <span>
#include <string>

namespace phx::onnx_import {

class Importer;

using ConvertFn = void (*)(Importer& importer, const onnx::NodeProto& node);

struct OperatorEntry {
  const char* op_type;
  ConvertFn convert;
};

// The entry of op_type; null for an operator the importer does not take.
const OperatorEntry* find_operator(const std::string& op_type);

// Every entry, in the table's order (for the docs and the conformance runner).
std::span<const OperatorEntry> operator_entries();

}  // namespace phx::onnx_import
