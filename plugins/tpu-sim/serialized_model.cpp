#include "serialized_model.h"

#include <bit>
#include <cstring>

#include "serial_bytes.h"

namespace phx::tpu_sim {
namespace {

using plugin_common::ByteReader;
using plugin_common::ByteWriter;

constexpr char kMagic[8] = {'P', 'H', 'X', 'T', 'P', 'U', 'M', '\0'};

void put_cost(ByteWriter& w, const OpCost& c) {
  w.put(static_cast<uint8_t>(c.uses_mxu));
  w.put(c.mxu_passes);
  w.put(c.mxu.folds);
  w.put(c.mxu.folds_per_mxu);
  w.put(c.mxu.cycles);
  w.put(c.mxu.utilization);
  w.put(c.mxu.mapping_efficiency);
  w.put(c.mxu.padding_waste);
  w.put(c.vector_cycles);
  w.put(c.hbm_bytes);
  w.put(c.compute_time_ns);
  w.put(c.hbm_time_ns);
  w.put(c.estimated_time_ns);
  w.put(static_cast<uint8_t>(c.memory_bound));
}

OpCost get_cost(ByteReader& r) {
  OpCost c;
  c.uses_mxu = r.get<uint8_t>() != 0;
  c.mxu_passes = r.get<uint32_t>();
  c.mxu.folds = r.get<uint64_t>();
  c.mxu.folds_per_mxu = r.get<uint64_t>();
  c.mxu.cycles = r.get<uint64_t>();
  c.mxu.utilization = r.get<double>();
  c.mxu.mapping_efficiency = r.get<double>();
  c.mxu.padding_waste = r.get<double>();
  c.vector_cycles = r.get<uint64_t>();
  c.hbm_bytes = r.get<uint64_t>();
  c.compute_time_ns = r.get<double>();
  c.hbm_time_ns = r.get<double>();
  c.estimated_time_ns = r.get<double>();
  c.memory_bound = r.get<uint8_t>() != 0;
  return c;
}

// The bytes one serialized cost takes: what bounds a node count read from damaged bytes.
size_t serialized_cost_bytes() {
  ByteWriter w;
  put_cost(w, OpCost{});
  return w.bytes.size();
}

// A double by its bits, so that two keys differ exactly when the figures do.
std::string bits(double value) { return std::to_string(std::bit_cast<uint64_t>(value)); }

}  // namespace

std::string chip_key(const SimConfig& config) {
  const ChipConfig& chip = config.chip;
  return "generation=" + chip.generation + " mxu=" + std::to_string(chip.mxu_count) + "x" +
         std::to_string(chip.mxu_size) + " tensor_cores=" + std::to_string(chip.tensor_cores) +
         " clock_bits=" + bits(chip.clock_ghz) +
         " hbm_bandwidth_bits=" + bits(chip.hbm_bandwidth_gbps) +
         " timing=" + std::to_string(int(config.timing)) +
         " precision=" + std::to_string(int(config.precision)) +
         " flush_subnormals=" + std::to_string(int(config.flush_subnormals)) +
         " launch_overhead_bits=" + bits(config.launch_overhead_ns);
}

std::vector<uint8_t> write_serialized_model(const SerializedModel& model) {
  ByteWriter w;
  w.bytes.assign(kMagic, kMagic + sizeof kMagic);
  w.put(model.format_version);
  w.put_string(model.plugin_version);
  w.put_string(model.chip_key);
  w.put_string(model.signature);
  w.put(static_cast<uint64_t>(model.costs.size()));
  for (const OpCost& cost : model.costs) put_cost(w, cost);
  w.put_checksum();
  return std::move(w.bytes);
}

bool read_serialized_model(std::span<const uint8_t> bytes, SerializedModel& out,
                           std::string& error) {
  std::optional<ByteReader> opened =
      plugin_common::open_serialized(bytes, kMagic, "tpu-sim executable", error);
  if (!opened) return false;
  ByteReader& r = *opened;
  SerializedModel model;
  model.format_version = r.get<uint32_t>();
  if (r.ok() && model.format_version != kSerializedModelFormat) {
    out = std::move(model);  // the caller answers INCOMPATIBLE
    return true;
  }
  model.plugin_version = r.get_string();
  model.chip_key = r.get_string();
  model.signature = r.get_string();
  const auto node_count = r.get<uint64_t>();
  if (node_count <= r.remaining() / serialized_cost_bytes())
    for (uint64_t n = 0; n < node_count; ++n) model.costs.push_back(get_cost(r));
  if (!r.ok() || r.remaining() != 0 || model.costs.size() != node_count) {
    error = "malformed: its fields do not fill its bytes";
    return false;
  }
  out = std::move(model);
  return true;
}

bool model_matches(const SerializedModel& model, const std::string& plugin_version,
                   const std::string& key, const std::string& signature, std::string& error) {
  if (model.format_version != kSerializedModelFormat) {
    error = "serialized in format " + std::to_string(model.format_version) +
            ", this tpu-sim reads format " + std::to_string(kSerializedModelFormat);
  } else if (model.plugin_version != plugin_version) {
    error = "serialized by tpu-sim " + model.plugin_version + ", this is tpu-sim " + plugin_version;
  } else if (model.chip_key != key) {
    error = "serialized for the chip '" + model.chip_key + "', this device is '" + key + "'";
  } else if (model.signature != signature) {
    error = "serialized for another graph (other structure, shapes, dtypes or parameters)";
  } else {
    return true;
  }
  return false;
}

}  // namespace phx::tpu_sim
