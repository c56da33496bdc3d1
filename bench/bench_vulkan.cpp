// The Vulkan device's kernels against the CPU, in one run (docs/vulkan.md, "Kernels"):
// - square matmul at N = 256 ... 2048, f32 and bf16, on the Vulkan device through the C
//   API (the MXU-tiled kernel), on the CPU device, and OpenBLAS cblas_sgemm, in GFLOP/s;
// - the naive one-invocation-per-output matmul shader (shaders/bench_naive_matmul.comp)
//   at N = 1024, 2048, run with raw Vulkan on the same physical device: the baseline of
//   the tiled kernel;
// - the cost of one tiny op (add of two 1x4 f32 tensors, phx_op_run + phx_stream_wait)
//   against a bare empty dispatch, pre-recorded, submitted and waited on with a fence;
// - 64 tiny adds queued, then one wait, per op: independent (each into its own output:
//   no barrier between them in a submission) and dependent (each reads the one before:
//   a barrier before each);
// - chain64 of bench_graph (64 adds of a constant to a 1x16 f32 tensor) compiled for the
//   Vulkan device, run and waited on: a whole executable against the empty dispatch;
// - attention at sequence 1024 and 4096 (B 1, H 8, D 64 and 128, causal and not),
//   4 S^2 D H flops, half that when causal (args S/D/causal).
// It ends with the ratios: tiled / naive, tiled / OpenBLAS, tiny op / empty dispatch.
//
// Threads: lavapipe reads LP_NUM_THREADS when the device is created; unless it is set,
// the benchmark sets it (and the CPU plugin's and OpenBLAS's count) to
// PHX_BENCH_THREADS, else one per hardware thread.
// The raw Vulkan path is the benchmark's own: the bench modules are embedded in this
// program (shaders.cmake, SET bench), so the baseline shares no code with the plugin.
#include <cblas.h>
#include <phynexus/graph.h>
#include <vulkan/vulkan.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <random>

#include "bench_common.h"
#include "spirv_modules.h"

namespace {

using phx_bench::check;

constexpr int64_t kSizes[] = {256, 512, 1024, 2048};
constexpr const char* kFlops = "FLOPS";

// ---- Devices through the C API ---------------------------------------------------------

struct Device {
  size_t index = 0;
  phx_stream stream = nullptr;
  std::string name;
};

struct Devices {
  phx_context context = nullptr;
  Device cpu;
  Device vulkan;
  bool has_vulkan = false;
};
Devices* g = nullptr;

class Tensor {
 public:
  Tensor(const Device& device, phx_dtype dtype, std::vector<int64_t> shape) {
    check(phx_tensor_create(g->context, device.index, dtype, shape.size(), shape.data(), &handle_),
          "phx_tensor_create");
  }
  ~Tensor() { phx_tensor_destroy(handle_); }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  phx_tensor get() const { return handle_; }

  // Random values in [-1, 1], converted by the device itself from f32.
  void fill_random(const Device& device, unsigned seed) {
    phx_tensor_desc desc = PHX_TENSOR_DESC_INIT;
    check(phx_tensor_describe(handle_, &desc), "phx_tensor_describe");
    size_t count = 1;
    for (uint32_t d = 0; d < desc.rank; ++d) count *= static_cast<size_t>(desc.shape[d]);
    std::mt19937 generator(seed);
    std::uniform_real_distribution<float> distribution(-1.0f, 1.0f);
    std::vector<float> values(count);
    for (float& v : values) v = distribution(generator);
    Tensor f32(device, PHX_DTYPE_F32, std::vector<int64_t>(desc.shape, desc.shape + desc.rank));
    check(phx_tensor_upload(f32.get(), 0, values.data(), values.size() * sizeof(float)),
          "phx_tensor_upload");
    if (desc.dtype == PHX_DTYPE_F32) {
      check(phx_tensor_upload(handle_, 0, values.data(), values.size() * sizeof(float)),
            "phx_tensor_upload");
      return;
    }
    run(device, PHX_OP_CAST, nullptr, {f32.get()}, handle_);
    check(phx_stream_synchronize(device.stream), "phx_stream_synchronize");
  }

  static void run(const Device& device, phx_op_id op, const void* params,
                  std::vector<phx_tensor> inputs, phx_tensor output) {
    phx_op_desc desc = phx_bench::op_desc(op, inputs.data(), inputs.size(), &output);
    desc.params = params;
    check(phx_op_run(device.stream, &desc, nullptr), "phx_op_run");
  }

 private:
  phx_tensor handle_ = nullptr;
};

// ---- Raw Vulkan: the naive baseline and the empty dispatch -----------------------------

void vk_check(VkResult result, const char* what) {
  if (result != VK_SUCCESS) {
    std::fprintf(stderr, "bench: %s: VkResult %d\n", what, static_cast<int>(result));
    std::exit(1);
  }
}

// One device, queue, command buffer and fence; pipelines of three storage buffers and
// 128 bytes of push constants.
class RawVulkan {
 public:
  explicit RawVulkan(const std::string& device_name) {
    VkApplicationInfo app{};
    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo instance_info{};
    instance_info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    instance_info.pApplicationInfo = &app;
    vk_check(vkCreateInstance(&instance_info, nullptr, &instance_), "vkCreateInstance");
    uint32_t count = 0;
    vkEnumeratePhysicalDevices(instance_, &count, nullptr);
    std::vector<VkPhysicalDevice> devices(count);
    vkEnumeratePhysicalDevices(instance_, &count, devices.data());
    physical_ = devices.at(0);
    for (VkPhysicalDevice d : devices) {
      VkPhysicalDeviceProperties properties;
      vkGetPhysicalDeviceProperties(d, &properties);
      if (device_name == properties.deviceName) physical_ = d;
    }
    vkGetPhysicalDeviceQueueFamilyProperties(physical_, &count, nullptr);
    std::vector<VkQueueFamilyProperties> families(count);
    vkGetPhysicalDeviceQueueFamilyProperties(physical_, &count, families.data());
    while (!(families.at(family_).queueFlags & VK_QUEUE_COMPUTE_BIT)) ++family_;
    const float priority = 1.0f;
    VkDeviceQueueCreateInfo queue_info{};
    queue_info.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
    queue_info.queueFamilyIndex = family_;
    queue_info.queueCount = 1;
    queue_info.pQueuePriorities = &priority;
    VkDeviceCreateInfo device_info{};
    device_info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
    device_info.queueCreateInfoCount = 1;
    device_info.pQueueCreateInfos = &queue_info;
    vk_check(vkCreateDevice(physical_, &device_info, nullptr, &device_), "vkCreateDevice");
    vkGetDeviceQueue(device_, family_, 0, &queue_);
    VkCommandPoolCreateInfo pool_info{};
    pool_info.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
    pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool_info.queueFamilyIndex = family_;
    vk_check(vkCreateCommandPool(device_, &pool_info, nullptr, &pool_), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo alloc{};
    alloc.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    alloc.commandPool = pool_;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    vk_check(vkAllocateCommandBuffers(device_, &alloc, &commands_), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fence_info{};
    fence_info.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    vk_check(vkCreateFence(device_, &fence_info, nullptr, &fence_), "vkCreateFence");
    VkDescriptorSetLayoutBinding bindings[3] = {};
    for (uint32_t i = 0; i < 3; ++i) {
      bindings[i].binding = i;
      bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      bindings[i].descriptorCount = 1;
      bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo set_info{};
    set_info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
    set_info.bindingCount = 3;
    set_info.pBindings = bindings;
    vk_check(vkCreateDescriptorSetLayout(device_, &set_info, nullptr, &set_layout_), "set layout");
    VkPushConstantRange range = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 128};
    VkPipelineLayoutCreateInfo layout_info{};
    layout_info.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
    layout_info.setLayoutCount = 1;
    layout_info.pSetLayouts = &set_layout_;
    layout_info.pushConstantRangeCount = 1;
    layout_info.pPushConstantRanges = &range;
    vk_check(vkCreatePipelineLayout(device_, &layout_info, nullptr, &layout_), "pipeline layout");
    VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 3};
    VkDescriptorPoolCreateInfo dpool_info{};
    dpool_info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
    dpool_info.maxSets = 1;
    dpool_info.poolSizeCount = 1;
    dpool_info.pPoolSizes = &size;
    vk_check(vkCreateDescriptorPool(device_, &dpool_info, nullptr, &descriptor_pool_), "pool");
    VkDescriptorSetAllocateInfo set_alloc{};
    set_alloc.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    set_alloc.descriptorPool = descriptor_pool_;
    set_alloc.descriptorSetCount = 1;
    set_alloc.pSetLayouts = &set_layout_;
    vk_check(vkAllocateDescriptorSets(device_, &set_alloc, &set_), "vkAllocateDescriptorSets");
  }

  ~RawVulkan() {
    vkDeviceWaitIdle(device_);
    for (VkPipeline p : pipelines_) vkDestroyPipeline(device_, p, nullptr);
    for (size_t i = 0; i < buffers_.size(); ++i) {
      vkDestroyBuffer(device_, buffers_[i], nullptr);
      vkFreeMemory(device_, memories_[i], nullptr);
    }
    vkDestroyDescriptorPool(device_, descriptor_pool_, nullptr);
    vkDestroyPipelineLayout(device_, layout_, nullptr);
    vkDestroyDescriptorSetLayout(device_, set_layout_, nullptr);
    vkDestroyFence(device_, fence_, nullptr);
    vkDestroyCommandPool(device_, pool_, nullptr);
    vkDestroyDevice(device_, nullptr);
    vkDestroyInstance(instance_, nullptr);
  }
  RawVulkan(const RawVulkan&) = delete;
  RawVulkan& operator=(const RawVulkan&) = delete;

  VkPipeline pipeline(const char* module_name) {
    const phx::vulkan::SpirvModule* module = phx::vulkan::find_spirv_module(module_name);
    if (module == nullptr) {
      std::fprintf(stderr, "bench: no SPIR-V module %s\n", module_name);
      std::exit(1);
    }
    VkShaderModuleCreateInfo module_info{};
    module_info.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    module_info.codeSize = module->word_count * sizeof(uint32_t);
    module_info.pCode = module->words;
    VkShaderModule shader = VK_NULL_HANDLE;
    vk_check(vkCreateShaderModule(device_, &module_info, nullptr, &shader), "shader module");
    VkComputePipelineCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
    info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    info.stage.module = shader;
    info.stage.pName = "main";
    info.layout = layout_;
    VkPipeline pipeline = VK_NULL_HANDLE;
    vk_check(vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &info, nullptr, &pipeline),
             "vkCreateComputePipelines");
    vkDestroyShaderModule(device_, shader, nullptr);
    pipelines_.push_back(pipeline);
    return pipeline;
  }

  // A host-visible buffer of `bytes`, filled with `fill` (as floats) when given.
  VkBuffer buffer(VkDeviceSize bytes, const std::vector<float>* fill = nullptr) {
    VkBufferCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    info.size = bytes;
    info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    VkBuffer buffer = VK_NULL_HANDLE;
    vk_check(vkCreateBuffer(device_, &info, nullptr, &buffer), "vkCreateBuffer");
    VkMemoryRequirements requirements;
    vkGetBufferMemoryRequirements(device_, buffer, &requirements);
    VkPhysicalDeviceMemoryProperties memory;
    vkGetPhysicalDeviceMemoryProperties(physical_, &memory);
    const VkMemoryPropertyFlags wanted =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t type = 0;
    while (!((requirements.memoryTypeBits >> type) & 1u) ||
           (memory.memoryTypes[type].propertyFlags & wanted) != wanted) {
      ++type;
    }
    VkMemoryAllocateInfo alloc{};
    alloc.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    alloc.allocationSize = requirements.size;
    alloc.memoryTypeIndex = type;
    VkDeviceMemory device_memory = VK_NULL_HANDLE;
    vk_check(vkAllocateMemory(device_, &alloc, nullptr, &device_memory), "vkAllocateMemory");
    vk_check(vkBindBufferMemory(device_, buffer, device_memory, 0), "vkBindBufferMemory");
    if (fill != nullptr) {
      void* mapped = nullptr;
      vk_check(vkMapMemory(device_, device_memory, 0, bytes, 0, &mapped), "vkMapMemory");
      std::memcpy(mapped, fill->data(), fill->size() * sizeof(float));
      vkUnmapMemory(device_, device_memory);
    }
    buffers_.push_back(buffer);
    memories_.push_back(device_memory);
    return buffer;
  }

  // Records one dispatch with the three buffers bound; run() submits it.
  void record(VkPipeline pipeline, const std::vector<VkBuffer>& buffers, const void* push,
              uint32_t push_size, uint32_t x, uint32_t y) {
    VkDescriptorBufferInfo infos[3] = {};
    VkWriteDescriptorSet writes[3] = {};
    for (uint32_t i = 0; i < 3; ++i) {
      infos[i] = {buffers[i % buffers.size()], 0, VK_WHOLE_SIZE};
      writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
      writes[i].dstSet = set_;
      writes[i].dstBinding = i;
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    vkUpdateDescriptorSets(device_, 3, writes, 0, nullptr);
    vk_check(vkResetCommandBuffer(commands_, 0), "vkResetCommandBuffer");
    VkCommandBufferBeginInfo begin{};
    begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    vk_check(vkBeginCommandBuffer(commands_, &begin), "vkBeginCommandBuffer");
    vkCmdBindPipeline(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    vkCmdBindDescriptorSets(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, layout_, 0, 1, &set_, 0,
                            nullptr);
    if (push_size > 0) {
      vkCmdPushConstants(commands_, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_size, push);
    }
    vkCmdDispatch(commands_, x, y, 1);
    vk_check(vkEndCommandBuffer(commands_), "vkEndCommandBuffer");
  }

  // Submits the recorded command buffer and waits for its fence.
  void run() {
    VkSubmitInfo submit{};
    submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &commands_;
    vk_check(vkQueueSubmit(queue_, 1, &submit, fence_), "vkQueueSubmit");
    vk_check(vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    vk_check(vkResetFences(device_, 1, &fence_), "vkResetFences");
  }

 private:
  VkInstance instance_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  uint32_t family_ = 0;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
  VkDescriptorSet set_ = VK_NULL_HANDLE;
  std::vector<VkPipeline> pipelines_;
  std::vector<VkBuffer> buffers_;
  std::vector<VkDeviceMemory> memories_;
};

// ---- Benchmarks --------------------------------------------------------------------------

void set_flops(benchmark::State& state, double flops_per_iteration) {
  state.counters[kFlops] =
      benchmark::Counter(flops_per_iteration * state.iterations(), benchmark::Counter::kIsRate);
}

void matmul_on(benchmark::State& state, const Device& device, phx_dtype dtype) {
  const int64_t n = state.range(0);
  Tensor a(device, dtype, {n, n}), b(device, dtype, {n, n}), c(device, dtype, {n, n});
  a.fill_random(device, 1);
  b.fill_random(device, 2);
  // Once untimed: the first run creates the pipeline (lavapipe compiles it then).
  Tensor::run(device, PHX_OP_MATMUL, nullptr, {a.get(), b.get()}, c.get());
  check(phx_stream_synchronize(device.stream), "phx_stream_synchronize");
  for (auto _ : state) {
    Tensor::run(device, PHX_OP_MATMUL, nullptr, {a.get(), b.get()}, c.get());
    check(phx_stream_synchronize(device.stream), "phx_stream_synchronize");
  }
  set_flops(state, 2.0 * n * n * n);
  phx_bench::set_gemm_intensity(state, n, dtype, dtype);
}

void matmul_vulkan_f32(benchmark::State& state) { matmul_on(state, g->vulkan, PHX_DTYPE_F32); }
void matmul_vulkan_bf16(benchmark::State& state) { matmul_on(state, g->vulkan, PHX_DTYPE_BF16); }
void matmul_cpu_f32(benchmark::State& state) { matmul_on(state, g->cpu, PHX_DTYPE_F32); }
void matmul_cpu_bf16(benchmark::State& state) { matmul_on(state, g->cpu, PHX_DTYPE_BF16); }

void matmul_openblas_f32(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<float> a(static_cast<size_t>(n) * n, 0.5f), b(a.size(), 0.25f), c(a.size());
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state, 2.0 * n * n * n);
  phx_bench::set_gemm_intensity(state, n, PHX_DTYPE_F32, PHX_DTYPE_F32);
}

RawVulkan* g_raw = nullptr;

void matmul_naive_shader_f32(benchmark::State& state) {
  const auto n = static_cast<uint32_t>(state.range(0));
  const std::vector<float> values(static_cast<size_t>(n) * n, 0.5f);
  const VkDeviceSize bytes = values.size() * sizeof(float);
  const VkPipeline pipeline = g_raw->pipeline("bench_naive_matmul");
  const VkBuffer a = g_raw->buffer(bytes, &values), b = g_raw->buffer(bytes, &values),
                 c = g_raw->buffer(bytes);
  const uint32_t push[3] = {n, n, n};
  g_raw->record(pipeline, {a, b, c}, push, sizeof push, (n + 15) / 16, (n + 15) / 16);
  for (auto _ : state) g_raw->run();
  set_flops(state, 2.0 * n * n * n);
}

void empty_dispatch_raw(benchmark::State& state) {
  const VkBuffer unused = g_raw->buffer(64);
  g_raw->record(g_raw->pipeline("bench_empty"), {unused}, nullptr, 0, 1, 1);
  for (auto _ : state) g_raw->run();
}

void tiny_add_vulkan(benchmark::State& state) {
  const Device& device = g->vulkan;
  Tensor a(device, PHX_DTYPE_F32, {1, 4}), b(device, PHX_DTYPE_F32, {1, 4}),
      c(device, PHX_DTYPE_F32, {1, 4});
  a.fill_random(device, 3);
  b.fill_random(device, 4);
  for (auto _ : state) {
    uint64_t ticket = 0;
    const phx_tensor inputs[2] = {a.get(), b.get()};
    const phx_tensor output = c.get();
    const phx_op_desc desc = phx_bench::op_desc(PHX_OP_ADD, inputs, 2, &output);
    check(phx_op_run(device.stream, &desc, &ticket), "phx_op_run");
    check(phx_stream_wait(device.stream, ticket), "phx_stream_wait");
  }
}

constexpr int kQueuedAdds = 64;

void queued_adds_vulkan(benchmark::State& state) {
  const bool dependent = state.range(0) != 0;
  const Device& device = g->vulkan;
  Tensor a(device, PHX_DTYPE_F32, {1, 4}), b(device, PHX_DTYPE_F32, {1, 4});
  a.fill_random(device, 3);
  b.fill_random(device, 4);
  std::vector<std::unique_ptr<Tensor>> outputs;
  for (int i = 0; i < kQueuedAdds; ++i)
    outputs.push_back(std::make_unique<Tensor>(device, PHX_DTYPE_F32, std::vector<int64_t>{1, 4}));
  for (auto _ : state) {
    uint64_t ticket = 0;
    for (int i = 0; i < kQueuedAdds; ++i) {
      const phx_tensor inputs[2] = {dependent && i > 0 ? outputs[i - 1]->get() : a.get(), b.get()};
      const phx_tensor output = outputs[i]->get();
      const phx_op_desc desc = phx_bench::op_desc(PHX_OP_ADD, inputs, 2, &output);
      check(phx_op_run(device.stream, &desc, &ticket), "phx_op_run");
    }
    check(phx_stream_wait(device.stream, ticket), "phx_stream_wait");
  }
}

constexpr int kChain = 64;

void chain64_executable_vulkan(benchmark::State& state) {
  const Device& device = g->vulkan;
  const std::vector<int64_t> shape = {1, 16};
  Tensor x(device, PHX_DTYPE_F32, shape), c(device, PHX_DTYPE_F32, shape),
      y(device, PHX_DTYPE_F32, shape);
  x.fill_random(device, 8);
  c.fill_random(device, 9);
  phx_graph graph = nullptr;
  check(phx_graph_create(g->context, &graph), "phx_graph_create");
  phx_graph_input_desc input = PHX_GRAPH_INPUT_DESC_INIT;
  input.dtype = PHX_DTYPE_F32;
  input.rank = shape.size();
  input.shape = shape.data();
  phx_value v = 0, constant = 0;
  check(phx_graph_add_input(graph, &input, &v), "phx_graph_add_input");
  check(phx_graph_add_constant_tensor(graph, "c", c.get(), &constant),
        "phx_graph_add_constant_tensor");
  for (int i = 0; i < kChain; ++i) {
    const phx_value inputs[2] = {v, constant};
    phx_graph_node_desc node = PHX_GRAPH_NODE_DESC_INIT;
    node.op = PHX_OP_ADD;
    node.inputs = inputs;
    node.input_count = 2;
    node.output_count = 1;
    check(phx_graph_add_node(graph, &node, &v), "phx_graph_add_node");
  }
  check(phx_graph_add_output(graph, v, nullptr), "phx_graph_add_output");
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = device.index;
  phx_executable exe = nullptr;
  check(phx_graph_compile(g->context, graph, &options, &exe), "phx_graph_compile");
  phx_graph_destroy(graph);
  const phx_tensor in = x.get(), out = y.get();
  auto run = [&] {
    uint64_t ticket = 0;
    check(phx_executable_run(device.stream, exe, &in, 1, &out, 1, &ticket), "phx_executable_run");
    check(phx_stream_wait(device.stream, ticket), "phx_stream_wait");
  };
  run();  // records the executable's command buffer
  for (auto _ : state) run();
  phx_executable_destroy(exe);
}

void attention_vulkan_f32(benchmark::State& state) {
  const int64_t s = state.range(0), heads = 8, d = state.range(1);
  const bool causal = state.range(2) != 0;
  const Device& device = g->vulkan;
  Tensor q(device, PHX_DTYPE_F32, {1, heads, s, d}), k(device, PHX_DTYPE_F32, {1, heads, s, d}),
      v(device, PHX_DTYPE_F32, {1, heads, s, d}), o(device, PHX_DTYPE_F32, {1, heads, s, d});
  q.fill_random(device, 5);
  k.fill_random(device, 6);
  v.fill_random(device, 7);
  phx_attention_params params{};
  params.struct_size = sizeof params;
  params.mask = causal ? PHX_ATTENTION_MASK_CAUSAL : PHX_ATTENTION_MASK_NONE;
  Tensor::run(device, PHX_OP_ATTENTION, &params, {q.get(), k.get(), v.get()}, o.get());
  check(phx_stream_synchronize(device.stream), "phx_stream_synchronize");
  for (auto _ : state) {
    Tensor::run(device, PHX_OP_ATTENTION, &params, {q.get(), k.get(), v.get()}, o.get());
    check(phx_stream_synchronize(device.stream), "phx_stream_synchronize");
  }
  // q k^T and p v, 2 flops per multiply-add, over the scores the mask leaves (causal: half).
  set_flops(state, 4.0 * static_cast<double>(s) * s * d * heads / (causal ? 2 : 1));
}

void register_benchmarks() {
  for (int64_t n : kSizes) {
    const bool big = n >= 1024;
    benchmark::RegisterBenchmark("matmul_vulkan_f32", matmul_vulkan_f32)
        ->Arg(n)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark("matmul_vulkan_bf16", matmul_vulkan_bf16)
        ->Arg(n)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark("matmul_cpu_f32", matmul_cpu_f32)
        ->Arg(n)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark("matmul_cpu_bf16", matmul_cpu_bf16)
        ->Arg(n)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark("matmul_openblas_f32", matmul_openblas_f32)
        ->Arg(n)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    if (big) {
      // About 1 GFLOP/s: one iteration is seconds already.
      benchmark::RegisterBenchmark("matmul_naive_shader_f32", matmul_naive_shader_f32)
          ->Arg(n)
          ->Iterations(1)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
  benchmark::RegisterBenchmark("empty_dispatch_raw", empty_dispatch_raw)
      ->Arg(0)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime()
      ->Repetitions(3);
  benchmark::RegisterBenchmark("tiny_add_vulkan", tiny_add_vulkan)
      ->Arg(0)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime()
      ->Repetitions(3);
  for (int64_t dependent : {0, 1}) {
    benchmark::RegisterBenchmark("queued_adds_vulkan", queued_adds_vulkan)
        ->Arg(dependent)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime()
        ->Repetitions(3);
  }
  benchmark::RegisterBenchmark("chain64_executable_vulkan", chain64_executable_vulkan)
      ->Arg(0)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime()
      ->Repetitions(3);
  for (int64_t s : {1024, 4096}) {
    for (int64_t d : {64, 128}) {
      for (int64_t causal : {1, 0}) {
        benchmark::RegisterBenchmark("attention_vulkan_f32", attention_vulkan_f32)
            ->Args({s, d, causal})
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
      }
    }
  }
}

void print_ratios(const phx_bench::RecordingReporter& reporter) {
  const auto gflops = [&](const std::string& name) { return reporter.counter(name, kFlops) / 1e9; };
  std::printf("\nRatios (GFLOP/s over GFLOP/s):\n");
  for (int64_t n : kSizes) {
    const std::string arg = "/" + std::to_string(n);
    const double tiled = gflops("matmul_vulkan_f32" + arg);
    const double blas = gflops("matmul_openblas_f32" + arg);
    if (!(tiled > 0 && blas > 0)) continue;  // filtered out of this run
    std::printf(
        "  N %5lld: vulkan f32 %7.2f, bf16 %7.2f, cpu f32 %7.2f, openblas %7.2f GFLOP/s;"
        " vulkan/openblas %.3f",
        static_cast<long long>(n), tiled, gflops("matmul_vulkan_bf16" + arg),
        gflops("matmul_cpu_f32" + arg), blas, tiled / blas);
    const double naive = gflops("matmul_naive_shader_f32" + arg);
    if (naive > 0) std::printf(", tiled/naive %.1f (naive %.2f)", tiled / naive, naive);
    std::printf("\n");
  }
  const phx_bench::RecordingReporter::Run* empty = reporter.find("empty_dispatch_raw/0");
  const phx_bench::RecordingReporter::Run* tiny = reporter.find("tiny_add_vulkan/0");
  if (empty && tiny) {
    const double e = empty->GetAdjustedRealTime(), t = tiny->GetAdjustedRealTime();
    std::printf("  tiny add + wait %.1f us, empty dispatch + fence %.1f us: ratio %.2f\n", t, e,
                t / e);
  }
  const phx_bench::RecordingReporter::Run* chain = reporter.find("chain64_executable_vulkan/0");
  if (empty && chain) {
    const double e = empty->GetAdjustedRealTime(), c = chain->GetAdjustedRealTime();
    std::printf("  chain64 executable + wait %.1f us, empty dispatch + fence %.1f us: ratio %.2f\n",
                c, e, c / e);
  }
  const phx_bench::RecordingReporter::Run* independent = reporter.find("queued_adds_vulkan/0");
  const phx_bench::RecordingReporter::Run* dependent = reporter.find("queued_adds_vulkan/1");
  if (independent && dependent) {
    std::printf(
        "  %d tiny adds queued, then one wait: %.1f us per op independent, %.1f us per op "
        "dependent\n",
        kQueuedAdds, independent->GetAdjustedRealTime() / kQueuedAdds,
        dependent->GetAdjustedRealTime() / kQueuedAdds);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const unsigned threads = phx_bench::bench_threads();
  setenv("LP_NUM_THREADS", std::to_string(threads).c_str(), 0);  // unless already set
  setenv("PHX_NUM_THREADS", std::to_string(threads).c_str(), 1);
  openblas_set_num_threads(static_cast<int>(threads));
  Devices devices;
  g = &devices;
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  options.num_threads = threads;
  check(phx_context_create(&options, &devices.context), "phx_context_create");
  size_t count = 0;
  check(phx_device_count(devices.context, &count), "phx_device_count");
  bool has_cpu = false;
  for (size_t i = 0; i < count; ++i) {
    phx_device_info info{};
    info.struct_size = sizeof info;
    check(phx_device_get(devices.context, i, &info), "phx_device_get");
    Device* device = std::strcmp(info.plugin, "cpu") == 0 && !has_cpu ? &devices.cpu
                     : std::strcmp(info.plugin, "vulkan") == 0 && !devices.has_vulkan
                         ? &devices.vulkan
                         : nullptr;
    if (device == nullptr) continue;
    (device == &devices.cpu ? has_cpu : devices.has_vulkan) = true;
    device->index = i;
    device->name = info.name;
    check(phx_stream_create(devices.context, i, &device->stream), "phx_stream_create");
  }
  if (!has_cpu || !devices.has_vulkan) {
    std::fprintf(stderr, "bench_vulkan: needs the CPU and a Vulkan device (phx-devices)\n");
    return 1;
  }
  std::printf("Vulkan device: %s; CPU device: %s; %u threads (LP_NUM_THREADS=%s)\n",
              devices.vulkan.name.c_str(), devices.cpu.name.c_str(), threads,
              std::getenv("LP_NUM_THREADS"));
  RawVulkan raw(devices.vulkan.name);
  g_raw = &raw;
  register_benchmarks();
  benchmark::Initialize(&argc, argv);
  phx_bench::RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  print_ratios(reporter);
  benchmark::Shutdown();
  phx_stream_destroy(devices.cpu.stream);
  phx_stream_destroy(devices.vulkan.stream);
  phx_context_destroy(devices.context);
  return 0;
}
