#include "cpu_device_info.h"

#include <sys/sysinfo.h>

#include <fstream>

namespace phx::cpu {
namespace {

// The value of the first "key : value" line of /proc/cpuinfo with that key.
std::string cpuinfo_value(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) != 0) continue;
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    auto start = line.find_first_not_of(' ', colon + 1);
    return start == std::string::npos ? std::string() : line.substr(start);
  }
  return {};
}

std::string vendor_name(const std::string& id) {
  if (id == "GenuineIntel") return "Intel";
  if (id == "AuthenticAMD") return "AMD";
  return id.empty() ? "unknown" : id;
}

}  // namespace

HostDescription describe_host() {
  HostDescription host;
  host.model = cpuinfo_value("model name");
  if (host.model.empty()) host.model = "Host CPU";
  host.vendor = vendor_name(cpuinfo_value("vendor_id"));
  struct sysinfo info {};
  if (sysinfo(&info) == 0) host.memory_total_bytes = uint64_t{info.totalram} * info.mem_unit;
  return host;
}

uint64_t host_memory_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

}  // namespace phx::cpu
