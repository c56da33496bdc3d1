// Compilation as on a TPU: shapes are static, so the first op of a new signature (op,
// shapes, dtypes, params), or the first graph of a new structure, costs a compilation and
// later ones reuse the compiled program. A bounded cache of compiled programs per device,
// least recently used out first, holds eager ops' programs and graphs' alike, as XLA's
// cache holds a jitted single op and a jitted model alike. Nothing is compiled and nothing
// sleeps: the compile time is modelled and reported.
#pragma once

#include <phynexus/plugin.h>

#include <cstddef>
#include <list>
#include <string>
#include <unordered_map>

namespace phx::tpu_sim {

class CompileCache {
 public:
  explicit CompileCache(size_t capacity);

  struct Lookup {
    bool hit = false;
    bool evicted = false;  // a miss that pushed the least recently used program out
  };
  // Finds signature, or "compiles" it: inserts it as the most recently used. Throws
  // std::bad_alloc with the cache unchanged. Not thread-safe: the device serializes its
  // calls.
  Lookup lookup(const std::string& signature);

 private:
  size_t capacity_;
  std::list<std::string> recency_;  // most recently used first
  std::unordered_map<std::string, std::list<std::string>::iterator> index_;
};

// The cache key of op: its id, every tensor's dtype and shape, and the fields of its
// parameters (field by field: a struct's padding bytes are not part of it).
std::string op_signature(const phx_plugin_op& op);

// The cache key of a graph: every value's kind, flags, dtype and shape, and every node's
// op, parameters (field by field) and wiring (the values it reads and writes, by index).
// Names and buffers are not part of it: a graph rebuilt with other names or other
// constant tensors of the same shapes is the same program. Never equal to an op's key.
std::string graph_signature(const phx_plugin_graph& graph);

// The modelled compile time of a new signature: a fixed cost per program, larger for
// MXU programs (matmul, conv2d) than for vector ones. An assumption of the order of
// XLA's compile time for one small op, not a measurement: see docs/tpu-sim.md.
double modelled_compile_time_ns(bool uses_mxu);

}  // namespace phx::tpu_sim
