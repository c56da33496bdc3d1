// The OpRecorder that ops record through (op_recorder.h), for the eager path (stream.h:
// one command buffer per op) and for executables (executable.h: every node into one).
// Before each op it records a barrier only where the op conflicts with what was recorded
// since the last one (hazards.h); with no command buffer it only prepares: it makes the
// pipelines an op needs and checks the device's limits, recording nothing.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "device.h"
#include "hazards.h"
#include "op_recorder.h"

namespace phx::vulkan {

// What recorded commands use until they have run: descriptor sets (when the device has
// no push descriptors) and scratch memory.
struct RecordResources {
  std::vector<VkDescriptorPool> descriptor_pools;
  size_t descriptor_pool = 0;  // the one allocated from now
  std::vector<Allocation*> scratch;

  // The commands have run or were dropped: the sets are returned, the scratch freed.
  void reset(Device& device);
  // reset, and the pools destroyed.
  void destroy(Device& device);
};

// Two timestamp queries, around an op.
struct Timestamps {
  VkQueryPool pool = VK_NULL_HANDLE;
  uint32_t first = 0;
};

// Makes the host see the writes of the commands before it once their submission has
// finished; the last command of every submission.
void record_host_barrier(VkCommandBuffer commands);

class CommandRecorder final : public OpRecorder {
 public:
  // commands: VK_NULL_HANDLE to prepare only. resources and hazards outlive the recorder.
  CommandRecorder(Device& device, VkCommandBuffer commands, RecordResources& resources,
                  HazardTracker& hazards)
      : device_(device), commands_(commands), resources_(resources), hazards_(hazards) {}
  // Frees the scratch memory of an op whose recording threw.
  ~CommandRecorder() override;
  CommandRecorder(const CommandRecorder&) = delete;
  CommandRecorder& operator=(const CommandRecorder&) = delete;

  // Records op, after a barrier if it must wait, between the two timestamps when
  // timestamps is not null; its scratch memory then lives as long as the resources.
  // Throws Error; the caller then drops the commands (and the hazards) it recorded into.
  void record(const phx_plugin_op& op, const Timestamps* timestamps);
  // The same for work that access describes, which body records.
  void record(const Access& access, const Timestamps* timestamps,
              const std::function<void(OpRecorder&)>& body);
  // The dispatches of the last op recorded.
  uint32_t op_dispatches() const { return op_dispatches_; }
  // The barriers recorded so far, before ops and inside them.
  uint32_t barriers() const { return barriers_; }
  // The pipelines its dispatches so far had to create.
  const PipelineCompiles& pipeline_compiles() const { return compiles_; }
  // From now on, appends the Kernel::key of every dispatch's pipeline to keys (which
  // outlives the recorder); null stops it.
  void collect_kernels(std::vector<std::string>* keys) { kernel_keys_ = keys; }

  const DeviceCaps& caps() const override { return device_.caps(); }
  Binding bind(const phx_plugin_tensor& tensor) override;
  Binding bind_range(const phx_plugin_tensor& tensor, uint64_t byte_offset, uint64_t bytes,
                     uint64_t* skip_bytes) override;
  Binding scratch(uint64_t bytes) override;
  Binding upload(const void* data, uint64_t bytes) override;
  using OpRecorder::dispatch;
  void dispatch(std::string_view kernel, std::span<const Binding> bindings,
                const void* push_constants, uint32_t push_size,
                std::span<const SpecConstant> spec_constants, uint32_t groups_x, uint32_t groups_y,
                uint32_t groups_z) override;
  void barrier() override;

 private:
  void record_barrier();
  VkDescriptorSet allocate_set(VkDescriptorSetLayout layout);

  Device& device_;
  VkCommandBuffer commands_;
  RecordResources& resources_;
  HazardTracker& hazards_;
  std::vector<Allocation*> op_scratch_;  // the current op's, until it has recorded
  std::vector<ByteRange> scratch_writes_;
  uint32_t op_dispatches_ = 0;
  uint32_t barriers_ = 0;
  PipelineCompiles compiles_;
  std::vector<std::string>* kernel_keys_ = nullptr;
};

}  // namespace phx::vulkan
