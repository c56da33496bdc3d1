// A Phynexus stream on a Vulkan device. Each op is recorded (ops/*.cpp, through a
// CommandRecorder) into a command buffer of its own, so that an op whose recording fails
// leaves nothing behind, after a barrier only when it depends on an op recorded since the
// last one in the same submission (hazards.h; the first op of a submission always waits);
// ops are submitted in batches: at once when the stream has nothing running, else when
// kBatchOps have gathered, or on wait/completed. An executable's run (executable.h) is one
// recorded command buffer, one ticket, submitted at once with the ops gathered before it.
// Every submission signals the stream's timeline semaphore with its last ticket, so that
// "ticket t has finished" is "the semaphore has reached t". Calls on one stream are
// serialized by the host; the device's queue has its own lock.
#pragma once

#include <phynexus/plugin.h>
#include <vulkan/vulkan.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "device.h"
#include "executable.h"

namespace phx::vulkan {

class Stream {
 public:
  static constexpr uint32_t kBatchOps = 32;

  explicit Stream(Device& device);  // throws Error
  // Waits for what was submitted (the host has waited already), then frees everything.
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  Device& device() { return device_; }

  // Records op and returns its ticket. Throws Error (the recording's or Vulkan's);
  // then no ticket is issued.
  uint64_t submit(const phx_plugin_op& op);
  // Submits a run of executable on values (one per value of its graph), each node's
  // figures left in node_profiles[i] when that is not null, and returns its ticket.
  // Throws Error.
  uint64_t run(Executable& executable, const phx_plugin_tensor* values,
               phx_plugin_profile* const* node_profiles);
  // Blocks until ticket (clamped to the last one issued) has finished. Throws Error.
  void wait(uint64_t ticket);
  // The highest finished ticket; submits what was recorded, never blocks. Throws Error.
  uint64_t completed();

  struct Batch;

 private:
  Batch& open_batch();
  VkCommandBuffer allocate_commands();
  void flush();
  void retire_completed();
  void recycle(Batch& batch, bool finished);

  Device& device_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkSemaphore timeline_ = VK_NULL_HANDLE;
  std::unique_ptr<Batch> open_;
  std::deque<std::unique_ptr<Batch>> in_flight_;
  std::vector<std::unique_ptr<Batch>> spare_;
  uint64_t recorded_ = 0;  // the last ticket issued
  uint64_t flushed_ = 0;   // the last ticket submitted to the queue
};

}  // namespace phx::vulkan
