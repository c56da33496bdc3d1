#include "pipelines.h"

#include <chrono>
#include <cstring>
#include <filesystem>
#include <vector>

#include "spirv_modules.h"
#include "vk_check.h"

namespace phx::vulkan {
namespace {

std::vector<uint8_t> pipeline_cache_data(VkDevice device, VkPipelineCache cache) {
  size_t size = 0;
  check(vkGetPipelineCacheData(device, cache, &size, nullptr), "vkGetPipelineCacheData");
  std::vector<uint8_t> data(size);
  check(vkGetPipelineCacheData(device, cache, &size, data.data()), "vkGetPipelineCacheData");
  data.resize(size);
  return data;
}

// Whether data holds the driver's header alone (VkPipelineCacheHeaderVersionOne begins
// with its own length): no pipeline.
bool header_only(std::span<const uint8_t> data) {
  uint32_t header = 0;
  if (data.size() >= sizeof header) std::memcpy(&header, data.data(), sizeof header);
  return data.size() <= header;
}

}  // namespace

Pipelines::Pipelines(const PipelinesConfig& config, const Logger& logger, DeviceStats& stats)
    : config_(config), logger_(logger), stats_(stats) {
  std::vector<uint8_t> payload;
  if (config_.cache_path.empty()) {
    cache_state_ = "off";
  } else if (!std::filesystem::exists(config_.cache_path)) {
    cache_state_ = "empty (no " + config_.cache_path + " yet)";
  } else {
    std::vector<uint8_t> file;
    std::string reason;
    if (read_file(config_.cache_path, kMaxPipelineCacheBytes + 4096, file, reason) &&
        unwrap_pipeline_cache(config_.identity, file, payload, reason)) {
      cache_state_ =
          "loaded " + std::to_string(payload.size()) + " bytes from " + config_.cache_path;
    } else {
      payload.clear();
      cache_state_ = "discarded " + config_.cache_path + ": " + reason;
      logger_.log(PHX_LOG_WARN, "pipeline cache " + config_.cache_path + " discarded: " + reason);
    }
  }
  auto info = vk_struct<VkPipelineCacheCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO);
  info.initialDataSize = payload.size();
  info.pInitialData = payload.empty() ? nullptr : payload.data();
  VkResult result = vkCreatePipelineCache(config_.device, &info, nullptr, &cache_);
  if (result != VK_SUCCESS && !payload.empty()) {
    // The driver refused data that passed our checks: start empty rather than fail.
    logger_.log(PHX_LOG_WARN, "the driver refused the pipeline cache " + config_.cache_path + " (" +
                                  result_name(result) + "): starting empty");
    cache_state_ = "refused by the driver";
    payload.clear();
    info.initialDataSize = 0;
    info.pInitialData = nullptr;
    result = vkCreatePipelineCache(config_.device, &info, nullptr, &cache_);
  }
  check(result, "vkCreatePipelineCache");
  // A driver that caches nothing (lavapipe) saves its header alone: that is no cache.
  cache_loaded_ = !header_only(payload);
}

Pipelines::~Pipelines() {
  save();
  for (auto& [key, kernel] : kernels_) vkDestroyPipeline(config_.device, kernel.pipeline, nullptr);
  for (auto& [count, layout] : layouts_) {
    vkDestroyPipelineLayout(config_.device, layout.pipeline_layout, nullptr);
    vkDestroyDescriptorSetLayout(config_.device, layout.set_layout, nullptr);
  }
  for (auto& [name, module] : shaders_) vkDestroyShaderModule(config_.device, module, nullptr);
  vkDestroyPipelineCache(config_.device, cache_, nullptr);
}

void Pipelines::save() {
  if (config_.cache_path.empty() || stats_.pipelines_created == 0) return;
  size_t size = 0;
  if (vkGetPipelineCacheData(config_.device, cache_, &size, nullptr) != VK_SUCCESS) return;
  if (size > kMaxPipelineCacheBytes) {
    logger_.log(PHX_LOG_INFO, "pipeline cache not saved: " + std::to_string(size) +
                                  " bytes, above the " + std::to_string(kMaxPipelineCacheBytes) +
                                  " allowed");
    return;
  }
  std::vector<uint8_t> payload(size);
  if (vkGetPipelineCacheData(config_.device, cache_, &size, payload.data()) != VK_SUCCESS) return;
  payload.resize(size);
  std::string reason;
  if (!write_file_atomically(config_.cache_path, wrap_pipeline_cache(config_.identity, payload),
                             reason))
    logger_.log(PHX_LOG_WARN, "pipeline cache not saved: " + reason);
}

std::vector<uint8_t> Pipelines::cache_data(std::span<const std::string> keys) {
  std::lock_guard lock(mutex_);
  // A driver that caches nothing (lavapipe) would give the header alone again, after
  // compiling every pipeline once more.
  std::vector<uint8_t> device_data = pipeline_cache_data(config_.device, cache_);
  if (header_only(device_data)) return device_data;
  auto info = vk_struct<VkPipelineCacheCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO);
  struct OwnedCache {  // destroyed however this ends
    VkDevice device;
    VkPipelineCache cache = VK_NULL_HANDLE;
    ~OwnedCache() { vkDestroyPipelineCache(device, cache, nullptr); }
  } owned{config_.device};
  check(vkCreatePipelineCache(config_.device, &info, nullptr, &owned.cache),
        "vkCreatePipelineCache");
  for (const std::string& key : keys) {
    const auto it = specs_.find(key);
    if (it == specs_.end())
      throw Error{PHX_STATUS_INTERNAL, "no pipeline " + key + " was made on this device"};
    VkPipeline pipeline = VK_NULL_HANDLE;
    check(create(it->second, owned.cache, nullptr, &pipeline), "vkCreateComputePipelines");
    vkDestroyPipeline(config_.device, pipeline, nullptr);
  }
  return pipeline_cache_data(config_.device, owned.cache);
}

void Pipelines::seed(std::span<const uint8_t> data) {
  auto info = vk_struct<VkPipelineCacheCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO);
  info.initialDataSize = data.size();
  info.pInitialData = data.data();
  VkPipelineCache source = VK_NULL_HANDLE;
  const VkResult result = vkCreatePipelineCache(config_.device, &info, nullptr, &source);
  if (result != VK_SUCCESS) {
    logger_.log(PHX_LOG_WARN, std::string("the driver refused a serialized executable's pipeline "
                                          "cache (") +
                                  result_name(result) + "): its pipelines are compiled again");
    return;
  }
  std::lock_guard lock(mutex_);  // vkMergePipelineCaches needs its destination to itself
  const VkResult merged = vkMergePipelineCaches(config_.device, cache_, 1, &source);
  vkDestroyPipelineCache(config_.device, source, nullptr);
  check(merged, "vkMergePipelineCaches");
  // A driver that caches nothing (lavapipe) serializes its header alone: that is no cache.
  cache_loaded_ = cache_loaded_ || !header_only(data);
}

const Pipelines::Layout& Pipelines::layout(uint32_t binding_count) {
  auto it = layouts_.find(binding_count);
  if (it != layouts_.end()) return it->second;
  VkDescriptorSetLayoutBinding bindings[kMaxBindings];
  for (uint32_t i = 0; i < binding_count; ++i)
    bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  auto set_info = vk_struct<VkDescriptorSetLayoutCreateInfo>(
      VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
  set_info.flags =
      config_.push_descriptor ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR : 0;
  set_info.bindingCount = binding_count;
  set_info.pBindings = bindings;
  Layout layout;
  check(vkCreateDescriptorSetLayout(config_.device, &set_info, nullptr, &layout.set_layout),
        "vkCreateDescriptorSetLayout");
  const VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, config_.push_constant_bytes};
  auto info = vk_struct<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
  info.setLayoutCount = 1;
  info.pSetLayouts = &layout.set_layout;
  info.pushConstantRangeCount = 1;
  info.pPushConstantRanges = &range;
  const VkResult result =
      vkCreatePipelineLayout(config_.device, &info, nullptr, &layout.pipeline_layout);
  if (result != VK_SUCCESS) {
    vkDestroyDescriptorSetLayout(config_.device, layout.set_layout, nullptr);
    check(result, "vkCreatePipelineLayout");
  }
  return layouts_[binding_count] = layout;
}

VkShaderModule Pipelines::shader(std::string_view name) {
  auto it = shaders_.find(std::string(name));
  if (it != shaders_.end()) return it->second;
  const SpirvModule* module = find_spirv_module(name);
  if (module == nullptr)
    throw Error{PHX_STATUS_INTERNAL,
                "no SPIR-V module named '" + std::string(name) + "' is embedded in the plugin"};
  auto info = vk_struct<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
  info.codeSize = module->word_count * sizeof(uint32_t);
  info.pCode = module->words;
  VkShaderModule handle;
  check(vkCreateShaderModule(config_.device, &info, nullptr, &handle), "vkCreateShaderModule");
  return shaders_[std::string(name)] = handle;
}

VkResult Pipelines::create(const Spec& spec, VkPipelineCache cache,
                           VkPipelineCreationFeedbackEXT* feedback, VkPipeline* out) {
  std::vector<VkSpecializationMapEntry> entries;
  std::vector<uint32_t> values;
  for (const auto& c : spec.constants) {
    entries.push_back({c.id, uint32_t(values.size() * sizeof(uint32_t)), sizeof(uint32_t)});
    values.push_back(c.value);
  }
  VkSpecializationInfo specialization{uint32_t(entries.size()), entries.data(),
                                      values.size() * sizeof(uint32_t), values.data()};
  auto info =
      vk_struct<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
  info.stage = vk_struct<VkPipelineShaderStageCreateInfo>(
      VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO);
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = shader(spec.module);
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = entries.empty() ? nullptr : &specialization;
  info.layout = layout(spec.binding_count).pipeline_layout;
  auto feedback_info = vk_struct<VkPipelineCreationFeedbackCreateInfoEXT>(
      VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO_EXT);
  feedback_info.pPipelineCreationFeedback = feedback;
  if (feedback != nullptr) info.pNext = &feedback_info;
  return vkCreateComputePipelines(config_.device, cache, 1, &info, nullptr, out);
}

const Kernel& Pipelines::get(std::string_view module, uint32_t binding_count,
                             std::span<const OpRecorder::SpecConstant> constants,
                             PipelineCompiles* compiles) {
  if (binding_count > kMaxBindings)
    throw Error{PHX_STATUS_INTERNAL, std::to_string(binding_count) + " bindings for " +
                                         std::string(module) + ", at most " +
                                         std::to_string(kMaxBindings)};
  std::string key = std::string(module) + "/" + std::to_string(binding_count);
  for (const auto& c : constants) key += "/" + std::to_string(c.id) + "=" + std::to_string(c.value);
  std::lock_guard lock(mutex_);
  auto it = kernels_.find(key);
  if (it != kernels_.end()) return it->second;

  const Spec spec{std::string(module), binding_count, {constants.begin(), constants.end()}};
  const Layout& chosen = layout(binding_count);
  Kernel kernel{VK_NULL_HANDLE, chosen.pipeline_layout, chosen.set_layout, key};
  VkPipelineCreationFeedbackEXT feedback{};
  const auto start = std::chrono::steady_clock::now();
  const VkResult result =
      create(spec, cache_, config_.creation_feedback ? &feedback : nullptr, &kernel.pipeline);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  if (result != VK_SUCCESS)
    throw Error{result_status(result) == PHX_STATUS_OUT_OF_MEMORY ? PHX_STATUS_OUT_OF_MEMORY
                                                                  : PHX_STATUS_COMPILATION_ERROR,
                "the driver could not create the pipeline " + key + ": " + result_name(result)};
  const auto elapsed_ns =
      uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
  stats_.pipeline_compile_ns += elapsed_ns;
  ++stats_.pipelines_created;
  // The driver's word where it gives one; else a pipeline created from a loaded cache is
  // counted as a hit, the best a driver without feedback lets us say.
  bool hit = cache_loaded_;
  if (config_.creation_feedback && (feedback.flags & VK_PIPELINE_CREATION_FEEDBACK_VALID_BIT_EXT))
    hit = (feedback.flags & VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT_EXT) !=
          0;
  ++(hit ? stats_.pipeline_cache_hits : stats_.pipeline_cache_misses);
  if (compiles != nullptr) {
    compiles->ns += elapsed_ns;
    ++compiles->created;
    compiles->cache_hits += hit ? 1 : 0;
  }
  specs_.emplace(key, spec);
  return kernels_[key] = kernel;
}

}  // namespace phx::vulkan
