// A device of a context: what its plugin said of it, and what the runtime keeps for it.
#pragma once

#include <phynexus/plugin.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace phx {

class Plugin;
struct Stream;

struct Device {
  Plugin* plugin = nullptr;
  uint32_t local_index = 0;  // the device's index within its plugin
  uint32_t index = 0;        // the device's index within the context
  phx_device_type type = PHX_DEVICE_CPU;
  std::string name, vendor;
  uint64_t memory_total_bytes = 0, memory_available_bytes = 0;
  uint32_t compute_units = 0;
  uint32_t dtype_mask = 0;
  std::deque<std::string> property_text;  // owns the strings properties point to
  std::vector<phx_property> properties;
  bool supported[PHX_OP_COUNT][PHX_DTYPE_COUNT] = {};

  // The device's live streams, waited on before host transfers.
  std::mutex streams_mutex;
  std::vector<Stream*> streams;
  void wait_for_streams();

  // Ops of this device that ran on the CPU device instead (PHX_CONTEXT_FALLBACK_CPU), and
  // the (op, dtype) pairs already logged, so that each is logged once.
  std::atomic<uint64_t> fallback_ops{0};
  std::mutex fallback_log_mutex;
  bool fallback_logged[PHX_OP_COUNT][PHX_DTYPE_COUNT] = {};
};

}  // namespace phx
