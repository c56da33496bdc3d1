// Building graphs in tests: the node calls every graph test makes, checked as they go.
#pragma once

#include <gtest/gtest.h>
#include <phynexus/phynexus.h>

#include <vector>

namespace phx_test {

// Adds a node of op with one output and returns that output; a refusal fails the test
// with the library's message. name and params may be null.
inline phx_value add_node(phx_graph graph, phx_op_id op, const std::vector<phx_value>& inputs,
                          const char* name = nullptr, const void* params = nullptr) {
  phx_graph_node_desc desc = PHX_GRAPH_NODE_DESC_INIT;
  desc.name = name;
  desc.op = op;
  desc.params = params;
  desc.inputs = inputs.data();
  desc.input_count = inputs.size();
  desc.output_count = 1;
  phx_value out = 0;
  EXPECT_EQ(phx_graph_add_node(graph, &desc, &out), PHX_STATUS_OK) << phx_last_error();
  return out;
}

}  // namespace phx_test
