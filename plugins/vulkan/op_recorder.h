// The seam between the Vulkan plugin's runtime (devices, memory, streams, pipelines)
// and its ops (ops/*.cpp, shaders/*.comp): an op implementation sees only this.
//
// An op is recorded, not run: record_op() binds tensors and scratch memory and records
// dispatches through an OpRecorder; the stream submits what was recorded, in batches,
// and reports errors of the run through stream_wait.
#pragma once

#include <phx/error.h>
#include <phynexus/plugin.h>
#include <vulkan/vulkan.h>

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace phx::vulkan {

// What an op needs to know of its device to choose a kernel and a tiling.
struct DeviceCaps {
  VkPhysicalDeviceType device_type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  bool cpu_device = false;  // lavapipe and other software rasterizers
  uint32_t vendor_id = 0;
  uint32_t max_shared_memory_bytes = 0;    // maxComputeSharedMemorySize
  uint32_t max_workgroup_invocations = 0;  // maxComputeWorkGroupInvocations
  uint32_t max_workgroup_size[3] = {};
  uint32_t max_workgroup_count[3] = {};
  uint32_t subgroup_size = 0;
  uint64_t max_binding_bytes = 0;         // maxStorageBufferRange
  uint64_t binding_offset_alignment = 0;  // minStorageBufferOffsetAlignment
  uint32_t max_push_constant_bytes = 0;
  bool shader_float16 = false;       // arithmetic in f16
  bool shader_int8 = false;          // arithmetic in int8
  bool storage_16bit = false;        // 16-bit types in storage buffers
  bool storage_8bit = false;         // 8-bit types in storage buffers
  bool subgroup_arithmetic = false;  // subgroupAdd/Max in compute
  bool subgroup_shuffle = false;     // subgroupShuffle in compute
  bool shader_int64 = false;         // 64-bit integers
};

// A range of a buffer bound to one descriptor. offset is a multiple of
// DeviceCaps::binding_offset_alignment and range <= DeviceCaps::max_binding_bytes.
struct Binding {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
  VkDeviceSize range = 0;
};

// Records one op. Every function throws Error on failure (the stream turns it into a
// status); an op implementation lets it propagate.
class OpRecorder {
 public:
  virtual ~OpRecorder() = default;

  virtual const DeviceCaps& caps() const = 0;

  // The whole tensor, when it fits in one binding (DeviceCaps::max_binding_bytes);
  // throws UNSUPPORTED otherwise, so ops that can split a large tensor call bind_range.
  virtual Binding bind(const phx_plugin_tensor& tensor) = 0;

  // bytes of the tensor from byte_offset (relative to the tensor's first element). The
  // binding starts at the aligned offset at or below it; the returned *skip_bytes is
  // the bytes from the binding's start to byte_offset, for the shader to skip.
  virtual Binding bind_range(const phx_plugin_tensor& tensor, uint64_t byte_offset, uint64_t bytes,
                             uint64_t* skip_bytes) = 0;

  // Device-local scratch memory alive until the op has finished running.
  virtual Binding scratch(uint64_t bytes) = 0;

  // Scratch memory holding bytes of data (a small table an op computes on the host),
  // written by the command buffer (vkCmdUpdateBuffer) before the op's next dispatch, so
  // that an executable's every run finds it there. bytes a multiple of 4.
  virtual Binding upload(const void* data, uint64_t bytes) = 0;

  // Records a dispatch of the embedded SPIR-V module `kernel` (a name from
  // shaders/shaders.cmake) with storage buffers at bindings 0..n-1 of set 0, push
  // constants (at most 128 bytes), and specialization constants given as (id, value)
  // pairs. Pipelines are created on first use per (kernel, constants) and cached.
  // Group counts above the device's maximum throw; ops split such work themselves.
  struct SpecConstant {
    uint32_t id;
    uint32_t value;
  };
  virtual void dispatch(std::string_view kernel, std::span<const Binding> bindings,
                        const void* push_constants, uint32_t push_size,
                        std::span<const SpecConstant> spec_constants, uint32_t groups_x,
                        uint32_t groups_y, uint32_t groups_z) = 0;
  // The same with the lists written out at the call.
  void dispatch(std::string_view kernel, std::initializer_list<Binding> bindings,
                const void* push_constants, uint32_t push_size,
                std::initializer_list<SpecConstant> spec_constants, uint32_t groups_x,
                uint32_t groups_y, uint32_t groups_z) {
    dispatch(kernel, std::span<const Binding>(bindings.begin(), bindings.size()), push_constants,
             push_size,
             std::span<const SpecConstant>(spec_constants.begin(), spec_constants.size()), groups_x,
             groups_y, groups_z);
  }

  // Makes the writes of the dispatches recorded so far visible to the next ones. The
  // recorder already separates one op from the next; this is for an op's own steps.
  virtual void barrier() = 0;
};

// ops/*.cpp: whether the device implements op for inputs of dtype, and the recording.
bool op_supported(const DeviceCaps& caps, phx_op_id op, phx_dtype dtype);
void record_op(OpRecorder& recorder, const phx_plugin_op& op);

// A chain of elementwise f32 ops (add, sub, mul, div, relu, gelu, silu) on tensors of one
// shape, which an executable runs as one dispatch instead of a dispatch per op
// (executable.h): each step applies its op to sources a (and b, for a binary op) and
// leaves the result in the accumulator; a source is kAccumulator or an operand's index.
struct ElementwiseProgram {
  static constexpr uint32_t kMaxSteps = 64;
  static constexpr uint32_t kMaxOperands = 8;
  static constexpr uint8_t kAccumulator = 0xff;
  struct Step {
    phx_op_id op;
    uint8_t a, b;
  };
  std::vector<Step> steps;     // at most kMaxSteps
  uint32_t operand_count = 0;  // at most kMaxOperands
};

// ops/*.cpp: whether the device runs ElementwisePrograms, and the recording of one on
// operands (program.operand_count f32 tensors of y's shape) into y.
bool runs_elementwise_programs(const DeviceCaps& caps);
void record_elementwise_program(OpRecorder& recorder, const ElementwiseProgram& program,
                                const phx_plugin_tensor* operands, const phx_plugin_tensor& y);

}  // namespace phx::vulkan
