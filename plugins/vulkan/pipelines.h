// A device's compute pipelines: one per (SPIR-V module, binding count, specialization
// constants), created on first use and kept; their layouts; and the VkPipelineCache that
// makes the next process's creations cheap, loaded from and saved to a file
// (pipeline_cache_file.h). Thread-safe.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "device_stats.h"
#include "instance.h"
#include "op_recorder.h"
#include "pipeline_cache_file.h"

namespace phx::vulkan {

// A recorder binds at most this many buffers per dispatch.
constexpr uint32_t kMaxBindings = 16;

struct Kernel {
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  std::string key;  // module, binding count and constants: what Pipelines::get keys it by
};

// The pipelines a caller of Pipelines::get made it create: for an op's profile record
// and, through it, a trace's compile events.
struct PipelineCompiles {
  uint64_t ns = 0;  // host time spent creating them
  uint32_t created = 0;
  uint32_t cache_hits = 0;  // of those, the ones the pipeline cache held
};

struct PipelinesConfig {
  VkDevice device = VK_NULL_HANDLE;
  bool push_descriptor = false;    // set layouts for vkCmdPushDescriptorSetKHR
  bool creation_feedback = false;  // VK_EXT_pipeline_creation_feedback (or 1.3)
  uint32_t push_constant_bytes = 128;
  PipelineCacheIdentity identity;
  std::string cache_path;  // empty: no cache file
};

class Pipelines {
 public:
  // Loads the cache file; a missing one is silent, a bad one a warning.
  Pipelines(const PipelinesConfig& config, const Logger& logger, DeviceStats& stats);
  // Saves the cache file if pipelines were created, then destroys everything.
  ~Pipelines();
  Pipelines(const Pipelines&) = delete;
  Pipelines& operator=(const Pipelines&) = delete;

  // Throws Error: INTERNAL for an unknown module or too many bindings,
  // COMPILATION_ERROR when the driver refuses the pipeline. A pipeline it creates is
  // added to *compiles when compiles is not null.
  const Kernel& get(std::string_view module, uint32_t binding_count,
                    std::span<const OpRecorder::SpecConstant> constants,
                    PipelineCompiles* compiles = nullptr);

  // The device and driver the cache data is for.
  const PipelineCacheIdentity& identity() const { return config_.identity; }
  // Pipeline cache data (vkGetPipelineCacheData) holding the pipelines of keys (Kernel::key
  // of kernels get made) and no other: they are created again into a cache of their own,
  // which a driver that has them in its own shader cache does fast. Throws Error:
  // INTERNAL for a key get never made.
  std::vector<uint8_t> cache_data(std::span<const std::string> keys);
  // Merges data, cache data of this device that driver_header_matches accepted, into the
  // pipeline cache, so that the pipelines it holds are created from it; a driver that
  // refuses it leaves the cache as it was (logged). Throws Error.
  void seed(std::span<const uint8_t> data);

  // "loaded N bytes from <path>", "empty (...)", "off (...)": for the properties.
  const std::string& cache_state() const { return cache_state_; }

 private:
  struct Layout {
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    VkPipelineLayout pipeline_layout = VK_NULL_HANDLE;
  };
  // What a pipeline is made of, kept per key to make it again into another cache.
  struct Spec {
    std::string module;
    uint32_t binding_count = 0;
    std::vector<OpRecorder::SpecConstant> constants;
  };
  const Layout& layout(uint32_t binding_count);    // under mutex_
  VkShaderModule shader(std::string_view module);  // under mutex_
  // Creates spec's pipeline with cache; feedback may be null. Under mutex_.
  VkResult create(const Spec& spec, VkPipelineCache cache, VkPipelineCreationFeedbackEXT* feedback,
                  VkPipeline* out);
  void save();

  PipelinesConfig config_;
  const Logger& logger_;
  DeviceStats& stats_;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  bool cache_loaded_ = false;  // the driver got pipelines from the file or an executable
  std::string cache_state_;
  std::mutex mutex_;
  std::map<uint32_t, Layout> layouts_;
  std::unordered_map<std::string, VkShaderModule> shaders_;
  std::unordered_map<std::string, Kernel> kernels_;
  std::unordered_map<std::string, Spec> specs_;
};

}  // namespace phx::vulkan
