#include "stream.h"

#include <algorithm>
#include <string>

#include "command_recorder.h"
#include "executable.h"
#include "vk_check.h"

namespace phx::vulkan {

// What one submission holds until it has finished.
struct Stream::Batch {
  std::vector<VkCommandBuffer> commands;  // one per eager op; the first `used` are recorded
  size_t used = 0;
  std::vector<VkCommandBuffer> submitted;  // in order: the ops' and the runs' recordings
  // Only a host barrier, recorded once: submitted last when what comes before it does not
  // end with one.
  VkCommandBuffer host_tail = VK_NULL_HANDLE;
  bool ends_host_visible = false;
  VkQueryPool queries = VK_NULL_HANDLE;  // 2 timestamps per op, created when profiling
  RecordResources resources;
  HazardTracker hazards;  // of the eager ops since the last barrier
  std::vector<std::shared_ptr<Recording>> runs;
  struct Profiled {
    phx_plugin_profile* profile;
    VkQueryPool queries;  // VK_NULL_HANDLE when not timed
    uint32_t query;       // its first timestamp
    uint32_t dispatches;
    PipelineCompiles compiles;  // what recording it created
  };
  std::vector<Profiled> profiled;
  uint64_t last_ticket = 0;
};

namespace {

void add_metric(phx_plugin_profile& profile, const char* name, double value) {
  if (profile.metric_count < PHX_PLUGIN_MAX_METRICS)
    profile.metrics[profile.metric_count++] = {name, value};
}

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
    batch->resources.destroy(device_);
    vkDestroyQueryPool(vk, batch->queries, nullptr);
    for (auto& run : batch->runs) run->in_flight = false;
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

VkCommandBuffer Stream::allocate_commands() {
  auto info =
      vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
  info.commandPool = pool_;
  info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  info.commandBufferCount = 1;
  VkCommandBuffer commands;
  check(vkAllocateCommandBuffers(device_.vk(), &info, &commands), "vkAllocateCommandBuffers");
  return commands;
}

uint64_t Stream::submit(const phx_plugin_op& op) {
  retire_completed();
  Batch& batch = open_batch();
  if (batch.used == batch.commands.size()) batch.commands.push_back(allocate_commands());
  // Room first: nothing after the recording throws (the tail may follow it).
  batch.submitted.reserve(batch.submitted.size() + 2);
  if (op.profile != nullptr) batch.profiled.reserve(batch.profiled.size() + 1);
  VkCommandBuffer commands = batch.commands[batch.used];
  const bool timed = op.profile != nullptr && device_.timestamp_bits() > 0;
  if (timed && batch.queries == VK_NULL_HANDLE) {
    auto info = vk_struct<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
    info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    info.queryCount = 2 * kBatchOps;
    check(vkCreateQueryPool(device_.vk(), &info, nullptr, &batch.queries), "vkCreateQueryPool");
  }
  const Timestamps timestamps{batch.queries, uint32_t(2 * batch.used)};
  // Submit at once when nothing of this stream is running (the device would idle), else
  // let ops gather while it works. Only the last op of a submission needs the host
  // barrier; when that is not known yet, flush() adds it.
  const bool flush_now = batch.used + 1 >= kBatchOps || in_flight_.empty();

  auto begin = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(commands, &begin), "vkBeginCommandBuffer");
  const HazardTracker hazards_before = batch.hazards;
  CommandRecorder recorder(device_, commands, batch.resources, batch.hazards);
  try {
    recorder.record(op, timed ? &timestamps : nullptr);
    if (flush_now) record_host_barrier(commands);
    check(vkEndCommandBuffer(commands), "vkEndCommandBuffer");
  } catch (...) {
    // Nothing of the op stays: its commands are dropped, its scratch freed (~CommandRecorder).
    vkResetCommandBuffer(commands, 0);
    batch.hazards = hazards_before;
    throw;
  }
  ++batch.used;
  batch.submitted.push_back(commands);
  batch.ends_host_visible = flush_now;
  if (op.profile != nullptr)
    batch.profiled.push_back({op.profile, timed ? batch.queries : VK_NULL_HANDLE, timestamps.first,
                              recorder.op_dispatches(), recorder.pipeline_compiles()});
  ++device_.stats().ops;
  device_.stats().dispatches += recorder.op_dispatches();
  device_.stats().barriers += recorder.barriers();
  batch.last_ticket = ++recorded_;
  if (flush_now) flush();
  return recorded_;
}

uint64_t Stream::run(Executable& executable, const phx_plugin_tensor* values,
                     phx_plugin_profile* const* node_profiles) {
  retire_completed();
  Batch& batch = open_batch();
  // Room first: nothing below throws between taking the recording and flushing it.
  batch.submitted.reserve(batch.submitted.size() + 2);
  batch.runs.reserve(batch.runs.size() + 1);
  if (node_profiles != nullptr)
    batch.profiled.reserve(batch.profiled.size() + executable.node_count());
  const bool timed = node_profiles != nullptr && device_.timestamp_bits() > 0;
  std::shared_ptr<Recording> recording = executable.prepare_run(values, timed);
  batch.submitted.push_back(recording->commands);
  batch.runs.push_back(recording);
  batch.ends_host_visible = true;       // a recording ends with the host barrier
  batch.hazards.wait_for_everything();  // the recording's writes are not tracked here
  for (size_t i = 0; node_profiles != nullptr && i < executable.node_count(); ++i)
    if (node_profiles[i] != nullptr && executable.node_has_figures(i))
      batch.profiled.push_back({node_profiles[i], timed ? recording->queries : VK_NULL_HANDLE,
                                uint32_t(2 * i), recording->node_dispatches[i],
                                PipelineCompiles{}});  // compiled with the executable
  ++device_.stats().runs;
  device_.stats().ops += executable.node_count();
  device_.stats().dispatches += recording->dispatches;
  device_.stats().barriers += recording->barriers;
  batch.last_ticket = ++recorded_;
  flush();
  return recorded_;
}

void Stream::flush() {
  if (!open_ || open_->submitted.empty()) return;
  Batch& batch = *open_;
  try {
    if (!batch.ends_host_visible) {
      if (batch.host_tail == VK_NULL_HANDLE) {
        VkCommandBuffer tail = allocate_commands();
        auto begin =
            vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
        check(vkBeginCommandBuffer(tail, &begin), "vkBeginCommandBuffer");
        record_host_barrier(tail);
        check(vkEndCommandBuffer(tail), "vkEndCommandBuffer");
        batch.host_tail = tail;
      }
      batch.submitted.push_back(batch.host_tail);
      batch.ends_host_visible = true;
    }
    auto timeline =
        vk_struct<VkTimelineSemaphoreSubmitInfo>(VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO);
    timeline.signalSemaphoreValueCount = 1;
    timeline.pSignalSemaphoreValues = &batch.last_ticket;
    auto info = vk_struct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
    info.pNext = &timeline;
    info.commandBufferCount = uint32_t(batch.submitted.size());
    info.pCommandBuffers = batch.submitted.data();
    info.signalSemaphoreCount = 1;
    info.pSignalSemaphores = &timeline_;
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
      if (p.queries != VK_NULL_HANDLE) {
        uint64_t stamps[2] = {};
        if (vkGetQueryPoolResults(device_.vk(), p.queries, p.query, 2, sizeof stamps, stamps,
                                  sizeof stamps[0], VK_QUERY_RESULT_64_BIT) == VK_SUCCESS) {
          const uint64_t ticks = ((stamps[1] & mask) - (stamps[0] & mask)) & mask;
          add_metric(*p.profile, "gpu_time_ns", double(ticks) * device_.timestamp_period());
        }
      }
      add_metric(*p.profile, "dispatches", double(p.dispatches));
      if (p.compiles.created > 0) {
        add_metric(*p.profile, "pipeline_compile_ns", double(p.compiles.ns));
        add_metric(*p.profile, "pipelines_created", double(p.compiles.created));
        add_metric(*p.profile, "pipeline_cache_hits", double(p.compiles.cache_hits));
      }
    }
  }
  batch.profiled.clear();
  batch.resources.reset(device_);
  for (size_t i = 0; i < batch.used; ++i) vkResetCommandBuffer(batch.commands[i], 0);
  batch.used = 0;
  batch.submitted.clear();
  batch.ends_host_visible = false;
  batch.hazards = HazardTracker();
  // After the profiles: a recording may be recorded again once it is out of flight.
  for (auto& run : batch.runs) run->in_flight = false;
  batch.runs.clear();
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
