// The NPU classes the simulator knows: their memories, MAC arrays and clock, and the ops
// and dtypes each can run. Figures are of the class, not of one product; docs/npu-sim.md
// gives the public figures they follow and marks what is assumed.
// Units: GB/s = 10^9 bytes per second; memory sizes in bytes (binary MiB and GiB).
#pragma once

#include <phynexus/phynexus.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace phx::npu_sim {

// The first-input dtypes with which a profile runs an op.
struct OpDtypes {
  phx_op_id op;
  uint32_t dtypes;  // PHX_DTYPE_BIT of each
};

struct Profile {
  const char* name;  // "mobile", "edge", "datacenter"
  const char* description;
  uint64_t sram_bytes;            // on-chip memory
  uint64_t dram_bytes;            // what the device offers tensors
  double dram_bandwidth_gbps;     // 10^9 bytes per second
  uint32_t int8_macs_per_cycle;   // 8x8
  uint32_t int16_macs_per_cycle;  // 16x8 (16-bit activations, 8-bit weights); 0: none
  uint32_t fp16_macs_per_cycle;   // 0: none
  uint32_t vector_lanes;          // 8-bit lanes: a 16-bit element takes 2, a 32-bit one 4
  uint32_t cores;                 // the device's compute_units
  double clock_ghz;
  double op_overhead_ns;  // dispatch cost of one op
  // The dtypes any tensor of a supported op may have (scales are f32, zero points and
  // biases i32): an op with a tensor outside is unsupported whatever its first input.
  uint32_t tensor_dtypes;
  const OpDtypes* ops;
  size_t op_count;
  const char* source;
};

// The profile called name; null when unknown.
const Profile* find_profile(std::string_view name);

// "mobile, edge, datacenter": for error messages.
const char* known_profiles();

// The first-input dtypes with which profile runs op (0: none).
uint32_t supported_dtypes(const Profile& profile, phx_op_id op);

// The C API's names of ops and dtypes ("qmatmul", "i8"): a plugin calls no function of
// libphynexus (phx_op_name): the op names come from the op table it links.
const char* op_name(phx_op_id op);
const char* dtype_name(phx_dtype dtype);

// "qmatmul(i8,u8) relu(i8) ...": the profile's op set, for the device's properties.
std::string describe_ops(const Profile& profile);

}  // namespace phx::npu_sim
