#include "stream.h"

#include <algorithm>
#include <string>

#include "vk_check.h"

namespace phx::vulkan {

// What one submission holds until it has finished.
struct Stream::Batch {
  std::vector<VkCommandBuffer> commands;  // one per op; the first `used` are recorded
  size_t used = 0;
  VkQueryPool queries = VK_NULL_HANDLE;            // 2 timestamps per op, created when profiling
  std::vector<VkDescriptorPool> descriptor_pools;  // without push descriptors
  size_t descriptor_pool = 0;                      // the one allocated from now
  std::vector<Allocation*> scratch;
  struct Profiled {
    phx_plugin_profile* profile;
    uint32_t query;  // its first timestamp, or UINT32_MAX when not timed
    uint32_t dispatches;
  };
  std::vector<Profiled> profiled;
  uint64_t last_ticket = 0;
};

namespace {

uint64_t tensor_bytes(const phx_plugin_tensor& t) {
  return phx_plugin_element_count(t.rank, t.shape) * phx_plugin_dtype_size(t.dtype);
}

void add_metric(phx_plugin_profile& profile, const char* name, double value) {
  if (profile.metric_count < PHX_PLUGIN_MAX_METRICS)
    profile.metrics[profile.metric_count++] = {name, value};
}

// The previous op's (and earlier submissions') writes before this op's shaders run.
void op_barrier(VkCommandBuffer commands) {
  auto barrier = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  vkCmdPipelineBarrier(
      commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &barrier, 0, nullptr, 0, nullptr);
}

// The op's writes visible to the host once its submission has finished. Each op ends
// with it rather than the batch ending with a command buffer of its own: a barrier costs
// nothing measurable on lavapipe, a second command buffer in a submission 5-15 us.
void host_barrier(VkCommandBuffer commands) {
  auto barrier = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                       0, 1, &barrier, 0, nullptr, 0, nullptr);
}

// The OpRecorder an op sees while it is recorded into one command buffer of a batch.
class Recorder final : public OpRecorder {
 public:
  Recorder(Device& device, Stream::Batch& batch, VkCommandBuffer commands)
      : device_(device), batch_(batch), commands_(commands) {}
  ~Recorder() override {
    for (Allocation* a : scratch_) device_.memory().free(a);
  }

  const DeviceCaps& caps() const override { return device_.caps(); }

  Binding bind(const phx_plugin_tensor& tensor) override {
    const uint64_t bytes = tensor_bytes(tensor);
    if (bytes > caps().max_binding_bytes)
      throw Error{PHX_STATUS_UNSUPPORTED,
                  "a tensor of " + std::to_string(bytes) +
                      " bytes is larger than one binding may be on this device "
                      "(maxStorageBufferRange " +
                      std::to_string(caps().max_binding_bytes) + ")"};
    const Allocation& a = allocation(tensor);
    const uint64_t offset = a.offset + tensor.offset;
    if (offset % caps().binding_offset_alignment != 0)
      throw Error{PHX_STATUS_INTERNAL,
                  "bind: the tensor starts at an unaligned offset; use bind_range"};
    // A zero-size range is not a valid descriptor; no shader reads an empty tensor.
    return {a.block->buffer, offset, std::max<uint64_t>(bytes, 4)};
  }

  Binding bind_range(const phx_plugin_tensor& tensor, uint64_t byte_offset, uint64_t bytes,
                     uint64_t* skip_bytes) override {
    if (byte_offset + bytes > tensor_bytes(tensor))
      throw Error{PHX_STATUS_INTERNAL, "bind_range: bytes " + std::to_string(byte_offset) + ".." +
                                           std::to_string(byte_offset + bytes) +
                                           " are outside the tensor"};
    const Allocation& a = allocation(tensor);
    const uint64_t start = a.offset + tensor.offset + byte_offset;
    const uint64_t aligned = start - start % caps().binding_offset_alignment;
    *skip_bytes = start - aligned;
    const uint64_t range = std::max<uint64_t>(*skip_bytes + bytes, 4);
    if (range > caps().max_binding_bytes)
      throw Error{PHX_STATUS_UNSUPPORTED, "bind_range: " + std::to_string(range) +
                                              " bytes, more than one binding may hold (" +
                                              std::to_string(caps().max_binding_bytes) + ")"};
    return {a.block->buffer, aligned, range};
  }

  Binding scratch(uint64_t bytes) override {
    if (bytes > caps().max_binding_bytes)
      throw Error{PHX_STATUS_UNSUPPORTED,
                  "scratch: " + std::to_string(bytes) + " bytes, more than one binding may hold"};
    Allocation* a = device_.memory().allocate(std::max<uint64_t>(bytes, 4), true);
    scratch_.push_back(a);
    return {a->block->buffer, a->offset, std::max<uint64_t>(bytes, 4)};
  }

  void dispatch(std::string_view kernel, std::initializer_list<Binding> bindings,
                const void* push_constants, uint32_t push_size,
                std::initializer_list<SpecConstant> spec_constants, uint32_t groups_x,
                uint32_t groups_y, uint32_t groups_z) override {
    const uint32_t groups[3] = {groups_x, groups_y, groups_z};
    for (int i = 0; i < 3; ++i)
      if (groups[i] > caps().max_workgroup_count[i])
        throw Error{PHX_STATUS_UNSUPPORTED, std::string(kernel) + ": " + std::to_string(groups[i]) +
                                                " workgroups in dimension " + std::to_string(i) +
                                                ", the device allows " +
                                                std::to_string(caps().max_workgroup_count[i])};
    if (push_size > caps().max_push_constant_bytes)
      throw Error{PHX_STATUS_INTERNAL, std::string(kernel) + ": " + std::to_string(push_size) +
                                           " bytes of push constants, at most " +
                                           std::to_string(caps().max_push_constant_bytes)};
    const Kernel& k = device_.pipelines().get(
        kernel, uint32_t(bindings.size()),
        std::span<const SpecConstant>(spec_constants.begin(), spec_constants.size()));
    VkDescriptorBufferInfo infos[kMaxBindings];
    VkWriteDescriptorSet writes[kMaxBindings];
    uint32_t n = 0;
    for (const Binding& b : bindings) {
      infos[n] = {b.buffer, b.offset, b.range};
      writes[n] = vk_struct<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
      writes[n].dstBinding = n;
      writes[n].descriptorCount = 1;
      writes[n].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[n].pBufferInfo = &infos[n];
      ++n;
    }
    vkCmdBindPipeline(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, k.pipeline);
    if (device_.push_descriptor()) {
      device_.cmd_push_descriptor_set()(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, k.layout, 0, n,
                                        writes);
    } else {
      const VkDescriptorSet set = allocate_set(k.set_layout);
      for (uint32_t i = 0; i < n; ++i) writes[i].dstSet = set;
      vkUpdateDescriptorSets(device_.vk(), n, writes, 0, nullptr);
      vkCmdBindDescriptorSets(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, k.layout, 0, 1, &set, 0,
                              nullptr);
    }
    if (push_size > 0)
      vkCmdPushConstants(commands_, k.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_size,
                         push_constants);
    vkCmdDispatch(commands_, groups_x, groups_y, groups_z);
    ++dispatches_;
  }

  void barrier() override {
    auto barrier = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    vkCmdPipelineBarrier(commands_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &barrier, 0, nullptr, 0,
                         nullptr);
  }

  uint32_t dispatches() const { return dispatches_; }
  // The op was recorded: its scratch memory now lives as long as the batch.
  void keep_scratch() {
    batch_.scratch.insert(batch_.scratch.end(), scratch_.begin(), scratch_.end());
    scratch_.clear();
  }

 private:
  static const Allocation& allocation(const phx_plugin_tensor& tensor) {
    return *static_cast<const Allocation*>(tensor.buffer);
  }

  VkDescriptorSet allocate_set(VkDescriptorSetLayout layout) {
    constexpr uint32_t kSetsPerPool = 256;
    for (;;) {
      if (batch_.descriptor_pool == batch_.descriptor_pools.size()) {
        const VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * 4};
        auto info =
            vk_struct<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
        info.maxSets = kSetsPerPool;
        info.poolSizeCount = 1;
        info.pPoolSizes = &size;
        VkDescriptorPool pool;
        check(vkCreateDescriptorPool(device_.vk(), &info, nullptr, &pool),
              "vkCreateDescriptorPool");
        batch_.descriptor_pools.push_back(pool);
      }
      auto info =
          vk_struct<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
      info.descriptorPool = batch_.descriptor_pools[batch_.descriptor_pool];
      info.descriptorSetCount = 1;
      info.pSetLayouts = &layout;
      VkDescriptorSet set;
      const VkResult result = vkAllocateDescriptorSets(device_.vk(), &info, &set);
      if (result == VK_SUCCESS) return set;
      if (result != VK_ERROR_OUT_OF_POOL_MEMORY && result != VK_ERROR_FRAGMENTED_POOL)
        check(result, "vkAllocateDescriptorSets");
      ++batch_.descriptor_pool;  // full: the next one
    }
  }

  Device& device_;
  Stream::Batch& batch_;
  VkCommandBuffer commands_;
  std::vector<Allocation*> scratch_;
  uint32_t dispatches_ = 0;
};

}  // namespace

Stream::Stream(Device& device) : device_(device) {
  auto pool_info = vk_struct<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool_info.queueFamilyIndex = device_.queue_family();
  check(vkCreateCommandPool(device_.vk(), &pool_info, nullptr, &pool_), "vkCreateCommandPool");
  auto type = vk_struct<VkSemaphoreTypeCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO);
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  type.initialValue = 0;
  auto info = vk_struct<VkSemaphoreCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO);
  info.pNext = &type;
  const VkResult result = vkCreateSemaphore(device_.vk(), &info, nullptr, &timeline_);
  if (result != VK_SUCCESS) {
    vkDestroyCommandPool(device_.vk(), pool_, nullptr);
    check(result, "vkCreateSemaphore");
  }
}

Stream::~Stream() {
  VkDevice vk = device_.vk();
  if (flushed_ > 0 && !device_.lost()) {
    try {
      device_.wait_semaphore(timeline_, flushed_, UINT64_MAX);
    } catch (const Error&) {
      device_.mark_lost();  // nothing else makes a wait fail
    }
  }
  if (device_.lost()) vkDeviceWaitIdle(vk);  // the lost device's work is abandoned
  auto destroy = [&](std::unique_ptr<Batch>& batch) {
    if (!batch) return;
    for (Allocation* a : batch->scratch) device_.memory().free(a);
    for (VkDescriptorPool pool : batch->descriptor_pools)
      vkDestroyDescriptorPool(vk, pool, nullptr);
    vkDestroyQueryPool(vk, batch->queries, nullptr);
  };
  destroy(open_);
  for (auto& batch : in_flight_) destroy(batch);
  for (auto& batch : spare_) destroy(batch);
  vkDestroyCommandPool(vk, pool_, nullptr);  // frees every command buffer
  vkDestroySemaphore(vk, timeline_, nullptr);
}

Stream::Batch& Stream::open_batch() {
  if (open_) return *open_;
  if (!spare_.empty()) {
    open_ = std::move(spare_.back());
    spare_.pop_back();
    return *open_;
  }
  open_ = std::make_unique<Batch>();
  return *open_;
}

uint64_t Stream::submit(const phx_plugin_op& op) {
  retire_completed();
  Batch& batch = open_batch();
  if (batch.used == batch.commands.size()) {
    auto info =
        vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    info.commandPool = pool_;
    info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    info.commandBufferCount = 1;
    VkCommandBuffer commands;
    check(vkAllocateCommandBuffers(device_.vk(), &info, &commands), "vkAllocateCommandBuffers");
    batch.commands.push_back(commands);
  }
  VkCommandBuffer commands = batch.commands[batch.used];
  const bool timed = op.profile != nullptr && device_.timestamp_bits() > 0;
  if (timed && batch.queries == VK_NULL_HANDLE) {
    auto info = vk_struct<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
    info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    info.queryCount = 2 * kBatchOps;
    check(vkCreateQueryPool(device_.vk(), &info, nullptr, &batch.queries), "vkCreateQueryPool");
  }
  const uint32_t query = uint32_t(2 * batch.used);

  auto begin = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(commands, &begin), "vkBeginCommandBuffer");
  Recorder recorder(device_, batch, commands);
  try {
    op_barrier(commands);
    if (timed) {
      vkCmdResetQueryPool(commands, batch.queries, query, 2);
      vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, batch.queries, query);
    }
    record_op(recorder, op);
    if (timed)
      vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, batch.queries, query + 1);
    host_barrier(commands);
    check(vkEndCommandBuffer(commands), "vkEndCommandBuffer");
  } catch (...) {
    // Nothing of the op stays: its commands are dropped, its scratch freed (~Recorder).
    vkResetCommandBuffer(commands, 0);
    throw;
  }
  recorder.keep_scratch();
  ++batch.used;
  if (op.profile != nullptr)
    batch.profiled.push_back({op.profile, timed ? query : UINT32_MAX, recorder.dispatches()});
  ++device_.stats().ops;
  device_.stats().dispatches += recorder.dispatches();
  batch.last_ticket = ++recorded_;
  // Submit at once when nothing of this stream is running (the device would idle),
  // else let ops gather while it works.
  if (batch.used >= kBatchOps || in_flight_.empty()) flush();
  return recorded_;
}

void Stream::flush() {
  if (!open_ || open_->used == 0) return;
  Batch& batch = *open_;
  auto timeline =
      vk_struct<VkTimelineSemaphoreSubmitInfo>(VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO);
  timeline.signalSemaphoreValueCount = 1;
  timeline.pSignalSemaphoreValues = &batch.last_ticket;
  auto info = vk_struct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  info.pNext = &timeline;
  info.commandBufferCount = uint32_t(batch.used);
  info.pCommandBuffers = batch.commands.data();
  info.signalSemaphoreCount = 1;
  info.pSignalSemaphores = &timeline_;
  try {
    device_.submit(info, VK_NULL_HANDLE);
  } catch (...) {
    // The batch never ran: its tickets will never finish; the device is lost or broken.
    recycle(batch, false);
    spare_.push_back(std::move(open_));
    throw;
  }
  ++device_.stats().submissions;
  flushed_ = batch.last_ticket;
  in_flight_.push_back(std::move(open_));
}

void Stream::recycle(Batch& batch, bool finished) {
  if (finished && !batch.profiled.empty()) {
    const uint32_t bits = device_.timestamp_bits();
    const uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
    for (const Batch::Profiled& p : batch.profiled) {
      if (p.query != UINT32_MAX) {
        uint64_t stamps[2] = {};
        if (vkGetQueryPoolResults(device_.vk(), batch.queries, p.query, 2, sizeof stamps, stamps,
                                  sizeof stamps[0], VK_QUERY_RESULT_64_BIT) == VK_SUCCESS) {
          const uint64_t ticks = ((stamps[1] & mask) - (stamps[0] & mask)) & mask;
          add_metric(*p.profile, "gpu_time_ns", double(ticks) * device_.timestamp_period());
        }
      }
      add_metric(*p.profile, "dispatches", double(p.dispatches));
    }
  }
  batch.profiled.clear();
  for (Allocation* a : batch.scratch) device_.memory().free(a);
  batch.scratch.clear();
  for (VkDescriptorPool pool : batch.descriptor_pools) vkResetDescriptorPool(device_.vk(), pool, 0);
  batch.descriptor_pool = 0;
  for (size_t i = 0; i < batch.used; ++i) vkResetCommandBuffer(batch.commands[i], 0);
  batch.used = 0;
}

void Stream::retire_completed() {
  if (in_flight_.empty()) return;
  const uint64_t done = device_.semaphore_value(timeline_);
  while (!in_flight_.empty() && in_flight_.front()->last_ticket <= done) {
    recycle(*in_flight_.front(), true);
    spare_.push_back(std::move(in_flight_.front()));
    in_flight_.pop_front();
  }
}

void Stream::wait(uint64_t ticket) {
  ticket = std::min(ticket, recorded_);
  if (ticket == 0) return;
  if (ticket > flushed_) flush();
  device_.wait_semaphore(timeline_, ticket, UINT64_MAX);
  retire_completed();
}

uint64_t Stream::completed() {
  flush();
  retire_completed();
  return std::min(device_.semaphore_value(timeline_), recorded_);
}

}  // namespace phx::vulkan
