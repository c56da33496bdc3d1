// Fuzzes the C API's tensors and ops (phx_tensor_*, phx_op_run) on every device of one
// context: the input is a program (op_program.h) run once per device. Every call must
// return a known status, and a failed one must leave a message in phx_last_error;
// PHX_STATUS_INTERNAL, which the API reserves for its own bugs, is a finding too. After
// each run every tensor is destroyed and each device's memory in use must be back where
// it started.
#include <phynexus/phynexus.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "api_checks.h"
#include "fuzz_input.h"
#include "op_program.h"

namespace {

using namespace phx::fuzz;

// Tensors above this many elements are skipped when the library would accept them:
// otherwise the fuzzer spends its time in large matmuls instead of in the checks.
constexpr uint64_t kMaxElements = 4096;
// The host buffer of upload and download; larger transfers are made only when the
// library must refuse them before touching the buffer.
constexpr size_t kHostBytes = 64 * 1024;

struct State {
  phx_context context = nullptr;
  std::vector<phx_stream> streams;        // one per device
  std::vector<uint64_t> baseline_in_use;  // bytes in use per device once the streams exist
  std::vector<uint8_t> host = std::vector<uint8_t>(kHostBytes);
  phx_tensor stale = nullptr;  // the last tensor destroyed
};
State* state = nullptr;

__attribute__((no_sanitize("enum"))) phx_status create_raw(size_t device, int dtype, size_t rank,
                                                           const int64_t* shape, phx_tensor* out) {
  return phx_tensor_create(state->context, device, raw_enum<phx_dtype>(dtype), rank, shape, out);
}

class Program {
 public:
  Program(const uint8_t* data, size_t size, size_t home)
      : in_(data, size), home_(home), stream_(state->streams[home]) {}

  void run() {
    for (size_t i = 0; i < kMaxCommands && !in_.empty(); ++i) {
      switch (in_.byte() % kCommandCount) {
        case kCreate:
          create();
          break;
        case kDestroy:
          destroy();
          break;
        case kUpload:
          upload();
          break;
        case kDownload:
          download();
          break;
        case kCopy:
          copy();
          break;
        default:
          run_op();
          break;
      }
    }
    check("phx_stream_synchronize", phx_stream_synchronize(stream_));
    for (Slot& slot : slots_) release(slot);
  }

 private:
  struct Slot {
    phx_tensor tensor = nullptr;
  };

  phx_tensor handle(uint8_t code) {
    switch (code) {
      case kNullHandle:
        return nullptr;
      case kStaleHandle:
        return state->stale;
      case kMadeUpHandle:
        return reinterpret_cast<phx_tensor>(static_cast<uintptr_t>(in_.u64()));
      default:
        return slots_[code % kSlots].tensor;
    }
  }

  size_t device(uint8_t code) {
    if (code == kRawDevice) return static_cast<size_t>(in_.u64());
    return (home_ + code) % state->streams.size();
  }

  void release(Slot& slot) {
    if (slot.tensor == nullptr) return;
    if (check("phx_tensor_destroy", phx_tensor_destroy(slot.tensor)) != PHX_STATUS_OK)
      finding("phx_tensor_destroy", "a live tensor could not be destroyed");
    state->stale = slot.tensor;
    slot.tensor = nullptr;
  }

  void create() {
    Slot& slot = slots_[in_.byte() % kSlots];
    const int dtype = static_cast<int8_t>(in_.byte());
    const uint8_t rank_code = in_.byte();
    const size_t rank = rank_code & 0x7f;
    const bool null_shape = rank_code & 0x80;
    // As long as any rank the code can name: the library must refuse a rank above
    // PHX_MAX_RANK without reading the shape, but reading it would still be in bounds.
    std::array<int64_t, 0x80> shape;
    shape.fill(1);
    for (size_t i = 0; i < std::min<size_t>(rank, PHX_MAX_RANK); ++i) {
      const uint8_t code = in_.byte();
      shape[i] = code == kWideDim ? static_cast<int64_t>(in_.u64()) : static_cast<int8_t>(code);
    }
    const size_t on = device(in_.byte());
    const uint8_t fill = in_.byte();

    // What the header promises to refuse with INVALID_ARGUMENT whatever the device.
    bool refused = dtype_bytes(dtype) == 0 || rank > PHX_MAX_RANK || (null_shape && rank > 0);
    unsigned __int128 elements = 1;
    for (size_t i = 0; i < std::min<size_t>(rank, PHX_MAX_RANK) && !refused; ++i) {
      if (shape[i] < 1) {
        refused = true;
      } else {
        elements *= static_cast<uint64_t>(shape[i]);
        if (elements * dtype_bytes(dtype) > static_cast<unsigned __int128>(1) << 62) refused = true;
      }
    }
    if (!refused && elements > kMaxElements) return;

    release(slot);
    phx_tensor tensor = nullptr;
    const phx_status status =
        check("phx_tensor_create",
              create_raw(on, dtype, rank, null_shape ? nullptr : shape.data(), &tensor));
    if (status != PHX_STATUS_OK) return;
    if (refused) finding("phx_tensor_create", "accepted a tensor the header says it refuses");
    if (tensor == nullptr) finding("phx_tensor_create", "returned OK and a null tensor");
    slot.tensor = tensor;
    // Defined contents, so that a run is reproducible; fill 0xff makes NaNs.
    const size_t bytes = static_cast<size_t>(elements) * dtype_bytes(dtype);
    std::fill_n(state->host.begin(), bytes, fill);
    check("phx_tensor_upload", phx_tensor_upload(tensor, 0, state->host.data(), bytes));
  }

  void destroy() {
    const uint8_t code = in_.byte();
    if (code == kMadeUpHandle) {
      // A made-up handle may name a live tensor of a slot, which would then dangle.
      in_.u64();
      return;
    }
    if (code == kNullHandle || code == kStaleHandle) {
      if (check("phx_tensor_destroy", phx_tensor_destroy(handle(code))) == PHX_STATUS_OK)
        finding("phx_tensor_destroy", "destroyed a null or stale handle");
      return;
    }
    release(slots_[code % kSlots]);
  }

  // Whether a transfer of size bytes at offset may be made with the host buffer: it
  // fits, or the library must refuse it before touching the buffer.
  bool transfer_allowed(phx_tensor tensor, uint64_t offset, uint64_t size) {
    if (size <= kHostBytes) return true;
    phx_tensor_desc desc = PHX_TENSOR_DESC_INIT;
    if (phx_tensor_describe(tensor, &desc) != PHX_STATUS_OK) return true;
    uint64_t end;
    return __builtin_add_overflow(offset, size, &end) || end > desc.byte_size;
  }

  void upload() {
    phx_tensor tensor = handle(in_.byte());
    const uint64_t offset = in_.number(), size = in_.number();
    const bool null_src = in_.byte() & kNullHostPointer;
    const uint8_t fill = in_.byte();
    if (!transfer_allowed(tensor, offset, size)) return;
    std::fill_n(state->host.begin(), std::min<uint64_t>(size, kHostBytes), fill);
    check("phx_tensor_upload",
          phx_tensor_upload(tensor, offset, null_src ? nullptr : state->host.data(), size));
  }

  void download() {
    phx_tensor tensor = handle(in_.byte());
    const uint64_t offset = in_.number(), size = in_.number();
    const bool null_dst = in_.byte() & kNullHostPointer;
    if (!transfer_allowed(tensor, offset, size)) return;
    check("phx_tensor_download",
          phx_tensor_download(tensor, offset, null_dst ? nullptr : state->host.data(), size));
  }

  void copy() {
    phx_tensor dst = handle(in_.byte());
    phx_tensor src = handle(in_.byte());
    const phx_status status = check("phx_tensor_copy", phx_tensor_copy(dst, src));
    if (status == PHX_STATUS_OK && dst == src) finding("phx_tensor_copy", "copied onto itself");
  }

  size_t count(uint8_t code) { return code == kMaxCount ? SIZE_MAX : code; }

  void run_op() {
    const int op = static_cast<int8_t>(in_.byte());
    // Larger than any parameter struct, so that the library may read all of its own.
    alignas(8) uint8_t params[256] = {};
    const void* params_pointer = nullptr;
    switch (in_.byte() % kParamsModeCount) {
      case kOwnParams: {
        const size_t size = std::max(params_size(op), sizeof(size_t));
        std::memcpy(params, &size, sizeof size);
        in_.bytes(params + sizeof size, size - sizeof size);
        params_pointer = params;
        break;
      }
      case kRawParams: {
        const size_t size = static_cast<size_t>(in_.number());
        std::memcpy(params, &size, sizeof size);
        in_.bytes(params + sizeof size, kRawParamBytes);
        params_pointer = params;
        break;
      }
      default:
        break;
    }
    // Zeroed past what is listed: null handles, in bounds for any count below kMaxCount.
    std::array<phx_tensor, 0x100> inputs = {}, outputs = {};
    const size_t input_count = count(in_.byte());
    for (size_t i = 0; i < std::min(input_count, kMaxListed); ++i) inputs[i] = handle(in_.byte());
    const size_t output_count = count(in_.byte());
    for (size_t i = 0; i < std::min(output_count, kMaxListed); ++i) outputs[i] = handle(in_.byte());
    const uint8_t flags = in_.byte();

    phx_op_desc desc = {sizeof desc,    PHX_OP_INVALID,
                        params_pointer, flags & kNullInputs ? nullptr : inputs.data(),
                        input_count,    flags & kNullOutputs ? nullptr : outputs.data(),
                        output_count};
    std::memcpy(&desc.op, &op, sizeof op);
    if (flags & kDescSize) desc.struct_size = static_cast<size_t>(in_.number());
    uint64_t ticket = 0;
    const phx_status status =
        check("phx_op_run", phx_op_run(stream_, flags & kNullDesc ? nullptr : &desc,
                                       flags & kNoTicket ? nullptr : &ticket));
    if (status == PHX_STATUS_OK && (flags & kWaitTicket) && !(flags & kNoTicket))
      check("phx_stream_wait", phx_stream_wait(stream_, ticket));
  }

  ByteReader in_;
  size_t home_;
  phx_stream stream_;
  std::array<Slot, kSlots> slots_;
};

uint64_t bytes_in_use(size_t device) {
  phx_memory_stats stats = PHX_MEMORY_STATS_INIT;
  if (check("phx_memory_stats_get", phx_memory_stats_get(state->context, device, &stats)) !=
      PHX_STATUS_OK)
    finding("phx_memory_stats_get", "no statistics for device " + std::to_string(device));
  return stats.bytes_in_use;
}

void destroy_state() {
  for (phx_stream stream : state->streams) phx_stream_destroy(stream);
  phx_context_destroy(state->context);
  delete state;
  state = nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  target_name = "fuzz_op_run";
  set_environment();
  state = new State;
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  options.log_level = PHX_LOG_OFF;
  // Unsupported ops run on the CPU device: the fallback's copies are fuzzed too.
  options.flags = PHX_CONTEXT_FALLBACK_CPU;
  options.num_threads = 1;
  size_t devices = 0;
  if (check("phx_context_create", phx_context_create(&options, &state->context)) != PHX_STATUS_OK ||
      check("phx_device_count", phx_device_count(state->context, &devices)) != PHX_STATUS_OK ||
      devices == 0)
    finding("LLVMFuzzerInitialize", "no context with devices");
  for (size_t d = 0; d < devices; ++d) {
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    phx_stream stream = nullptr;
    if (check("phx_device_get", phx_device_get(state->context, d, &info)) != PHX_STATUS_OK ||
        check("phx_stream_create", phx_stream_create(state->context, d, &stream)) != PHX_STATUS_OK)
      finding("LLVMFuzzerInitialize", "device " + std::to_string(d) + " is unusable");
    std::fprintf(stderr, "fuzz_op_run: device %zu: %s (%s)\n", d, info.name, info.plugin);
    state->streams.push_back(stream);
  }
  for (size_t d = 0; d < devices; ++d) state->baseline_in_use.push_back(bytes_in_use(d));
  std::atexit(destroy_state);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (size_t home = 0; home < state->streams.size(); ++home) {
    Program(data, size, home).run();
    for (size_t d = 0; d < state->streams.size(); ++d)
      if (bytes_in_use(d) != state->baseline_in_use[d])
        finding("phx_memory_stats_get", "device " + std::to_string(d) + " holds " +
                                            std::to_string(bytes_in_use(d)) +
                                            " bytes with no tensor alive, " +
                                            std::to_string(state->baseline_in_use[d]) + " before");
  }
  return 0;
}
