// What the CPU device reports about the host it runs on.
#pragma once

#include <cstdint>
#include <string>

namespace phx::cpu {

struct HostDescription {
  std::string model;   // "Intel(R) Xeon(R) ...", from /proc/cpuinfo
  std::string vendor;  // "Intel", "AMD", ...
  uint64_t memory_total_bytes = 0;
};

HostDescription describe_host();

// MemAvailable from /proc/meminfo, in bytes; 0 when unknown.
uint64_t host_memory_available();

}  // namespace phx::cpu
