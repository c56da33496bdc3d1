#include "command_recorder.h"

#include <algorithm>
#include <string>

#include "vk_check.h"

namespace phx::vulkan {
namespace {

uint64_t tensor_bytes(const phx_plugin_tensor& t) {
  return phx_plugin_element_count(t.rank, t.shape) * phx_plugin_dtype_size(t.dtype);
}

const Allocation& allocation(const phx_plugin_tensor& tensor) {
  return *static_cast<const Allocation*>(tensor.buffer);
}

}  // namespace

void RecordResources::reset(Device& device) {
  for (Allocation* a : scratch) device.memory().free(a);
  scratch.clear();
  for (VkDescriptorPool pool : descriptor_pools) vkResetDescriptorPool(device.vk(), pool, 0);
  descriptor_pool = 0;
}

void RecordResources::destroy(Device& device) {
  reset(device);
  for (VkDescriptorPool pool : descriptor_pools)
    vkDestroyDescriptorPool(device.vk(), pool, nullptr);
  descriptor_pools.clear();
}

void record_host_barrier(VkCommandBuffer commands) {
  auto barrier = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                       0, 1, &barrier, 0, nullptr, 0, nullptr);
}

CommandRecorder::~CommandRecorder() {
  for (Allocation* a : op_scratch_) device_.memory().free(a);
}

void CommandRecorder::record(const phx_plugin_op& op, const Timestamps* timestamps) {
  record(op_access(op), timestamps, [&op](OpRecorder& recorder) { record_op(recorder, op); });
}

void CommandRecorder::record(const Access& access, const Timestamps* timestamps,
                             const std::function<void(OpRecorder&)>& body) {
  if (hazards_.must_wait(access)) record_barrier();
  if (timestamps != nullptr && commands_ != VK_NULL_HANDLE) {
    vkCmdResetQueryPool(commands_, timestamps->pool, timestamps->first, 2);
    vkCmdWriteTimestamp(commands_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps->pool,
                        timestamps->first);
  }
  op_dispatches_ = 0;
  body(*this);
  if (timestamps != nullptr && commands_ != VK_NULL_HANDLE)
    vkCmdWriteTimestamp(commands_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps->pool,
                        timestamps->first + 1);
  // The op's own ranges stay pending even past a barrier() of its own: its later
  // dispatches touched them after that barrier.
  hazards_.note(access);
  for (const ByteRange& range : scratch_writes_) hazards_.note_write(range);
  scratch_writes_.clear();
  resources_.scratch.insert(resources_.scratch.end(), op_scratch_.begin(), op_scratch_.end());
  op_scratch_.clear();
}

void CommandRecorder::record_barrier() {
  if (commands_ != VK_NULL_HANDLE) {
    // Earlier shader writes, and the transfers' of the submissions before, before this
    // op's shaders read or write.
    auto barrier = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    vkCmdPipelineBarrier(
        commands_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &barrier, 0, nullptr, 0, nullptr);
  }
  ++barriers_;
  hazards_.barrier_recorded();
}

void CommandRecorder::barrier() { record_barrier(); }

Binding CommandRecorder::bind(const phx_plugin_tensor& tensor) {
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

Binding CommandRecorder::bind_range(const phx_plugin_tensor& tensor, uint64_t byte_offset,
                                    uint64_t bytes, uint64_t* skip_bytes) {
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

Binding CommandRecorder::scratch(uint64_t bytes) {
  if (bytes > caps().max_binding_bytes)
    throw Error{PHX_STATUS_UNSUPPORTED,
                "scratch: " + std::to_string(bytes) + " bytes, more than one binding may hold"};
  const uint64_t size = std::max<uint64_t>(bytes, 4);
  if (commands_ == VK_NULL_HANDLE) return {VK_NULL_HANDLE, 0, size};
  Allocation* a = device_.memory().allocate(size, true);
  op_scratch_.push_back(a);
  // Fresh memory cannot be in use by what this recorder recorded, yet a barrier costs
  // little next to a wrong result should the pool ever hand out such a range.
  const ByteRange range{a->block, a->offset, a->offset + size};
  if (hazards_.must_wait({{}, {range}})) record_barrier();
  scratch_writes_.push_back(range);
  return {a->block->buffer, a->offset, size};
}

Binding CommandRecorder::upload(const void* data, uint64_t bytes) {
  const Binding b = scratch(bytes);
  if (commands_ == VK_NULL_HANDLE) return b;
  // vkCmdUpdateBuffer takes at most 65536 bytes a call.
  constexpr uint64_t kMaxUpdate = 65536;
  const auto* from = static_cast<const char*>(data);
  for (uint64_t at = 0; at < bytes; at += kMaxUpdate)
    vkCmdUpdateBuffer(commands_, b.buffer, b.offset + at, std::min(kMaxUpdate, bytes - at),
                      from + at);
  record_barrier();  // the transfer's writes before the shaders read them
  return b;
}

void CommandRecorder::dispatch(std::string_view kernel, std::span<const Binding> bindings,
                               const void* push_constants, uint32_t push_size,
                               std::span<const SpecConstant> spec_constants, uint32_t groups_x,
                               uint32_t groups_y, uint32_t groups_z) {
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
  const Kernel& k =
      device_.pipelines().get(kernel, uint32_t(bindings.size()), spec_constants, &compiles_);
  if (kernel_keys_ != nullptr) kernel_keys_->push_back(k.key);
  ++op_dispatches_;
  if (commands_ == VK_NULL_HANDLE) return;
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
}

VkDescriptorSet CommandRecorder::allocate_set(VkDescriptorSetLayout layout) {
  constexpr uint32_t kSetsPerPool = 256;
  for (;;) {
    if (resources_.descriptor_pool == resources_.descriptor_pools.size()) {
      const VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * 4};
      auto info =
          vk_struct<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
      info.maxSets = kSetsPerPool;
      info.poolSizeCount = 1;
      info.pPoolSizes = &size;
      VkDescriptorPool pool;
      check(vkCreateDescriptorPool(device_.vk(), &info, nullptr, &pool), "vkCreateDescriptorPool");
      resources_.descriptor_pools.push_back(pool);
    }
    auto info =
        vk_struct<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
    info.descriptorPool = resources_.descriptor_pools[resources_.descriptor_pool];
    info.descriptorSetCount = 1;
    info.pSetLayouts = &layout;
    VkDescriptorSet set;
    const VkResult result = vkAllocateDescriptorSets(device_.vk(), &info, &set);
    if (result == VK_SUCCESS) return set;
    if (result != VK_ERROR_OUT_OF_POOL_MEMORY && result != VK_ERROR_FRAGMENTED_POOL)
      check(result, "vkAllocateDescriptorSets");
    ++resources_.descriptor_pool;  // full: the next one
  }
}

}  // namespace phx::vulkan
